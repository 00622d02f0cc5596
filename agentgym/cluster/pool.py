"""``RayEnvPool``: env sessions hosted by Ray actors on every node of a Ray cluster.

Each node with CPUs gets ``hosts_per_node`` host actors (``EnvHost``, default: one per
CPU of the node), pinned to it. A new session goes to the node with the fewest
sessions per host among those where its env is under the node's limit, and there to
its least loaded host. The limits are per node: by default the envs whose sessions
hold processes and memory (``core.costs.SESSION_COSTS``: SWEBench, WebShopBrowser) get
the share of the node's memory that ``agentgym serve`` gives them on one machine, the
rest are unlimited; ``node_env_limits`` sets them. No node with room: ``CapacityReached``.

A host that dies (killed, crashed, its node lost) loses only its own sessions: their
next call raises ``SessionLost`` naming the host, its pid and node, and why it died;
their slots are freed. The pool starts a replacement host on that node (if the node is
alive) when it next looks at the cluster, at most every ``REFRESH_S`` seconds and when
a session finds no room; nodes that join are used from then on.

The pool's bookkeeping (sessions per node and host) is the pool's own: one pool per
process, shared by every ``RayEnv`` of that process (``env_pool(address)``).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.cluster.host import EnvHost
from agentgym.core.costs import SESSION_COSTS, default_env_limits
from agentgym.core.imports import IMPORT_VARIABLE
from agentgym.errors import CapacityReached, ConfigError, DependencyNotInstalled, ResetNeeded, SessionLost

__all__ = ["REFRESH_S", "PoolSession", "RayEnvPool", "env_pool", "pool_address", "shutdown_pools"]

log = logging.getLogger(__name__)

REFRESH_S = 5.0  # how often the pool looks at the cluster for new, dead and recovered nodes
SCHEME = "ray://"
_START_TIMEOUT_S = 120.0  # for a node's hosts to come up
_HOST_CONCURRENCY = 256  # calls one host runs at once: one per session at most, as each session's calls are serial


def pool_address(remote: str | None) -> str | None:
    """The Ray address a ``remote`` names (``ray://ADDRESS``), or None for anything else (an HTTP URL)."""
    if remote is None or not remote.startswith(SCHEME):
        return None
    address = remote[len(SCHEME):].strip()
    if not address:
        raise ConfigError(f"{remote!r} names no Ray cluster: pass ray://HOST:PORT (the address `ray start --head` "
                          "printed), ray://auto (the cluster this machine is part of) or ray://local (start one).")
    return address


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise DependencyNotInstalled("Ray", "pip install 'agentgym-suite[ray]'") from e
    return ray


@dataclass(eq=False)
class _Host:
    actor: Any
    node: _Node
    index: int
    pid: int | None = None
    sessions: Counter[str] = field(default_factory=Counter)
    lost: str | None = None  # why it died; None while it lives
    ready: Any = None  # a future of its first answer

    def where(self) -> str:
        return (f"Ray host {self.index} (pid {self.pid or '?'}) on node {self.node.node_id[:12]} at "
                f"{self.node.address}")


@dataclass(eq=False)
class _Node:
    node_id: str
    address: str
    cpus: float
    memory_mb: int
    hosts: list[_Host] = field(default_factory=list)
    alive: bool = True

    def live_hosts(self) -> list[_Host]:
        return [h for h in self.hosts if h.lost is None] if self.alive else []

    def sessions(self, env_id: str | None = None) -> int:
        return sum(h.sessions[env_id] if env_id else sum(h.sessions.values()) for h in self.live_hosts())


@dataclass(eq=False)
class PoolSession:
    """One env session: which host holds it, under which key."""

    host: _Host
    key: int
    env_id: str
    closed: bool = False


class RayEnvPool:
    """Env sessions on Ray actors across a cluster (``address``: ``HOST:PORT``, ``auto``, or ``local`` to start
    one on this machine)."""

    def __init__(self, address: str = "local", *, hosts_per_node: int | None = None,
                 node_env_limits: Mapping[str, int] | None = None, env_ids: Iterable[str] | None = None) -> None:
        ray = _ray()
        if hosts_per_node is not None and hosts_per_node < 1:
            raise ConfigError(f"hosts_per_node must be >= 1, got {hosts_per_node}.")
        self.address = address
        self.hosts_per_node = hosts_per_node
        self.env_ids = sorted(set(env_ids or ()))  # the envs served: costly ones share a node's memory
        self.node_env_limits = _checked_limits(node_env_limits or {})
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here:
            try:
                ray.init(address=None if address == "local" else address, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            except ConnectionError as e:
                raise ConfigError(f"Cannot reach a Ray cluster at {address!r} ({e}). Start one with `ray start "
                                  "--head` (its address is printed), or pass ray://local.") from e
        self._host_actor = ray.remote(EnvHost)
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {}
        self._refreshed = 0.0
        self._closed = False
        started = self.refresh()
        if not self._nodes:
            raise ConfigError(f"The Ray cluster at {address!r} has no node with CPUs to host env sessions.")
        for host in started:  # the first hosts are waited for: a pool is ready when it is made
            try:
                host.ready.result(timeout=_START_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - recorded as lost by its callback; the others serve
                pass

    # ---- the cluster -------------------------------------------------------------------------------
    def refresh(self) -> list[_Host]:
        """Look at the cluster: new nodes get hosts, dead nodes are dropped, dead hosts of live nodes replaced.
        Returns the hosts it started."""
        with self._lock:
            self._refreshed = time.monotonic()
            alive = {}
            for node in self._ray.nodes():
                cpus = float(node.get("Resources", {}).get("CPU", 0))
                if node.get("Alive") and cpus > 0:
                    alive[node["NodeID"]] = node
            starting: list[_Host] = []
            for node_id, node in self._nodes.items():
                if node_id not in alive and node.alive:
                    node.alive = False
                    for host in node.hosts:
                        host.lost = host.lost or "its node left the Ray cluster"
                        host.sessions.clear()
            for node_id, info in alive.items():
                node = self._nodes.get(node_id)
                if node is None:
                    resources = info.get("Resources", {})
                    node = self._nodes[node_id] = _Node(node_id, str(info.get("NodeManagerAddress", "?")),
                                                        float(resources.get("CPU", 1)),
                                                        int(resources.get("memory", 0)) >> 20)
                node.alive = True
                want = self.hosts_per_node or max(1, int(node.cpus))
                for _ in range(want - len(node.live_hosts())):
                    starting.append(self._start_host(node))
        return starting

    def _start_host(self, node: _Node) -> _Host:
        """A new host actor on ``node``. Not waited for: calls queue until it is up, and fail (the host lost)
        if it never comes up; its pid is filled in when it answers."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        index = len(node.hosts)
        share = max(1, round(node.cpus / (self.hosts_per_node or max(1, int(node.cpus)))))
        imports = os.environ.get(IMPORT_VARIABLE)  # --import: the hosts import the user's env modules too
        actor = self._host_actor.options(  # no CPU reserved: hosts are placed by node, sessions by the limits
            max_concurrency=_HOST_CONCURRENCY, num_cpus=0,
            runtime_env={"env_vars": {IMPORT_VARIABLE: imports}} if imports else None,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)).remote(index, share)
        host = _Host(actor, node, index)
        host.ready = actor.describe.remote().future()

        def started(future: Any) -> None:
            try:
                host.pid = future.result()["pid"]
            except Exception as e:  # noqa: BLE001 - a host that cannot start is a lost host
                self._host_died(host, f"it did not start ({type(e).__name__}: {_first_line(e)})")

        host.ready.add_done_callback(started)
        node.hosts.append(host)
        return host

    def limit(self, node: _Node, env_id: str) -> int | None:
        """Sessions of ``env_id`` one node may hold (None: no limit of its own)."""
        if env_id in self.node_env_limits:
            return self.node_env_limits[env_id]
        if env_id not in SESSION_COSTS or not node.memory_mb:
            return None
        return default_env_limits(self.env_ids or [env_id], memory_mb=node.memory_mb).get(env_id)

    # ---- sessions ----------------------------------------------------------------------------------
    def open(self, env_id: str, entry_point: str, kwargs: Mapping[str, Any]) -> PoolSession:
        """A new session of ``env_id`` (its class at ``entry_point``, ``module:Class``) made with ``kwargs`` on the
        host with most room."""
        for attempt in range(3):  # a host that dies while making the env: the next one is tried
            host = self._place(env_id)
            try:
                key = self.call_host(host, "make", env_id, entry_point, dict(kwargs))
            except SessionLost:
                if attempt == 2:
                    raise
                continue
            except BaseException:
                self._release(host, env_id)
                raise
            return PoolSession(host, key, env_id)
        raise AssertionError("unreachable")

    def _place(self, env_id: str) -> _Host:
        with self._lock:
            if self._closed:
                raise ConfigError("This Ray env pool was shut down.")
            if time.monotonic() - self._refreshed > REFRESH_S:
                self.refresh()
            host = self._pick(env_id)
            if host is None:  # full, or hosts lost since the last look: look again before refusing
                self.refresh()
                host = self._pick(env_id)
            if host is None:
                raise CapacityReached(self._full_message(env_id))
            host.sessions[env_id] += 1
            return host

    def _pick(self, env_id: str) -> _Host | None:
        best: tuple[float, _Host] | None = None
        for node in self._nodes.values():
            hosts = node.live_hosts()
            limit = self.limit(node, env_id)
            if not hosts or (limit is not None and node.sessions(env_id) >= limit):
                continue
            host = min(hosts, key=lambda h: (sum(h.sessions.values()), h.index))
            load = node.sessions() / len(hosts)
            if best is None or load < best[0]:
                best = (load, host)
        return None if best is None else best[1]

    def _full_message(self, env_id: str) -> str:
        live = [n for n in self._nodes.values() if n.live_hosts()]
        if not live:
            return (f"No node of the Ray cluster at {self.address} has a live env host; check the cluster "
                    "(`ray status`).")
        limits = sorted({self.limit(n, env_id) for n in live} - {None})
        cost = SESSION_COSTS.get(env_id)
        holds = f"; each holds {cost.holds}" if cost else ""
        return (f"Every node of the Ray pool holds its limit of {'/'.join(map(str, limits))} {env_id} sessions "
                f"({len(live)} nodes{holds}). Close finished sessions, add nodes to the cluster, or raise the "
                f"limit (agentgym serve --node-env-limit {env_id}=N; RayEnvPool(node_env_limits=...)).")

    def _release(self, host: _Host, env_id: str) -> None:
        with self._lock:
            if host.lost is None and host.sessions[env_id] > 0:
                host.sessions[env_id] -= 1

    def call(self, session: PoolSession, method: str, *args: Any) -> Any:
        """``method(*args)`` of the session's env on its host: its result, or the env's exception raised here."""
        if session.closed:
            raise ResetNeeded("This session was closed.")
        return self.call_host(session.host, method, session.key, *args)

    def call_host(self, host: _Host, method: str, *args: Any) -> Any:
        if host.lost is not None:
            raise SessionLost(self._lost_message(host))
        try:
            ok, value = self._ray.get(getattr(host.actor, method).remote(*args))
        except self._lost_errors() as e:
            self._host_died(host, f"{type(e).__name__}: {_first_line(e)}")
            raise SessionLost(self._lost_message(host)) from e
        if not ok:
            raise value
        return value

    def call_many(self, calls: list[tuple[PoolSession, str, tuple[Any, ...]]]) -> list[tuple[bool, Any]]:
        """``(session, method, args)`` calls (``reset``/``step``), each with its outcome: ``(True, result)`` or
        ``(False, exception)``. The calls of one host go to it as one actor call, every host's at once."""
        outcomes: list[tuple[bool, Any]] = [(False, None)] * len(calls)
        by_host: dict[_Host, list[int]] = {}
        for i, (session, _, _) in enumerate(calls):
            if session.closed:
                outcomes[i] = (False, ResetNeeded("This session was closed."))
            elif session.host.lost is not None:
                outcomes[i] = (False, SessionLost(self._lost_message(session.host)))
            else:
                by_host.setdefault(session.host, []).append(i)
        refs = {host: host.actor.call_many.remote([(calls[i][1], calls[i][0].key, calls[i][2]) for i in indices])
                for host, indices in by_host.items()}
        for host, ref in refs.items():
            try:
                answers = self._ray.get(ref)
            except self._lost_errors() as e:
                self._host_died(host, f"{type(e).__name__}: {_first_line(e)}")
                answers = [(False, SessionLost(self._lost_message(host)))] * len(by_host[host])
            for i, answer in zip(by_host[host], answers):
                outcomes[i] = answer
        return outcomes

    def _lost_errors(self) -> tuple[type[BaseException], ...]:
        """What Ray raises for a call whose actor (process, node) is gone."""
        errors = self._ray.exceptions
        return (errors.RayActorError, errors.WorkerCrashedError, errors.ObjectLostError, errors.NodeDiedError)

    def close(self, session: PoolSession) -> None:
        """Close the session's env on its host (nothing to do if the host died with it)."""
        if session.closed:
            return
        session.closed = True
        self._release(session.host, session.env_id)
        if session.host.lost is None:
            try:
                self.call_host(session.host, "close", session.key)
            except SessionLost:
                pass

    def _host_died(self, host: _Host, reason: str) -> None:
        with self._lock:
            if host.lost is None:
                host.lost = reason
                lost = sum(host.sessions.values())
                host.sessions.clear()
                log.warning("%s died (%s): its %d sessions are lost", host.where(), reason, lost)

    def _lost_message(self, host: _Host) -> str:
        return (f"The {host.where()} holding this session died ({host.lost}); the session is lost, the others go "
                "on. Reset to start a new session on a live host.")

    # ---- the whole pool ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The pool for /healthz: each node, its hosts (the lost ones too, with why) and their sessions, its limits;
        ``degraded`` while a live node has fewer live hosts than it should (a replacement starts when the pool
        next looks at the cluster)."""
        with self._lock:
            nodes, degraded = [], False
            for node in self._nodes.values():
                degraded |= node.alive and len(node.live_hosts()) < (self.hosts_per_node or max(1, int(node.cpus)))
                envs = sorted({e for h in node.hosts for e in h.sessions} | set(self.node_env_limits))
                nodes.append({
                    "node_id": node.node_id, "address": node.address, "alive": node.alive,
                    "sessions": node.sessions(),
                    "hosts": [{"index": h.index, "pid": h.pid, "sessions": sum(h.sessions.values()),
                               **({"lost": h.lost} if h.lost else {})} for h in node.hosts],
                    "limits": {e: self.limit(node, e) for e in envs if self.limit(node, e) is not None}})
            return {"address": self.address, "degraded": degraded, "nodes": nodes}

    def shutdown(self) -> None:
        """Close every session on every host and stop the hosts (and Ray, if this pool started it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            hosts = [h for n in self._nodes.values() for h in n.live_hosts()]
        for host in hosts:
            try:
                self._ray.get(host.actor.close_all.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a dead host has nothing to close
                pass
            self._ray.kill(host.actor)
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()


def _checked_limits(limits: Mapping[str, int]) -> dict[str, int]:
    for env_id, limit in limits.items():
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"The per-node session limit of {env_id} must be an integer >= 1, got {limit!r}.")
    return dict(limits)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


_POOLS: dict[str, RayEnvPool] = {}
_POOLS_LOCK = threading.Lock()


def env_pool(address: str) -> RayEnvPool:
    """This process's pool on the Ray cluster at ``address`` (made on first use, shut down at exit)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(address)
        if pool is None or pool._closed:
            pool = _POOLS[address] = RayEnvPool(address)
            if len(_POOLS) == 1:
                atexit.register(shutdown_pools)
        return pool


def shutdown_pools() -> None:
    """Shut down this process's pools (``env_pool``'s); done at exit."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        try:
            pool.shutdown()
        except Exception:  # noqa: BLE001 - at exit, Ray may be half gone
            pass
