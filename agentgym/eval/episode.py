"""One episode: ``run_episode`` plays a policy on an env to the end and returns its ``EpisodeResult``, the record
written as one JSON line, with its provenance (env version, model, sampling, tokens, code version).

For a remote env, a ``shadow`` (a local copy stepped in lockstep) is what privileged policies read.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.core.env import AgentEnv
from agentgym.errors import ConfigError, RolloutError, describe
from agentgym.policies import Policy

__all__ = ["EpisodeResult", "action_text", "provenance", "run_episode"]

logger = logging.getLogger(__name__)

_VERSION = re.compile(r"-(v\d+)$")


@functools.cache
def _agentgym_version() -> str | None:
    from agentgym import __version__

    if __version__:
        return str(__version__)
    try:
        return importlib.metadata.version("agentgym-suite")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _git_commit() -> str | None:
    """HEAD of the checkout agentgym is imported from; None when it is not one (an installed wheel)."""
    package_dir = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], check=False, cwd=package_dir, capture_output=True, text=True,
                                  timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    top = git("rev-parse", "--show-toplevel")
    # a site-packages inside some other repository must not report that repository's commit
    if top is None or Path(top).resolve() != package_dir.parent:
        return None
    return git("rev-parse", "HEAD")


@dataclass
class EpisodeResult:
    """One finished episode, ready to be written as a JSON line.

    ``error`` is None, or why the episode failed (an exception from the env or
    the policy); a failed episode scores reward 0 and keeps its transcript so far.
    """

    env_id: str
    task_id: str
    split: str
    seed: int
    policy: str
    reward: float
    correct: bool
    turns: int
    tool_calls: int
    action_errors: int
    truncated: bool
    verification: dict[str, Any]
    wall_s: float
    transcript: list[dict[str, str]] = field(default_factory=list)
    env_version: str | None = None
    episode: int = 0
    key: str = ""
    model: str | None = None
    sampling: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    suite: str | None = None
    suite_version: str | None = None
    remote: str | None = None
    error: str | None = None
    agentgym_version: str | None = None
    git_commit: str | None = None
    #: the suite entry's label (``SuiteEntry.label``): the env id, plus ``[name]`` for a named entry
    entry: str | None = None
    #: which of the task's ``--samples`` rollouts this is (0: the first)
    sample: int = 0
    #: what the policy's model is (``agentgym.eval.fingerprint``); None for baselines and older records
    fingerprint: str | None = None
    #: a local model's batched episodes: seconds in the env (reset, steps, verification) and in the batch's
    #: generations while this episode played (shared with the batch); None on other paths and in older records
    env_s: float | None = None
    generate_s: float | None = None
    #: a local model's batched episodes: the kernel path its numbers took (``agentgym.lm.compute.kernel_path``),
    #: its dtype, ``--batch-size`` and how many episodes its batch held; greedy text can differ across any of
    #: them, so a run that mixes them is not reproducible. None on other paths and in older records
    compute: dict[str, Any] | None = None
    #: an agent's episode (``eval --agent``): its rollout's token-exact samples from the gateway, one per leaf
    #: (``token_ids``, ``loss_mask``, ``logprobs``; ``agentgym.gateway.records``); None on other paths
    samples: list[dict[str, Any]] | None = None
    #: an agent's episode: which agent (its spec, kind, source digest) and its rollout's counts; None otherwise
    agent: dict[str, Any] | None = None
    #: the final answer as the env read it (``info["answer"]``; a world outcome's text), what ``eval --rescore``
    #: scores again; None when the episode ended without one, and in older records
    answer: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeResult:
        """A result read back from a results line; fields it lacks keep their defaults, unknown keys are dropped."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class _Trace:
    """What an episode has produced so far; kept when it fails midway."""

    transcript: list[dict[str, str]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    reward: float = 0.0
    truncated: bool = False
    tool_calls: int = 0
    action_errors: int = 0
    #: the action of the step in progress, as text: kept in the transcript when that step raises
    pending: str | None = None


def _play(env: gym.Env, policy: Policy, trace: _Trace, *, seed: int, options: dict[str, Any] | None,
          shadow: AgentEnv | None) -> None:
    observation, trace.info = env.reset(seed=seed, options=options)
    if shadow is not None:
        _check_same(shadow.reset(seed=seed, options=options)[0], observation, 0)
    policy.reset(shadow if shadow is not None else env.unwrapped, observation, trace.info)
    trace.transcript.append({"role": "user", "content": observation})
    while True:
        action = policy.act(observation, trace.info)
        trace.pending = action_text(action, shadow or env)
        observation, reward, terminated, truncated, trace.info = env.step(action)
        if shadow is not None:
            _check_same(shadow.step(action)[0], observation, trace.info.get("turn", 0))
        trace.transcript.append({"role": "assistant", "content": trace.pending})
        trace.pending = None
        if observation:
            trace.transcript.append({"role": "tool", "content": observation})
        trace.tool_calls += len(trace.info.get("tool_calls", []))
        trace.action_errors += trace.info.get("action_error") is not None
        if terminated or truncated:
            trace.reward, trace.truncated = float(reward), bool(truncated)
            return


def action_text(action: Any, env: Any) -> str:
    """A step's action as the model would have written it in ``env``'s action format: a structured action (an
    oracle's ``{"answer": ...}``, a tool call dict) rendered by the format, so a transcript (and the SFT data made
    from it) holds valid actions, never Python's repr of a dict."""
    if isinstance(action, str):
        return action
    from agentgym.core.formats import DictFormat

    inner = getattr(env, "unwrapped", env)
    fmt, tools = getattr(inner, "action_format", None), getattr(inner, "tools", None)
    if fmt is None or not isinstance(tools, Mapping):
        return json.dumps(action, ensure_ascii=False, default=str)
    parsed = DictFormat().parse(action, tools)
    if parsed.error is not None or (parsed.tool_calls and any(c.name not in tools for c in parsed.tool_calls)):
        return json.dumps(action, ensure_ascii=False, default=str)
    if parsed.is_final:
        return fmt.render_answer(parsed.answer or "")
    return "\n".join(fmt.render_call(call, tools) for call in parsed.tool_calls)


def _check_same(local: str, remote: str, turn: int) -> None:
    if local != remote:
        raise RolloutError(f"The remote env and its local shadow diverged at turn {turn}: the server's data or "
                           "version differs from this machine's, so a privileged policy cannot play it.")


def run_episode(env: gym.Env, policy: Policy, *, seed: int, options: dict[str, Any] | None = None,
                env_id: str = "", shadow: AgentEnv | None = None) -> EpisodeResult:
    """Play one episode of ``env`` with ``policy`` to its end.

    An exception from the env or the policy ends the episode and is recorded in
    ``error`` (reward 0) instead of raised. ``shadow``, for a remote ``env``, is a
    local copy stepped in lockstep that the policy reads instead (for policies
    that need the env object: oracle, random).
    """
    from agentgym.client.remote import RemoteEnv
    from agentgym.cluster.env import RayEnv

    if not isinstance(env.unwrapped, (AgentEnv, RemoteEnv, RayEnv)):
        raise ConfigError(f"run_episode needs an agentgym env, got {type(env.unwrapped).__name__}.")
    env_id = env_id or (env.spec.id if env.spec else type(env.unwrapped).__name__)
    start = time.perf_counter()
    trace, error = _Trace(), None
    try:
        _play(env, policy, trace, seed=seed, options=options, shadow=shadow)
    except Exception as e:  # noqa: BLE001 - the RolloutError boundary: one bad episode never kills a run
        error = describe(e)  # with the line, when a user's env raised it
        trace.reward, trace.truncated = 0.0, False
        logger.warning("%s seed %s failed: %s", env_id, seed, error)
    answer = final_answer(trace.info, error)
    if error is not None and trace.pending is not None:  # the step that raised: its action stays on the record
        trace.transcript.append({"role": "assistant", "content": trace.pending})
        if error.startswith("JudgeError"):  # the answer the judge could not score, for a later --rescore
            answer = answer_of(trace.pending, shadow or env)
    info = trace.info
    verification = info.get("verification", {}) if error is None else {}
    return EpisodeResult(
        env_id=env_id, task_id=str(info.get("task_id", "")),
        split=str(info.get("split", (options or {}).get("split", ""))), seed=seed, policy=policy.name,
        reward=trace.reward, correct=bool(verification.get("correct", False)), turns=int(info.get("turn", 0)),
        tool_calls=trace.tool_calls, action_errors=trace.action_errors, truncated=trace.truncated,
        verification=verification, wall_s=round(time.perf_counter() - start, 4), transcript=trace.transcript,
        error=error, answer=answer, **provenance(env_id, policy))


def answer_of(text: str, env: Any) -> str | None:
    """The final answer ``text`` gives in ``env``'s action format (None where it gives none or the env is remote)."""
    inner = getattr(env, "unwrapped", env)
    fmt, tools = getattr(inner, "action_format", None), getattr(inner, "tools", None)
    if fmt is None or tools is None:
        return None
    parsed = fmt.parse(text, tools)
    return parsed.answer if parsed.is_final else None


def final_answer(info: Mapping[str, Any], error: str | None) -> str | None:
    """The episode's final answer for its record (``info["answer"]``), None for a failed or unanswered one."""
    answer = info.get("answer") if error is None else None
    return None if answer is None else str(answer)


def provenance(env_id: str, policy: Policy) -> dict[str, Any]:
    """The fields that say what produced an episode: env version, model, sampling, tokens, code version."""
    version = _VERSION.search(env_id)
    usage = getattr(policy, "usage", None) or {}
    return {"env_version": version.group(1) if version else None, "model": policy.model,
            "sampling": policy.sampling.as_dict() if policy.sampling is not None else None,
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
            "agentgym_version": _agentgym_version(), "git_commit": _git_commit()}
