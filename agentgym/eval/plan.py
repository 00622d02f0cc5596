"""The plan: every episode a suite (or a list of entries) asks for, each keyed by what determines it."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.core.registry import make
from agentgym.errors import ConfigError
from agentgym.eval.suites import Suite, SuiteEntry
from agentgym.policies import Policy

__all__ = ["PlannedEpisode", "plan_episodes"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedEpisode:
    """Episode ``episode`` of an entry: task ``task_index`` of ``split``, reset with ``seed``; ``sample`` is which
    of the task's ``--samples`` rollouts it is (0 for the first, which is the episode a one-sample run plays)."""

    env_id: str
    split: str
    episode: int
    task_index: int
    seed: int
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    suite: str | None = None
    suite_version: str | None = None
    entry: str | None = None
    sample: int = 0
    #: what the env is (``agentgym.eval.envdigest``): its code, kwargs, tasks and verifier; part of the key
    env_digest: str | None = None
    #: the task's id, where the entry selects tasks (``--difficulty``): episode ``i`` is then not task ``i``
    task_id: str | None = None

    def key(self, policy: Policy, fingerprint: str | None = None) -> str:
        """What identifies this episode's result in a results file; stable across runs and machines.

        ``fingerprint`` (``agentgym.eval.fingerprint``) names what the policy's
        model *is* (its weights, or what its endpoint serves), so a model changed
        under the same path or name gets new keys and is played afresh.
        """
        sampling = policy.sampling.as_dict() if policy.sampling is not None else None
        system = getattr(policy, "system_prompt", None)
        # each only when set: the keys of runs without one (a baseline's, a first sample's) stay as they were
        dtype = getattr(policy, "dtype", None)
        optional = {"system_prompt": system, "fingerprint": fingerprint, "suite_version": self.suite_version,
                    "sample": self.sample, "dtype": None if dtype in (None, "float32") else dtype,
                    "env_digest": self.env_digest, "task_id": self.task_id}
        return json.dumps({"env_id": self.env_id, "split": self.split, "episode": self.episode, "seed": self.seed,
                           "policy": policy.name, "model": policy.model, "sampling": sampling,
                           "env_kwargs": dict(self.env_kwargs), **{k: v for k, v in optional.items() if v}},
                          sort_keys=True, separators=(",", ":"))


def _count_tasks(env_id: str, split: str | None, env_kwargs: Mapping[str, Any],
                 remote: str | None = None, entry: SuiteEntry | None = None
                 ) -> tuple[str, int, str, list[tuple[int, str]] | None]:
    """The split (``None``: the env's default), its number of tasks, the env's digest and, where ``entry`` selects
    tasks by difficulty, the ``(index, id)`` of each task selected, in the split's order, from a local env: the
    pre-flight check that the env can be made here (a missing extra fails now, before any episode); from the
    server for a run on an ``agentgym serve`` (``remote``: its URL)."""
    from agentgym.eval.envdigest import env_digest

    selects = entry is not None and entry.difficulty is not None
    if remote is not None and remote.startswith(("http://", "https://")):
        if selects:
            raise ConfigError(f"{env_id}: --difficulty selects tasks by a difficulty card here, which a run on a "
                              "server cannot check against its tasks; run it locally.")
        from agentgym.client.remote import describe_remote_env

        described = describe_remote_env(remote, env_id, kwargs=dict(env_kwargs), split=split)
        if not described["tasks"]:
            raise ConfigError(f"{env_id} split {described['split']!r} has no tasks on {remote}; choose another "
                              "split.")
        return described["split"], int(described["tasks"]), str(described["env_digest"]), None

    env = make(env_id, **env_kwargs)
    try:
        source = env.unwrapped.tasks
        split = split or env.unwrapped.split
        if split not in source.splits():
            raise ConfigError(f"{env_id} has no split {split!r}; its splits are {source.splits()}.")
        tasks = list(source.tasks(split))
        n_tasks = len(tasks)
        digest = env_digest(env_id, env, env_kwargs, split) if n_tasks else ""
        selected = None
        if selects and n_tasks:
            from agentgym.core.difficulty import select_tasks

            chosen = set(select_tasks(env_id, entry.difficulty, tasks, split, card=entry.difficulty_card))
            selected = [(i, t.id) for i, t in enumerate(tasks) if t.id in chosen]
    finally:
        env.close()
    if n_tasks == 0:
        raise ConfigError(f"{env_id} split {split!r} has no tasks; choose another split.")
    return split, n_tasks, digest, selected


def _log_capped(label: str, asked: int, tasks: int) -> None:
    logger.warning("%s: %d episodes asked, but its split has %d tasks: each is played once (--samples K plays "
                   "each K times)", label, asked, tasks)


def _sample_seed(seed: int, episode: int, sample: int) -> int:
    """Sample 0 keeps ``seed + episode``; later samples get seeds of their own, the same on every machine."""
    if sample == 0:
        return seed + episode
    digest = hashlib.blake2b(f"{seed}/{episode}/{sample}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 33  # 31 bits: every env and sampler takes it


def plan_episodes(entries: Suite | Iterable[SuiteEntry], *, seed: int, env_kwargs: Mapping[str, Any] | None = None,
                  samples: int = 1, on_capped: Callable[[str, int, int], None] | None = None,
                  remote: str | None = None) -> list[PlannedEpisode]:
    """Every episode of ``entries``: episode ``i`` of an entry plays task ``i`` with seed ``seed + i``,
    ``samples`` times (sample ``j > 0`` with a seed derived from ``seed``, ``i`` and ``j``).

    ``episodes=None`` entries get one episode per task of the split (counted
    from a local env); ``split=None`` is the env's default split. ``env_kwargs``
    apply to every entry, over its own. An entry asking for more episodes than its split has tasks plays each
    task once (repeats would be counted as independent evidence; ``samples`` asks for repeats, which are counted
    per task): ``on_capped(label, asked, tasks)`` hears of it (default: a logged warning). With ``remote`` (an
    ``agentgym serve`` URL) the server says each entry's split, task count and env digest: the episodes are its
    env's, and its file or package need not be here.
    """
    if samples < 1:
        raise ConfigError(f"samples must be >= 1 (rollouts per task), got {samples}.")
    suite = entries if isinstance(entries, Suite) else None
    items = suite.entries if suite is not None else tuple(entries)
    labels = [e.label for e in items]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"Each entry may appear once in a plan (name repeated entries of one env); got {labels}.")
    plan = []
    for entry in items:
        kwargs = {**entry.env_kwargs, **(env_kwargs or {})}
        split, n_tasks, digest, selected = _count_tasks(entry.env_id, entry.split, kwargs, remote, entry)
        # the tasks episode i plays: task i of the split, or, selecting by difficulty, the i-th task selected
        indices = list(range(n_tasks)) if selected is None else [i for i, _ in selected]
        task_ids = [None] * n_tasks if selected is None else [t for _, t in selected]
        episodes = len(indices) if entry.episodes is None else entry.episodes
        if episodes > len(indices):
            (on_capped or _log_capped)(entry.label, episodes, len(indices))
            episodes = len(indices)
        plan.extend(PlannedEpisode(entry.env_id, split, i, indices[i], _sample_seed(seed, i, j), kwargs,
                                   suite.name if suite else None, suite.version if suite else None, entry.label, j,
                                   digest, task_ids[i])
                    for i in range(episodes) for j in range(samples))
    return plan
