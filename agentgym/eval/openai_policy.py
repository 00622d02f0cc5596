"""Moved to ``agentgym.policies.openai``; this name keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.policies.openai import OpenAIPolicy, make_openai_policy

__all__ = ["OpenAIPolicy", "make_openai_policy"]

warnings.warn("agentgym.eval.openai_policy moved to agentgym.policies.openai; import from there.", DeprecationWarning,
              stacklevel=2)
