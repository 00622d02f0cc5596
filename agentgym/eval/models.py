"""Moved to ``agentgym.policies.hf``; this name keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.policies.hf import SmolLM2Policy, TransformersPolicy, make_model_policy

__all__ = ["SmolLM2Policy", "TransformersPolicy", "make_model_policy"]

warnings.warn("agentgym.eval.models moved to agentgym.policies.hf; import from there.", DeprecationWarning,
              stacklevel=2)
