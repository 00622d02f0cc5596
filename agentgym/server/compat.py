"""AgentGym's env-server protocol, per env, so existing AgentGym clients work unchanged.

An AgentGym client is pointed at one env's base URL; here that is
``http://host:port/<env id>`` (e.g. ``/agentgym/SearchQA-v0``). Its protocol:
``POST /create`` -> ``{"id": int}``; ``POST /reset {"id", "data_idx"}``;
``POST /step {"id", "action"}`` -> ``{"observation", "reward", "done", "info"}``;
``GET /observation?id=`` -> ``{"observation"}``; ``POST /close {"id"}``.
``data_idx`` picks the task by index in the env's split. Ids are ints, as AgentGym's
clients expect, drawn at random from [1, 2**63): knowing one's own id tells nothing
of another client's, so only the client that created a session can step or close it.
"""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from agentgym.server.sessions import ApiError, SessionStore

__all__ = ["agentgym_router"]


class CompatId(BaseModel):
    id: int


class CompatReset(BaseModel):
    id: int
    data_idx: int = Field(default=0, ge=0)


class CompatStep(BaseModel):
    id: int
    action: str


def agentgym_router(store: SessionStore, env_id: str) -> APIRouter:
    """Routes under ``/<env_id>`` speaking AgentGym's protocol over this server's sessions."""
    router = APIRouter(prefix=f"/{env_id}", tags=[f"AgentGym compatibility: {env_id}"])
    ids: dict[int, str] = {}  # AgentGym's int id -> session id
    last: dict[int, str] = {}  # last observation, for GET /observation

    def session_of(compat_id: int) -> str:
        if compat_id not in ids or ids[compat_id] not in store.sessions:
            ids.pop(compat_id, None)
            last.pop(compat_id, None)
            raise ApiError(404, "session_not_found", f"No {env_id} env with id {compat_id}; POST /create first.")
        return ids[compat_id]

    @router.get("/")
    async def hello() -> str:
        return f"This is environment {env_id}."

    @router.post("/create")
    async def create() -> dict[str, int]:
        for stale in [k for k, sid in ids.items() if sid not in store.sessions]:  # expired by the TTL reaper
            ids.pop(stale, None)
            last.pop(stale, None)
        session, (observation, _) = await store.create(env_id, {}, None, None)
        compat_id = _new_id(ids)
        ids[compat_id], last[compat_id] = session.id, observation
        return {"id": compat_id}

    @router.post("/reset")
    async def reset(body: CompatReset) -> dict[str, Any]:
        observation, info = await store.reset(session_of(body.id), None, {"index": body.data_idx})
        last[body.id] = observation
        return {"observation": observation, "reward": 0.0, "done": False, "info": info}

    @router.post("/step")
    async def step(body: CompatStep) -> dict[str, Any]:
        result = await store.step(session_of(body.id), body.action, None)
        last[body.id] = result["observation"]
        done = result["terminated"] or result["truncated"]
        return {"observation": result["observation"], "reward": result["reward"], "done": done,
                "info": result["info"]}

    @router.get("/observation")
    async def observation(id: int) -> dict[str, str]:  # AgentGym names the query parameter id
        session_of(id)
        return {"observation": last[id]}

    @router.post("/close")
    async def close(body: CompatId) -> dict[str, bool]:
        await store.close(session_of(body.id))
        ids.pop(body.id, None)
        last.pop(body.id, None)
        return {"closed": True}

    return router


def _new_id(taken: dict[int, str]) -> int:
    """A random id in [1, 2**63) not in ``taken``: an int, as AgentGym clients expect, and a 63-bit secret."""
    while True:
        compat_id = 1 + secrets.randbelow(2**63 - 1)
        if compat_id not in taken:
            return compat_id
