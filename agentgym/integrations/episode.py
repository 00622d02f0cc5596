"""Which agentgym env a trainer adapter opens, where, and which task it starts: read from the trainer's config
and dataset row (SkyRL's ``extras``, verl's ``interaction_kwargs``).

Every rollout of a GRPO group comes from the same dataset row, so naming the task in the row (``task_id``,
``index`` or ``seed``) is what makes the group share its starting task; a spec without one is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.errors import ConfigError

__all__ = ["EpisodeSpec", "info_subset", "task_prompts"]


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode's env and task.

    ``base_url`` None plays the env in this process (``agentgym.make``); otherwise a ``RemoteEnv`` plays it
    against ``agentgym serve`` at that address. ``task_id``, ``index`` and ``split`` are ``reset`` options,
    ``seed`` its seed (alone, it picks the task reproducibly).

    >>> EpisodeSpec.merge({"env_id": "agentgym/SearchQA-v0"}, {"index": 3, "seed": None}).index
    3
    """

    env_id: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    token: str | None = None
    timeout_s: float = 60.0
    task_id: str | None = None
    index: int | None = None
    split: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ConfigError(f"env_id must be an agentgym env id like 'agentgym/SearchQA-v0', got {self.env_id!r}.")
        if not isinstance(self.env_kwargs, Mapping):
            raise ConfigError(f"env_kwargs must be a mapping of env keyword arguments, got {self.env_kwargs!r}.")
        if self.task_id is None and self.index is None and self.seed is None:
            raise ConfigError(f"No task named for {self.env_id}: give task_id, index or seed in the dataset row, "
                              "so that every rollout of a GRPO group starts from the same task.")

    @classmethod
    def merge(cls, *layers: Mapping[str, Any] | None) -> EpisodeSpec:
        """A spec from settings layers (config, then row), later layers winning.

        A None value counts as unset, in ``env_kwargs`` too: a Parquet struct column fills the keys one row
        lacks with None.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        merged: dict[str, Any] = {}
        for layer in layers:
            for key, value in (layer or {}).items():
                if key not in names:
                    raise ConfigError(f"Unknown agentgym setting {key!r}; the settings are {', '.join(names)}.")
                if value is not None:
                    merged[key] = value
        if "env_id" not in merged:
            raise ConfigError("No env_id: name the agentgym env (e.g. 'agentgym/SearchQA-v0') in the adapter's "
                              "config or in the dataset row.")
        if isinstance(merged.get("env_kwargs"), Mapping):
            merged["env_kwargs"] = {k: v for k, v in merged["env_kwargs"].items() if v is not None}
        for key in ("index", "seed"):  # rows read back from Parquet or numpy carry numpy integers
            if key in merged:
                merged[key] = int(merged[key])
        return cls(**merged)

    def open(self) -> gym.Env:
        """The env, made here or opened on the server (the remote session starts at the first ``reset``)."""
        if self.base_url is None:
            from agentgym.core.registry import make

            return make(self.env_id, **self.env_kwargs)
        from agentgym.client.remote import RemoteEnv

        return RemoteEnv(self.env_id, self.base_url, token=self.token, env_kwargs=dict(self.env_kwargs),
                         timeout_s=self.timeout_s)

    def reset(self, env: gym.Env) -> tuple[str, dict[str, Any]]:
        """Start this spec's task on ``env``: ``(task prompt, info)``."""
        options = {k: v for k, v in (("task_id", self.task_id), ("index", self.index), ("split", self.split))
                   if v is not None}
        return env.reset(seed=self.seed, options=options or None)

    def with_env_default(self, key: str, value: Any) -> EpisodeSpec:
        """This spec with ``env_kwargs[key]`` set to ``value`` unless the settings already set it."""
        if key in self.env_kwargs:
            return self
        return dataclasses.replace(self, env_kwargs={**self.env_kwargs, key: value})


def info_subset(info: Mapping[str, Any], terminated: bool, truncated: bool) -> dict[str, Any]:
    """What a trainer keeps of a step's ``info``: small and JSON-ready (no tool schemas, no tool outputs)."""
    kept = {k: info[k] for k in ("task_id", "turn", "action_error", "answer", "verification") if k in info}
    return {**kept, "terminated": terminated, "truncated": truncated}


def task_prompts(env_id: str, *, split: str = "train", env_kwargs: Mapping[str, Any] | None = None,
                 count: int | None = None) -> Iterator[tuple[str, str]]:
    """``(task_id, prompt)`` for the tasks of ``split`` (the first ``count``), in order: what a trainer's dataset rows hold."""
    from agentgym.core.registry import make

    env = make(env_id, **(env_kwargs or {})).unwrapped
    try:
        for task in env.tasks.tasks(split)[:count]:
            yield task.id, env.reset(options={"task_id": task.id})[0]
    finally:
        env.close()
