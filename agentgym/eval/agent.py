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

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgym.core.registry import make
from agentgym.errors import ConfigError
from agentgym.eval.episode import EpisodeResult, final_answer, provenance
from agentgym.eval.plan import PlannedEpisode
from agentgym.gateway.agents import AgentRun, AgentSpec, AgentTask, load_agent, run_agent
from agentgym.gateway.chat import call_text
from agentgym.gateway.session import ToolSession
from agentgym.lm.workers import AgentWorker, EnvPool
from agentgym.policies.base import Policy, Sampling

__all__ = ["AgentPolicy", "AgentRun", "AgentSpec", "AgentTask", "load_agent", "play_agent_episode", "run_agent",
           "run_agent_plan"]

log = logging.getLogger(__name__)


class AgentPolicy(Policy):
    """An agent run as the eval's policy: its key and provenance (the agent's label, the gateway's model) and what
    plays it (the gateway, served in process, and how episodes run)."""

    def __init__(self, spec: AgentSpec, gateway: Any, *, server: Any = None, base_url: str = "",
                 timeout_s: float = 600.0, require_model: bool = True, concurrency: int = 8,
                 sampling: Mapping[str, Any] | None = None) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"--agent-timeout must be > 0 seconds, got {timeout_s}.")
        self.spec = spec
        #: what the gateway samples every call at (part of each episode's key), or None where the agent chooses
        self.sampling = None if sampling is None else Sampling(
            temperature=sampling["temperature"], top_p=sampling["top_p"], seed=int(sampling.get("seed") or 0),
            max_tokens=sampling.get("max_tokens") or getattr(gateway, "context_tokens", 0) or 8192)
        #: what the gateway's model computes in, recorded on every episode (None: an upstream's, unknown here)
        self.compute = gateway_compute(gateway)
        self.dtype = (self.compute or {}).get("dtype")
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
              upstream_model: str | None = None, sampling: Mapping[str, Any] | None = None,
              **kwargs: Any) -> AgentPolicy:
        """Load the agent (a bad spec fails now), the gateway's model, and serve it on a free local port.

        ``sampling`` (temperature, top_p, seed; ``max_tokens`` a cap, None for none): every call is sampled at it,
        whatever the agent asks, with a seed of its own per call; None: as each call asks."""
        from agentgym.gateway.server import GatewayServer, load_gateway

        if spec.target is not None:
            load_agent(spec.target)
        forced = None if sampling is None else {
            "temperature": sampling["temperature"], "top_p": sampling["top_p"], "seed": None,
            **({"max_tokens": sampling["max_tokens"]} if sampling.get("max_tokens") else {})}
        gateway = load_gateway(model, dtype=dtype, upstream=upstream, upstream_model=upstream_model, sampling=forced)
        try:
            server = GatewayServer(gateway).start()
        except BaseException:
            gateway.close()
            raise
        return cls(spec, gateway, server=server, sampling=sampling, **kwargs)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        raise ConfigError("An agent plays through eval --agent (run_agent_plan), not act().")

    def run(self, todo: Sequence[tuple[PlannedEpisode, str]], *, on_result: Callable[[EpisodeResult], None],
            remote: str | None = None, stop: threading.Event | None = None) -> None:
        run_agent_plan(todo, spec=self.spec, gateway=self.gateway, base_url=self.base_url, policy=self,
                       concurrency=self.concurrency, on_result=on_result, remote=remote, timeout_s=self.timeout_s,
                       require_model=self.require_model, stop=stop)

    def close(self) -> None:
        # the engine first: a request still generating (an aborted run's) fails within a chunk, so the server's
        # stop does not wait out its shutdown timeout for it (a second Ctrl-C took 37 s)
        engine = getattr(self.gateway, "engine", None)
        if engine is not None:
            engine.close()
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.gateway.close()


def play_agent_episode(planned: PlannedEpisode, key: str, *, spec: AgentSpec, fn: Callable[[AgentTask], Any] | None,
                       gateway: Any, base_url: str, policy: AgentPolicy, remote: str | None = None,
                       timeout_s: float = 600.0, require_model: bool = True,
                       envs: EnvPool | None = None, warm: threading.Event | None = None) -> EpisodeResult:
    """One eval episode with the agent, played by the rollout worker (``agentgym.lm.workers.AgentWorker``), as an
    ``EpisodeResult``. ``envs``: where its env comes from (reused episode after episode; all closed after an env
    failure); None: a fresh env, closed after."""
    start = time.perf_counter()
    pool = envs if envs is not None else _env_pool(remote)
    try:
        env = pool.take([_env_key(planned)])[0]
    except Exception as e:  # noqa: BLE001 - the env could not be made: this episode's error
        if warm is not None:
            warm.set()
        run = AgentRun(error=f"{type(e).__name__}: {e}", env_failed=True)
    else:
        worker = AgentWorker(spec, fn, gateway=gateway, base_url=base_url, has_mcp=policy.has_mcp,
                             timeout_s=timeout_s, require_model=require_model)
        run = worker.run(env, {"split": planned.split, "index": planned.task_index}, planned.seed,
                         rollout_id=f"ep{planned.episode}-s{planned.sample}-{os.urandom(4).hex()}",
                         env_id=planned.env_id, env_kwargs=planned.env_kwargs, warm=warm,
                         metadata={"env_id": planned.env_id, "episode": planned.episode})
    if run.env_failed or envs is None:
        pool.close()
    if run.error is not None:
        log.warning("%s episode %d: %s", planned.env_id, planned.episode, run.error)
    return _result(planned, key, policy, run.session, run.rollout, run.error, wall_s=time.perf_counter() - start,
                   remote=remote)


def _env_key(planned: PlannedEpisode) -> str:
    """The pool key of an episode's env: its id and kwargs, made with ``dict`` actions (an agent's tool calls)."""
    return json.dumps([planned.env_id, {**planned.env_kwargs, "action_format": "dict"}], sort_keys=True, default=str)


def _env_pool(remote: str | None) -> EnvPool:
    def made(key: str) -> Any:
        env_id, kwargs = json.loads(key)
        return make(env_id, **kwargs, **({"remote": remote} if remote else {}))

    return EnvPool(made)


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
           "completion_tokens": int(summary.get("sampled_tokens", 0)),
           "sampling": sampled(policy, rollout), "compute": policy.compute})


def sampled(policy: AgentPolicy, rollout: Any) -> dict[str, Any]:
    """What an agent episode's calls were sampled at, and who chose it: ``by`` is ``command`` (the gateway applied
    the command's settings to every call) or ``agent``; the settings (temperature, top_p, max_tokens, n, seed,
    stop) as one dict where every call had the same, else ``calls``, one dict per call in order."""
    calls = [dict(c.sampling) for c in (rollout.calls if rollout is not None else [])]
    by = "agent" if policy.sampling is None else "command"
    if not calls:
        return {"by": by, **(policy.sampling.as_dict() if policy.sampling is not None else {})}
    if all(c == calls[0] for c in calls):
        return {"by": by, **calls[0]}
    return {"by": by, "calls": calls}


def gateway_compute(gateway: Any) -> dict[str, Any] | None:
    """What a gateway's own model computes in (``kernel``, ``dtype``, the engine's ``max_rows``), as a local model's
    batched episodes record it; None for a gateway passing calls to an upstream."""
    generator = getattr(getattr(gateway, "engine", None), "generator", None)
    model = getattr(generator, "model", None)
    if model is None or not hasattr(model, "parameters"):
        return None
    from agentgym.lm.compute import kernel_path

    parameter = next(model.parameters())
    return {"kernel": kernel_path(str(parameter.device)), "dtype": str(parameter.dtype).removeprefix("torch."),
            "engine": "gateway", "max_rows": getattr(gateway.engine, "max_rows", None)}


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
        envs = _env_pool(remote)
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
            envs.close()

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

