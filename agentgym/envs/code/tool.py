"""The code-interpreter tool both code envs share: run Python in a pooled sandbox, report like a REPL."""

from __future__ import annotations

from agentgym.errors import SandboxError, ToolError
from agentgym.sandbox import Limits, Result
from agentgym.sandbox.pool import SandboxPool, shared_pool

__all__ = ["CodeRunner", "format_result"]


def format_result(result: Result, *, max_chars: int = 4_000) -> str:
    """A call's outcome as the model reads it: stdout, then the error if any, then limit notes.

    >>> from agentgym.sandbox import Result
    >>> format_result(Result(stdout="42\\n", stderr="", exit_code=0))
    '42\\n'
    >>> format_result(Result(stdout="", stderr="", exit_code=0))
    'The code ran without output. Use print() to see values.'
    """
    parts = []
    if result.stdout:
        parts.append(result.stdout)
    if result.stderr and (result.exit_code != 0 or result.timed_out):
        parts.append(result.stderr[-2_000:])
    if result.timed_out:
        parts.append(f"Timed out after {result.duration_s:.1f} s: the program was stopped.")
    elif result.oom:
        parts.append("The program ran out of memory and was stopped.")
    elif result.exit_code < 0:
        parts.append(f"The program was killed by signal {-result.exit_code}.")
    if result.output_truncated:
        parts.append("[output truncated]")
    text = "\n".join(p.rstrip("\n") if i < len(parts) - 1 else p for i, p in enumerate(parts))
    if not text:
        return "The code ran without output. Use print() to see values."
    return text if len(text) <= max_chars else text[: max_chars] + "\n[output truncated]"


class CodeRunner:
    """Runs model code in a process-wide pool of sandboxes (``isolation="call"``: nothing persists)."""

    def __init__(self, *, backend: str = "bwrap", timeout_s: float = 10.0, memory_mb: int = 1024,
                 preload: tuple[str, ...] = ()) -> None:
        self.backend = backend
        self.limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb)
        self.preload = tuple(preload)
        self._pool: SandboxPool | None = None

    @property
    def pool(self) -> SandboxPool:
        if self._pool is None:
            self._pool = shared_pool(self.backend, self.limits, self.preload)
        return self._pool

    def run(self, code: str | None = None, **kwargs: object) -> Result:
        try:
            return self.pool.run(code, **kwargs)  # type: ignore[arg-type]
        except SandboxError as e:
            raise ToolError(f"the sandbox failed: {e}") from e
