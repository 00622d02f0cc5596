"""``AgentEnv``: the Gymnasium contract for text agents with tools and a verifier."""

from __future__ import annotations

import string
from abc import ABCMeta, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym

from agentgym.core.formats import ActionFormat, DictFormat, ParsedAction, ToolResult, check_calls, get_format
from agentgym.core.task import Task, TaskSource
from agentgym.core.tools import Tool, ToolCall
from agentgym.errors import ConfigError, ResetNeeded, ToolError
from agentgym.verifiers.score import Score

__all__ = ["AgentEnv", "TextSpace"]

_SAMPLE_CHARS = string.ascii_letters + string.digits + string.punctuation + " \n"


class TextSpace(gym.spaces.Space[str]):
    """Any Unicode string up to ``max_length`` characters (Gymnasium's ``Text`` limits the charset)."""

    def __init__(self, max_length: int = 1_000_000, seed: int | None = None) -> None:
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(1, 64))
        return "".join(self.np_random.choice(list(_SAMPLE_CHARS), size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length


class AgentEnv(gym.Env[str, str], metaclass=ABCMeta):
    """A text env: ``reset`` gives the task prompt, ``step(text)`` runs the agent's tool calls.

    Subclasses provide the tools (``make_tools``), the prompt (``build_prompt``),
    the verifier (``verify``) and the privileged oracle (``oracle_action``).
    ``reward`` is 0 until the episode ends, then the verifier's reward.
    A malformed action is an observation that says what was wrong, never an
    exception; it counts a turn and is reported in ``info["action_error"]``.
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(self, *, tasks: TaskSource, action_format: str | ActionFormat = "tags",
                 split: str = "test", max_turns: int = 8, max_observation_chars: int = 8_000,
                 render_mode: Literal["ansi", "human"] | None = None) -> None:
        if max_turns < 1:
            raise ConfigError(f"max_turns must be >= 1, got {max_turns}.")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}.")
        if split not in tasks.splits():
            raise ConfigError(f"Unknown split {split!r}; this env has splits {tasks.splits()}.")
        self.tasks = tasks
        self.action_format = get_format(action_format)
        self.split = split
        self.max_turns = max_turns
        self.max_observation_chars = max_observation_chars
        self.render_mode = render_mode
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self._tools: dict[str, Tool] = {t.name: t for t in self.make_tools()}
        self._task: Task | None = None
        self._turn = 0
        self._done = True
        self._transcript: list[tuple[str, str]] = []

    # ---- hooks for subclasses -------------------------------------------------
    def make_tools(self) -> Sequence[Tool]:
        """The tools of this env, built once per env instance."""
        return ()

    def build_prompt(self, task: Task) -> str:
        """The first observation: the task and how to act."""
        return f"{task.prompt}\n\n{self.action_format.instructions(self._tools)}"

    @abstractmethod
    def verify(self, answer: str | None, task: Task) -> Score:
        """Score the final answer (None when the episode ran out of turns)."""

    @abstractmethod
    def oracle_action(self) -> str | Mapping[str, Any]:
        """The next action of a privileged policy that solves the current task."""

    def on_reset(self, task: Task) -> None:
        """Reset per-episode state of the subclass."""

    def result_tag(self, call: ToolCall) -> str:
        """The tag the ``tags`` format wraps a tool's output in."""
        return "result"

    def episode_outcome(self) -> str | None:
        """The answer when a tool call ended the episode (a purchase, a submit), else None.

        Envs whose episodes end by an action in the world rather than by an answer
        return the outcome here after each turn; it is what ``verify`` scores.
        """
        return None

    def extra_info(self) -> dict[str, Any]:
        """Env-specific entries of ``info`` (for example WebShop's available actions)."""
        return {}

    # ---- public API -----------------------------------------------------------
    @property
    def tools(self) -> Mapping[str, Tool]:
        return dict(self._tools)

    @property
    def task(self) -> Task:
        if self._task is None:
            raise ResetNeeded("Call reset() before using the env.")
        return self._task

    @property
    def turn(self) -> int:
        return self._turn

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for _, t in sorted(self._tools.items())]

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode. ``options``: ``task_id``, or ``split`` and/or ``index``."""
        super().reset(seed=seed)
        self._task = self._pick_task(options or {})
        self._turn = 0
        self._done = False
        self.on_reset(self._task)
        prompt = self.build_prompt(self._task)
        self._transcript = [("prompt", prompt)]
        return prompt, self._info(action_error=None)

    def _pick_task(self, options: Mapping[str, Any]) -> Task:
        unknown = set(options) - {"task_id", "split", "index"}
        if unknown:
            raise ConfigError(f"Unknown reset option(s) {sorted(unknown)}; use task_id, split or index.")
        if "task_id" in options:
            return self.tasks.get(str(options["task_id"]))
        split = options.get("split", self.split)
        tasks = self.tasks.tasks(split)
        if "index" in options:
            index = options["index"]
            if not isinstance(index, int) or not 0 <= index < len(tasks):
                raise ConfigError(f"index must be an int in [0, {len(tasks)}) for split {split!r}, got {index!r}.")
            return tasks[index]
        return tasks[int(self.np_random.integers(len(tasks)))]

    def step(self, action: str | Mapping[str, Any] | list[Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None or self._done:
            raise ResetNeeded("The episode is over (or never started): call reset() before step().")
        self._turn += 1
        self._transcript.append(("action", action if isinstance(action, str) else repr(action)))
        parsed = self._parse(action)
        if parsed.error is not None:
            observation, answer, error = parsed.error, None, parsed.error
            results: list[ToolResult] = []
        elif parsed.is_final:
            observation, answer, error, results = "", parsed.answer, None, []
        else:
            results = [self._run(call) for call in parsed.tool_calls]
            observation, answer, error = self.action_format.render_results(results), None, None
            answer = self.episode_outcome()
        terminated = parsed.is_final or answer is not None
        truncated = not terminated and self._turn >= self.max_turns
        info = self._info(action_error=error, tool_calls=[r.call.as_dict() for r in results],
                          tool_outputs=[r.output for r in results])
        reward = 0.0
        if terminated or truncated:
            self._done = True
            score = self.verify(answer, self._task)
            reward = float(score.reward)
            info["verification"] = score.as_dict()
            info["answer"] = answer
        self._transcript.append(("observation", observation))
        if self.render_mode == "human":
            self.render()
        return observation, reward, terminated, truncated, info

    def _parse(self, action: Any) -> ParsedAction:
        if isinstance(action, str):
            parsed = self.action_format.parse(action, self._tools)
        elif isinstance(action, (Mapping, list, tuple)):  # a tuple is the list JSON would make of it
            parsed = DictFormat().parse(list(action) if isinstance(action, tuple) else action, self._tools)
        else:
            # The message does not name the type: over HTTP a number or None arrives as itself and what JSON
            # cannot carry arrives as null, and a remote env must answer as this one does (see RemoteEnv).
            parsed = ParsedAction(error="Unsupported action: send text, or a dict like {'name': ..., "
                                        "'arguments': {...}} (or a list of them).")
        return check_calls(parsed, self._tools) if parsed.error is None else parsed

    def _run(self, call: ToolCall) -> ToolResult:
        try:
            output = self._tools[call.name](call)
        except ToolError as e:
            output = f"Tool {call.name!r} failed: {e}"
        if len(output) > self.max_observation_chars:
            output = output[: self.max_observation_chars] + f"\n[... truncated to {self.max_observation_chars} characters]"
        return ToolResult(call=call, output=output, result_tag=self.result_tag(call))

    def _info(self, *, action_error: str | None, **extra: Any) -> dict[str, Any]:
        task = self.task
        return {"task_id": task.id, "split": task.split, "turn": self._turn, "max_turns": self.max_turns,
                "format": self.action_format.name, "tools": self.tool_schemas(),
                "action_error": action_error, **self.extra_info(), **extra}

    def render(self) -> str | None:
        """``ansi``: the episode so far as text; ``human``: print the latest entries."""
        if self.render_mode == "human":
            print("\n".join(f"[{kind}] {body}" for kind, body in self._transcript[-2:]))
            return None
        return "\n".join(f"[{kind}] {body}" for kind, body in self._transcript)
