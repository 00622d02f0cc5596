"""An agentgym env as a SkyRL-Gym env (``skyrl_gym.envs.base_text_env.BaseTextEnv``), in process or over HTTP.

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(env_class, env_config=..., extras=row)``,
where ``row`` is the dataset row minus its prompt and ``env_class``, plus ``max_turns`` (``generator.max_turns``).
The adapter reads its settings (see ``EpisodeSpec``) from three layers, later winning: the keyword arguments
given to ``register_skyrl_env``, ``env_config``, and the row's ``agentgym`` column (``skyrl_rows`` writes it).
SkyRL's ``max_turns`` becomes the env's unless ``env_kwargs`` sets one.

Infrastructure failures (``RemoteEnvError``, ``SandboxError``, any exception of the env) are raised, after the
env is closed: SkyRL's generator has no per-trajectory error path, and a failure reported as reward 0 would
train on it. Agent mistakes are observations, as in agentgym.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentgym.errors import DependencyNotInstalled, ResetNeeded, RolloutError
from agentgym.integrations.episode import EpisodeSpec, info_subset, task_prompts

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:  # the class below raises DependencyNotInstalled when made
    BaseTextEnv, BaseTextEnvStepOutput = object, dict

__all__ = ["ENTRY_POINT", "SKYRL_INSTALL", "AgentGymTextEnv", "register_skyrl_env", "skyrl_rows"]

SKYRL_INSTALL = "pip install 'agentgym-suite[skyrl]'"
ENTRY_POINT = "agentgym.integrations.skyrl:AgentGymTextEnv"
ROW_KEY = "agentgym"  # the dataset column with the row's settings


class AgentGymTextEnv(BaseTextEnv):
    """One agentgym episode behind SkyRL-Gym's ``init`` / ``step`` / ``close``.

    ``init`` starts the row's task and returns its prompt as the user message (the row's system messages
    kept); ``step`` plays the model's text and returns the observation as a user message, the reward, done
    (terminated or truncated) and a small ``metadata`` (task id, turn, action error, answer, verification).
    """

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None,
                 **settings: Any) -> None:
        if BaseTextEnv is object:
            raise DependencyNotInstalled("skyrl-gym (for the SkyRL-Gym adapter)", SKYRL_INSTALL)
        super().__init__()
        extras = extras or {}
        episode = EpisodeSpec.merge(settings, env_config, extras.get(ROW_KEY))
        if extras.get("max_turns") is not None:
            episode = episode.with_env_default("max_turns", int(extras["max_turns"]))
        self.episode = episode
        self.env = episode.open()
        self.action_errors = 0

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        observation, info = self._guard(self.episode.reset)
        self.turns, self.max_turns = 0, int(info.get("max_turns", self.max_turns))
        system = [message for message in prompt if message.get("role") == "system"]
        return [*system, {"role": "user", "content": observation}], {"task_id": info.get("task_id")}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        observation, reward, terminated, truncated, info = self._guard(lambda env: env.step(action))
        self.turns += 1
        self.action_errors += info.get("action_error") is not None
        return BaseTextEnvStepOutput(
            observations=[{"role": "user", "content": observation}] if observation else [],
            reward=float(reward), done=bool(terminated or truncated),
            metadata=info_subset(info, terminated, truncated))

    def close(self) -> None:
        if self.env is not None:
            env, self.env = self.env, None
            env.close()

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns, "action_errors": self.action_errors}

    def _guard(self, call: Callable[[Any], Any]) -> Any:
        """``call(env)``; on any failure close the env (SkyRL will not) and re-raise."""
        if self.env is None:
            raise ResetNeeded("This SkyRL env is closed (by close(), or after a failure); SkyRL makes a new one "
                              "per trajectory.")
        try:
            return call(self.env)
        except Exception:
            try:
                self.close()
            except RolloutError:  # a server that is down cannot close its session; the first error is the news
                pass
            raise


def register_skyrl_env(name: str = "agentgym", **settings: Any) -> None:
    """Register agentgym envs in skyrl_gym's registry as ``name``, for SkyRL's ``environment.env_class`` (or
    a row's ``env_class``). ``settings`` (``env_id``, ``base_url``, ``env_kwargs``, ...) apply to every env
    made under that name; rows override them. Like ``skyrl_gym.register``, it refuses a name taken."""
    try:
        from skyrl_gym.envs.registration import register
    except ImportError as e:
        raise DependencyNotInstalled("skyrl-gym (for the SkyRL-Gym adapter)", SKYRL_INSTALL) from e
    register(id=name, entry_point=ENTRY_POINT, kwargs=settings)


def skyrl_rows(env_id: str, *, split: str = "train", env_class: str = "agentgym",
               env_kwargs: Mapping[str, Any] | None = None, count: int | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per task of ``split`` (the first ``count``): the task prompt, ``env_class`` and the ``agentgym`` column
    naming the task. ``datasets.Dataset.from_list(rows).to_parquet(...)`` writes SkyRL's data file."""
    settings = {"env_id": env_id, **({"env_kwargs": dict(env_kwargs)} if env_kwargs else {})}
    return [{"data_source": env_id, "prompt": [{"role": "user", "content": prompt}], "env_class": env_class,
             ROW_KEY: {**settings, "task_id": task_id}}
            for task_id, prompt in task_prompts(env_id, split=split, env_kwargs=env_kwargs, count=count)]
