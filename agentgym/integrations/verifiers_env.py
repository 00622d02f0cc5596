"""A verifiers 0.4 environment (a taskset id, as ``vf-eval`` takes it) played as an agentgym env: ``vf:TASKSET``.

``agentgym eval --env vf:my_taskset`` (and ``agentgym.make("vf:my_taskset")``) plays the taskset that verifiers'
own loader finds for that id (the module ``my_taskset``, or one of verifiers' built-in tasksets) with agentgym's
policies, gateway records and leaderboard:

- tasks: the taskset's tasks (``load()``, in order; ``num_tasks`` bounds an infinite one), each with its verifiers
  ``id`` (else its position) as the task id, in one split, ``test``; the prompt is the task's system prompt and
  prompt, and, where the taskset has tools, the action format's tool instructions;
- tools: every ``@vf.tool`` of the taskset's tool servers (``Taskset.toolsets``, shared by all episodes) and its
  task's (``Task.toolsets``, new for each episode, set up with the task), registered on an in-process MCP server
  by verifiers' own ``Toolset.register`` and called through it, named as verifiers' harnesses name them
  (``<server>_<tool>``);
- a turn without a tool call ends the episode (as verifiers' chat harnesses end), and its answer (the text in
  ``<answer>`` tags, else the whole reply) is the last assistant message;
- reward: verifiers' own ``Task.score`` over the episode as a ``vf.Trace`` (the prompt, each turn's tool calls and
  results, the final reply): the weighted sum of the task's rewards. Rewards that need a runtime (a sandbox) are
  left out, as verifiers leaves them out when it scores without one; ``info["verification"]`` says which ran.

Tool servers run in this process (not in verifiers' subprocess runtime), and multi-agent envs (``Env`` subclasses
with several seats, user simulators) are not played: their seats are verifiers' control flow, not one agent's turns.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.formats import ParsedAction
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool
from agentgym.errors import ConfigError, ToolError
from agentgym.integrations.verifiers import require_verifiers
from agentgym.verifiers.score import Score

__all__ = ["VerifiersEnv"]

SPLIT = "test"


class _Loop:
    """An event loop on a thread of its own: the env's sync API runs verifiers' coroutines on it, from any thread
    (a caller inside another running loop included)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="agentgym-verifiers", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        if not self.loop.is_running():
            self.loop.close()


class _Server:
    """One verifiers tool server, its tools registered on an in-process MCP server by the toolset itself."""

    def __init__(self, toolset: Any, loop: _Loop) -> None:
        from mcp.server.mcpserver import MCPServer

        self.toolset, self.loop = toolset, loop
        self.mcp = MCPServer(toolset.server_name or type(toolset).__name__)
        toolset.register(self.mcp)
        loop.run(toolset.setup())

    def tools(self) -> list[Any]:
        return self.loop.run(self.mcp.list_tools())

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        result = self.loop.run(self.mcp.call_tool(name, dict(arguments)))
        text = "\n".join(getattr(block, "text", None) or str(block) for block in result.content)
        if result.is_error:
            raise ToolError(text)
        return text


class VerifiersEnv(AgentEnv[str]):
    """A verifiers taskset as an agentgym env (see the module docstring)."""

    defaults = EnvDefaults(action_format="hermes", split=SPLIT, max_turns=8)

    def __init__(self, *, taskset: str, taskset_config: Mapping[str, Any] | None = None,
                 num_tasks: int | None = None, **base: Any) -> None:
        """``taskset``: the verifiers taskset id (``vf-eval``'s positional argument); ``taskset_config``: fields
        of its config (``--env.taskset.*``); ``num_tasks``: the first N tasks only (needed for an infinite one)."""
        vf = require_verifiers()
        if not isinstance(taskset, str) or not taskset:
            raise ConfigError(f"vf: needs a verifiers taskset id, as vf-eval takes it (vf:my_taskset), got "
                              f"{taskset!r}.")
        if num_tasks is not None and (not isinstance(num_tasks, int) or num_tasks < 1):
            raise ConfigError(f"num_tasks must be a positive int, got {num_tasks!r}.")
        self.vf = vf
        self._loop = _Loop()
        try:
            self.taskset = self._load_taskset(taskset, dict(taskset_config or {}), num_tasks)
            self.vf_tasks = {self._task_id(t): t for t in self.taskset}
            self._shared = [_Server(s, self._loop) for s in type(self.taskset).toolsets(self.taskset.config)]
            task_cls = type(self.taskset).task_type()
            self._per_task = [_Server(s, self._loop) for s in task_cls.toolsets(self.taskset.config.task)]
            tasks = TaskList(Task(id=task_id, prompt=self._prompt(t), gold={}, split=SPLIT,
                                  meta={"verifiers_taskset": taskset, "idx": t.data.idx})
                             for task_id, t in self.vf_tasks.items())
            if not len(tasks):
                raise ConfigError(f"The verifiers taskset {taskset!r} has no tasks.")
            self._messages: list[Any] = []
            super().__init__(tasks=tasks, **base)
        except BaseException:
            self._loop.close()
            raise

    # ---- loading -------------------------------------------------------------------------------------------
    def _load_taskset(self, taskset_id: str, config: dict[str, Any], num_tasks: int | None) -> Any:
        from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

        try:
            config_type = taskset_config_type(taskset_id)
            loaded = load_taskset(config_type.model_validate({**config, "id": taskset_id}))
        except (ImportError, TypeError, ValueError, AttributeError) as e:
            raise ConfigError(f"vf:{taskset_id}: verifiers cannot load this taskset: {type(e).__name__}: "
                              f"{e}".split("\n", 1)[0]) from e
        if num_tasks is not None:
            return loaded.take(num_tasks)
        if not loaded.bounded:
            raise ConfigError(f"vf:{taskset_id} is an infinite taskset: bound it with -k num_tasks=N.")
        return loaded

    @staticmethod
    def _task_id(task: Any) -> str:
        return str(task.data.id) if task.data.id is not None else str(task.data.idx)

    def _prompt(self, task: Any) -> str:
        return "\n\n".join(text for text in (task.data.system_prompt, task.data.prompt_text) if text)

    def make_tools(self) -> Sequence[Tool]:
        tools = []
        for index, server in enumerate([*self._shared, *self._per_task]):
            shared = index < len(self._shared)
            prefix = server.toolset.server_name
            for tool in server.tools():
                name = f"{prefix}_{tool.name}" if prefix else tool.name
                tools.append(Tool(name, tool.description or "", dict(tool.input_schema),
                                  self._caller(index, tool.name, shared)))
        return tools

    def _caller(self, index: int, raw: str, shared: bool) -> Any:
        def call(**arguments: Any) -> str:
            server = self._shared[index] if shared else self._per_task[index - len(self._shared)]
            return server.call(raw, arguments)

        return call

    def build_prompt(self, task: Task) -> str:
        if not self._tools:  # a single-turn taskset: its own prompt says how to answer
            return task.prompt
        return f"{task.prompt}\n\n{self.action_format.instructions(self._tools)}"

    # ---- episodes ------------------------------------------------------------------------------------------
    @property
    def vf_task(self) -> Any:
        return self.vf_tasks[self.task.id]

    def on_reset(self, task: Task) -> None:
        vf_task = self.vf_tasks[task.id]
        if self._per_task:  # the task's own tool servers: new for each episode, set up with the task
            task_cls = type(vf_task)
            self._per_task = [_Server(s, self._loop) for s in task_cls.toolsets(vf_task.config)]
            for server in self._per_task:
                self._loop.run(server.toolset.setup_task(vf_task))
        vf = self.vf
        data = vf_task.data
        self._messages = [vf.SystemMessage(content=data.system_prompt)] if data.system_prompt else []
        if isinstance(data.prompt, str):
            self._messages.append(vf.UserMessage(content=data.prompt))
        else:
            self._messages.extend(data.prompt or ())

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is not None and not self._done:
            self._record_turn(self._parse(action), action)
        observation, reward, terminated, truncated, info = super().step(action)
        vf = self.vf
        for k, (call, output) in enumerate(zip(info.get("tool_calls") or (), info.get("tool_outputs") or ())):
            self._messages.append(vf.ToolMessage(tool_call_id=f"call_{self.turn}_{k}", content=output,
                                                 name=call["name"]))
        if info.get("action_error"):
            self._messages.append(vf.UserMessage(content=observation))
        return observation, reward, terminated, truncated, info

    def _record_turn(self, parsed: ParsedAction, action: Any) -> None:
        """The assistant message of this turn, before the base step scores a final one."""
        vf, turn = self.vf, self.turn + 1
        if parsed.is_final:
            self._messages.append(vf.AssistantMessage(content=parsed.answer))
            return
        text = action if isinstance(action, str) else json.dumps(action, default=str)
        calls = [vf.ToolCall(id=f"call_{turn}_{k}", name=c.name, arguments=json.dumps(c.arguments))
                 for k, c in enumerate(parsed.tool_calls)] if parsed.error is None else None
        self._messages.append(vf.AssistantMessage(content=text, tool_calls=calls or None))

    def verify(self, outcome: str | None, task: Task) -> Score:
        """verifiers' own scoring (``Task.score``) of the episode as a trace: the weighted sum of its rewards."""
        trace = self._trace()
        self._loop.run(self.vf_task.score(trace, None))
        rewards = {name: (None if r is None else {"score": r.score, "weight": r.weight})
                   for name, r in trace.rewards.items()}
        unscored = sorted(name for name, r in trace.rewards.items() if r is None)
        reward = trace.reward
        return Score(reward=reward, correct=reward > 0 and not unscored,
                     details={"rewards": rewards, "metrics": dict(trace.metrics), "unscored": unscored,
                              "answer": outcome})

    def _trace(self) -> Any:
        from verifiers.v1.graph import MessageNode
        from verifiers.v1.state import state_cls
        from verifiers.v1.trace import AgentInfo, TraceTask

        vf, vf_task = self.vf, self.vf_task
        tools = [vf.Tool(name=s["function"]["name"], description=s["function"]["description"],
                         parameters=s["function"]["parameters"]) for s in self.tool_schemas()]
        nodes = [MessageNode(parent=i - 1 if i else None, message=m, tools=tools if i == 0 else [],
                             sampled=m.role == "assistant") for i, m in enumerate(self._messages)]
        return vf.Trace(task=TraceTask(type=type(vf_task).__name__, data=vf_task.data, key=vf_task.key,
                                       hash=vf_task.hash),
                        agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes, state=state_cls(type(vf_task))())

    def oracle_action(self) -> str:
        raise NotImplementedError("A verifiers taskset has no oracle: play it with a model, the random policy or "
                                  "an --agent.")

    def close(self) -> None:
        self._loop.close()
        super().close()
