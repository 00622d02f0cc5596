"""``AgentEnv``: the Gymnasium contract for text agents with tools and a verifier."""

from __future__ import annotations

import dataclasses
import inspect
import string
import typing
from abc import ABCMeta, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

import gymnasium as gym

from agentgym.core.formats import ActionFormat, DictFormat, ParsedAction, ToolResult, check_calls, get_format
from agentgym.core.task import Task, TaskSource
from agentgym.core.tools import Tool, ToolCall
from agentgym.errors import ConfigError, ResetNeeded, ToolError
from agentgym.verifiers.outcome import answer_text
from agentgym.verifiers.score import Score

__all__ = ["AgentEnv", "EnvDefaults", "OutcomeT", "TextSpace"]

# What an env's episodes end with, as its ``verify`` takes it: ``str`` (the answer) for envs that end with an
# answer, an ``agentgym.verifiers.Outcome`` (a purchase, a game's end, a patch) for envs that end in the world.
OutcomeT = TypeVar("OutcomeT")

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


@dataclass(frozen=True)
class EnvDefaults:
    """The keyword arguments every agentgym env takes, and their defaults.

    A subclass of ``AgentEnv`` declares its own defaults once,
    ``defaults = EnvDefaults(max_turns=6)``, takes these arguments as ``**base``
    after its own, and passes them on unread: ``super().__init__(tasks=..., **base)``.
    Its signature, as ``help()``, ``gym.make``'s keyword checks and the server read
    it, then lists them with the class's defaults.
    """

    action_format: str | ActionFormat = "tags"
    split: str = "test"
    max_turns: int = 8
    max_observation_chars: int = 8_000
    render_mode: Literal["ansi", "human"] | None = None
    #: an ``agentgym.Rubric`` whose reward replaces the env's: ``Part(name, "env")`` is the env's own verdict, the
    #: other parts score the outcome or the transcript (a format part beside correctness). The operator's, never a
    #: remote client's.
    rubric: Any = None


_BASE_NAMES = frozenset(f.name for f in dataclasses.fields(EnvDefaults))


class AgentEnv(gym.Env[str, str], Generic[OutcomeT], metaclass=ABCMeta):
    """A text env: ``reset`` gives the task prompt, ``step(text)`` runs the agent's tool calls.

    Subclasses provide the tools (``make_tools``), the prompt (``build_prompt``),
    the verifier (``verify``) and the privileged oracle (``oracle_action``);
    ``AgentEnv[OutcomeT]`` names what ``verify`` scores (``str`` for an answer, or
    an ``agentgym.verifiers.Outcome``). ``reward`` is 0 until the episode ends, then
    the verifier's reward. A malformed action is an observation that says what was
    wrong, never an exception; it counts a turn and is reported in ``info["action_error"]``.
    """

    metadata = {"render_modes": ["ansi", "human"]}
    defaults: ClassVar[EnvDefaults] = EnvDefaults()
    #: how many tasks ``agentgym.check_env`` has the oracle solve (twice each) unless told: None is the checker's
    #: default (every task of the split, up to 100); an env whose episodes are costly (a real browser) names fewer
    check_tasks: ClassVar[int | None] = None

    def __init__(self, *, tasks: TaskSource, **base: Any) -> None:
        """``base``: the keyword arguments of ``EnvDefaults``, the class's ``defaults`` for those not given."""
        unknown = sorted(set(base) - _BASE_NAMES)
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        settings = dataclasses.replace(self.defaults, **base)
        if settings.max_turns < 1:
            raise ConfigError(f"max_turns must be >= 1, got {settings.max_turns}.")
        if settings.render_mode is not None and settings.render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}, "
                              f"got {settings.render_mode!r}.")
        if settings.split not in tasks.splits():
            raise ConfigError(f"Unknown split {settings.split!r}; this env has splits {tasks.splits()}.")
        self.tasks = tasks
        self.action_format = self.make_action_format(settings.action_format)
        self.split = settings.split
        self.max_turns = settings.max_turns
        self.max_observation_chars = settings.max_observation_chars
        self.render_mode = settings.render_mode
        if settings.rubric is not None and not hasattr(settings.rubric, "parts"):
            raise ConfigError(f"rubric: expected an agentgym.Rubric, got {type(settings.rubric).__name__}.")
        self.rubric = settings.rubric
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self._tools: dict[str, Tool] = {t.name: t for t in self.make_tools()}
        self._task: Task | None = None
        self._answer: str | None = None
        self._turn = 0
        self._done = True
        self._transcript: list[tuple[str, str]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__signature__" not in cls.__dict__:  # a parent's generated signature is not the subclass's
            cls.__signature__ = _signature(cls)  # type: ignore[attr-defined]

    # ---- hooks for subclasses -------------------------------------------------
    def make_action_format(self, spec: str | ActionFormat) -> ActionFormat:
        """The action format named ``spec`` (an ``ActionFormat`` is itself); an env adds its own names here."""
        return get_format(spec)

    def make_tools(self) -> Sequence[Tool]:
        """The tools of this env, built once per env instance."""
        return ()

    def build_prompt(self, task: Task) -> str:
        """The first observation: the task and how to act."""
        return f"{task.prompt}\n\n{self.action_format.instructions(self._tools)}"

    @abstractmethod
    def verify(self, outcome: OutcomeT | None, task: Task) -> Score:
        """Score what the episode ended with (None: nothing, e.g. it ran out of turns without an answer)."""

    @abstractmethod
    def oracle_action(self) -> str | Mapping[str, Any]:
        """The next action of a privileged policy that solves the current task."""

    def on_reset(self, task: Task) -> None:
        """Reset per-episode state of the subclass."""

    def result_tag(self, call: ToolCall) -> str:
        """The tag the ``tags`` format wraps a tool's output in."""
        return "result"

    def episode_outcome(self) -> OutcomeT | None:
        """What the episode ended with, typed as ``verify`` takes it; None while it goes on.

        Asked after every turn: an outcome ends the episode. By default it is the
        agent's final answer (``str``). Envs whose episodes end by an action in the
        world (a purchase, a won game, a submit) return that action's outcome.
        """
        return self._answer  # type: ignore[return-value]  # OutcomeT is str for envs that keep this default

    def default_outcome(self) -> OutcomeT | None:
        """What ``verify`` scores when the episode ends without an ``episode_outcome``: it ran out of turns,
        or the agent answered where the world decides. None (nothing) unless the env says otherwise."""
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
        self._answer = None
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
        results: list[ToolResult] = []
        if parsed.error is not None:
            observation, error = parsed.error, parsed.error
        elif parsed.is_final:
            observation, error = "", None
            self._answer = parsed.answer
        else:
            results = [self._run(call) for call in parsed.tool_calls]
            observation, error = self.action_format.render_results(results), None
            if parsed.note:  # part of the turn was not read: never silently (an answer after a tool call)
                observation += ("" if observation.endswith("\n") else "\n\n") + parsed.note
        outcome = None if parsed.error is not None else self.episode_outcome()
        terminated = parsed.is_final or outcome is not None
        truncated = not terminated and self._turn >= self.max_turns
        info = self._info(action_error=error, tool_calls=[r.call.as_dict() for r in results],
                          tool_outputs=[r.output for r in results])
        reward = 0.0
        if terminated or truncated:
            self._done = True
            final = outcome if outcome is not None else self.default_outcome()
            score = self.verify(final, self._task)
            if self.rubric is not None:  # the env's verdict as one part of a rubric
                score = self.rubric(final, self._task.rubric_view(), self._transcript, env_score=score)
            reward = float(score.reward)
            info["verification"] = score.as_dict()
            # the wire form: the answer the agent wrote, or the world's outcome as text (a purchase as JSON)
            info["answer"] = parsed.answer if parsed.is_final else answer_text(outcome)
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


def _signature(cls: type) -> inspect.Signature | None:
    """The signature of an env class that declares ``defaults`` and takes ``**base``: its own keyword arguments,
    then those of ``EnvDefaults`` with its defaults. None otherwise (Python reads ``__init__`` itself)."""
    if "defaults" not in cls.__dict__:
        return None
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    if not params or params[-1].kind is not inspect.Parameter.VAR_KEYWORD:
        return None
    own = {p.name for p in params}
    hints = typing.get_type_hints(EnvDefaults)
    base = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=getattr(cls.defaults, f.name),
                              annotation=hints[f.name])
            for f in dataclasses.fields(EnvDefaults) if f.name not in own]
    return inspect.Signature([*params[:-1], *base])
