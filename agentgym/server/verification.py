"""``POST /v1/verify``'s admission: its own threads and bounded queue, and a limit per client.

Verifications run on threads of their own, never on the env worker threads, so a
step or a new session never waits behind them. At most ``max_queued`` are in
flight (running or waiting for a verifier worker) in all, and at most
``max_client`` of one client: past the first, 503 with ``Retry-After``; past the
second, 429. A verification waits for a worker at most its budget, and holds at
most all workers but one (``agentgym.verifiers.budget``): one client's slow
verifications cannot hold up another's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentgym.errors import ConfigError
from agentgym.server.api_error import ApiError
from agentgym.server.clients import client_key  # where it lived first: kept importable from here
from agentgym.server.threads import EnvThreads
from agentgym.verifiers import get_verifier
from agentgym.verifiers.budget import DEFAULT_BUDGET_S, VerifierUnavailable, budget_seconds, verifying_for

__all__ = ["DEFAULT_MAX_CLIENT_VERIFICATIONS", "DEFAULT_MAX_QUEUED_VERIFICATIONS", "ENV_PREFIX", "EnvVerifiers",
           "Verifications", "client_key"]

DEFAULT_MAX_CLIENT_VERIFICATIONS = 16
DEFAULT_MAX_QUEUED_VERIFICATIONS = 64


ENV_PREFIX = "env:"


class EnvVerifiers:
    """``env:<env id>`` verifiers: the served env's own ``verify`` (a user's env's verifier, as its episodes are
    scored) on the task ``{"task_id": ...}`` names; one env of each id is made (with the operator's kwargs) and kept."""

    def __init__(self, env_ids: Iterable[str], make_env: Callable[[str], Any]) -> None:
        self.env_ids = sorted(env_ids)
        self.make_env = make_env
        self._envs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, env_id: str, prediction: str | None, task: Mapping[str, Any]) -> Any:
        if env_id not in self.env_ids:
            raise ConfigError(f"verifier 'env:{env_id}': this server does not serve {env_id!r}; it serves "
                              f"{', '.join(self.env_ids)}.")
        if set(task) != {"task_id"}:
            raise ConfigError(f"verifier 'env:{env_id}' takes task {{'task_id': ...}} (one of the env's tasks), got "
                              f"the keys {sorted(task)}.")
        with self._lock:
            if env_id not in self._envs:
                self._envs[env_id] = self.make_env(env_id)
            env = self._envs[env_id].unwrapped
        if not getattr(getattr(env, "action_format", None), "has_answer", True):
            raise ConfigError(f"{env_id}'s episodes end with an action in the world, not an answer: there is no "
                              "answer to verify; play a session instead.")
        return env.verify(prediction, env.tasks.get(str(task["task_id"])))

    def close(self) -> None:
        with self._lock:
            envs, self._envs = list(self._envs.values()), {}
        for env in envs:
            env.close()


class Verifications:
    """Runs verifications by name for clients: on ``max_queued`` threads of their own, at most ``max_queued`` in
    flight (more: ``VerifierUnavailable``) and ``max_client`` of one client (more: 429 ``too_many_verifications``)."""

    def __init__(self, *, max_client: int = DEFAULT_MAX_CLIENT_VERIFICATIONS,
                 max_queued: int = DEFAULT_MAX_QUEUED_VERIFICATIONS,
                 env_verifier: Callable[[str, str | None, Mapping[str, Any]], Any] | None = None) -> None:
        for name, value in (("max_client_verifications", max_client), ("max_queued_verifications", max_queued)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}.")
        self.max_client, self.max_queued = max_client, max_queued
        #: ``env:<env id>`` verifiers: a served env's own verifier on one of its tasks (``EnvVerifiers``)
        self.env_verifier = env_verifier
        self.threads = EnvThreads(max_queued, name="agentgym-verify")  # one per verification in flight
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()  # taken on the event loop, and by the threads when a verification ends

    async def verify(self, client: str, verifier: str, prediction: str | None,
                     task: Mapping[str, Any]) -> dict[str, Any]:
        """``verifier``'s verdict on ``prediction`` as a dict, for ``client`` (a ``client_key``).

        Raises ``ApiError`` 429 past the client's limit, ``VerifierUnavailable``
        past the server's (or when no verifier worker was free within the budget),
        and what the verifier raises for bad input (``ConfigError``, ``VerifierError``).
        """
        with self._lock:
            held = self._in_flight.get(client, 0)
            if held >= self.max_client:
                raise ApiError(429, "too_many_verifications",
                               f"This client has {held} verifications in flight, the most one client may have "
                               f"(max_client_verifications={self.max_client}); send the next when one is answered.")
            total = sum(self._in_flight.values())
            if total >= self.max_queued:
                raise VerifierUnavailable(
                    f"The server has {total} verifications in flight, the most it queues "
                    f"(max_queued_verifications={self.max_queued}): the server's failure, not the answer's; retry.",
                    retry_after_s=_budget_s())
            self._in_flight[client] = held + 1

        def run() -> dict[str, Any]:
            try:
                with verifying_for(client):
                    if verifier.startswith(ENV_PREFIX) and self.env_verifier is not None:
                        return self.env_verifier(verifier.removeprefix(ENV_PREFIX), prediction, task).as_dict()
                    return get_verifier(verifier)(prediction, task).as_dict()
            finally:  # counted until it ends, even if the request was cancelled: each in flight holds a thread
                self._ended(client)

        return await self.threads.run(run)

    def _ended(self, client: str) -> None:
        with self._lock:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]

    def shutdown(self) -> None:
        self.threads.shutdown(wait=False)


def _budget_s() -> float:
    """When to retry: within one budget a verification ends and frees its place."""
    try:
        return budget_seconds() or 1.0
    except ConfigError:
        return DEFAULT_BUDGET_S
