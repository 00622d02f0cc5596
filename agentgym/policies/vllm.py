"""``vllm:<model>``: a model served in process by vLLM on a GPU (optional; never used in CI)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

from agentgym.errors import DependencyNotInstalled, PolicyError
from agentgym.policies.chat import ChatPolicy, Generation
from agentgym.policies.base import Sampling

__all__ = ["VLLMPolicy"]

_ENGINES: dict[str, Any] = {}
_LOCK = threading.Lock()


def _engine(model: str) -> Any:
    with _LOCK:
        if model not in _ENGINES:
            try:
                from vllm import LLM
            except ImportError as e:
                raise DependencyNotInstalled("vLLM (needs a CUDA GPU)", "pip install vllm") from e
            try:
                _ENGINES[model] = LLM(model=model)
            except Exception as e:  # noqa: BLE001 - vLLM raises many types; one clear boundary error
                raise PolicyError(f"vLLM could not load {model!r}: {e}") from e
        return _ENGINES[model]


class VLLMPolicy(ChatPolicy):
    """Chat with ``vllm.LLM.chat``; the engine is loaded once per process and model."""

    name = "vllm"

    def __init__(self, model: str, *, sampling: Sampling | None = None, system_prompt: str | None = None) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise DependencyNotInstalled("vLLM (needs a CUDA GPU)", "pip install vllm")
        super().__init__(sampling=sampling, system_prompt=system_prompt)
        self.model = model
        self._calls = 0

    def generate(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Generation:
        from vllm import SamplingParams

        s = self.sampling or Sampling()
        self._calls += 1
        params = SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                                seed=s.seed * 1_000_003 + self._calls)
        with _LOCK:
            out = _engine(self.model).chat([dict(m) for m in messages], params, use_tqdm=False)[0]
        completion = out.outputs[0]
        return Generation(completion.text, len(out.prompt_token_ids or ()), len(completion.token_ids or ()))
