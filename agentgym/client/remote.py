"""``RemoteEnv`` (a ``gymnasium.Env``) and ``AsyncRemoteEnv`` over the agentgym server protocol.

Connection errors are retried a bounded number of times. A retried step carries
the same ``step_id``, and the server answers a repeated ``step_id`` from its
record of that step, so a retry never steps twice. A session lost with the server
process that held it (410 ``session_lost``, ``agentgym serve --processes N``) fails
its step; the next ``reset`` makes a new session.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import gymnasium as gym
import httpx

from agentgym.core.env import TextSpace
from agentgym.errors import ConfigError, RemoteEnvError, ResetNeeded

__all__ = ["AsyncRemoteEnv", "RemoteEnv"]

_RETRYABLE = (httpx.TransportError,)


class _Calls:
    """What both clients share: URLs, payloads, and turning answers into results or errors."""

    def __init__(self, env_id: str, base_url: str, token: str | None, env_kwargs: dict[str, Any] | None,
                 retries: int) -> None:
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}.")
        self.env_id, self.base_url = env_id, base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.env_kwargs = dict(env_kwargs or {})
        self.retries = retries
        self.session_id: str | None = None
        self.turn = 0
        self.done = True

    def reset_request(self, seed: int | None, options: dict[str, Any] | None) -> tuple[str, str, dict[str, Any]]:
        if self.session_id is None:
            return "POST", "/v1/sessions", {"env_id": self.env_id, "kwargs": self.env_kwargs, "seed": seed,
                                            "options": options}
        return "POST", f"/v1/sessions/{self.session_id}/reset", {"seed": seed, "options": options}

    def forget_lost(self, error: RemoteEnvError) -> bool:
        """Whether ``error`` says the session was lost with the server process holding it (410, ``agentgym serve
        --processes N``); if so the session is forgotten, so that a reset makes a new one."""
        if error.code != "session_lost" or self.session_id is None:
            return False
        self.session_id = None
        return True

    def after_reset(self, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.session_id = data.get("session_id", self.session_id)
        self.turn, self.done = 0, False
        return data["observation"], data["info"]

    def step_request(self, action: Any) -> tuple[str, str, dict[str, Any]]:
        if self.session_id is None or self.done:
            raise ResetNeeded("The episode is over (or never started): call reset() before step().")
        return "POST", f"/v1/sessions/{self.session_id}/step", {"action": _wire(action), "step_id": self.turn + 1}

    def after_step(self, data: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        self.done = data["terminated"] or data["truncated"]
        return data["observation"], data["reward"], data["terminated"], data["truncated"], data["info"]

    @staticmethod
    def check(response: httpx.Response) -> dict[str, Any]:
        if response.status_code < 400:
            return response.json()
        try:
            body = response.json()
            code, message = body.get("code", "error"), body.get("message", response.text)
        except ValueError:
            code, message = "error", response.text[:500]
        raise RemoteEnvError(message, status_code=response.status_code, code=code)


def _wire(action: Any) -> Any:
    """The action as JSON carries it. What JSON cannot carry (bytes, sets, NaN, other objects) is sent as
    null: an unsupported action either way, which the env answers with the observation it gives in process."""
    if isinstance(action, str):
        return action
    try:
        return json.loads(json.dumps(action, default=lambda _: None, allow_nan=False))
    except (TypeError, ValueError):  # NaN, a circular structure, a key JSON cannot have
        return None


def describe_remote_env(base_url: str, env_id: str, *, kwargs: dict[str, Any] | None = None,
                        split: str | None = None, token: str | None = None, timeout_s: float = 120.0,
                        transport: httpx.BaseTransport | None = None) -> dict[str, Any]:
    """What an ``agentgym serve`` says of one of its envs (``POST /v1/envs/describe``): ``split`` (the env's
    default when None), ``splits``, ``tasks`` (the split's count) and ``env_digest``. The env's file or package
    need not be here: the eval plans a remote run with it."""
    calls = _Calls(env_id, base_url, token, kwargs, retries=0)
    try:
        with httpx.Client(base_url=calls.base_url, headers=calls.headers, timeout=timeout_s,
                          transport=transport) as http:
            return calls.check(http.post("/v1/envs/describe", json={"env_id": env_id, "kwargs": calls.env_kwargs,
                                                                     "split": split}))
    except _RETRYABLE as e:
        raise RemoteEnvError(f"{calls.base_url}/v1/envs/describe unreachable: {e}", status_code=0,
                             code="connection_error") from e


class RemoteEnv(gym.Env[str, str]):
    """An agentgym env served by ``agentgym serve``, as a local ``gymnasium.Env``.

    >>> env = RemoteEnv("agentgym/SearchQA-v0", "http://127.0.0.1:8000")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                                      # doctest: +SKIP
    """

    metadata = {"render_modes": []}

    def __init__(self, env_id: str, base_url: str, *, token: str | None = None,
                 env_kwargs: dict[str, Any] | None = None, timeout_s: float = 60.0, retries: int = 3,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._calls = _Calls(env_id, base_url, token, env_kwargs, retries)
        self._http = httpx.Client(base_url=self._calls.base_url, headers=self._calls.headers, timeout=timeout_s,
                                  transport=transport)
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self.render_mode = None

    @property
    def session_id(self) -> str | None:
        return self._calls.session_id

    @property
    def env_id(self) -> str:
        return self._calls.env_id

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """The env keyword arguments this client sends (the server may add its operator's own)."""
        return dict(self._calls.env_kwargs)

    def _send(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        for attempt in range(self._calls.retries + 1):
            try:
                return self._calls.check(self._http.request(method, path, json=payload))
            except _RETRYABLE as e:
                if attempt == self._calls.retries:
                    raise RemoteEnvError(f"{self._calls.base_url}{path} unreachable after {attempt + 1} tries: {e}",
                                         status_code=0, code="connection_error") from e
                time.sleep(min(2.0, 0.1 * 2 ** attempt))
        raise AssertionError("unreachable")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        try:
            data = self._send(*self._calls.reset_request(seed, options))
        except RemoteEnvError as e:
            if not self._calls.forget_lost(e):
                raise
            data = self._send(*self._calls.reset_request(seed, options))  # a new session
        return self._calls.after_reset(data)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self._calls.after_step(self._send(*self._calls.step_request(action)))

    def close(self) -> None:
        if self._calls.session_id is not None:
            try:
                self._send("DELETE", f"/v1/sessions/{self._calls.session_id}")
            except RemoteEnvError as e:
                if e.status_code not in (0, 404, 410):  # already gone (or lost with its process) is fine on close
                    raise
            self._calls.session_id = None
        self._http.close()


class AsyncRemoteEnv:
    """The same protocol with ``async`` methods, for trainers that run many episodes at once.

    Pass ``client`` (an ``httpx.AsyncClient`` with ``base_url`` set) to share one
    connection pool between many envs; it is then the caller's to close.
    """

    def __init__(self, env_id: str, base_url: str, *, token: str | None = None,
                 env_kwargs: dict[str, Any] | None = None, timeout_s: float = 60.0, retries: int = 3,
                 client: httpx.AsyncClient | None = None) -> None:
        self._calls = _Calls(env_id, base_url, token, env_kwargs, retries)
        self._own_client = client is None
        self._http = client or httpx.AsyncClient(base_url=self._calls.base_url, timeout=timeout_s)

    @property
    def session_id(self) -> str | None:
        return self._calls.session_id

    async def _send(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        for attempt in range(self._calls.retries + 1):
            try:
                response = await self._http.request(method, path, json=payload, headers=self._calls.headers)
                return self._calls.check(response)
            except _RETRYABLE as e:
                if attempt == self._calls.retries:
                    raise RemoteEnvError(f"{path} unreachable after {attempt + 1} tries: {e}",
                                         status_code=0, code="connection_error") from e
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))
        raise AssertionError("unreachable")

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        try:
            data = await self._send(*self._calls.reset_request(seed, options))
        except RemoteEnvError as e:
            if not self._calls.forget_lost(e):
                raise
            data = await self._send(*self._calls.reset_request(seed, options))  # a new session
        return self._calls.after_reset(data)

    async def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self._calls.after_step(await self._send(*self._calls.step_request(action)))

    async def close(self) -> None:
        if self._calls.session_id is not None:
            try:
                await self._send("DELETE", f"/v1/sessions/{self._calls.session_id}")
            except RemoteEnvError as e:
                if e.status_code not in (0, 404, 410):
                    raise
            self._calls.session_id = None
        if self._own_client:
            await self._http.aclose()
