"""The env contract: tasks, tools, action formats, ``AgentEnv``, the registry and the checker."""

from agentgym.core.checker import check_env
from agentgym.core.env import AgentEnv, EnvDefaults, TextSpace
from agentgym.core.formats import (
    ActionFormat,
    DictFormat,
    HermesFormat,
    ParsedAction,
    PlainFormat,
    TagsFormat,
    get_format,
)
from agentgym.core.registry import EnvInfo, env_ids, env_info, make, register_envs
from agentgym.core.shared import load_shared
from agentgym.core.task import GeneratedTasks, Task, TaskList, TaskSource, read_records
from agentgym.core.tools import Tool, ToolCall

__all__ = [
    "ActionFormat",
    "AgentEnv",
    "DictFormat",
    "EnvDefaults",
    "EnvInfo",
    "GeneratedTasks",
    "HermesFormat",
    "ParsedAction",
    "PlainFormat",
    "TagsFormat",
    "Task",
    "TaskList",
    "TaskSource",
    "TextSpace",
    "Tool",
    "ToolCall",
    "check_env",
    "env_ids",
    "env_info",
    "get_format",
    "load_shared",
    "make",
    "read_records",
    "register_envs",
]
