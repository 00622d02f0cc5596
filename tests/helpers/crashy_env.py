"""A test env whose ``step`` raises on the action "crash" (or its ``echo`` tool called with "crash" as a dict action,
as MCP and ORS calls arrive) and ``reset`` on seed 666 (env bugs the server
must survive), and whose verification cannot start on the action "verifier busy".

With ``slow_s``, making it, resetting it, closing it and the action "slow" each block
its thread that long (env work the event loop must not wait on).
"""

import time

from agentgym.core.env import AgentEnv
from agentgym.core.registry import EnvInfo, register_envs
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool
from agentgym.verifiers.score import Score

CRASHY = EnvInfo("test/Crashy-v0", "helpers.crashy_env:CrashyEnv", "Raises on 'crash'.", client_kwargs=("max_turns", "slow_s"))


class CrashyEnv(AgentEnv):
    def __init__(self, max_turns: int = 3, slow_s: float = 0.0):
        time.sleep(slow_s)
        self.slow_s = slow_s
        super().__init__(tasks=TaskList([Task("t0", "Say ok.", {"answer": "ok"})]), max_turns=max_turns)

    def reset(self, *, seed=None, options=None):
        time.sleep(self.slow_s)
        if seed == 666:
            raise RuntimeError("boom on reset")
        return super().reset(seed=seed, options=options)

    def close(self):
        time.sleep(self.slow_s)
        super().close()

    def make_tools(self):
        return [Tool("echo", "Echo.", {"type": "object", "properties": {"text": {"type": "string"}},
                                       "required": ["text"]}, lambda text: text)]

    def step(self, action):
        if action == "crash" or isinstance(action, dict) and action.get("arguments") == {"text": "crash"}:
            raise RuntimeError("boom")
        if action == "verifier busy":  # its verification could not start within its budget
            from agentgym.errors import VerifierUnavailable

            raise VerifierUnavailable("No verifier worker was free within 5 s.", retry_after_s=5.0)
        if action == "slow":
            time.sleep(self.slow_s)
        return super().step(action)

    def verify(self, answer, task):
        ok = answer == "ok"
        return Score(float(ok), ok)

    def oracle_action(self):
        return "<answer>ok</answer>"


register_envs([CRASHY])
