"""Every exception agentgym raises on purpose, in one hierarchy.

    AgentGymError
      EnvNotFound            unknown env id, with a "did you mean ...?"
      DependencyNotInstalled an optional dependency is missing; says what to install
      ResetNeeded            step() before reset(), or after the episode ended
      ConfigError            a user-supplied setting is invalid; says how to fix it
      DataError              a data file is missing or not in the expected schema
      EnvCheckFailed         check_env found a broken env contract
      RolloutError           recorded on the trajectory; one bad rollout never kills a batch
        ToolError
        SandboxError
        VerifierError
          VerifierUnavailable  no verifier worker was free within the budget: the server's failure (HTTP 503)
        RemoteEnvError       carries the HTTP status_code
        PolicyError
        SessionLost          the process hosting an env session died (a Ray actor): reset starts a new one
      CapacityReached        no host has room for another session of an env; says which limit and how to raise it

Agent mistakes (malformed tool calls, unknown tools, bad arguments) are never
exceptions: they come back as the observation and in ``info["action_error"]``.
"""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Iterable

__all__ = [
    "AgentGymError",
    "CapacityReached",
    "ConfigError",
    "DataError",
    "DependencyNotInstalled",
    "EnvCheckFailed",
    "EnvNotFound",
    "PolicyError",
    "RemoteEnvError",
    "ResetNeeded",
    "RolloutError",
    "SandboxError",
    "SessionLost",
    "ToolError",
    "VerifierError",
    "VerifierUnavailable",
    "describe",
]


class AgentGymError(Exception):
    """Base class of every agentgym error."""


class EnvNotFound(AgentGymError, KeyError):
    """An env id that is not registered; the message suggests close matches."""

    def __init__(self, env_id: str, known: Iterable[str] = ()) -> None:
        self.env_id = env_id
        known = sorted(known)
        close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
        message = f"No environment registered as {env_id!r}."
        if close:
            message += f" Did you mean {' or '.join(repr(c) for c in close)}?"
        elif known:
            message += f" Registered ids: {', '.join(known)}."
        message += " Run `agentgym list` to see every id."
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class DependencyNotInstalled(AgentGymError, ImportError):
    """An optional dependency is missing; the message says how to install it."""

    def __init__(self, what: str, install: str) -> None:
        self.what, self.install = what, install
        super().__init__(f"{what} is not installed. Install it with: {install}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # raised in a verifier worker, re-raised in its caller
        return type(self), (self.what, self.install)


class ResetNeeded(AgentGymError, RuntimeError):
    """``step`` was called before ``reset`` or after the episode ended."""


class ConfigError(AgentGymError, ValueError):
    """A user-supplied setting is invalid; the message says how to fix it."""


class DataError(AgentGymError, ValueError):
    """A data file is missing, unreadable or not in the expected schema."""


class RolloutError(AgentGymError):
    """A failure during one rollout; recorded on the trajectory, never fatal to a batch."""


class ToolError(RolloutError):
    """A tool failed for a reason that is not the agent's fault."""


class SandboxError(RolloutError):
    """The sandbox could not run the code (not: the code itself failed)."""


class VerifierError(RolloutError):
    """A verifier could not score a prediction."""


class VerifierUnavailable(VerifierError):
    """No verifier worker was free within the verification's budget: the server's failure, not the answer's.

    It is never a score: an episode that meets it fails (``RolloutError``) and
    trains nothing; over HTTP it is a 503 with ``Retry-After: retry_after_s``.
    """

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def __reduce__(self) -> tuple[object, ...]:  # raised on a Ray env host, re-raised in its caller
        return _unavailable, (str(self), self.retry_after_s)


def _unavailable(message: str, retry_after_s: float) -> VerifierUnavailable:
    return VerifierUnavailable(message, retry_after_s=retry_after_s)


class RemoteEnvError(RolloutError):
    """The env server answered with an error."""

    def __init__(self, message: str, *, status_code: int, code: str = "error") -> None:
        self.status_code = status_code
        self.code = code
        super().__init__(f"[{status_code} {code}] {message}")


class PolicyError(RolloutError):
    """The policy (model, endpoint) failed to produce an action."""


class SessionLost(RolloutError):
    """The process hosting an env session died (a Ray actor, its node): the episode is lost; ``reset`` starts a
    new session elsewhere."""


class CapacityReached(AgentGymError):
    """No host has room for another session of an env; the message names the limit and how to raise it."""


class EnvCheckFailed(AgentGymError, AssertionError):
    """``check_env`` found an env that breaks the contract; the message says which check."""


def describe(error: BaseException) -> str:
    """``Type: message``, and, for a bug (not an agentgym error, which says what happened itself) raised outside
    agentgym (a user's env or agent file, a library), where: ``NameError: name 'x' is not defined (my_env.py:12)``.
    One line, for an episode's ``error``."""
    from pathlib import Path

    text = f"{type(error).__name__}: {error}"
    frames = traceback.extract_tb(error.__traceback__)
    if frames and not isinstance(error, AgentGymError):
        frame = _user_frame(frames)
        if frame is not None:
            text += f" ({Path(frame.filename).name}:{frame.lineno})"
    return text


def _user_frame(frames: list[traceback.FrameSummary]) -> traceback.FrameSummary | None:
    """The innermost frame in the user's code: not agentgym's, not the standard library's or an installed
    package's (a library's exception raised for the user's call points at the user's line). None if there is none."""
    import sysconfig
    from pathlib import Path

    package = Path(__file__).resolve().parent
    paths = sysconfig.get_paths()
    libraries = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    for frame in reversed(frames):
        if frame.filename.startswith("<"):
            continue
        where = Path(frame.filename).resolve()
        if where.is_relative_to(package) or any(where.is_relative_to(lib) for lib in libraries):
            continue
        return frame
    return None

