"""Moved to ``agentgym.policies.chat``; this name keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.policies.chat import ChatPolicy, Generation

__all__ = ["ChatPolicy", "Generation"]

warnings.warn("agentgym.eval.chat moved to agentgym.policies.chat; import from there.", DeprecationWarning,
              stacklevel=2)
