"""The floor with the env: a bare Starlette app calling SearchQA inline in its handlers (run by bench_server.py).

What serving this env costs at least: the same routes and bodies as ``agentgym serve``
(create, reset, step, batch create, batch step, close), the env built as the server
builds it, called on the event loop with no thread, lock, validation, token, limit or
metrics. Bodies are read and written with orjson, as the server does (Starlette's
``JSONResponse``, the stdlib's encoder, spends ~15x longer on a step's answer), and like
the server it moves the loaded corpus and index out of the garbage collector's reach after
the first session: the reference pays nothing the server need not.
"""

from __future__ import annotations

import gc
import secrets
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentgym.core.registry import create_env

ENVS: dict[str, Any] = {}


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


async def _json(request: Request) -> Any:
    return orjson.loads(await request.body())


def _step(env: Any, action: Any) -> dict[str, Any]:
    observation, reward, terminated, truncated, info = env.step(action)
    return {"observation": observation, "reward": float(reward), "terminated": bool(terminated),
            "truncated": bool(truncated), "info": info}


def _create(spec: dict[str, Any]) -> dict[str, Any]:
    env = create_env(env_id=spec["env_id"], **spec.get("kwargs", {}))
    observation, info = env.reset(seed=spec.get("seed"), options=spec.get("options"))
    session_id = secrets.token_urlsafe(12)
    ENVS[session_id] = env
    if len(ENVS) == 1:
        gc.collect()
        gc.freeze()
    return {"session_id": session_id, "env_id": spec["env_id"], "observation": observation, "info": info}


async def create(request: Request) -> JSONResponse:
    return JSONResponse(_create(await _json(request)), status_code=201)


async def create_many(request: Request) -> JSONResponse:
    return JSONResponse({"results": [_create(spec) for spec in (await _json(request))["sessions"]]})


async def reset(request: Request) -> JSONResponse:
    body = await _json(request)
    observation, info = ENVS[request.path_params["sid"]].reset(seed=body.get("seed"), options=body.get("options"))
    return JSONResponse({"observation": observation, "info": info})


async def step(request: Request) -> JSONResponse:
    body = await _json(request)
    return JSONResponse(_step(ENVS[request.path_params["sid"]], body["action"]))


async def step_many(request: Request) -> JSONResponse:
    steps = (await _json(request))["steps"]
    return JSONResponse({"results": [{"session_id": s["session_id"], "result": _step(ENVS[s["session_id"]], s["action"])}
                                     for s in steps]})


async def close(request: Request) -> JSONResponse:
    ENVS.pop(request.path_params["sid"]).close()
    return JSONResponse({"closed": True})


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "sessions": len(ENVS)})


app = Starlette(routes=[
    Route("/healthz", healthz),
    Route("/v1/sessions", create, methods=["POST"]),
    Route("/v1/sessions/{sid}/reset", reset, methods=["POST"]),
    Route("/v1/sessions/{sid}/step", step, methods=["POST"]),
    Route("/v1/sessions/{sid}", close, methods=["DELETE"]),
    Route("/v1/create", create_many, methods=["POST"]),
    Route("/v1/step", step_many, methods=["POST"]),
])
