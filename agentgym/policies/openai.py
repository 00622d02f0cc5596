"""``OpenAIPolicy``: a model behind any OpenAI-compatible chat endpoint (vLLM, SGLang, transformers serve, an API).

The endpoint is the boundary: connection failures, timeouts, 429 and 5xx are
retried with exponential backoff; anything still failing, and every other
non-2xx answer, becomes one ``PolicyError`` that carries the HTTP status and
the server's own message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from agentgym.errors import ConfigError, PolicyError
from agentgym.policies.chat import ChatPolicy, Generation
from agentgym.policies.base import Policy, Sampling

__all__ = ["OpenAIPolicy", "make_openai_policy"]

_MAX_BACKOFF_S = 8.0


def _api_root(base_url: str) -> str:
    """``http://host:8000`` and ``http://host:8000/v1`` both give ``http://host:8000/v1``.

    A URL with any other path (``https://host/openai/v1``, ``.../v1beta/openai``) is kept as given.
    """
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"The OpenAI base URL must look like http://host:port/v1, got {base_url!r}.")
    return url if parts.path else f"{url}/v1"


def _server_message(response: httpx.Response) -> str:
    """The error text an OpenAI-compatible server put in its body (OpenAI, vLLM and FastAPI shapes)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for value in (error, body.get("message"), body.get("detail")):
            if isinstance(value, str) and value:
                return value
            if value:
                return json.dumps(value)[:500]
    return json.dumps(body)[:500]


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        calls.append({"id": call.get("id") or f"call_{i}", "name": function.get("name", ""),
                      # the raw JSON string, as OpenAI sends it; a server that sends an object gets it re-encoded
                      "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
    return calls


class OpenAIPolicy(ChatPolicy):
    """Plays with the model ``model`` served at ``base_url`` (``POST {base_url}/chat/completions``).

    ``api_key`` defaults to ``$OPENAI_API_KEY``, else ``"EMPTY"`` (what local servers accept).
    ``max_retries`` retries follow the first attempt on connection errors, 429 and 5xx.
    """

    name = "openai"
    supports_tools = True
    backoff_s: float = 0.5  # first retry's wait; doubles per retry, capped at 8 s

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, sampling: Sampling | None = None,
                 system_prompt: str | None = None, timeout_s: float = 120, max_retries: int = 3) -> None:
        if not model:
            raise ConfigError("The openai policy needs the served model's name: pass --model NAME.")
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {timeout_s}.")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}.")
        super().__init__(sampling=sampling, system_prompt=system_prompt)
        self.model = model
        self.url = f"{_api_root(base_url)}/chat/completions"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "EMPTY")
        self._client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {key}"})

    def request_body(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The JSON body of one chat completion request."""
        s = self.sampling
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": s.temperature,
                                "top_p": s.top_p, "max_tokens": s.max_tokens, "seed": s.seed}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return body

    def generate(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Generation:
        data = self._post(self.request_body(messages, tools))
        try:
            message = data["choices"][0]["message"]
            usage = data.get("usage") or {}
            return Generation(text=message.get("content") or "", prompt_tokens=int(usage.get("prompt_tokens") or 0),
                              completion_tokens=int(usage.get("completion_tokens") or 0),
                              tool_calls=_tool_calls(message))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise PolicyError(f"{self.url} answered without a chat completion ({type(e).__name__}: {e}): "
                              f"{json.dumps(data)[:500]}") from e

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        attempts = self.max_retries + 1
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._client.post(self.url, json=body)
            except httpx.TransportError as e:
                if attempt == attempts:
                    raise PolicyError(f"Could not reach {self.url} after {attempts} attempt(s): "
                                      f"{type(e).__name__}: {e}") from e
            else:
                status = response.status_code
                if status < 300:
                    try:
                        return response.json()
                    except ValueError as e:
                        raise PolicyError(f"{self.url} answered {status} with a body that is not JSON: "
                                          f"{response.text[:500]!r}") from e
                retryable = status == 429 or status >= 500
                if not retryable or attempt == attempts:
                    after = f" after {attempts} attempt(s)" if retryable else ""
                    raise PolicyError(f"{self.url} answered {status} {response.reason_phrase}{after}: "
                                      f"{_server_message(response)}")
            time.sleep(min(self.backoff_s * 2 ** (attempt - 1), _MAX_BACKOFF_S))

    def close(self) -> None:
        self._client.close()


def make_openai_policy(spec: str, *, model: str | None, sampling: Sampling | None,
                       system_prompt: str | None = None) -> Policy | None:
    """An ``OpenAIPolicy`` for ``openai:<base_url>``; None for any other spec."""
    if not spec.startswith("openai:"):
        return None
    base_url = spec.removeprefix("openai:")
    if not base_url:
        raise ConfigError("Give the endpoint after 'openai:', e.g. openai:http://localhost:8000/v1.")
    if not model:
        raise ConfigError(f"Policy {spec!r} needs the served model's name: pass --model NAME "
                          "(the id the server lists at GET <base_url>/models).")
    return OpenAIPolicy(base_url, model, sampling=sampling, system_prompt=system_prompt)
