"""Sessions: one env each, a lock each, an idle TTL, capacity limits (in all and per env), and clean shutdown.

Env code runs in worker threads (never on the event loop); a session's lock
serialises its requests; an env that raises takes down only its own session.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import logging
import math
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentgym.core.registry import check_env_kwargs, check_kwargs, env_ids, env_info, load_env_class
from agentgym.errors import (
    AgentGymError,
    CapacityReached,
    ConfigError,
    DataError,
    EnvNotFound,
    ResetNeeded,
    SessionLost,
    VerifierUnavailable,
)
from agentgym.server.admission import lent
from agentgym.server.api_error import ApiError
from agentgym.server.capacity import SESSION_COSTS
from agentgym.server.clients import CURRENT_CLIENT
from agentgym.server.threads import DEFAULT_THREADS, EnvThreads

if TYPE_CHECKING:
    from agentgym.cluster.pool import RayEnvPool
    from agentgym.server.siblings import SharedCapacity

__all__ = ["ApiError", "Session", "SessionStore", "holding"]

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def holding(lock: asyncio.Lock) -> AsyncIterator[None]:
    """``lock`` held for the block; while another request holds it, this request's place in the front door is
    lent (``admission.lent``): the holder may need a place to answer."""
    if lock.locked():
        async with lent():
            await lock.acquire()
    else:
        await lock.acquire()
    try:
        yield
    finally:
        lock.release()


@dataclass
class Session:
    id: str
    env_id: str
    env: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    turn: int = 0
    last_step: tuple[int, dict[str, Any]] | None = None  # (step_id, response) for idempotent retries
    closed: bool = False
    #: who created it (``agentgym.server.clients``): its share of the server's sessions
    client: str = ""


def _server_value(env_class: type, server_kwargs: Mapping[str, Any], name: str) -> Any:
    """What ``name`` is for the server's sessions of ``env_class``: the operator's or registered value, else the
    class's default (a sentinel no client value equals where it has none)."""
    if name in server_kwargs:
        return server_kwargs[name]
    try:
        parameter = inspect.signature(env_class).parameters.get(name)
    except (TypeError, ValueError):
        parameter = None
    return parameter.default if parameter is not None and parameter.default is not inspect.Parameter.empty \
        else object()


class SessionStore:
    """All live sessions of one server."""

    def __init__(self, *, allowed_env_ids: list[str] | None = None, max_sessions: int = 1024,
                 session_ttl_s: float = 600.0, server_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                 env_threads: int = DEFAULT_THREADS, env_limits: Mapping[str, int] | None = None,
                 env_pool: RayEnvPool | None = None, max_sessions_per_client: int | None = None) -> None:
        if max_sessions < 1:
            raise ConfigError(f"max_sessions must be >= 1, got {max_sessions}.")
        if max_sessions_per_client is not None and max_sessions_per_client < 1:
            raise ConfigError(f"max_sessions_per_client must be >= 1, got {max_sessions_per_client}.")
        if session_ttl_s <= 0:
            raise ConfigError(f"session_ttl_s must be > 0, got {session_ttl_s}.")
        self.env_ids = sorted(allowed_env_ids or env_ids())
        for env_id in self.env_ids:
            env_info(env_id)  # raises EnvNotFound with a did-you-mean
        self.max_sessions = max_sessions
        #: sessions one client may hold: by default all but an eighth, which stays for the others (a server of
        #: fewer than 16 sessions keeps none back)
        self.max_sessions_per_client = (max_sessions - (max_sessions // 8 if max_sessions >= 16 else 0)
                                        if max_sessions_per_client is None else max_sessions_per_client)
        self.by_client: Counter[str] = Counter()  # client -> sessions open or being created
        self.env_limits = {e: n for e, n in (env_limits or {}).items() if e in self.env_ids}  # sessions of one env
        self.session_ttl_s = session_ttl_s
        self.server_kwargs = {k: dict(v) for k, v in (server_kwargs or {}).items()}
        for env_id in self.env_ids:  # the operator's mistakes fail at startup, not in every session
            if self.server_kwargs.get(env_id):
                check_env_kwargs(env_id, self.server_kwargs[env_id])
        self.sessions: dict[str, Session] = {}
        self.threads = EnvThreads(env_threads)  # env code runs here, never on the event loop
        self.open: Counter[str] = Counter()  # env id -> open sessions
        self._pending: Counter[str] = Counter()  # env id -> sessions being created: they count against capacity
        self.on_open: Callable[[Session], None] = lambda session: None
        self.on_close: Callable[[Session, str], None] = lambda session, reason: None
        self.on_refuse: Callable[[str], None] = lambda env_id: None
        # set by agentgym serve --processes N (siblings.py): ids that name their process, the reason an id of a
        # dead process is unknown here (410), and capacity counted with the sibling processes
        self.new_session_id: Callable[[], str] = lambda: secrets.token_urlsafe(12)
        self.lost: Callable[[str | int], ApiError | None] = lambda session_id: None
        self.shared: SharedCapacity | None = None
        self._frozen: set[str] = set()  # env ids whose loaded data gc.freeze() took out of collections
        # agentgym serve --ray: envs are sessions on the pool's Ray actors (RayEnv), placed under per-node limits
        self.pool = env_pool
        self._lost: OrderedDict[str, ApiError] = OrderedDict()  # id -> its 410, for the ids of sessions lost lately
        #: env id -> why its last session could not be made (a broken task list, a missing file); /healthz reports
        #: the server degraded while any is set. Cleared by the env's next session that opens.
        self.failing: dict[str, str] = {}
        self._described: dict[str, dict[str, Any]] = {}  # describe(): per (env, kwargs, split)

    def capacity(self) -> dict[str, Any]:
        """Sessions open here and the limits, in all and per env (what /healthz reports); what is free is
        the server's, counted over the sibling processes where there are some."""
        if self.shared is None:
            used_env = {env_id: self.open[env_id] + self._pending[env_id] for env_id in self.env_ids}
            used = len(self.sessions) + sum(self._pending.values())
        else:
            used, used_env = self.shared.used()
        free = self.max_sessions - used
        envs = {}
        for env_id in self.env_ids:
            limit = self.env_limits.get(env_id, self.max_sessions)
            envs[env_id] = {"sessions": self.open[env_id], "limit": limit,
                            "free": max(0, min(free, limit - used_env[env_id]))}
        return {"max_sessions": self.max_sessions, "free": max(0, free), "envs": envs}

    def _full(self, env_id: str) -> str | None:
        """Which limit a new session of ``env_id`` is over ("server", "env") or None; with sibling processes,
        a None takes the slot in the shared count."""
        limit = self.env_limits.get(env_id)
        if self.shared is not None:
            return self.shared.reserve(env_id, self.max_sessions, limit)
        if len(self.sessions) + sum(self._pending.values()) >= self.max_sessions:
            return "server"
        if limit is not None and self.open[env_id] + self._pending[env_id] >= limit:
            return "env"
        return None

    def _check_capacity(self, env_id: str, client: str) -> None:
        """A 429 naming the limit that is full, and how to raise it."""
        if self.by_client[client] >= self.max_sessions_per_client:
            self.on_refuse(env_id)
            raise ApiError(429, "capacity", f"This client ({client}) holds {self.by_client[client]} "
                                            "sessions, the most one client may hold while the rest stay for "
                                            "others; close finished sessions (DELETE /v1/sessions/{id}) or retry "
                                            "later (the operator sets it with agentgym serve "
                                            "--max-sessions-per-client N).")
        full = self._full(env_id)
        if full == "server":
            self.on_refuse(env_id)
            raise ApiError(429, "capacity", f"The server holds its limit of {self.max_sessions} sessions; close "
                                            "finished sessions (DELETE /v1/sessions/{id}) or retry later (the "
                                            "operator raises it with agentgym serve --max-sessions N).")
        if full == "env":
            limit = self.env_limits[env_id]
            self.on_refuse(env_id)
            cost = SESSION_COSTS.get(env_id)
            holds = f"; each holds {cost.holds}" if cost else ""
            raise ApiError(429, "capacity", f"The server holds its limit of {limit} {env_id} sessions{holds}. Close "
                                            "finished sessions (DELETE /v1/sessions/{id}) or retry later (the operator "
                                            f"raises it with agentgym serve --env-limit {env_id}=N).")

    # ---- lifecycle -----------------------------------------------------------
    async def create(self, env_id: str, kwargs: Mapping[str, Any], seed: int | None,
                     options: Mapping[str, Any] | None) -> tuple[Session, tuple[str, dict[str, Any]]]:
        if env_id not in self.env_ids:
            raise ApiError(404, "env_not_found", str(EnvNotFound(env_id, self.env_ids)))
        all_kwargs = {**self.server_kwargs.get(env_id, {}), **kwargs}

        def load() -> type:  # imports the env's module and reads its signature: env code, so not on the loop
            env_class = load_env_class(env_id)
            self._check_kwargs(env_id, env_class, kwargs, {**env_info(env_id).kwargs, **all_kwargs})
            return env_class

        env_class = await self._call(None, load)
        client = CURRENT_CLIENT.get()
        self._check_capacity(env_id, client)
        self._pending[env_id] += 1
        self.by_client[client] += 1
        session = None
        opened = False
        try:
            env = await self._call(None, lambda: self._make_env(env_id, env_class, all_kwargs))
            session = Session(id=self.new_session_id(), env_id=env_id, env=env, client=client)
            first = await self._call(session, lambda: env.reset(seed=seed, options=options))
        except ApiError as e:
            if e.status >= 500 or not options:  # the env's own failure: no client choice (a task, a split) was in it
                self.failing[env_id] = e.message
            if self.shared is not None:
                self.shared.release(env_id)
            if session is not None and not session.closed:
                await self._close_env(session)
            raise
        except BaseException:
            if self.shared is not None:
                self.shared.release(env_id)
            if session is not None and not session.closed:  # reset failed as the client's fault: free the env
                await self._close_env(session)
            raise
        else:
            opened = True
        finally:
            self._pending[env_id] -= 1
            if not opened:
                self._release_client(client)
        self.failing.pop(env_id, None)
        self.sessions[session.id] = session
        self.open[env_id] += 1
        self.on_open(session)
        self._freeze_loaded_data(env_id)
        return session, first

    async def create_many(self, requests: list[tuple[str, Mapping[str, Any], int | None, Mapping[str, Any] | None]]
                          ) -> list[tuple[Session, tuple[str, dict[str, Any]]] | ApiError]:
        """Create many sessions at once; each succeeds or fails alone (a 429 past capacity, a 422, ...)."""

        async def one(request: tuple[str, Mapping[str, Any], int | None, Mapping[str, Any] | None]) -> Any:
            try:
                return await self.create(*request)
            except ApiError as e:
                return e

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def describe(self, env_id: str, kwargs: Mapping[str, Any], split: str | None) -> dict[str, Any]:
        """A served env's split, its task count and its digest, as a session with ``kwargs`` would have them: what
        a client plans an eval with when the env is only the server's (``agentgym eval --remote``). Off the loop,
        cached per (env, kwargs, split)."""

        def read(env: Any, all_kwargs: dict[str, Any]) -> dict[str, Any]:
            from agentgym.eval.envdigest import env_digest

            inner = env.unwrapped
            chosen = split or inner.split
            splits = list(inner.tasks.splits())
            if chosen not in splits:
                raise ApiError(422, "invalid_split", f"{env_id} has no split {chosen!r}; its splits are {splits}.")
            n = len(inner.tasks.tasks(chosen))
            return {"env_id": env_id, "split": chosen, "splits": splits, "tasks": n,
                    "env_digest": env_digest(env_id, env, all_kwargs, chosen) if n else ""}

        return await self._read_env(env_id, kwargs, [split], read)

    async def task_catalog(self, env_id: str) -> dict[str, list[str]]:
        """``{split: [task id, ...]}`` of a served env as the operator's kwargs make it (ORS lists tasks by it)."""

        def read(env: Any, _: dict[str, Any]) -> dict[str, list[str]]:
            tasks = env.unwrapped.tasks
            return {split: [task.id for task in tasks.tasks(split)] for split in tasks.splits()}

        return await self._read_env(env_id, {}, ["catalog"], read)

    async def _read_env(self, env_id: str, kwargs: Mapping[str, Any], key: list[Any],
                        read: Callable[[Any, dict[str, Any]], Any]) -> Any:
        """``read(env, its kwargs)`` on an env made with ``kwargs`` in this process (even with a Ray pool: only
        what it holds is read), off the loop, then closed; cached per (env, kwargs, key)."""
        if env_id not in self.env_ids:
            raise ApiError(404, "env_not_found", str(EnvNotFound(env_id, self.env_ids)))
        cache_key = json.dumps([env_id, kwargs, *key], sort_keys=True, default=str)
        if cache_key in self._described:
            return self._described[cache_key]

        def run() -> Any:
            env_class = load_env_class(env_id)
            all_kwargs = {**env_info(env_id).kwargs, **self.server_kwargs.get(env_id, {}), **kwargs}
            self._check_kwargs(env_id, env_class, kwargs, all_kwargs)
            env = env_class(**all_kwargs)
            try:
                return read(env, all_kwargs)
            finally:
                env.close()

        async with lent():
            result = self._described[cache_key] = await asyncio.to_thread(run)
        return result

    async def probe(self) -> None:
        """Make one env of each served id (with the operator's kwargs), read its task list and build its first
        task's prompt, then close it, one at a time, off the event loop: an env whose every session would fail (a
        broken or empty task list, a prompt its tasks cannot fill) shows in ``failing`` at once. Nothing a reset
        starts (a browser, a sandbox) is started."""
        for env_id in self.env_ids:
            def once(env_id: str = env_id) -> None:
                env = self._make_env(env_id, load_env_class(env_id), dict(self.server_kwargs.get(env_id, {})))
                try:
                    inner = env.unwrapped
                    tasks = inner.tasks.tasks(inner.split)
                    if not tasks:
                        raise DataError(f"its split {inner.split!r} has no tasks")
                    if _pure_prompt(inner):  # an env's own build_prompt may need its reset (ALFWorld's game)
                        inner.build_prompt(tasks[0])
                finally:
                    env.close()

            try:
                await asyncio.to_thread(once)
            except Exception as e:  # noqa: BLE001 - the env's failure is what the probe reports
                self.failing.setdefault(env_id, f"{type(e).__name__}: {e}")
            else:
                self.failing.pop(env_id, None)

    def _make_env(self, env_id: str, env_class: type, kwargs: dict[str, Any]) -> Any:
        if self.pool is None:  # with what agentgym.register gave the id
            return env_class(**{**env_info(env_id).kwargs, **kwargs})
        from agentgym.cluster.env import RayEnv

        # the registered kwargs and the class travel with the session (Ray pickles them), for a plugin's env too
        return RayEnv(self.pool, env_id, {**env_info(env_id).kwargs, **kwargs}, entry_point=env_class)

    def _freeze_loaded_data(self, env_id: str) -> None:
        """After an env's first session, move what is alive (the corpus, the index, the parsed tasks: millions
        of objects that live as long as the server) out of the garbage collector's reach. Without it every
        gen-2 collection walks them all: 80-170 ms pauses that set the p99. Once per env, whatever a client
        sends: no request can make the server collect and freeze again."""
        if env_id in self._frozen or self.pool is not None:  # with a pool, the data lives on the hosts
            return
        self._frozen.add(env_id)
        gc.collect()  # what is garbage now is freed, not frozen
        gc.freeze()

    def _check_kwargs(self, env_id: str, env_class: type, kwargs: Mapping[str, Any],
                      all_kwargs: Mapping[str, Any]) -> None:
        """422 for kwargs the env does not take (the message ``gym.make`` gives), or a client may not set."""
        try:
            check_kwargs(env_class, all_kwargs, owner=env_id)
        except ConfigError as e:
            raise ApiError(422, "invalid_kwargs", str(e)) from e
        allowed = set(env_info(env_id).client_kwargs)
        # a kwarg a client may not set may still be sent with the value the server uses (an old client's default)
        servers = {**env_info(env_id).kwargs, **self.server_kwargs.get(env_id, {})}
        unknown = sorted(k for k in set(kwargs) - allowed if kwargs[k] != _server_value(env_class, servers, k))
        if unknown:
            raise ApiError(422, "invalid_kwargs", f"{env_id} does not accept {unknown} from clients (what counts "
                                                  "as correct, and the data, are the server's: the operator sets "
                                                  f"them with agentgym serve -k); allowed: {sorted(allowed)}.")

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.closed:
            raise self.lost(session_id) or self._lost.get(session_id) or ApiError(
                404, "session_not_found", f"No session {session_id!r}: it was closed, expired after "
                                          f"{self.session_ttl_s:g} s idle, or never existed.")
        return session

    async def close(self, session_id: str, reason: str = "closed by client") -> None:
        session = self.get(session_id)
        async with holding(session.lock):
            await self._close(session, reason)

    def _release_client(self, client: str) -> None:
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]

    def _remember_lost(self, session: Session, error: ApiError) -> None:
        """A session lost with its Ray host answers its 410 from now on (not 404), so a client knows to start a
        new one; the last ``_LOST_KEPT`` such ids are kept."""
        if error.status == 410:
            self._lost[session.id] = error
            while len(self._lost) > _LOST_KEPT:
                self._lost.popitem(last=False)

    async def _close(self, session: Session, reason: str) -> None:
        if session.closed:
            return
        session.closed = True
        if self.sessions.pop(session.id, None) is not None:  # a session that failed its first reset was never open
            self.open[session.env_id] -= 1
            self._release_client(session.client)
            if self.shared is not None:
                self.shared.release(session.env_id)
            self.on_close(session, reason)
        await self._close_env(session)

    async def _close_env(self, session: Session) -> None:
        session.closed = True
        try:
            await self.threads.run(session.env.close)
        except Exception:  # a failing close must not keep the session alive
            log.exception("closing session %s (%s) failed", session.id, session.env_id)

    async def close_all(self) -> None:
        # at once, as far as the worker threads go: slow closes share the threads instead of queueing in a row
        await asyncio.gather(*(self._close(s, "server shutdown") for s in list(self.sessions.values())))
        self.threads.shutdown(wait=False)

    async def reap(self) -> int:
        """Close sessions idle longer than the TTL (not those busy in a request)."""
        now = time.monotonic()
        stale = [s for s in self.sessions.values() if now - s.last_used > self.session_ttl_s and not s.lock.locked()]
        await asyncio.gather(*(self._close(session, "idle TTL expired") for session in stale))
        return len(stale)

    async def reaper(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            await self.reap()

    # ---- env calls -----------------------------------------------------------
    async def _call(self, session: Session | None, fn: Callable[[], Any]) -> Any:
        """Run env code in a worker thread; an unexpected exception ends the session with a 500."""
        try:
            return await self.threads.run(fn)
        except Exception as e:
            error = _api_error(e, session)
            if error.status in _ENDS_SESSION and session is not None:
                self._remember_lost(session, error)
                await self._close(session, error.message)
            raise error from e

    async def reset(self, session_id: str, seed: int | None, options: Mapping[str, Any] | None) -> tuple[str, dict]:
        session = self.get(session_id)
        async with holding(session.lock):
            self.get(session_id)  # it may have been closed while we waited
            session.last_used = time.monotonic()
            result = await self._call(session, lambda: session.env.reset(seed=seed, options=options))
            session.turn, session.last_step = 0, None
            return result

    async def step(self, session_id: str, action: Any, step_id: int | None) -> dict[str, Any]:
        session = self.get(session_id)
        async with holding(session.lock):
            self.get(session_id)
            session.last_used = time.monotonic()
            return await self._call(session, lambda: _step(session, action, step_id))

    async def batch_step(self, items: list[tuple[str, Any, int | None]]) -> list[dict[str, Any] | ApiError]:
        """Step many sessions in one worker-thread call; each item succeeds or fails alone."""

        def on_pool(i: int, session: Session) -> _Pooled:
            recorded = _recorded_step(session, items[i][2])
            return (None, recorded) if recorded is not None else (("step", (items[i][1],)), _record_step)

        return await self._batch([item[0] for item in items],
                                 lambda i, session: _step(session, items[i][1], items[i][2]), on_pool)

    async def batch_reset(self, items: list[tuple[str, int | None, Mapping[str, Any] | None]]
                          ) -> list[tuple[str, dict[str, Any]] | ApiError]:
        """Reset many sessions in one worker-thread call; each item succeeds or fails alone."""

        def after(session: Session, result: Any) -> tuple[str, dict[str, Any]]:
            session.turn, session.last_step = 0, None
            return result

        def reset(i: int, session: Session) -> tuple[str, dict[str, Any]]:
            return after(session, session.env.reset(seed=items[i][1], options=items[i][2]))

        return await self._batch([item[0] for item in items], reset,
                                 lambda i, session: (("reset", (items[i][1], items[i][2])), after))

    async def _batch(self, session_ids: list[str], run: Callable[[int, Session], Any],
                     on_pool: Callable[[int, Session], _Pooled]) -> list[Any]:
        """``run(i, session)`` for each item's session, all in one worker-thread call, each failing alone.

        With a Ray pool, ``on_pool(i, session)`` says instead what the item asks of its env (``((method, args),
        then)``: the call, and what makes the item's result of the env's answer; or ``(None, result)``, no call
        needed): the calls of each host go to it as one actor call, all hosts at once."""
        results: list[Any] = [None] * len(session_ids)
        sessions: dict[int, Session] = {}
        seen: set[str] = set()
        for i, session_id in enumerate(session_ids):
            if session_id in seen:
                results[i] = ApiError(422, "duplicate_session", f"Session {session_id!r} appears twice in one batch.")
                continue
            seen.add(session_id)
            try:
                sessions[i] = self.get(session_id)
            except ApiError as e:
                results[i] = e
        locked = sorted(sessions.values(), key=lambda s: s.id)  # one global order: no deadlock
        for session in locked:
            if session.lock.locked():  # another request holds it: this one's place is lent meanwhile
                async with lent():
                    await session.lock.acquire()
            else:
                await session.lock.acquire()
        try:
            now = time.monotonic()
            for session in locked:
                session.last_used = now

            def run_one(i: int, session: Session) -> None:
                if session.closed:
                    results[i] = _api_error(ResetNeeded("session closed"), session)
                    return
                try:
                    results[i] = run(i, session)
                except Exception as e:  # noqa: BLE001 - each item fails alone
                    results[i] = _api_error(e, session)

            if self.pool is None:  # env code in process: one worker-thread call for the whole batch
                await self.threads.run(lambda: [run_one(i, s) for i, s in sessions.items()])
            else:
                await self.threads.run(lambda: self._run_on_pool(sessions, on_pool, results))
            for i, session in sessions.items():
                error = results[i]
                if isinstance(error, ApiError) and error.status in _ENDS_SESSION:
                    self._remember_lost(session, error)
                    await self._close(session, error.message)
        finally:
            for session in locked:
                session.lock.release()
        return results

    def _run_on_pool(self, sessions: dict[int, Session], on_pool: Callable[[int, Session], _Pooled],
                     results: list[Any]) -> None:
        """A batch on a Ray pool: one actor call per host holding some of ``sessions``, all hosts at once."""
        assert self.pool is not None
        calls, waiting = [], []
        for i, session in sessions.items():
            try:
                if session.closed:
                    raise ResetNeeded("session closed")
                call, then = on_pool(i, session)
                if call is None:
                    results[i] = then
                    continue
                calls.append((session.env.pool_session, *call))
                waiting.append((i, then))
            except Exception as e:  # noqa: BLE001 - each item fails alone
                results[i] = _api_error(e, sessions[i])
        for (i, then), (ok, answer) in zip(waiting, self.pool.call_many(calls)):
            session = sessions[i]
            try:
                if not ok:
                    session.env.forget_if_lost(answer)
                    raise answer
                results[i] = then(session, answer)
            except Exception as e:  # noqa: BLE001 - each item fails alone
                results[i] = _api_error(e, session)


_Pooled = tuple[Any, Any]  # ((method, args), then(session, answer) -> result), or (None, result)


def _pure_prompt(env: Any) -> bool:
    """Whether ``env`` builds a task's prompt from the task alone (``AgentEnv``'s or ``ToolEnv``'s template)."""
    from agentgym.core.env import AgentEnv
    from agentgym.envs.toolenv import ToolEnv

    return type(env).build_prompt in (AgentEnv.build_prompt, ToolEnv.build_prompt)


def _step(session: Session, action: Any, step_id: int | None) -> dict[str, Any]:
    """One step of a locked session, idempotent for a retried ``step_id``."""
    recorded = _recorded_step(session, step_id)
    return recorded if recorded is not None else _record_step(session, session.env.step(action))


def _recorded_step(session: Session, step_id: int | None) -> dict[str, Any] | None:
    """The recorded answer if ``step_id`` repeats the last step (a retry: never step twice), None if it is the
    next step; a 409 for any other."""
    if step_id is not None and session.last_step is not None and session.last_step[0] == step_id:
        return session.last_step[1]
    if step_id is not None and step_id != session.turn + 1:
        raise ApiError(409, "step_out_of_order", f"step_id {step_id} does not follow turn {session.turn}; "
                                                 f"the next step_id is {session.turn + 1}.")
    return None


def _record_step(session: Session, result: tuple[Any, ...]) -> dict[str, Any]:
    """The answer to a step the env made, recorded for a retry of its ``step_id``."""
    obs, reward, terminated, truncated, info = result
    session.turn += 1
    response = {"observation": obs, "reward": float(reward), "terminated": bool(terminated),
                "truncated": bool(truncated), "info": info}
    session.last_step = (session.turn, response)
    return response


_LOST_KEPT = 100_000
_ENDS_SESSION = (500, 410)  # the env failed, or was lost with its Ray host: the session is closed


def _api_error(e: Exception, session: Session | None) -> ApiError:
    """Map an exception from env code to the answer: the client's fault (4xx), the env's (500), or a session lost
    with the Ray host holding it (410)."""
    if isinstance(e, ApiError):
        return e
    if isinstance(e, SessionLost):
        return ApiError(410, "session_lost", str(e))
    if isinstance(e, CapacityReached):
        return ApiError(429, "capacity", str(e))
    if isinstance(e, ResetNeeded):
        return ApiError(409, "reset_needed", f"{e} Reset the session (POST /v1/sessions/{{id}}/reset).")
    if isinstance(e, ConfigError):
        return ApiError(422, "invalid_request", str(e))
    if isinstance(e, VerifierUnavailable):  # the server's failure, not the env's: the session stays
        return ApiError(503, "verifier_unavailable", f"{e} The episode's verdict is unknown: reset the session "
                        "to play it again.", {"Retry-After": str(max(1, math.ceil(e.retry_after_s)))})
    where = f"session {session.id} ({session.env_id})" if session else "a new session"
    if not isinstance(e, AgentGymError):
        log.exception("env failure in %s", where, exc_info=e)
    return ApiError(500, "env_error", f"The env of {where} failed ({type(e).__name__}: {e}); the session was closed.")
