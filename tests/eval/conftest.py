"""A fake OpenAI-compatible endpoint for the eval's pre-flight and fingerprint tests: no model behind it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class FakeEndpoint:
    """``GET /v1/models`` lists ``models``; ``POST /v1/chat/completions`` answers ``status`` (200: "OK")."""

    def __init__(self) -> None:
        self.models: list[dict[str, Any]] = [{"id": "gpt-x", "object": "model", "root": "/models/a"}]
        self.status = 200
        self.requests: list[dict[str, Any]] = []
        self.url = ""


@pytest.fixture
def fake_openai() -> Iterator[FakeEndpoint]:
    fake = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": fake.models})

        def do_POST(self) -> None:
            fake.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            if fake.status != 200:
                self._send(fake.status, {"error": {"message": "model is loading"}})
                return
            self._send(200, {"choices": [{"message": {"role": "assistant", "content": "OK"}}],
                             "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

        def log_message(self, *args: Any) -> None:  # the test output stays clean
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
