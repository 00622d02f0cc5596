"""Moved to ``agentgym.policies.vllm``; this name keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.policies.vllm import VLLMPolicy

__all__ = ["VLLMPolicy"]

warnings.warn("agentgym.eval.vllm_policy moved to agentgym.policies.vllm; import from there.", DeprecationWarning,
              stacklevel=2)
