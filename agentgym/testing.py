"""``agentgym.testing``: the checks an env's own tests run, the ones agentgym's tests run on its envs.

An env author's ``tests/test_env.py`` (what ``agentgym init`` writes)::

    import agentgym
    from agentgym.testing import check_against_server, check_env, check_verifier_attacks

    def test_env():
        check_env(agentgym.make("stockroom/Stockroom-v0"))         # API, determinism, oracle solves, empty fails

    def test_verifier_attacks():
        check_verifier_attacks("stockroom/Stockroom-v0")           # empty, echo, hedged, format-only: all < 1

    def test_served():
        check_against_server("stockroom/Stockroom-v0")             # a real `agentgym serve` plays as in process

Each raises ``EnvCheckFailed`` naming what broke. ``serving`` starts ``agentgym serve`` as a real process on a
free port (real uvicorn, real socket), for tests of one's own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym

from agentgym.core.checker import _local_twin, check_env
from agentgym.core.env import AgentEnv
from agentgym.core.formats import ActionFormat
from agentgym.errors import DependencyNotInstalled, EnvCheckFailed, RemoteEnvError, ResetNeeded

__all__ = ["BAD_ACTIONS", "VOLATILE_INFO_KEYS", "check_against_server", "check_env", "check_not_exploitable",
           "check_verifier_attacks", "conformance_episode", "free_port", "serving"]

#: agent mistakes every env must answer with an observation: text that is no action, and a call of a tool that
#: no env has (``search`` with a wrong argument, where an env has a ``search`` tool)
BAD_ACTIONS: tuple[Any, ...] = ("not an action", {"name": "search", "arguments": {"q": 1}})
#: info keys whose values may differ between two runs of the same episode (timings, ids); left out of comparisons
VOLATILE_INFO_KEYS = frozenset({"elapsed_s", "wall_s", "duration_s", "latency_s", "session_id", "episode_id",
                                "request_id"})
# wrong answers put beside the gold in hedged attacks when the tasks do not give two others
_DECOYS = ("unknown", "42", "none of them")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(*args: str, command: Sequence[str] | None = None, command_name: str = "serve",
            env: Mapping[str, str] | None = None, timeout_s: float = 60.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``agentgym serve *args`` (or ``agentgym <command_name>``) in a process on a free port, until the block ends.

    Yields the base URL and the process once ``/healthz`` answers 200; ``proc.stdout`` reads what the server
    wrote so far. ``command``: how to start agentgym (default: this Python's ``-m agentgym.cli``; another
    Python, e.g. a venv's, serves what is installed there); ``env``: variables set on top of this process's.
    """
    port = free_port()
    variables = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    start = list(command or [sys.executable, "-m", "agentgym.cli"])
    # The output goes to a file, never to a pipe nobody drains: a full pipe blocks the server in its next log
    # line. ``proc.stdout`` reads that file (what the server wrote so far, never blocking).
    fd, log_path = tempfile.mkstemp(prefix="agentgym-serve-", suffix=".log")
    with open(fd, "a") as log:
        proc = subprocess.Popen([*start, command_name, *args, "--port", str(port)], env=variables, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
    proc.stdout = open(log_path)  # noqa: SIM115 - its own offset; readable after the block too
    os.unlink(log_path)  # the open reader keeps it readable
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, command_name, timeout_s)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_healthy(url: str, proc: subprocess.Popen, command_name: str, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"agentgym {command_name} exited {proc.returncode}: {proc.stdout.read()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"agentgym {command_name} did not answer /healthz within {timeout_s} s")
        time.sleep(0.1)


def conformance_episode(env: gym.Env, env_id: str, *, seed: int, bad_actions: Sequence[Any] = BAD_ACTIONS,
                        env_kwargs: Mapping[str, Any] | None = None) -> list[tuple]:
    """One checked episode on ``env`` (in process or remote): reset, ``bad_actions``, then the oracle to the end.

    Checks: the first observation is non-empty text and a seeded reset repeats it; each bad action is an
    observation with ``action_error``, reward 0, the episode going on; the oracle ends it with reward 1; a step
    after the end raises. The oracle's actions come from a separate local env (``env_id``, ``env_kwargs``)
    stepped in lockstep. Returns the trajectory, ``[(obs, info), (obs, reward, terminated, truncated, info), ...]``,
    to compare between a local env and its remote twin.
    """
    def fail(message: str) -> EnvCheckFailed:
        return EnvCheckFailed(f"conformance ({env_id}, seed {seed}): {message}")

    from agentgym.core.registry import make

    obs, info = env.reset(seed=seed)
    if not isinstance(obs, str) or not obs or obs not in env.observation_space:
        raise fail(f"reset returned {obs!r}; expected non-empty text")
    missing = {"task_id", "tools", "turn", "action_error", "format"} - set(info)
    if missing:
        raise fail(f"reset's info lacks {sorted(missing)}")
    if env.reset(seed=seed)[0] != obs:
        raise fail("two resets with the same seed gave different observations")
    oracle = make(env_id, **dict(env_kwargs or {})).unwrapped
    try:
        oracle.reset(seed=seed)
        trajectory: list[tuple] = [(obs, info)]
        for action in bad_actions:
            oracle.step(action)
            bad = env.step(action)
            if bad[1] != 0.0 or bad[2] or not bad[4].get("action_error"):
                raise fail(f"the bad action {action!r} was not an observation with action_error (reward "
                           f"{bad[1]}, terminated {bad[2]}, action_error {bad[4].get('action_error')!r})")
            trajectory.append(bad)
        while not (trajectory[-1][2] or trajectory[-1][3]):
            action = oracle.oracle_action()
            oracle.step(action)
            trajectory.append(env.step(action))
    finally:
        oracle.close()
    last = trajectory[-1]
    if last[1] != 1.0 or not last[4].get("verification", {}).get("correct"):
        raise fail(f"the oracle ended the episode with reward {last[1]} (verification {last[4].get('verification')})")
    try:
        env.step("<answer>again</answer>")
    except (ResetNeeded, RemoteEnvError):
        return trajectory
    raise fail("step() after the episode ended did not raise ResetNeeded")


def check_against_server(env_id: str, *, seeds: Sequence[int] = (0, 1, 2), imports: Sequence[str] | None = None,
                         timeout_s: float = 60.0, **env_kwargs: Any) -> dict[str, Any]:
    """Serve ``env_id`` with a real ``agentgym serve`` process and play the same seeded episodes on it (through
    ``RemoteEnv``) and in process: the same observations, rewards, ends and infos (``VOLATILE_INFO_KEYS`` aside).

    Each episode is ``conformance_episode``: two agent mistakes, then the oracle to reward 1. ``env_kwargs`` go
    to both envs. The server finds the env as ``agentgym serve`` would: an installed package's entry point, or
    ``imports`` (modules or ``.py`` files, its ``--import``; default: the file that registered it, when one did,
    and whatever ``AGENTGYM_IMPORT`` names). Raises ``EnvCheckFailed`` at the first difference; returns
    ``{"seeds": [...], "steps": n}``.
    """
    from agentgym.core.registry import env_info, make

    for module in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise DependencyNotInstalled(f"agentgym serve ({module})", "pip install 'agentgym-suite[server]'")
    source = env_info(env_id).source
    if imports is None:
        imports = [source.removeprefix("file ")] if source.startswith("file ") else []
    args = [env_id, *(arg for spec in imports for arg in ("--import", str(spec)))]
    steps = 0
    try:
        with serving(*args, timeout_s=timeout_s) as (url, _):
            for seed in seeds:
                local, remote = make(env_id, **env_kwargs), make(env_id, remote=url, **env_kwargs)
                try:
                    expected = conformance_episode(local, env_id, seed=seed, env_kwargs=env_kwargs)
                    got = conformance_episode(remote, env_id, seed=seed, env_kwargs=env_kwargs)
                finally:
                    remote.close()
                    local.close()
                _compare(env_id, seed, expected, got)
                steps += len(got)
    except RuntimeError as e:  # the server did not come up
        raise EnvCheckFailed(f"check_against_server: {e}\n(an env registered by a module of your tests is unknown "
                             "to the server: pass imports=[the module or .py file that registers it])") from e
    return {"seeds": list(seeds), "steps": steps}


def _compare(env_id: str, seed: int, expected: list[tuple], got: list[tuple]) -> None:
    """The first step where the remote trajectory ``got`` differs from the local ``expected``, as an error."""
    names = ("observation", "reward", "terminated", "truncated", "info")
    for index, (mine, theirs) in enumerate(zip(expected, got)):
        fields = names[:1] + names[-1:] if len(mine) == 2 else names
        for name, a, b in zip(fields, mine, theirs):
            if name == "info":
                a, b = _stable(a), _stable(b)
            if a != b:
                raise EnvCheckFailed(f"check_against_server ({env_id}, seed {seed}): step {index}'s {name} differs"
                                     f"\n  in process: {a!r}\n  served:     {b!r}")
    if len(expected) != len(got):
        raise EnvCheckFailed(f"check_against_server ({env_id}, seed {seed}): the episode took {len(expected)} "
                             f"steps in process and {len(got)} served")


def _stable(value: Any) -> Any:
    """``value`` without ``VOLATILE_INFO_KEYS`` at any depth, tuples as lists (as JSON brings them back)."""
    if isinstance(value, Mapping):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE_INFO_KEYS}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    return value


def check_not_exploitable(env_id: str, *, episodes: int = 20, probes: Sequence[Any] = (), family: str | None = None,
                          **env_kwargs: Any) -> Any:
    """``agentgym probe`` from pytest: run the battery (``agentgym.probe``) on the first ``episodes`` tasks of
    ``env_id`` (made with ``env_kwargs``), with ``probes`` of your own (``agentgym.probe.Probe``, or functions
    ``fn(view) -> action``); raise ``AssertionError`` naming every probe that reached the success threshold, with
    its best episode's transcript. Returns the report (``ProbeReport``) when none did."""
    from agentgym.probe import Probe, probe_env, render

    extra = [p if isinstance(p, Probe) else Probe(getattr(p, "__name__", "probe").replace("_", "-"), "user",
                                                  (p.__doc__ or "a probe of yours").strip().splitlines()[0], p,
                                                  needs_answer=False) for p in probes]
    report = probe_env(env_id, episodes=episodes, env_kwargs=env_kwargs, extra=extra, family=family)
    if report.exploited_tasks:
        raise AssertionError(f"{env_id} can be exploited without doing the task:\n{render(report)}")
    return report


def check_verifier_attacks(env_or_id: gym.Env | str, *, n_tasks: int = 3, seed: int = 0,
                           **env_kwargs: Any) -> dict[str, float]:
    """Play the standard verifier attacks on ``n_tasks`` tasks: each must score below 1 where the oracle scores 1.

    The attacks answer at once, in the env's action format:

    - ``empty``: an empty or blank answer;
    - ``echo``: the task's question, and the whole first observation, sent back as the answer;
    - ``hedged``: several candidates at once, the gold among wrong ones (other tasks' answers):
      ``"Nairobi or Lima or Paris"``, ``"Lima, Nairobi, Paris"``, one per line, ``"Lima/Nairobi"``;
    - ``format``: formatting without an answer: ``<answer></answer>``, an answer tag inside the answer, junk.

    ``env_or_id``: an env id (made with ``env_kwargs``) or an env, in process or a ``RemoteEnv`` (the gold and
    the prompts come from a local twin). Raises ``EnvCheckFailed`` listing every attack that scored 1; returns
    the best reward each kind of attack got, and the oracle's (1.0).
    """
    from agentgym.core.registry import make

    env = make(env_or_id, **env_kwargs) if isinstance(env_or_id, str) else env_or_id
    inner = env.unwrapped
    local = _local_twin(inner)
    name = getattr(inner, "env_id", None) or (env.spec.id if env.spec else type(inner).__name__)
    try:
        if not local.action_format.has_answer:
            raise EnvCheckFailed(f"check_verifier_attacks ({name}): its action format has no answer action; the "
                                 "attacks are answers")
        count = min(n_tasks, len(local.tasks.tasks(local.split)))
        episodes = [_oracle_answer(env, local, name, seed + i, {"split": local.split, "index": i})
                    for i in range(count)]
        golds = [gold for gold, _, _ in episodes]
        best = {"oracle": 1.0}
        broken: list[str] = []
        for i, (gold, question, first) in enumerate(episodes):
            options = {"split": local.split, "index": i}
            for kind, action in _attacks(local.action_format, gold, question, first, golds):
                env.reset(seed=seed + i, options=options)
                _, reward, terminated, truncated, info = env.step(action)
                reward = float(reward) if terminated or truncated else 0.0
                best[kind] = max(best.get(kind, 0.0), reward)
                if reward >= 1.0:
                    broken.append(f"{kind} on task {info.get('task_id')!r}: {action!r}")
    finally:
        if local is not inner:
            local.close()
        if isinstance(env_or_id, str):
            env.close()
    if broken:
        raise EnvCheckFailed(f"check_verifier_attacks ({name}): the verifier gave reward 1 to {len(broken)} "
                             "attack(s):\n  " + "\n  ".join(broken))
    return best


def _oracle_answer(env: gym.Env, local: AgentEnv, name: str, seed: int,
                   options: dict[str, Any]) -> tuple[str, str, str]:
    """The oracle's final answer on one task (it must score 1), the task's question and the first observation."""
    first, _ = env.reset(seed=seed, options=options)
    if local is not env.unwrapped:
        local.reset(seed=seed, options=options)
    question = local.task.prompt
    for _ in range(local.max_turns):
        action = local.oracle_action()
        _, reward, terminated, truncated, info = env.step(action)
        if local is not env.unwrapped:
            local.step(action)
        if terminated or truncated:
            break
    if reward < 1.0 or not info.get("answer"):
        raise EnvCheckFailed(f"check_verifier_attacks ({name}): the oracle scored {reward} on task "
                             f"{info.get('task_id')!r} with the answer {info.get('answer')!r}; it must score 1 "
                             "with an answer for the attacks to mean anything")
    return str(info["answer"]), question, first


def _attacks(action_format: ActionFormat, gold: str, question: str, first: str,
             golds: Sequence[str]) -> list[tuple[str, Any]]:
    """The (kind, action) pairs of the standard attacks on one task whose correct answer is ``gold``."""
    def same(a: str, b: str) -> bool:
        return a.strip().lower() == b.strip().lower()

    others = [g for g in dict.fromkeys(golds) if not same(g, gold)]
    wrong = [*others, *(d for d in _DECOYS if not same(d, gold))][:2]
    answer = action_format.render_answer
    tag = "<answer></answer>"
    return [
        ("empty", answer("")), ("empty", answer("   ")),
        ("echo", answer(question)), ("echo", answer(first)),
        ("hedged", answer(f"{wrong[0]} or {gold} or {wrong[1]}")), ("hedged", answer(f"{gold}, {', '.join(wrong)}")),
        ("hedged", answer("\n".join([wrong[0], gold, wrong[1]]))), ("hedged", answer(f"{gold}/{wrong[0]}")),
        ("format", tag), ("format", "<answer> </answer>"), ("format", answer(tag)), ("format", answer("</answer>")),
        ("format", answer("lorem ipsum dolor")), ("format", answer("\\boxed{}")),
    ]
