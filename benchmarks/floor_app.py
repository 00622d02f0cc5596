"""The raw-HTTP floor: a bare Starlette handler returning fixed JSON (run by bench_server.py)."""

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

_BODY = {"observation": "ok", "reward": 0.0, "terminated": False, "truncated": False, "info": {}}


async def fixed(request):
    await request.body()
    return JSONResponse(_BODY)


app = Starlette(routes=[Route("/{path:path}", fixed, methods=["GET", "POST"])])
