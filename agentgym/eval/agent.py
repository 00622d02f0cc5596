"""``agentgym eval --agent``: each episode played by the user's own agent, its model calls through the gateway.

An agent is a Python function ``FILE.py:FUNCTION`` or ``module:FUNCTION`` taking one :class:`AgentTask` (the
task's prompt, this rollout's OpenAI ``base_url`` and ``model``, the env's tools as OpenAI schemas, ``call_tool``
and ``mcp_url``) and returning its final answer text, or None when it ended the episode through a tool; or a
program (``--agent-cmd``) that reads the prompt on stdin, finds its endpoints in environment variables
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``AGENTGYM_MODEL``, ``AGENTGYM_TOOLS_URL``, ``AGENTGYM_MCP_URL``,
``AGENTGYM_TOOLS``) and prints its answer on stdout.

The env's verifier scores every episode. What the agent does wrong is recorded on its episode as an error, one line
(never a silent 0 in the mean), and the run goes on: it raised, it ran past ``timeout_s`` (its rollout is closed, so
a late call is refused), it returned something other than text or None, it never called the model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.core.registry import make
from agentgym.errors import ConfigError, describe
from agentgym.eval.episode import EpisodeResult, final_answer, provenance
from agentgym.eval.plan import PlannedEpisode
from agentgym.gateway.chat import call_text
from agentgym.gateway.session import ToolSession
from agentgym.policies.base import Policy

__all__ = ["AgentPolicy", "AgentRun", "AgentSpec", "AgentTask", "load_agent", "play_agent_episode", "run_agent",
           "run_agent_plan"]

log = logging.getLogger(__name__)


@dataclass
class AgentTask:
    """What an agent gets for one episode."""

    prompt: str
    base_url: str
    model: str
    tools: list[dict[str, Any]]
    call_tool: Callable[..., str]
    mcp_url: str | None
    api_key: str = "agentgym"
    #: where the task comes from (for logs; a scripted agent may replay the env's oracle from them)
    env_id: str = ""
    task_id: str = ""
    split: str = ""
    seed: int = 0
    rollout_id: str = ""
    env_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentSpec:
    """The user's agent: a function (``target`` ``FILE:FUNCTION`` or ``module:FUNCTION``) or a command."""

    target: str | None = None
    command: str | None = None

    def __post_init__(self) -> None:
        if (self.target is None) == (self.command is None):
            raise ConfigError("Give one agent: --agent FILE_OR_MODULE:FUNCTION or --agent-cmd \"CMD\".")

    @property
    def label(self) -> str:
        return f"agent:{self.target}" if self.target else f"agent-cmd:{self.command}"

    @functools.cached_property
    def source_digest(self) -> str:
        """What the agent *is*: its file's (or module's) source; a command's text and the files it names."""
        h = hashlib.sha256()
        if self.target is not None:
            path = _agent_file(self.target)
            h.update(path.read_bytes() if path is not None else self.target.encode())
        else:
            h.update(self.command.encode())  # type: ignore[union-attr]
            for word in shlex.split(self.command or ""):
                if os.path.isfile(word):
                    h.update(Path(word).read_bytes())
        return h.hexdigest()[:16]


def _agent_file(target: str) -> Path | None:
    where = target.rsplit(":", 1)[0]
    if where.endswith(".py"):
        return Path(where).expanduser().resolve()
    spec = importlib.util.find_spec(where)
    return Path(spec.origin) if spec is not None and spec.origin else None


def load_agent(target: str) -> Callable[[AgentTask], Any]:
    """The function ``FILE.py:FUNCTION`` or ``module:FUNCTION`` names; a clear error for what is wrong."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(f"--agent {target!r}: write FILE.py:FUNCTION or module:FUNCTION.")
    if where.endswith(".py"):
        path = Path(where).expanduser()
        if not path.is_file():
            raise ConfigError(f"--agent {target!r}: no file {path}.")
        module_name = f"agentgym_agent_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except Exception as e:
            raise ConfigError(f"--agent {target!r}: importing {path} failed: {_where(e)}") from e
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise ConfigError(f"--agent {target!r}: cannot import {where!r}: {e}") from e
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ConfigError(f"--agent {target!r}: {where} has no function {name!r}.")
    return fn


def _where(error: BaseException) -> str:
    """``Type: message (file:line)``: one line that says where the agent failed."""
    return describe(error)


class AgentPolicy(Policy):
    """An agent run as the eval's policy: its key and provenance (the agent's label, the gateway's model) and what
    plays it (the gateway, served in process, and how episodes run)."""

    def __init__(self, spec: AgentSpec, gateway: Any, *, server: Any = None, base_url: str = "",
                 timeout_s: float = 600.0, require_model: bool = True, concurrency: int = 8) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"--agent-timeout must be > 0 seconds, got {timeout_s}.")
        self.spec = spec
        self.name = spec.label
        self.model = gateway.model_name
        self.gateway = gateway
        self.server = server
        self.base_url = base_url or (server.url if server is not None else "")
        #: whether the gateway serves each rollout's tools over MCP (the mcp extra); else the task's mcp_url is None
        self.has_mcp = server.has_mcp if server is not None else True
        self.timeout_s = timeout_s
        self.require_model = require_model
        self.concurrency = concurrency

    @classmethod
    def start(cls, spec: AgentSpec, model: str, *, dtype: str = "auto", upstream: str | None = None,
              upstream_model: str | None = None, **kwargs: Any) -> AgentPolicy:
        """Load the agent (a bad spec fails now), the gateway's model, and serve it on a free local port."""
        from agentgym.gateway.server import GatewayServer, load_gateway

        if spec.target is not None:
            load_agent(spec.target)
        gateway = load_gateway(model, dtype=dtype, upstream=upstream, upstream_model=upstream_model)
        try:
            server = GatewayServer(gateway).start()
        except BaseException:
            gateway.close()
            raise
        return cls(spec, gateway, server=server, **kwargs)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        raise ConfigError("An agent plays through eval --agent (run_agent_plan), not act().")

    def run(self, todo: Sequence[tuple[PlannedEpisode, str]], *, on_result: Callable[[EpisodeResult], None],
            remote: str | None = None, stop: threading.Event | None = None) -> None:
        run_agent_plan(todo, spec=self.spec, gateway=self.gateway, base_url=self.base_url, policy=self,
                       concurrency=self.concurrency, on_result=on_result, remote=remote, timeout_s=self.timeout_s,
                       require_model=self.require_model, stop=stop)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.gateway.close()


class _AgentFailure(Exception):
    pass


def _run_function(fn: Callable[[AgentTask], Any], task: AgentTask, timeout_s: float) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(task)
        except BaseException as e:  # noqa: BLE001 - the agent's failure is its episode's, recorded
            box["error"] = e

    thread = threading.Thread(target=target, name=f"agentgym-agent-{task.rollout_id}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise _AgentFailure(f"AgentTimeout: the agent ran past its {timeout_s:g} s limit (--agent-timeout); its "
                            "rollout was closed")
    if "error" in box:
        raise _AgentFailure(f"AgentError: {_where(box['error'])}")
    return box.get("value")


def _run_command(command: str, task: AgentTask, tools_url: str, timeout_s: float) -> str:
    env = {**os.environ, "OPENAI_BASE_URL": task.base_url, "OPENAI_API_KEY": task.api_key,
           "AGENTGYM_MODEL": task.model, "AGENTGYM_TOOLS_URL": tools_url, "AGENTGYM_MCP_URL": task.mcp_url or "",
           "AGENTGYM_TOOLS": json.dumps(task.tools)}
    try:
        done = subprocess.run(shlex.split(command), input=task.prompt, capture_output=True, text=True, env=env,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise _AgentFailure(f"AgentTimeout: the agent command ran past its {timeout_s:g} s limit (--agent-timeout) "
                            "and was killed") from e
    except OSError as e:
        raise _AgentFailure(f"AgentError: cannot run {command!r}: {e}") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1][:300]
        raise _AgentFailure(f"AgentError: the agent command exited with {done.returncode}: {last}")
    return done.stdout.strip()


@dataclass
class AgentRun:
    """What one agent run left: the env's tool session, the gateway's record of its model calls, and its error."""

    session: ToolSession | None = None
    rollout: Any = None
    error: str | None = None
    #: the error came from the env or the harness (its env should be replaced), not from the agent
    env_failed: bool = False


def run_agent(env: Any, options: dict[str, Any], seed: int, *, spec: AgentSpec, fn: Callable[[AgentTask], Any] | None,
              gateway: Any, base_url: str, has_mcp: bool, rollout_id: str, env_id: str, env_kwargs: dict[str, Any],
              timeout_s: float = 600.0, require_model: bool = True, metadata: dict[str, Any] | None = None,
              warm: threading.Event | None = None) -> AgentRun:
    """Reset ``env`` (``options``: the task), open rollout ``rollout_id`` with its tool session, run the agent,
    end the episode with its answer. The eval and the trainer play every agent episode through here.

    ``warm`` is set once the agent's first model request reached the gateway (or the run ended)."""
    run = AgentRun()
    try:
        observation, info = env.reset(seed=seed, options=options)
        run.session = session = ToolSession(env, observation, info)
        run.rollout = rollout = gateway.create_rollout(rollout_id, session=session, metadata=metadata)
        if warm is not None and not warm.is_set():
            threading.Thread(target=lambda: (rollout.requested.wait(timeout_s), warm.set()), daemon=True).start()
        task = AgentTask(prompt=session.prompt, base_url=f"{base_url}/rollouts/{rollout_id}/v1",
                         model=gateway.model_name, tools=session.openai_tools(), call_tool=session.call_tool,
                         mcp_url=f"{base_url}/rollouts/{rollout_id}/mcp" if has_mcp else None, env_id=env_id,
                         task_id=str(info.get("task_id", "")), seed=seed, rollout_id=rollout_id,
                         split=str(info.get("split") or options.get("split") or ""), env_kwargs=dict(env_kwargs))
        if fn is not None:
            answer = _run_function(fn, task, timeout_s)
        else:
            answer = _run_command(spec.command, task,  # type: ignore[arg-type]
                                  f"{base_url}/rollouts/{rollout_id}/tools", timeout_s)
        if answer is not None and not isinstance(answer, str):
            raise _AgentFailure(f"AgentError: the agent returned a {type(answer).__name__}; return the final answer "
                                "as text, or None when a tool call ended the episode")
        if require_model and not rollout.calls:
            raise _AgentFailure("AgentError: the agent never called the model at its base_url, so the episode "
                                "measures no model")
        if not session.ended and answer is not None:
            session.answer(answer)
    except _AgentFailure as e:
        run.error = str(e)
    except Exception as e:  # noqa: BLE001 - the env's or harness's failure: this episode's error
        run.error, run.env_failed = f"{type(e).__name__}: {e}", True
    finally:
        if run.rollout is not None and not run.rollout.closed:
            gateway.close_rollout(rollout_id)
        if warm is not None:
            warm.set()
    return run


def play_agent_episode(planned: PlannedEpisode, key: str, *, spec: AgentSpec, fn: Callable[[AgentTask], Any] | None,
                       gateway: Any, base_url: str, policy: AgentPolicy, remote: str | None = None,
                       timeout_s: float = 600.0, require_model: bool = True,
                       envs: dict[str, Any] | None = None, warm: threading.Event | None = None) -> EpisodeResult:
    """One eval episode with the agent (:func:`run_agent`), as an ``EpisodeResult``."""
    start = time.perf_counter()
    try:
        env = _env(planned, remote, envs)
    except Exception as e:  # noqa: BLE001 - the env could not be made: this episode's error
        if warm is not None:
            warm.set()
        run = AgentRun(error=f"{type(e).__name__}: {e}", env_failed=True)
    else:
        run = run_agent(env, {"split": planned.split, "index": planned.task_index}, planned.seed, spec=spec, fn=fn,
                        gateway=gateway, base_url=base_url, has_mcp=policy.has_mcp,
                        rollout_id=f"ep{planned.episode}-s{planned.sample}-{os.urandom(4).hex()}",
                        env_id=planned.env_id, env_kwargs=dict(planned.env_kwargs), timeout_s=timeout_s,
                        require_model=require_model, warm=warm,
                        metadata={"env_id": planned.env_id, "episode": planned.episode})
    if run.env_failed and envs is not None:
        _drop_envs(envs)
    if run.error is not None:
        log.warning("%s episode %d: %s", planned.env_id, planned.episode, run.error)
    return _result(planned, key, policy, run.session, run.rollout, run.error, wall_s=time.perf_counter() - start,
                   remote=remote)


def _env(planned: PlannedEpisode, remote: str | None, envs: dict[str, Any] | None) -> Any:
    kwargs = {**planned.env_kwargs, "action_format": "dict", **({"remote": remote} if remote else {})}
    name = json.dumps([planned.env_id, kwargs], sort_keys=True, default=str)
    if envs is None:
        return make(planned.env_id, **kwargs)
    if name not in envs:
        envs[name] = make(planned.env_id, **kwargs)
    return envs[name]


def _drop_envs(envs: dict[str, Any]) -> None:
    for env in envs.values():
        try:
            env.close()
        except Exception as e:  # noqa: BLE001 - a broken env's close must not hide the real error
            log.warning("closing an env failed: %s", e)
    envs.clear()


def _transcript(session: ToolSession | None, rollout: Any) -> list[dict[str, Any]]:
    """The prompt, then each model call's turn and each tool step, in the order they happened."""
    if session is None:
        return []
    events: list[tuple[float, dict[str, Any]]] = []
    for call in rollout.calls if rollout is not None else []:
        if call.choices:
            output = call.choices[0].output
            calls = [call_text({"name": name, "arguments": arguments}) for name, arguments in output.tool_calls]
            events.append((call.started + call.wall_s, {"role": "assistant", "content": "\n".join(
                [output.content or "", *calls]).strip(), "call": call.index}))
    for step in session.steps:
        events.append((step.at, {"role": "tool", "content": step.observation,
                                 "name": step.name}))
    events.sort(key=lambda e: e[0])
    return [{"role": "user", "content": session.prompt}, *(e for _, e in events)]


def _result(planned: PlannedEpisode, key: str, policy: AgentPolicy, session: ToolSession | None, rollout: Any,
            error: str | None, *, wall_s: float, remote: str | None) -> EpisodeResult:
    info = session.info if session is not None else {}
    verification = info.get("verification", {}) if error is None else {}
    summary = rollout.summary() if rollout is not None else {}
    return EpisodeResult(
        env_id=planned.env_id, task_id=str(info.get("task_id", "")), split=str(info.get("split") or planned.split),
        seed=planned.seed, policy=policy.name, reward=session.reward if session is not None and error is None else 0.0,
        correct=bool(verification.get("correct", False)), turns=int(info.get("turn", 0)),
        tool_calls=sum(s.name != "answer" for s in session.steps) if session is not None else 0,
        action_errors=sum(s.error is not None for s in session.steps) if session is not None else 0,
        truncated=bool(session.truncated or not session.ended) if session is not None else False,
        verification=verification, wall_s=round(wall_s, 4), transcript=_transcript(session, rollout),
        error=error, episode=planned.episode, key=key, suite=planned.suite, suite_version=planned.suite_version,
        remote=remote, entry=planned.entry, sample=planned.sample,
        samples=rollout.samples() if rollout is not None else None, answer=final_answer(info, error),
        agent={"spec": policy.spec.target or policy.spec.command, "kind": "function" if policy.spec.target else
               "command", "source_sha256": policy.spec.source_digest,
               "rollout_id": rollout.id if rollout is not None else None, "rollout": summary},
        **{**provenance(planned.env_id, policy),
           "prompt_tokens": sum(len(c.prompt_ids) for c in (rollout.calls if rollout is not None else [])),
           "completion_tokens": int(summary.get("sampled_tokens", 0))})


def run_agent_plan(todo: Sequence[tuple[PlannedEpisode, str]], *, spec: AgentSpec, gateway: Any, base_url: str,
                   policy: AgentPolicy, concurrency: int, on_result: Callable[[EpisodeResult], None],
                   remote: str | None = None, timeout_s: float = 600.0, require_model: bool = True,
                   stop: threading.Event | None = None) -> None:
    """Play ``todo`` with the agent, ``concurrency`` episodes at a time (their model calls batched by the gateway)."""
    import queue

    fn = load_agent(spec.target) if spec.target is not None else None
    pending: queue.SimpleQueue[tuple[PlannedEpisode, str]] = queue.SimpleQueue()
    for item in todo:
        pending.put(item)
    failures: list[BaseException] = []
    # The first episode's agent runs alone until its first model request: what a framework imports lazily on first
    # use (clients, transports) is imported once, not by many threads at once (a half-imported module raised
    # AttributeError in the OpenAI Agents SDK's HTTP client with 16 agents started together).
    warm = threading.Event()

    def work(first: bool) -> None:
        envs: dict[str, Any] = {}
        try:
            if not first:
                warm.wait()
            while not failures and not (stop is not None and stop.is_set()):
                try:
                    planned, key = pending.get_nowait()
                except queue.Empty:
                    return
                on_result(play_agent_episode(planned, key, spec=spec, fn=fn, gateway=gateway, base_url=base_url,
                                             policy=policy, remote=remote, timeout_s=timeout_s,
                                             require_model=require_model, envs=envs,
                                             warm=warm if first else None))
        except BaseException as e:  # noqa: BLE001 - outside any episode (the results file): stop the run
            failures.append(e)
        finally:
            if first:
                warm.set()  # whatever happened: the other workers must not wait forever
            _drop_envs(envs)

    threads = [threading.Thread(target=work, args=(i == 0,), name=f"agentgym-agent-worker-{i}", daemon=True)
               for i in range(max(1, min(concurrency, len(todo))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def agent_key_fingerprint(spec: AgentSpec, model_fingerprint: str | None) -> str:
    """The resume key's fingerprint of an agent run: the agent's source and the model's."""
    return hashlib.sha256(f"{spec.source_digest}|{model_fingerprint}".encode()).hexdigest()[:16]

