"""A test env whose sandbox is down: its ``python`` tool raises ``SandboxError`` (an infrastructure failure, which
adapters must surface, unlike an agent's mistake)."""

from agentgym.core.env import AgentEnv
from agentgym.core.registry import EnvInfo, register_envs
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool
from agentgym.errors import SandboxError
from agentgym.verifiers.score import Score

SANDBOX_DOWN = EnvInfo("test/SandboxDown-v0", "helpers.sandbox_down_env:SandboxDownEnv", "Its sandbox never starts.")


def _python(code: str) -> str:
    raise SandboxError("The bwrap sandbox failed to start.")


class SandboxDownEnv(AgentEnv):
    def __init__(self, max_turns: int = 3):
        super().__init__(tasks=TaskList([Task("t0", "Compute 1+1.", {"answer": "2"})]), max_turns=max_turns)

    def make_tools(self):
        return [Tool("python", "Run code.", {"type": "object", "properties": {"code": {"type": "string"}},
                                             "required": ["code"]}, _python)]

    def verify(self, answer, task):
        ok = answer == "2"
        return Score(float(ok), ok)

    def oracle_action(self):
        return "<answer>2</answer>"


register_envs([SANDBOX_DOWN])
