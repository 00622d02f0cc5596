"""Policies: what plays an env. ``make_policy`` builds one from its spec.

``base``: the interface and the baselines (oracle, empty, random); ``chat``: the conversation bookkeeping of
every model policy; ``hf``: local transformers models (``smollm2``, ``hf:<path>``); ``openai``: OpenAI-compatible
servers; ``vllm``: an in-process vLLM engine (GPU). Model policies are imported only when asked for.
"""

from __future__ import annotations

from agentgym.errors import ConfigError
from agentgym.policies.base import EmptyPolicy, OraclePolicy, Policy, RandomPolicy, Sampling
from agentgym.policies.chat import ChatPolicy, Generation

__all__ = ["ChatPolicy", "EmptyPolicy", "Generation", "OraclePolicy", "Policy", "RandomPolicy", "Sampling",
           "make_policy"]


def make_policy(name: str, *, seed: int = 0, sampling: Sampling | None = None, model: str | None = None,
                system_prompt: str | None = None, dtype: str = "auto") -> Policy:
    """A policy by spec: ``smollm2``, ``hf:<path or id>``, ``openai:<base_url>`` (with ``model``),
    ``vllm:<model>``, ``oracle``, ``random`` or ``empty``; ``system_prompt`` is a model policy's system message."""
    if system_prompt is not None and name in ("oracle", "random", "empty"):
        raise ConfigError(f"The {name} policy reads no prompt; a system prompt is for model policies (smollm2, hf:, "
                          "openai:, vllm:).")
    if dtype != "auto" and not (name == "smollm2" or name.startswith("hf:")):
        raise ConfigError(f"A dtype ({dtype}) is for the local models smollm2 and hf:<path>; the {name.split(':')[0]} "
                          "policy computes where it runs: drop --dtype.")
    if name == "oracle":
        return OraclePolicy()
    if name == "random":
        return RandomPolicy(seed)
    if name == "empty":
        return EmptyPolicy()
    sampling = sampling or Sampling(seed=seed)
    if name == "smollm2" or name.startswith("hf:"):
        from agentgym.policies.hf import make_model_policy

        found = make_model_policy(name, sampling=sampling, model=model, system_prompt=system_prompt, dtype=dtype)
    elif name.startswith("openai:"):
        from agentgym.policies.openai import make_openai_policy

        found = make_openai_policy(name, model=model, sampling=sampling, system_prompt=system_prompt)
    elif name.startswith("vllm:"):
        from agentgym.policies.vllm import VLLMPolicy

        found = VLLMPolicy(name.removeprefix("vllm:"), sampling=sampling, system_prompt=system_prompt)
    else:
        found = None
    if found is None:
        raise ConfigError(f"Unknown policy {name!r}; choose smollm2, hf:<path>, openai:<base_url>, vllm:<model>, "
                          "oracle, random or empty.")
    return found
