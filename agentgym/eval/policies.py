"""Moved to ``agentgym.policies``; this name keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.policies import EmptyPolicy, OraclePolicy, Policy, RandomPolicy, Sampling, make_policy

__all__ = ["EmptyPolicy", "OraclePolicy", "Policy", "RandomPolicy", "Sampling", "make_policy"]

warnings.warn("agentgym.eval.policies moved to agentgym.policies; import from there.", DeprecationWarning,
              stacklevel=2)
