"""agentgym: sandboxed, verifiable text environments for training and evaluating LLM agents.

``import agentgym`` registers every env id with Gymnasium::

    import gymnasium as gym, agentgym
    env = gym.make("agentgym/SearchQA-v0")
"""

from agentgym.core import (
    AgentEnv,
    Task,
    TaskSource,
    Tool,
    ToolCall,
    check_env,
    env_ids,
    make,
)
from agentgym.envs.functions import tool
from agentgym.core.plugins import load_plugins as _load_plugins
from agentgym.core.plugins import register
from agentgym.core.registry import register_envs as _register_envs
from agentgym.envs.toolenv import SingleTurnEnv, ToolEnv
from agentgym.rubric import Part, Rubric
from agentgym.envs import ENVS as _ENVS
from agentgym.verifiers.score import Score

__version__ = "0.1.0"

__all__ = [
    "AgentEnv",
    "AsyncRemoteEnv",
    "JudgeError",
    "JudgeRubric",
    "Part",
    "RemoteEnv",
    "Rubric",
    "Score",
    "SingleTurnEnv",
    "Task",
    "TaskSource",
    "Tool",
    "ToolCall",
    "ToolEnv",
    "__version__",
    "check_env",
    "env_ids",
    "make",
    "register",
    "tool",
]

_register_envs(_ENVS)
_load_plugins()  # packages' agentgym.envs entry points, and AGENTGYM_IMPORT (docs/custom-envs.md)


def __getattr__(name: str):
    # The HTTP client loads on first use: `import agentgym` stays light.
    if name in ("AsyncRemoteEnv", "RemoteEnv"):
        from agentgym.client import remote

        return getattr(remote, name)
    if name in ("JudgeError", "JudgeRubric"):
        from agentgym import judge

        return getattr(judge, name)
    raise AttributeError(f"module 'agentgym' has no attribute {name!r}")
