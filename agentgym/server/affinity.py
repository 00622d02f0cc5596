"""Session affinity: with ``agentgym serve --processes N``, the process holding a session serves its requests.

An ASGI app in front of each process's app. The kernel spreads connections over the
processes (SO_REUSEPORT); a request landing on a process that does not hold its session
is passed on, over the holder's unix socket, and its answer passed back. A client that
keeps its connection (``RemoteEnv`` does) mostly stays on the process that made its
session, so passing on is the exception. Whichever process a request lands on:

- ``/v1/sessions/{id}/...`` and the AgentGym-compat routes naming an id go to the process
  the id names (``siblings.py``);
- batch ``/v1/step`` and ``/v1/reset`` are split by process, run at once, and their
  results put back in the request's order (each item still succeeds or fails alone);
  batch ``/v1/create`` spreads its sessions over the processes the same way, so that
  a batch client on one connection has its batches run on every core;
- OpenEnv's ``POST /openenv/<env id>/mcp`` goes to the process holding the session its JSON-RPC params name
  (``tools/call``, ``tools/list``, ``openenv/session/close``); ``openenv/session/create`` is made where it lands;
- ORS's session routes (``/create``, ``/call``, ``/ping``, ...; ``ors.py``) go to the process its ``X-Session-ID``
  names (``/create_session`` gives ids that name the process), a call's SSE answered whole when it ends;
- ``/healthz`` and ``/metrics`` gather each process's own (``gather.py``);
- the rest (``POST /v1/sessions``, ``/v1/verify``, ``/v1/envs``, OpenEnv's other routes,
  docs) is served where it lands: a session belongs to the process that made it (an OpenEnv WebSocket's too).

A session of a process that died answers 410 ``session_lost`` naming that process, once
the parent has recorded the death (within milliseconds), or 503 ``process_unavailable``.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from typing import Any

import orjson
from prometheus_client import Counter
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentgym.server import protocol as p
from agentgym.server.api_error import ApiError
from agentgym.server.dialects import dialects_of
from agentgym.server.gather import merge_health, merge_metrics
from agentgym.server.openenv import PREFIX as OPENENV_PREFIX
from agentgym.server.openenv_mcp import rpc_error
from agentgym.server.ors import SESSION_ROUTES as ORS_SESSION_ROUTES
from agentgym.server.relay import Relay, RelayError
from agentgym.server.siblings import ProcessSlot, lost_error, owner_of

__all__ = ["FORWARDED", "PEER", "Affinity"]

FORWARDED = b"x-agentgym-forwarded"  # a request passed on by a sibling: served here, as it is
PEER = b"x-agentgym-peer"  # the address the sibling's request came from (believed on the unix socket only)
_SESSION_PATH = re.compile(r"/v1/sessions/([^/]+)(?:/step|/reset)?")
_BATCHES: dict[str, tuple[str, type[BaseModel]]] = {"/v1/step": ("steps", p.BatchStepRequest),
                                                    "/v1/reset": ("resets", p.BatchResetRequest),
                                                    "/v1/create": ("sessions", p.BatchCreateRequest)}
_COMPAT_BODY_OPS = frozenset({"reset", "step", "close"})
_COMPAT_QUERY_OPS = frozenset({"observation", "available_actions"})
# not passed on either way: the relay and uvicorn write their own
_HOP_BY_HOP = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection", b"keep-alive",
                         b"upgrade", b"date", b"server"})
_GATHER_TIMEOUT_S = 5.0  # a sibling that does not answer /healthz in this long is reported down
_RECORD_WAIT_S = 1.0  # how long an unreachable process's death record is waited for before answering 503

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]  # status, headers, body
_OPENENV = OPENENV_PREFIX + "/"


class _Unreachable(Exception):
    """The sibling holding a session did not answer (it died, or is being replaced)."""


class Affinity:
    """The ASGI app one process serves: ``app`` (``create_app(..., process=slot)``) behind session affinity."""

    def __init__(self, app: Any, slot: ProcessSlot, *, keep_alive_s: float) -> None:
        self.app, self.slot = app, slot
        self.policy = app.state.policy
        # per env: each dialect's session field, in the order a request's dialect is picked by, and whether the
        # dialect answers errors as HTTP 200 {"error": message}
        self.compat: dict[str, dict[str, bool]] = {}
        for env_id in app.state.store.env_ids:
            for d in dialects_of(env_id):
                self.compat.setdefault(env_id, {}).setdefault(d.session_key, d.errors_in_body)
        # kept connections to a sibling are dropped before its keep-alive timeout closes them under a request
        self._relays = {i: Relay(str(slot.socket_path(i)), keep_alive_s=keep_alive_s / 2)
                        for i in range(slot.count) if i != slot.index}
        self._next = slot.index  # the process the next session of a batch create goes to
        self.forwarded = Counter("agentgym_forwarded_requests", "Requests (and parts of batches) passed on to the "
                                 "process holding their session (agentgym serve --processes N).",
                                 registry=app.state.metrics_registry)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path.startswith("/v1/sessions/"):
            match = _SESSION_PATH.fullmatch(path)
            owner = owner_of(match[1]) if match else None
            if owner is not None and self._elsewhere(owner[0]):
                await self._pass_on(owner, match[1], scope, receive, send)
                return
        elif method == "GET" and path in ("/healthz", "/metrics") and not _forwarded(scope):
            await self._gather(scope, send)
            return
        elif method == "POST" and path in _BATCHES and not _forwarded(scope):
            await self._batch(scope, receive, send)
            return
        elif method == "POST" and path.startswith(_OPENENV) and path.endswith("/mcp") and not _forwarded(scope):
            await self._mcp(scope, receive, send)
            return
        else:
            head, _, op = path.rpartition("/")
            if op in ORS_SESSION_ROUTES and path.count("/") <= 2 and not _forwarded(scope):
                sid = dict(scope["headers"]).get(b"x-session-id", b"").decode("latin-1").strip()
                owner = owner_of(sid) if sid else None
                if owner is not None and self._elsewhere(owner[0]):
                    await self._pass_on(owner, sid, scope, receive, send)
                    return
            if op in _COMPAT_BODY_OPS or op in _COMPAT_QUERY_OPS:
                keys = self.compat.get(head[1:])
                if keys is not None:
                    await self._compat(keys, op, scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _elsewhere(self, index: int) -> bool:
        return index != self.slot.index and 0 <= index < self.slot.count

    # ---- one session's request ------------------------------------------------------
    async def _pass_on(self, owner: tuple[int, int], session_id: str | int, scope: Scope, receive: Receive,
                       send: Send, body: bytes | None = None, errors_in_body: bool = False) -> None:
        if body is None:
            body = await self._checked_body(scope, receive, send)
            if body is None:
                return
        try:
            answer = await self._forward(owner[0], scope, body)
        except _Unreachable as e:
            await self._death_recorded(owner)
            error = self._unreachable(session_id, owner, e)
            if errors_in_body:  # as the dialect answers every error
                answer = (200, [(b"content-type", b"application/json")], orjson.dumps({"error": error.message}))
            else:
                await _answer_error(send, error)
                return
        await _answer(send, answer)

    async def _compat(self, keys: dict[str, bool], op: str, scope: Scope, receive: Receive, send: Send) -> None:
        """An AgentGym-compat request: to the process its id names (in the body or the query string)."""
        if op in _COMPAT_QUERY_OPS:
            query = urllib.parse.parse_qs(scope["query_string"].decode("latin-1"))
            named = [(k, query[k][0]) for k in keys if k in query]
            key, compat_id = (named[0][0], int(named[0][1])) if named and named[0][1].isdigit() else ("", None)
            body = None
        else:
            body = await self._checked_body(scope, receive, send)
            if body is None:
                return
            key, compat_id = _compat_id(body, keys)
        owner = owner_of(compat_id) if compat_id is not None else None
        if owner is not None and self._elsewhere(owner[0]):
            await self._pass_on(owner, compat_id, scope, receive, send, b"" if body is None else body, keys[key])
        else:
            await self.app(scope, receive if body is None else _replay(body, receive), send)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        """OpenEnv's JSON-RPC (``POST /openenv/<env id>/mcp``): to the process holding the session its params
        name; one that does not answer is a JSON-RPC error (HTTP 200), as every error of that endpoint."""
        body = await self._checked_body(scope, receive, send)
        if body is None:
            return
        request, session_id = _rpc_session(body)
        owner = owner_of(session_id) if session_id is not None else None
        if owner is None or not self._elsewhere(owner[0]):
            await self.app(scope, _replay(body, receive), send)
            return
        try:
            answer = await self._forward(owner[0], scope, body)
        except _Unreachable as e:
            await self._death_recorded(owner)
            error = self._unreachable(session_id, owner, e)  # type: ignore[arg-type]
            request_id = request.get("id") if isinstance(request.get("id"), (str, int)) else None
            answer = (200, [(b"content-type", b"application/json")], orjson.dumps(rpc_error(request_id, error)))
        await _answer(send, answer)

    async def _death_recorded(self, owner: tuple[int, int]) -> None:
        """Wait a moment for the parent to record the death of the process that did not answer, if it died."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _RECORD_WAIT_S
        while lost_error(self.slot.directory, "", owner) is None and loop.time() < deadline:
            await asyncio.sleep(0.05)

    def _unreachable(self, session_id: str | int, owner: tuple[int, int], e: Exception) -> ApiError:
        """410 if the owner's death is recorded, else 503."""
        return lost_error(self.slot.directory, session_id, owner) or ApiError(
            503, "process_unavailable", f"Server process {owner[0]}, which holds session {session_id!r}, does not "
                                        f"answer ({e}). Retry: if it exited, its sessions are lost, and the answer "
                                        "says so.")

    # ---- batches ----------------------------------------------------------------------
    async def _batch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A batch over sessions of several processes (or creating sessions on each, in turn): a batch to each,
        at once, results in the request's order."""
        key, model = _BATCHES[scope["path"]]
        raw = await self._checked_body(scope, receive, send)
        if raw is None:
            return
        try:  # a bad batch is refused whole, before any of it runs, by the app (422), as with one process
            model.model_validate_json(raw)
            items = orjson.loads(raw)[key]
        except ValidationError:
            items = []
        groups: dict[int, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(self._process_of(item), []).append(i)
        if list(groups) in ([], [self.slot.index]):
            await self.app(scope, _replay(raw, receive), send)
            return
        parts = {index: orjson.dumps({key: [items[i] for i in positions]}) for index, positions in groups.items()}
        answers = await asyncio.gather(*(self._part(index, scope, body) for index, body in parts.items()))
        results: list[Any] = [None] * len(items)
        for (index, positions), answer in zip(groups.items(), answers):
            for i, result in zip(positions, await self._part_results(answer, [items[i] for i in positions])):
                results[i] = result
        await _answer(send, (200, [(b"content-type", b"application/json")], orjson.dumps({"results": results})))

    def _process_of(self, item: dict[str, Any]) -> int:
        """The process that runs one item of a batch: its session's, or for a new session, each in turn."""
        if "session_id" not in item:
            self._next = (self._next + 1) % self.slot.count
            return self._next
        owner = owner_of(item["session_id"])
        return owner[0] if owner and self._elsewhere(owner[0]) else self.slot.index

    async def _part(self, index: int, scope: Scope, body: bytes) -> Answer | Exception:
        try:
            if index == self.slot.index:
                return await _call(self.app, scope, body)
            return await self._forward(index, scope, body)
        except _Unreachable as e:
            if scope["path"] == "/v1/create":  # the process is being replaced: its share is made here
                return await _call(self.app, scope, body)
            return e

    async def _part_results(self, answer: Answer | Exception, items: list[dict[str, Any]]) -> list[Any]:
        """Each item's result from the answer to its part of the batch; a part that failed whole fails each item."""
        if not isinstance(answer, Exception):
            if answer[0] == 200:
                return orjson.loads(answer[2])["results"]
            named = [{"session_id": i["session_id"]} if "session_id" in i else {"env_id": i["env_id"]} for i in items]
            return [{**name, "error": _error_of(answer)} for name in named]
        ids = [item["session_id"] for item in items]  # steps or resets (a create's share is made here instead)
        owners = [owner_of(sid) for sid in ids]  # all of the process that did not answer
        await self._death_recorded(owners[0])
        errors = [self._unreachable(sid, owner, answer) for sid, owner in zip(ids, owners)]
        return [{"session_id": sid, "error": {"code": e.code, "message": e.message}} for sid, e in zip(ids, errors)]

    # ---- /healthz and /metrics ----------------------------------------------------------
    async def _gather(self, scope: Scope, send: Send) -> None:
        denied = self.policy.deny(scope)
        if denied:
            await _answer_error(send, denied)
            return
        others = [i for i in range(self.slot.count) if i != self.slot.index]
        own, *answers = await asyncio.gather(_call(self.app, scope, b""), *(
            self._forward(i, scope, b"", timeout_s=_GATHER_TIMEOUT_S) for i in others), return_exceptions=True)
        if isinstance(own, BaseException):
            raise own
        if own[0] != 200:
            await _answer(send, own)
            return
        ok = {i: a for i, a in zip(others, answers) if not isinstance(a, BaseException) and a[0] == 200}
        if scope["path"] == "/healthz":
            replies = {i: orjson.loads(ok[i][2]) if i in ok else None for i in others}
            body = orjson.dumps(merge_health(orjson.loads(own[2]), {self.slot.index: orjson.loads(own[2]), **replies}))
            await _answer(send, (200, [(b"content-type", b"application/json")], body))
            return
        body = merge_metrics([own[2].decode(), *(a[2].decode() for a in ok.values())])
        await _answer(send, (200, [h for h in own[1] if h[0].lower() == b"content-type"], body))

    # ---- the wire -----------------------------------------------------------------------------
    async def _forward(self, index: int, scope: Scope, body: bytes, timeout_s: float | None = None) -> Answer:
        """The sibling ``index``'s answer to this request (with ``body``), over its unix socket."""
        target = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP and k.lower() != PEER]
        headers.append((FORWARDED, b"1"))
        if scope.get("client"):  # who sent it: the sibling counts it against that client (clients.client_key)
            headers.append((PEER, str(scope["client"][0]).encode("latin-1")))
        if scope["path"] != "/healthz" and scope["path"] != "/metrics":
            self.forwarded.inc()
        try:
            answer = self._relays[index].request(scope["method"], target, headers, body)
            status, headers, body = await (asyncio.wait_for(answer, timeout_s) if timeout_s else answer)
        except (RelayError, asyncio.TimeoutError) as e:
            raise _Unreachable(str(e) or "no answer in time") from e
        return status, [(k, v) for k, v in headers if k not in _HOP_BY_HOP], body

    async def _checked_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The request's body, once its headers pass the server's policy (token, size), at most the size limit;
        else None, the request answered as the app answers it (401, 413)."""
        denied = self.policy.deny(scope)
        if denied:
            await _answer_error(send, denied)
            return None
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.policy.max_body_bytes:
                await _answer_error(send, self.policy.too_large())
                return None
            more = message.get("more_body", False)
        return b"".join(chunks)


def _forwarded(scope: Scope) -> bool:
    return any(k == FORWARDED for k, _ in scope["headers"])


def _compat_id(body: bytes, keys: dict[str, bool]) -> tuple[str, int | None]:
    """The session field and int id an AgentGym request names in its body (the first of its dialects' session
    fields present), or ("", None)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "", None
    if not isinstance(data, dict):
        return "", None
    named = [k for k in keys if k in data]
    value = data[named[0]] if named else None
    return (named[0], value) if isinstance(value, int) and not isinstance(value, bool) else ("", None)


def _rpc_session(body: bytes) -> tuple[dict[str, Any], str | None]:
    """A JSON-RPC request (``{}`` if the body is none) and the session id its params name, or None."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}, None
    if not isinstance(data, dict):
        return {}, None
    params = data.get("params")
    value = params.get("session_id") if isinstance(params, dict) else None
    return data, value if isinstance(value, str) else None


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` for an app, of a body already read."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _call(app: ASGIApp, scope: Scope, body: bytes) -> Answer:
    """The app's answer to this request (with ``body``), served in memory."""
    status, headers, chunks = 500, [], []

    async def receive() -> Message:
        await asyncio.Event().wait()  # the app asks again only to learn of a disconnect: never, in memory
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    inner = {**scope, "headers": [*scope["headers"], (FORWARDED, b"1")]}
    await app(inner, _replay(body, receive), send)
    return status, [(k, v) for k, v in headers if k.lower() != b"content-length"], b"".join(chunks)


def _error_of(answer: Answer) -> dict[str, str]:
    try:
        body = orjson.loads(answer[2])
        return {"code": str(body["code"]), "message": str(body["message"])}
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return {"code": "internal", "message": f"A server process answered {answer[0]} to its part of the batch."}


async def _answer(send: Send, answer: Answer) -> None:
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _answer_error(send: Send, error: ApiError) -> None:
    headers = [(b"content-type", b"application/json")]
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await _answer(send, (error.status, headers, orjson.dumps({"code": error.code, "message": error.message})))

