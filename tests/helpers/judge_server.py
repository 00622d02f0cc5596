"""A scripted OpenAI-compatible judge on a real local HTTP server: its verdicts are fixed by the fenced answer's
text, so the judge's tests are deterministic. It records every request it got."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from agentgym.core.background_server import start_uvicorn, stop_uvicorn

FENCED = re.compile(r"<<<ANSWER(?: \d+)? ([0-9a-f]{16})>>>\n(.*?)\n<<<END \1>>>", re.DOTALL)


def verdict(answer: str) -> int:
    """8 for an answer naming Lima, 1 otherwise; what an injected instruction says plays no part."""
    return 8 if "Lima" in answer else 1


def serve_judge(reply: Any = None, finish_reason: str = "stop") -> Any:
    """``reply(user_message, answers) -> str`` overrides the scripted reply (a malformed one, say);
    ``finish_reason`` is what every reply says of its end (``length``: cut at max_tokens)."""
    # starlette is the server extra: imported here, so that a test module importing this one collects without it
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    requests: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        requests.append(body)
        user = body["messages"][-1]["content"]
        answers = [m.group(2) for m in FENCED.finditer(user)]
        if reply is not None:
            text = reply(user, answers)
        elif len(answers) == 1:
            text = f"SCORE: {verdict(answers[0])}"
        else:
            text = "SCORES: " + ", ".join(str(verdict(a)) for a in answers)
        return JSONResponse({"id": "j", "object": "chat.completion", "model": body["model"],
                             "choices": [{"index": 0, "finish_reason": finish_reason,
                                          "message": {"role": "assistant", "content": text}}]})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    return app, requests


@contextlib.contextmanager
def judge(reply: Any = None, finish_reason: str = "stop") -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base_url, requests)`` of a scripted judge served for the block."""
    app, requests = serve_judge(reply, finish_reason)
    server, thread, port = start_uvicorn(app, name="test-judge", timeout_s=30, failed=RuntimeError)
    try:
        yield f"http://127.0.0.1:{port}/v1", requests
    finally:
        stop_uvicorn(server, thread, 10)
