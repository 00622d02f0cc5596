"""agentgym's envs for verifiers' loaders, by taskset id: ``vf-eval agentgym-verifiers --env.taskset.env ENV_ID``.

verifiers 0.4 resolves a taskset id by importing the top-level module of that name (``-`` read as ``_``) and taking
the ``Taskset``, ``Env`` and ``Harness`` subclasses in its ``__all__``; a dotted module path is not an id it can
import, so this small package is that module. The classes live in ``agentgym.integrations.verifiers_taskset``.
"""

from agentgym.integrations.verifiers_taskset import AgentGymEnv, AgentGymTaskset, ChatHarness

__all__ = ["AgentGymEnv", "AgentGymTaskset", "ChatHarness"]
