"""The policy interface (``Policy``, ``Sampling``) and the baselines: oracle, empty, random."""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any

from agentgym.core.env import AgentEnv
from agentgym.core.tools import ToolCall
from agentgym.errors import ConfigError

__all__ = ["EmptyPolicy", "OraclePolicy", "Policy", "RandomPolicy", "Sampling"]

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass(frozen=True)
class Sampling:
    """How a model policy samples; recorded with every episode. ``temperature=0`` is greedy."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}.")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}.")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Policy(ABC):
    """Maps the latest observation (and ``info``) to the next action text.

    ``model`` names what produces the actions (a model path or id; None for
    baselines) and ``sampling`` how it samples; ``usage`` counts the episode's
    prompt and completion tokens (0 for policies without a model).
    """

    name: str = ""
    model: str | None = None
    sampling: Sampling | None = None

    def reset(self, env: AgentEnv, observation: str, info: dict[str, Any]) -> None:
        """Called after ``env.reset``; ``env`` is the unwrapped env (for privileged policies)."""
        self.env = env
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    @abstractmethod
    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any] | list[dict[str, Any]]:
        """The next action."""

    def seed(self, seed: int) -> None:
        """Make the next episode a function of ``seed`` alone (the runner calls it before each episode),
        whichever worker runs it and in whatever order."""

    def close(self) -> None:
        """Release what the policy holds (connections; loaded models stay cached per process)."""


class OraclePolicy(Policy):
    """Solves tasks from privileged task data through the env's ``oracle_action``."""

    name = "oracle"

    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any]:
        return self.env.oracle_action()


class EmptyPolicy(Policy):
    """Gives an empty final answer at once: the floor every verifier must score 0."""

    name = "empty"

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.action_format.render_answer("")


class RandomPolicy(Policy):
    """Calls random tools with words from what it has seen, then answers a random span of it.

    A seeded lower baseline that exercises every tool and the answer path.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def reset(self, env: AgentEnv, observation: str, info: dict[str, Any]) -> None:
        super().reset(env, observation, info)
        self.words = _WORD.findall(observation)
        self.rng.seed(f"{self.rng.random()}/{info.get('task_id')}")

    def seed(self, seed: int) -> None:
        self.rng.seed(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.words.extend(_WORD.findall(observation))
        words = self.words or ["nothing"]
        last_turn = info.get("turn", 0) + 1 >= info.get("max_turns", 1)
        tools = self.env.tools
        if tools and not last_turn and self.rng.random() < 0.6:
            name = self.rng.choice(sorted(tools))
            arg = tools[name].primary_argument
            query = " ".join(self.rng.choices(words, k=self.rng.randint(1, 4)))
            return self.env.action_format.render_call(ToolCall(name, {arg: query} if arg else {}), tools)
        start = self.rng.randrange(len(words))
        return self.env.action_format.render_answer(" ".join(words[start:start + self.rng.randint(1, 3)]))
