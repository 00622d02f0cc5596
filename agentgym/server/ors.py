"""The Open Reward Standard (ORS), at the root of ``agentgym serve``: what OpenReward's SDK and TRL's
``trl.experimental.openreward.OpenRewardSpec`` speak.

ORS has no path prefix of its own (its clients send ``/create``, ``/ping``, ``/call``... from the server's root),
so its routes sit at the root beside agentgym's ``/v1``, OpenEnv's ``/openenv/<env id>`` and AgentGym's
``/<env id>``:

- ``GET /list_environments``: the served envs by their ORS names (``ors_name``: the env id's last part, lower
  case: ``agentgym/SearchQA-v0`` is ``searchqa-v0``).
- Per env, as ``/<ors name>/<route>`` and, for the server's default env (the first the command names), bare
  ``/<route>``, which is what a client given only the server's URL calls (TRL's spec does): ``GET tools``
  (the env's tools as MCP describes them: its own, and ``answer`` where its episodes end with an answer),
  ``GET splits``, ``POST tasks|num_tasks|task|task_range`` (a task is ``{"task_id", "split", "index"}``:
  never its answer).
- Sessions, by the client's ``X-Session-ID`` header: ``POST /create_session`` (SSE: a new id), ``POST /create``
  (``{"split", "index"}`` or ``{"task_spec"}``, and ``env_name``: an agentgym session playing that task, made
  through the session store, so capacity, per-client caps, the idle TTL and the env threads apply), ``GET
  prompt`` (the task as an agent that calls tools reads it), ``GET task_tools``, ``POST call`` (SSE), ``POST
  /ping`` (keeps the session from the idle TTL), ``POST /delete``.
- ``POST call`` with ``{"name", "input"}`` makes one step of the episode and answers, over SSE, ``{"ok": true,
  "output": {"blocks", "reward", "finished", "metadata"}}``: the reward inline, the env's own (its verifier's
  at the episode's end, 0 before). Calls of one session run one at a time. An unknown tool or a malformed
  ``answer`` is ``{"ok": false, "reason": "not_found"|"input_validation"}`` and changes nothing; a call after the
  episode ended is ``"episode_finished"``, and changes nothing either. An argument an env's own tool refuses is
  the env's observation (it counts a turn), as in process. The env failing is the SSE ``error`` event (the
  session is over). A call whose stream broke is resumed by its ``task_id`` for 60 s after it ended.

The server's token applies to every route; ORS clients send it as ``X-API-Key``, which is read as
``Authorization: Bearer``. With ``agentgym serve --processes N`` a session id from ``/create_session`` names the
process that gave it; a session's requests landing on another process are passed on to that one (``affinity.py``),
which answers a call's SSE whole once the call ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, model_validator

from agentgym import __version__
from agentgym.core.registry import env_info
from agentgym.gateway.session import agent_prompt
from agentgym.integrations.mcp_tools import step_answer
from agentgym.server.openenv_mcp import EnvTools, OpenEnvMcp, ToolFailure
from agentgym.server.sessions import ApiError, SessionStore, holding

__all__ = ["ORS_KWARGS", "SESSION_ROUTES", "OrsService", "ors_name", "ors_names", "ors_router"]

# the env as an agent that calls tools plays it: the prompt without a text protocol's instructions (where the env
# lets a client choose its format; elsewhere its own format, whose instructions agent_prompt scrubs of their tags)
ORS_KWARGS: Mapping[str, Any] = {"action_format": "dict"}
_CHUNK = 4096  # an SSE data line at most this long (a client reads lines of up to 64 KiB)
_LINGER_S = 60.0  # a finished call's answer is kept this long for a client resuming its stream
_KEPT_CALLS = 1024
_HEARTBEAT_S = 10.0  # an SSE comment this often while a call runs (clients time a silent stream out at 30 s)
_MAX_SID = 128
_SPLIT_TYPES = ("train", "validation", "test")
#: the last path segment of the routes that act on the session their X-Session-ID names (``/create`` makes it)
SESSION_ROUTES = frozenset({"create", "delete", "ping", "call", "prompt", "messages", "task_tools"})


def ors_name(env_id: str) -> str:
    """An env's ORS name: its id's last part, lower case (``agentgym/SearchQA-v0`` -> ``searchqa-v0``)."""
    return env_id.rsplit("/", 1)[-1].lower()


def ors_names(env_ids: list[str]) -> dict[str, str]:
    """``{ors name: env id}``; where two ids share a last part, each is named by its whole id, ``/`` as ``--``."""
    short = [ors_name(e) for e in env_ids]
    return {(s if short.count(s) == 1 else e.replace("/", "--").lower()): e for s, e in zip(short, env_ids)}


# ---- wire models ------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OrsSplit(_Strict):
    split: str


class OrsTask(_Strict):
    split: str
    index: int


class OrsTaskRange(_Strict):
    split: str
    start: int | None = None
    stop: int | None = None


class OrsCreate(_Strict):
    env_name: str | None = None
    task_spec: dict[str, Any] | None = None
    split: str | None = None
    index: int | None = None
    toolset_name: str | None = None

    @model_validator(mode="after")
    def _one_task(self) -> OrsCreate:
        if (self.task_spec is not None) == (self.split is not None and self.index is not None):
            raise ValueError("give either task_spec, or split and index")
        if (self.split is None) != (self.index is None):
            raise ValueError("split and index go together")
        return self


class OrsCall(_Strict):
    name: str
    input: dict[str, Any]
    task_id: str | None = None


# ---- sessions ---------------------------------------------------------------------------
@dataclass
class _Session:
    env_id: str
    session_id: str  # the store's
    prompt: str
    tools: EnvTools
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    finished: bool = False


@dataclass
class _Call:
    task: asyncio.Task
    ended: float | None = None


class OrsService:
    """ORS over one server's session store: the sessions ORS clients opened, and their calls in flight."""

    def __init__(self, store: SessionStore, mcp: OpenEnvMcp, default_env: str | None = None) -> None:
        self.store, self.mcp = store, mcp
        self.names = ors_names(list(store.env_ids))
        self.default = default_env if default_env in store.env_ids else (store.env_ids[0] if store.env_ids else None)
        self.sessions: dict[str, _Session] = {}
        self.calls: OrderedDict[str, _Call] = OrderedDict()
        self._catalogs: dict[str, dict[str, list[str]]] = {}

    # ---- envs and tasks -------------------------------------------------------------------
    def env_of(self, env_name: str | None) -> str:
        if env_name is None:
            if self.default is None:
                raise ApiError(404, "env_not_found", "This server serves no env.")
            return self.default
        env_id = self.names.get(env_name.lower())
        if env_id is None:
            raise ApiError(404, "env_not_found", f"No env {env_name!r} here; this server's ORS envs are "
                                                 f"{sorted(self.names)} (GET /list_environments).")
        return env_id

    @staticmethod
    def kwargs(env_id: str) -> dict[str, Any]:
        """The kwargs ORS sessions of ``env_id`` are made with: ``ORS_KWARGS`` those the env lets a client set."""
        allowed = env_info(env_id).client_kwargs
        return {k: v for k, v in ORS_KWARGS.items() if k in allowed}

    def name_of(self, env_id: str) -> str:
        return next(name for name, e in self.names.items() if e == env_id)

    async def catalog(self, env_id: str) -> dict[str, list[str]]:
        """``{split: [task id, ...]}`` of an env as the server makes it (read once, off the loop)."""
        if env_id not in self._catalogs:
            self._catalogs[env_id] = await self.store.task_catalog(env_id)
        return self._catalogs[env_id]

    async def tasks(self, env_id: str, split: str) -> list[dict[str, Any]]:
        catalog = await self.catalog(env_id)
        if split not in catalog:
            raise ApiError(400, "invalid_split", f"{env_id} has no split {split!r}; its splits are {list(catalog)}.")
        return [{"task_id": task_id, "split": split, "index": i} for i, task_id in enumerate(catalog[split])]

    # ---- sessions -------------------------------------------------------------------------
    async def create(self, sid: str, body: OrsCreate) -> None:
        if sid in self.sessions:
            raise ApiError(400, "session_exists", f"Session {sid!r} exists: POST /delete it first, or use a new id "
                                                  "(POST /create_session gives one).")
        env_id = self.env_of(body.env_name)
        if body.toolset_name is not None:
            raise ApiError(400, "unknown_toolset", f"No toolset {body.toolset_name!r}: an agentgym env's tools are "
                                                   "its own (GET tools); leave toolset_name out.")
        if body.task_spec is not None:
            task_id = body.task_spec.get("task_id")
            if not isinstance(task_id, str):
                raise ApiError(400, "invalid_task_spec", "A task_spec here is one of this server's tasks: "
                                                         "{\"task_id\": \"...\"} (POST tasks lists them).")
            options: dict[str, Any] = {"task_id": task_id}
        else:
            await self.tasks(env_id, body.split or "")  # the split exists (a 400 that says which do)
            options = {"split": body.split, "index": body.index}
        session, (observation, info) = await self.store.create(env_id, self.kwargs(env_id), None, options)
        for gone in [s for s, o in self.sessions.items() if o.session_id not in self.store.sessions]:
            del self.sessions[gone]  # closed meanwhile (idle TTL, an env failure): their records go too
        if sid in self.sessions:  # made by a concurrent /create meanwhile: this one is not kept
            with contextlib.suppress(ApiError):
                await self.store.close(session.id, "ORS: a second /create with one session id")
            raise ApiError(400, "session_exists", f"Session {sid!r} exists.")
        self.sessions[sid] = _Session(env_id, session.id, agent_prompt(session.env, observation),
                                      EnvTools.of(info, session.env))

    def get(self, sid: str) -> _Session:
        ors = self.sessions.get(sid)
        if ors is None:
            raise ApiError(404, "session_not_found", f"No ORS session {sid!r}: POST /create makes one.")
        try:
            self.store.get(ors.session_id).last_used = time.monotonic()
        except ApiError as e:  # expired (idle TTL) or its env failed: gone
            self.sessions.pop(sid, None)
            raise ApiError(410, "session_gone", f"Session {sid!r} is over: {e.message}") from e
        return ors

    async def delete(self, sid: str) -> None:
        ors = self.sessions.pop(sid, None)
        if ors is not None:
            with contextlib.suppress(ApiError):
                await self.store.close(ors.session_id, "ORS /delete")

    async def call(self, ors: _Session, body: OrsCall) -> dict[str, Any]:
        """One tool call, as ORS's ``RunToolOutput``."""
        # one at a time per session, and none once the episode ended; waiting, the request's place is lent (the
        # call holding the lock may need one back to answer)
        async with holding(ors.lock):
            if ors.finished:
                return {"ok": False, "error": "The episode is over: make a new session for another.",
                        "reason": "episode_finished"}
            outcome = await self.mcp.call(self.store.get(ors.session_id), ors.tools, body.name, dict(body.input))
            if isinstance(outcome, ToolFailure):
                reason = "not_found" if outcome.kind == "tool_not_found" else "input_validation"
                return {"ok": False, "error": outcome.message, "reason": reason}
            ors.finished = bool(outcome["terminated"] or outcome["truncated"])
            return {"ok": True, "output": _output(outcome)}

    # ---- calls in flight ------------------------------------------------------------------
    def start(self, work: Awaitable[Any]) -> str:
        self._forget()
        task_id = uuid.uuid4().hex
        call = self.calls[task_id] = _Call(asyncio.ensure_future(work))
        call.task.add_done_callback(lambda task: _ended(call, task))
        return task_id

    def _forget(self) -> None:
        now = time.monotonic()
        for task_id, call in list(self.calls.items()):
            if call.ended is not None and (now - call.ended > _LINGER_S or len(self.calls) > _KEPT_CALLS):
                del self.calls[task_id]

    async def stream(self, task_id: str) -> AsyncIterator[bytes]:
        """A call's SSE: its ``task_id``, comments while it runs, then its answer in chunks (or ``error``)."""
        call = self.calls.get(task_id)
        if call is None:
            yield _event("error", f"unknown task_id {task_id!r} (a call is kept {_LINGER_S:g} s after it ends)")
            return
        yield _event("task_id", task_id)
        while not call.task.done():
            await asyncio.wait({call.task}, timeout=_HEARTBEAT_S)  # never raises the call's own error
            if not call.task.done():
                yield b": running\n\n"
        error = call.task.exception()
        if error is not None:
            yield _event("error", error.message if isinstance(error, ApiError) else f"{type(error).__name__}: "
                                                                                     f"{error}")
            return
        result = orjson.dumps(call.task.result()).decode()
        chunks = _chunks(result)
        for i, chunk in enumerate(chunks):
            yield _event("end" if i == len(chunks) - 1 else "chunk", chunk)


def _ended(call: _Call, task: asyncio.Task) -> None:
    call.ended = time.monotonic()
    if not task.cancelled():
        task.exception()  # read here too: a client that left before the answer does not leave it unread


def _output(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step as ORS's ``ToolOutput``: the text an MCP client gets (the tools' own output, or the env's word, and
    how the episode ended), the reward inline, ``info`` (without the tool list) and the episode's state as
    metadata."""
    text, structured, mistake = step_answer(step["observation"], step["reward"], step["terminated"],
                                            step["truncated"], step["info"])
    metadata = {**structured["info"], "terminated": structured["terminated"], "truncated": structured["truncated"],
                "mistake": mistake}
    return {"blocks": [{"type": "text", "text": text or "(no output)", "detail": None}], "metadata": metadata,
            "reward": float(step["reward"]), "finished": bool(step["terminated"] or step["truncated"])}


def _chunks(text: str) -> list[str]:
    """``text`` in pieces of at most ``_CHUNK`` characters, none starting with whitespace (an SSE client strips
    the space after ``data:``, and some strip more)."""
    pieces, start = [], 0
    while len(text) - start > _CHUNK:
        end = start + _CHUNK
        while end > start + 1 and text[end].isspace():
            end -= 1
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def _event(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def _sse(body: AsyncIterator[bytes]) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _sid(request: Request) -> str:
    sid = request.headers.get("x-session-id", "").strip()
    if not sid or len(sid) > _MAX_SID:
        raise ApiError(400, "session_id_missing", "ORS routes of a session need an X-Session-ID header (at most "
                                                  f"{_MAX_SID} characters): POST /create_session gives one.")
    return sid


# ---- routes -----------------------------------------------------------------------------
def ors_router(service: OrsService) -> APIRouter:
    router = APIRouter(tags=["ORS (Open Reward Standard)"])

    def per_env(method: str, route: str, endpoint: Callable[..., Any]) -> None:
        """``endpoint`` at ``/<ors name>/<route>`` and, for the default env, at ``/<route>``."""
        for path in (f"/{{env_name}}/{route}", f"/{route}"):
            router.add_api_route(path, endpoint, methods=[method], include_in_schema=path.startswith("/{"))

    def env_id(request: Request) -> str:
        return service.env_of(request.path_params.get("env_name"))

    @router.get("/version")
    async def version() -> dict[str, Any]:
        return {"version": __version__, "build_sha": None}

    @router.get("/list_environments")
    async def list_environments() -> list[str]:
        return list(service.names)

    async def tools(request: Request) -> dict[str, Any]:
        env = env_id(request)
        listed = (await service.mcp.tools(env, service.kwargs(env))).listed(key="input_schema")
        return {"tools": listed, "terminal_tool": None, "supports_score_group": False,
                "message_block_types": ["text"]}

    async def splits(request: Request) -> list[dict[str, str]]:
        return [{"name": s, "type": s if s in _SPLIT_TYPES else "validation"}
                for s in await service.catalog(env_id(request))]

    async def tasks(request: Request, body: OrsSplit) -> dict[str, Any]:
        env = env_id(request)
        return {"tasks": await service.tasks(env, body.split), "env_name": service.name_of(env)}

    async def num_tasks(request: Request, body: OrsSplit) -> dict[str, int]:
        return {"num_tasks": len(await service.tasks(env_id(request), body.split))}

    async def task(request: Request, body: OrsTask) -> dict[str, Any]:
        env = env_id(request)
        listed = await service.tasks(env, body.split)
        if not -len(listed) <= body.index < len(listed):
            raise ApiError(400, "invalid_index", f"Split {body.split!r} has {len(listed)} tasks; index "
                                                 f"{body.index} is not one of them.")
        return {"task": listed[body.index], "env_name": service.name_of(env)}

    async def task_range(request: Request, body: OrsTaskRange) -> dict[str, Any]:
        env = env_id(request)
        return {"tasks": (await service.tasks(env, body.split))[body.start:body.stop], "env_name": service.name_of(env)}

    async def task_tools(request: Request) -> dict[str, Any]:
        ors = service.get(_sid(request))
        return {"tools": ors.tools.listed(key="input_schema"), "terminal_tool": None,
                "supports_score_group": False, "message_block_types": ["text"]}

    async def prompt(request: Request) -> list[dict[str, Any]]:
        return [{"type": "text", "text": service.get(_sid(request)).prompt, "detail": None}]

    async def messages(request: Request) -> list[dict[str, Any]]:
        return [{"role": "user", "blocks": await prompt(request), "detail": None}]

    async def call(request: Request, body: OrsCall) -> StreamingResponse:
        if body.task_id is not None:  # a client resuming the stream of a call it made
            return _sse(service.stream(body.task_id))
        ors = service.get(_sid(request))
        return _sse(service.stream(service.start(service.call(ors, body))))

    for method, route, endpoint in (("GET", "tools", tools), ("GET", "splits", splits), ("POST", "tasks", tasks),
                                    ("POST", "num_tasks", num_tasks), ("POST", "task", task),
                                    ("POST", "task_range", task_range), ("GET", "task_tools", task_tools),
                                    ("GET", "prompt", prompt), ("GET", "messages", messages),
                                    ("POST", "call", call)):
        per_env(method, route, endpoint)

    @router.post("/create_session")
    async def create_session() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            # an id in the store's form: with --processes N it names this process, which the others pass the
            # session's requests on to (affinity.py)
            yield _event("task_id", service.store.new_session_id())
            yield _event("end", "")
        return _sse(body())

    @router.post("/delete_session")
    async def delete_session(request: Request) -> dict[str, str]:
        return {"sid": _sid(request)}

    @router.post("/create")
    async def create(request: Request, body: OrsCreate) -> dict[str, str]:
        sid = _sid(request)
        await service.create(sid, body)
        return {"sid": sid}

    @router.post("/ping")
    async def ping(request: Request) -> dict[str, str]:
        service.get(_sid(request))
        return {"status": "ok"}

    @router.post("/delete")
    async def delete(request: Request) -> dict[str, str]:
        sid = _sid(request)
        await service.delete(sid)
        return {"sid": sid}

    return router
