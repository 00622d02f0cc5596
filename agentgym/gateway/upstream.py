"""Pass a rollout's calls through to an upstream OpenAI-compatible endpoint, recording them as text only.

The upstream's tokens are not seen here, so its records hold the messages and the returned turns but no
``samples``: they can be evaluated and viewed, not trained on token-exactly (the trainer refuses them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from agentgym.gateway.chat import GatewayError, Output
from agentgym.gateway.records import Call, Choice, Rollout

__all__ = ["Upstream"]


class Upstream:
    """An OpenAI-compatible endpoint (``base_url`` ends in ``/v1``) that serves the gateway's model."""

    def __init__(self, base_url: str, *, api_key: str | None = None, model: str | None = None,
                 timeout_s: float = 600.0) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)

    def chat(self, gateway: Any, body: Mapping[str, Any], rollout: Rollout | None, messages: list[dict[str, Any]],
             tools: list[dict[str, Any]], started: float) -> dict[str, Any]:
        import httpx

        forwarded = {**body, "model": self.model or body.get("model"), "stream": False}
        try:
            response = self.client.post("/chat/completions", json=forwarded)
        except httpx.HTTPError as e:
            raise GatewayError(502, f"The upstream {self.base_url} did not answer: {e}", kind="server_error") from e
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400 or not isinstance(data, dict):
            message = (data or {}).get("error", {}).get("message") if isinstance(data, dict) else response.text[:300]
            raise GatewayError(response.status_code if response.status_code >= 400 else 502,
                               f"The upstream {self.base_url} answered {response.status_code}: {message}",
                               kind="upstream_error")
        if rollout is not None:
            call = Call(0, messages, tools, [], [], [], None, 0, False,
                        {k: body.get(k) for k in ("temperature", "top_p", "max_tokens", "n", "seed", "stop")})
            for choice in data.get("choices") or []:
                message = choice.get("message") or {}
                calls = tuple((c["function"]["name"], c["function"].get("arguments"))
                              for c in message.get("tool_calls") or [])
                output = Output(message.get("content"), calls, str(choice.get("finish_reason") or "stop"))
                call.choices.append(Choice([], None, message.get("content") or "", output,
                                           [c.get("id", "") for c in message.get("tool_calls") or []]))
            call.wall_s = time.perf_counter() - started
            call.started = time.time() - call.wall_s  # when the call began (made after the answer, it would read late)
            rollout.add(call)
        data["model"] = gateway.model_name
        return data

    def close(self) -> None:
        self.client.close()
