"""``EpisodeWorker``: one thread's own policy and envs, reused across the episodes it plays."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import gymnasium as gym

from agentgym.core.env import AgentEnv
from agentgym.core.registry import make
from agentgym.eval.episode import EpisodeResult, provenance, run_episode
from agentgym.eval.plan import PlannedEpisode
from agentgym.policies import Policy
from agentgym.policies.chat import ChatPolicy

__all__ = ["EpisodeWorker"]

logger = logging.getLogger(__name__)


class EpisodeWorker:
    """One thread's own policy and envs (one per env id and kwargs), reused across its episodes."""

    def __init__(self, policy: Policy, remote: str | None) -> None:
        self.policy, self.remote = policy, remote
        # Model policies read only observations; the others (oracle, random) read the env object,
        # which a RemoteEnv does not carry, so they play a local shadow stepped in lockstep.
        self.needs_shadow = remote is not None and not isinstance(policy, ChatPolicy)
        self.envs: dict[str, tuple[gym.Env, AgentEnv | None]] = {}

    def _envs(self, planned: PlannedEpisode) -> tuple[gym.Env, AgentEnv | None]:
        name = json.dumps([planned.env_id, dict(planned.env_kwargs)], sort_keys=True)
        if name not in self.envs:
            remote = {"remote": self.remote} if self.remote else {}
            env = make(planned.env_id, **planned.env_kwargs, **remote)
            shadow = make(planned.env_id, **planned.env_kwargs).unwrapped if self.needs_shadow else None
            self.envs[name] = env, shadow
        return self.envs[name]

    def play(self, planned: PlannedEpisode, key: str) -> EpisodeResult:
        self.policy.seed(planned.seed)
        options = {"split": planned.split, "index": planned.task_index}
        try:
            env, shadow = self._envs(planned)
        except Exception as e:  # noqa: BLE001 - an env that cannot be made fails its episodes, not the run
            result = EpisodeResult(planned.env_id, "", planned.split, planned.seed, self.policy.name, 0.0, False,
                                   0, 0, 0, False, {}, 0.0, error=f"{type(e).__name__}: {e}",
                                   **provenance(planned.env_id, self.policy))
        else:
            result = run_episode(env, self.policy, seed=planned.seed, options=options, env_id=planned.env_id,
                                 shadow=shadow)
        if result.error is not None:  # start the next episode on a fresh env (and a fresh remote session)
            self.close_envs()
        return replace(result, episode=planned.episode, key=key, suite=planned.suite,
                       suite_version=planned.suite_version, remote=self.remote, entry=planned.entry,
                       sample=planned.sample)

    def close_envs(self) -> None:
        for env, shadow in self.envs.values():
            for closable in (env, shadow):
                try:
                    if closable is not None:
                        closable.close()
                except Exception as e:  # noqa: BLE001 - closing a broken env must not hide the real error
                    logger.warning("closing an env failed: %s", e)
        self.envs.clear()
