"""AgentGym's env-server protocol, per env, so existing AgentGym clients work unchanged.

An AgentGym client is pointed at one env's base URL; here that is
``http://host:port/<env id>`` (e.g. ``/agentgym/SearchQA-v0``). Every family's client
POSTs ``/create``, ``/reset``, ``/step`` and ``/close`` and GETs ``/observation``, each
in its family's dialect (field names, answer shapes, error form: ``dialects.py``); the
routes here are one implementation, parametrised by the dialects served for the env.
A request speaks the first of them whose session field it names. The task index of a
reset is an index into the env's split, and is never read as a session. A session made
by TextCraft's client, whose action filter leaves only plain words, plays in the
``plain`` action format, or is refused where plain words cannot play the env.

Ids are ints, as AgentGym's clients expect, drawn at random from [1, 2**63): knowing
one's own id tells nothing of another client's, so only the client that created a
session can reset, step, observe or close it. (With ``agentgym serve --processes N``
an id also names the process holding its session: ``siblings.py``.)
"""

# No ``from __future__ import annotations``: FastAPI reads the body types, built per env, from live annotations.
import functools
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Optional, Union

from fastapi import APIRouter, Query
from pydantic import BaseModel, Discriminator, Field, Tag, create_model

from agentgym.server.dialects import PLAIN_ACTION_ENVS, Dialect, dialects_of
from agentgym.server.sessions import ApiError, SessionStore

__all__ = ["agentgym_router"]


@dataclass
class _Record:
    """What a compat id stands for: its session, and the last observation and info (for the GET routes)."""

    session_id: str
    observation: str
    info: dict[str, Any]


@dataclass(frozen=True)
class _Models:
    create: type[BaseModel]
    reset: type[BaseModel]
    step: type[BaseModel]
    close: type[BaseModel]


_DIALECT_OF: dict[type[BaseModel], Dialect] = {}  # each request model -> the dialect it belongs to


@functools.cache
def _models(d: Dialect) -> _Models:
    """The request bodies of one dialect, as its client sends them (fields it does not name are ignored)."""
    session = {d.session_key: (int, ...)}
    index = (Optional[int], Field(default=None, ge=0))
    create = {d.create_key: (int, Field(ge=0))} if d.create_key else {}
    if d.plain_client_key:
        create[d.plain_client_key] = (Any, Field(default=None, description="Sent by a client that keeps only "
                                      "letters, digits, commas and spaces of an action: plain-word actions."))
    models = _Models(
        create=create_model(f"{d.name}Create", **create),
        reset=create_model(f"{d.name}Reset", **session, **{k: index for k in d.task_keys},
                           **{k: (str, v) for k, v in d.reset_constants}),
        step=create_model(f"{d.name}Step", **session, action=(str, ...)),
        close=create_model(f"{d.name}Close", **session),
    )
    for model in (models.create, models.reset, models.step, models.close):
        _DIALECT_OF[model] = d
    return models


def _one_of(models: list[tuple[Dialect, type[BaseModel]]], key: Callable[[Dialect], str | None]) -> Any:
    """The body type: one dialect's model, or a union picked by the first dialect whose ``key`` field the body names
    (else the last dialect's, whose validation then says what is missing)."""
    if len(models) == 1:
        return models[0][1]

    def pick(value: Any) -> str:
        if isinstance(value, BaseModel):
            return _DIALECT_OF[type(value)].name
        named = [d for d, _ in models if isinstance(value, dict) and key(d) in value]
        return (named[0] if named else models[-1][0]).name

    return Annotated[Union[tuple(Annotated[m, Tag(d.name)] for d, m in models)], Discriminator(pick)]


@functools.cache
def _query_model(keys: tuple[str, ...]) -> type[BaseModel]:
    """GET routes' query string: each dialect's session field, optional (the one named picks the dialect)."""
    return create_model(f"Compat{''.join(k.title().replace('_', '') for k in keys)}Query",
                        **{k: (Optional[int], None) for k in keys})


def agentgym_router(store: SessionStore, env_id: str,
                    new_id: Callable[[dict[int, Any]], int] | None = None) -> APIRouter:
    """Routes under ``/<env_id>`` speaking AgentGym's protocol, in the env's dialects, over this server's sessions.

    ``new_id(taken)`` draws the ids of new sessions (default: a random int in [1, 2**63) not in ``taken``).
    """
    compat = _Compat(store, env_id, new_id or _new_id)
    dialects = compat.dialects
    router = APIRouter(prefix=f"/{env_id}", tags=[f"AgentGym compatibility: {env_id}"])

    def body(op: str, key: Callable[[Dialect], str | None] = lambda d: d.session_key) -> Any:
        return _one_of([(d, getattr(_models(d), op)) for d in dialects], key)

    CreateBody, ResetBody = Optional[body("create", lambda d: d.create_key)], body("reset")  # noqa: N806
    StepBody, CloseBody = body("step"), body("close")  # noqa: N806
    SessionQuery = _query_model(tuple(dict.fromkeys(d.session_key for d in dialects)))  # noqa: N806

    @router.get("/")
    async def hello() -> str:
        return f"This is environment {env_id}."

    @router.post("/create")
    async def create(body: CreateBody = None) -> Any:
        d = dialects[-1] if body is None else _DIALECT_OF[type(body)]
        return await _speak(d, compat.create(d, body))

    @router.post("/reset")
    async def reset(body: ResetBody) -> Any:
        d = _DIALECT_OF[type(body)]
        return await _speak(d, compat.reset(d, body))

    @router.post("/step")
    async def step(body: StepBody) -> Any:
        d = _DIALECT_OF[type(body)]
        return await _speak(d, compat.step(d, body))

    @router.get("/observation")
    async def observation(query: Annotated[SessionQuery, Query()]) -> Any:
        d, compat_id = compat.queried(query)
        return await _speak(d, compat.observation(d, compat_id))

    if any(d.actions_key for d in dialects):
        @router.get("/available_actions")
        async def available_actions(query: Annotated[SessionQuery, Query()]) -> Any:
            d, compat_id = compat.queried(query)
            return await _speak(d, compat.available_actions(d, compat_id))

    @router.post("/close")
    async def close(body: CloseBody) -> Any:
        d = _DIALECT_OF[type(body)]
        return await _speak(d, compat.close(d, body))

    return router


class _Compat:
    """One env's compat ids, and what each AgentGym request does with its session, answered in the request's dialect."""

    def __init__(self, store: SessionStore, env_id: str, new_id: Callable[[dict[int, Any]], int]) -> None:
        self.store, self.env_id, self.new_id = store, env_id, new_id
        self.dialects = dialects_of(env_id)
        self.records: dict[int, _Record] = {}  # AgentGym's int id -> its session

    def record_of(self, compat_id: int) -> _Record:
        record = self.records.get(compat_id)
        if record is None or record.session_id not in self.store.sessions:
            self.records.pop(compat_id, None)
            raise self.store.lost(compat_id) or ApiError(404, "session_not_found",
                                                         f"No {self.env_id} env with id {compat_id}; POST /create "
                                                         "first.")
        return record

    def queried(self, query: BaseModel) -> tuple[Dialect, int]:
        """The dialect and id a GET's query string names."""
        for d in self.dialects:
            if getattr(query, d.session_key) is not None:
                return d, getattr(query, d.session_key)
        names = " or ".join(f"?{d.session_key}=" for d in self.dialects)
        raise ApiError(422, "invalid_payload", f"Name the env: {names}<the int /create answered>.")

    async def create(self, d: Dialect, body: BaseModel | None) -> Any:
        for stale in [k for k, r in self.records.items() if r.session_id not in self.store.sessions]:  # TTL expired
            self.records.pop(stale, None)
        task = getattr(body, d.create_key) if d.create_key else None
        kwargs = self.kwargs_for(d, body)
        session, (observation, info) = await self.store.create(self.env_id, kwargs, None, _task(task))
        compat_id = self.new_id(self.records)
        self.records[compat_id] = _Record(session.id, observation, info)
        return compat_id if d.bare_id else {"id": compat_id, "observation": observation, "reward": 0.0, "done": False}

    def kwargs_for(self, d: Dialect, body: BaseModel | None) -> dict[str, Any]:
        """The env kwargs of a session this create makes: the plain action format for a client that would delete
        the characters of any other (TextCraft's), where the env can be played in plain words."""
        if body is None or d.plain_client_key not in body.model_fields_set:
            return {}
        if self.env_id not in PLAIN_ACTION_ENVS:
            raise ApiError(422, "invalid_request",
                           f"This client (it sent {d.plain_client_key!r}: AgentGym's TextCraft client) deletes every "
                           f"character but letters, digits, commas and spaces from an action, so no action of "
                           f"{self.env_id} survives it. Play {self.env_id} with a client that sends actions "
                           "unchanged: agentgym.client.RemoteEnv, OpenEnv's client, or your own AgentGym client.")
        return {"action_format": "plain"}

    async def reset(self, d: Dialect, body: BaseModel) -> Any:
        compat_id = getattr(body, d.session_key)
        record = self.record_of(compat_id)
        for key, served in d.reset_constants:
            if getattr(body, key) != served:
                raise ApiError(422, "invalid_payload", f"{key} must be {served!r}: the only one {self.env_id} has.")
        task = next((getattr(body, k) for k in d.task_keys if getattr(body, k) is not None), None)
        observation, info = await self.store.reset(record.session_id, None, _task(task))
        record.observation, record.info = observation, info
        if d.reset_answer == "text":
            return observation
        if d.reset_answer == "pair":
            return [observation, None]
        return {"id": compat_id, "observation": observation, "reward": 0.0, "done": False, "info": info,
                **_from_info(d, info)}

    async def step(self, d: Dialect, body: BaseModel) -> Any:
        record = self.record_of(getattr(body, d.session_key))
        result = await self.store.step(record.session_id, body.action, None)
        record.observation, record.info = result["observation"], result["info"]
        return {d.text_key: result["observation"], "reward": result["reward"],
                "done": result["terminated"] or result["truncated"], "info": result["info"],
                **_from_info(d, result["info"])}

    async def observation(self, d: Dialect, compat_id: int) -> Any:
        text = self.record_of(compat_id).observation
        return {"observation": text} if d.observation_answer == "object" else text

    async def available_actions(self, d: Dialect, compat_id: int) -> Any:
        if d.actions_key is None:
            raise ApiError(404, "not_found", f"AgentGym's {d.name} protocol has no /available_actions.")
        return self.record_of(compat_id).info.get(d.actions_key)

    async def close(self, d: Dialect, body: BaseModel) -> Any:
        compat_id = getattr(body, d.session_key)
        try:
            await self.store.close(self.record_of(compat_id).session_id)
        except ApiError as e:
            if d.close_answer == "bool" and e.status == 404:  # as SearchQA's server answers an unknown id
                return False
            raise
        self.records.pop(compat_id, None)
        return True if d.close_answer == "bool" else {"closed": True}


async def _speak(d: Dialect, answer: Awaitable[Any]) -> Any:
    """A route's answer, or its error in the dialect's form (HTTP status and {code, message}, or 200 {"error"})."""
    try:
        return await answer
    except ApiError as e:
        if d.errors_in_body:
            return {"error": e.message}
        raise


def _task(index: int | None) -> dict[str, int] | None:
    return None if index is None else {"index": index}


def _from_info(d: Dialect, info: dict[str, Any]) -> dict[str, Any]:
    return {field: info[key] for field, key in d.from_info if key in info}


def _new_id(taken: dict[int, Any]) -> int:
    """A random id in [1, 2**63) not in ``taken``: an int, as AgentGym clients expect, and a 63-bit secret."""
    while True:
        compat_id = 1 + secrets.randbelow(2**63 - 1)
        if compat_id not in taken:
            return compat_id
