"""The gateway without HTTP: rollouts, their tool sessions, and one chat completion from an OpenAI request body.

``Gateway.chat`` checks the body (a bad one is a :class:`GatewayError`, OpenAI's error shape), builds the prompt
ids (reusing the rollout's sampled ids where the agent sent its history back unchanged: ``records.Rollout``),
queues the rows on the engine, and answers in OpenAI's shape. With ``upstream`` (an OpenAI-compatible endpoint)
the request is passed through instead and recorded as text only.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

from agentgym.gateway.chat import (GatewayError, normalize_messages, normalize_tools, parse_output, render,
                                   sentinel_suffix)
from agentgym.gateway.engine import Engine, Request
from agentgym.gateway.records import Call, Choice, Rollout
from agentgym.gateway.session import ToolSession
from agentgym.lm.generation import _seed

__all__ = ["Gateway", "Limits"]

_ROLLOUT_ID_CHARS = 64
MAX_N = 16


class Limits:
    """What one gateway holds at most; each limit answers a 4xx that names it (defaults sized for one machine).

    ``open_rollouts``: rollouts open at once (429 past it, after closing those idle for ``idle_s``);
    ``closed_records``: closed rollouts whose records stay readable (the oldest are forgotten);
    ``metadata_bytes``: a rollout's metadata as JSON (413); ``body_bytes``: a request body (413, read no further);
    ``request_s``: a chat completion's wait and generation (408; its rows leave the batch)."""

    def __init__(self, *, open_rollouts: int = 1024, idle_s: float = 3600.0, closed_records: int = 1024,
                 metadata_bytes: int = 65536, body_bytes: int = 16 * 2**20, request_s: float = 600.0) -> None:
        for name, value in (("open_rollouts", open_rollouts), ("idle_s", idle_s), ("closed_records", closed_records),
                            ("metadata_bytes", metadata_bytes), ("body_bytes", body_bytes),
                            ("request_s", request_s)):
            if value < (0 if name == "closed_records" else 1e-9):
                raise ValueError(f"The gateway's {name} limit must be > 0, got {value}.")
        self.open_rollouts, self.idle_s, self.closed_records = open_rollouts, idle_s, closed_records
        self.metadata_bytes, self.body_bytes, self.request_s = metadata_bytes, body_bytes, request_s


def _number(body: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise GatewayError(400, f"{name} must be a number in [{low:g}, {high:g}], got {value!r}.", param=name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise GatewayError(400, f"{name} must be an integer in [{low}, {high}], got {value!r}.", param=name)
    return value


def _stops(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > 4 or not all(isinstance(s, str) and s for s in items):
        raise GatewayError(400, "stop must be a non-empty string or a list of at most 4 of them.", param="stop")
    return tuple(items)


def _cut_at_stop(text: str, stops: tuple[str, ...]) -> str:
    hits = [text.index(s) for s in stops if s in text]
    return text[:min(hits)] if hits else text


class Gateway:
    """Rollouts and chat completions over one engine (or an upstream endpoint)."""

    def __init__(self, *, model_name: str, engine: Engine | None = None, upstream: Any = None,
                 default_max_tokens: int = 512, context_tokens: int = 8192,
                 sampling: Mapping[str, Any] | None = None, limits: Limits | None = None) -> None:
        if (engine is None) == (upstream is None):
            raise ValueError("A gateway needs exactly one backend: engine= (a local model) or upstream=.")
        self.model_name = model_name
        self.engine = engine
        self.upstream = upstream
        self.tokenizer = engine.tokenizer if engine is not None else None
        self.default_max_tokens = default_max_tokens
        self.context_tokens = context_tokens
        #: the trainer's sampling (temperature, top_p; max_tokens a cap) in place of what each request asks
        self.forced = dict(sampling or {})
        self.limits = limits or Limits()
        self.rollouts: dict[str, Rollout] = {}
        #: closed rollouts' ids, oldest first: past ``limits.closed_records`` their records are forgotten
        self._closed: dict[str, None] = {}
        self.sessions: dict[str, ToolSession] = {}
        self._order: dict[str, int] = {}
        self._count = itertools.count()
        self._lock = threading.Lock()
        if engine is not None and engine.expected is None:
            engine.expected = self.open_rollouts

    # ---- rollouts ---------------------------------------------------------------------------------
    def open_rollouts(self) -> int:
        with self._lock:
            return sum(not r.closed for r in self.rollouts.values())

    def create_rollout(self, rollout_id: str | None = None, *, metadata: Mapping[str, Any] | None = None,
                       session: ToolSession | None = None) -> Rollout:
        rollout_id = rollout_id or secrets.token_hex(8)
        if not (0 < len(rollout_id) <= _ROLLOUT_ID_CHARS and all(c.isalnum() or c in "-_." for c in rollout_id)):
            raise GatewayError(400, f"A rollout id is 1 to {_ROLLOUT_ID_CHARS} letters, digits, '-', '_' or '.'; "
                               f"got {rollout_id!r}.", param="id")
        size = len(json.dumps(dict(metadata or {}), default=repr).encode())
        if size > self.limits.metadata_bytes:
            raise GatewayError(413, f"The rollout's metadata is {size} bytes as JSON; this gateway keeps at most "
                               f"{self.limits.metadata_bytes}: keep ids and labels there, not data.",
                               param="metadata", code="metadata_too_large")
        if self.open_rollouts() >= self.limits.open_rollouts:
            self._expire_idle()
        with self._lock:
            if sum(not r.closed for r in self.rollouts.values()) >= self.limits.open_rollouts:
                raise GatewayError(429, f"{self.limits.open_rollouts} rollouts are open, the most this gateway "
                                   "holds: close finished ones (DELETE /rollouts/ID); one idle for "
                                   f"{self.limits.idle_s:g} s is closed for you.", code="too_many_rollouts",
                                   kind="rate_limit_error")
            if rollout_id in self.rollouts:
                raise GatewayError(409, f"A rollout {rollout_id!r} exists already.", param="id",
                                   code="rollout_exists")
            rollout = self.rollouts[rollout_id] = Rollout(rollout_id, text_only=self.upstream is not None,
                                                          metadata=metadata)
            self._order[rollout_id] = next(self._count)
            if session is not None:
                self.sessions[rollout_id] = session
        return rollout

    def _expire_idle(self) -> None:
        """Close the open rollouts no call touched for ``limits.idle_s`` (a later call on one is a 404 that says
        why)."""
        now = time.monotonic()
        with self._lock:
            idle = [r.id for r in self.rollouts.values() if not r.closed and now - r.touched > self.limits.idle_s]
        for rollout_id in idle:
            self.rollouts[rollout_id].expired = True
            self.close_rollout(rollout_id)

    def rollout(self, rollout_id: str) -> Rollout:
        with self._lock:
            rollout = self.rollouts.get(rollout_id)
        if rollout is None:
            raise GatewayError(404, f"No rollout {rollout_id!r} on this gateway: create one with POST /rollouts "
                               "and use the base_url it returns.", param="rollout", code="rollout_not_found",
                               kind="not_found_error")
        return rollout

    def session(self, rollout_id: str) -> ToolSession:
        self.rollout(rollout_id).touched = time.monotonic()
        with self._lock:
            session = self.sessions.get(rollout_id)
        if session is None:
            raise GatewayError(404, f"Rollout {rollout_id!r} has no env session: its tools exist only for rollouts "
                               "an agentgym harness (eval --agent) created.", param="rollout",
                               code="no_env_session", kind="not_found_error")
        return session

    def close_rollout(self, rollout_id: str, *, forget: bool = False) -> Rollout:
        """No more calls on it (a late one is a 404); ``forget``: drop its record too."""
        rollout = self.rollout(rollout_id)
        rollout.closed = True
        with self._lock:
            session = self.sessions.pop(rollout_id, None)
            if forget:
                self.rollouts.pop(rollout_id, None)
                self._closed.pop(rollout_id, None)
            else:
                self._closed[rollout_id] = None
                while len(self._closed) > self.limits.closed_records:
                    oldest = next(iter(self._closed))
                    del self._closed[oldest]
                    self.rollouts.pop(oldest, None)
                    self._order.pop(oldest, None)
        if session is not None:
            session.close()
        return rollout

    # ---- chat completions -------------------------------------------------------------------------
    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "created": 0,
                                            "owned_by": "agentgym"}]}

    def chat(self, body: Any, rollout_id: str | None = None, *,
             gone: threading.Event | None = None) -> dict[str, Any]:
        """One chat completion (blocking); ``rollout_id``: record it on that rollout. ``gone``: set when the client
        went away (the request leaves the engine's batch, and nothing is recorded)."""
        if not isinstance(body, Mapping):
            raise GatewayError(400, "The body must be a JSON object (OpenAI's chat completion request).")
        rollout = self.rollout(rollout_id) if rollout_id is not None else None
        if rollout is not None and rollout.closed:
            why = (f"it was idle for more than {self.limits.idle_s:g} s and this gateway needed room"
                   if rollout.expired else "its episode is over")
            raise GatewayError(404, f"Rollout {rollout_id!r} is closed: {why}.", param="rollout",
                               code="rollout_closed", kind="not_found_error")
        if rollout is not None:
            rollout.touched = time.monotonic()
            rollout.requested.set()
        model = body.get("model")
        if model is not None and model != self.model_name:
            raise GatewayError(404, f"The model {model!r} is not served here; this gateway serves "
                               f"{self.model_name!r} (GET /v1/models).", param="model", code="model_not_found",
                               kind="not_found_error")
        messages = normalize_messages(body.get("messages"))
        tools = [] if body.get("tool_choice") == "none" else normalize_tools(body.get("tools"))
        if body.get("top_logprobs"):
            raise GatewayError(400, "top_logprobs is not supported; logprobs=true gives each sampled token's.",
                               param="top_logprobs")
        sampling = {"temperature": _number(body, "temperature", 1.0, 0.0, 2.0),
                    "top_p": _number(body, "top_p", 1.0, 1e-6, 1.0),
                    "max_tokens": _integer(body, "max_completion_tokens", None, 1, self.context_tokens)
                    or _integer(body, "max_tokens", self.default_max_tokens, 1, self.context_tokens),
                    "n": _integer(body, "n", 1, 1, MAX_N), "seed": _integer(body, "seed", None, 0, 2**63 - 1),
                    "stop": list(_stops(body.get("stop")))}
        if self.forced:
            cap = self.forced.get("max_tokens")
            sampling.update({k: v for k, v in self.forced.items() if k != "max_tokens"},
                            **({"max_tokens": min(sampling["max_tokens"], cap)} if cap else {}))
        started = time.perf_counter()
        if self.upstream is not None:
            if self.forced:  # the upstream samples at the forced settings too, and its record says so
                body = {k: v for k, v in body.items() if k not in ("seed", "max_completion_tokens")}
                body.update({k: sampling[k] for k in ("temperature", "top_p", "max_tokens")},
                            **({"seed": sampling["seed"]} if sampling["seed"] is not None else {}))
            return self.upstream.chat(self, body, rollout, messages, tools, started)
        call = self._prompt(rollout, messages, tools, sampling)
        request = Request(call.prompt_ids, n=sampling["n"], stops=tuple(sampling["stop"]),
                          max_tokens=sampling["max_tokens"], temperature=sampling["temperature"],
                          top_p=sampling["top_p"], seed=sampling["seed"] if sampling["seed"] is not None else
                          _seed(rollout_id, len(rollout.calls) if rollout else 0, time.monotonic_ns()),
                          order=(self._order.get(rollout_id or "", -1), len(rollout.calls) if rollout else 0))
        turns = self._wait(request, gone)
        for k, turn in enumerate(turns):
            text = self.tokenizer.decode(turn.ids, skip_special_tokens=True)
            text = _cut_at_stop(text, request.stops) if turn.stopped else text
            truncated = not (turn.ended or turn.stopped)
            output = parse_output(text, tools=bool(tools), truncated=truncated)
            ids = [f"call_{rollout_id or 'x'}_{len(rollout.calls) if rollout else 0}_{k}_{j}"
                   for j in range(len(output.tool_calls))]
            call.choices.append(Choice(list(turn.ids), list(turn.logprobs) if turn.logprobs is not None else None,
                                       text, output, ids))
        call.wall_s = time.perf_counter() - started
        if rollout is not None:
            rollout.add(call)
        return self._response(call, rollout_id, logprobs=bool(body.get("logprobs")))

    def _wait(self, request: Request, gone: threading.Event | None) -> list[Any]:
        """The request's turns; it is cancelled once its client is gone or it ran past ``limits.request_s``."""
        engine: Engine = self.engine  # type: ignore[assignment]
        future = engine.submit(request)
        deadline = time.monotonic() + self.limits.request_s
        while True:
            try:
                return future.result(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
            except concurrent.futures.TimeoutError:
                if gone is not None and gone.is_set():
                    engine.cancel(request)
                    raise GatewayError(499, "The client closed the connection; the request was cancelled.",
                                       code="client_closed_request") from None
                if time.monotonic() >= deadline:
                    engine.cancel(request)
                    raise GatewayError(408, f"The completion ran past this gateway's limit of "
                                       f"{self.limits.request_s:g} s a request (queued and generating): ask for fewer "
                                       "tokens (max_tokens x n), or raise the limit (agentgym gateway "
                                       "--request-timeout).", param="max_tokens", code="request_timeout") from None
            except Exception as e:  # noqa: BLE001 - the model failed: a 500 in OpenAI's shape
                raise GatewayError(500, f"The model failed: {type(e).__name__}: {e}", kind="server_error") from e

    def _prompt(self, rollout: Rollout | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                sampling: dict[str, Any]) -> Call:
        """The call's prompt ids: its parent's ids as they were, plus the new messages; else the whole render."""
        tokenizer = self.tokenizer
        found = rollout.parent_of(messages, tools) if rollout is not None else None
        if found is not None:
            parent, c = found
            choice = parent.choices[c]
            suffix = sentinel_suffix(tokenizer, parent.messages, messages[len(parent.messages) + 1:], tools)
            if suffix is not None:
                eos = tokenizer.eos_token
                if choice.ids and choice.ids[-1] == tokenizer.eos_token_id and eos and suffix.startswith(eos):
                    suffix = suffix[len(eos):]
                delta = list(tokenizer(suffix, add_special_tokens=False)["input_ids"]) if suffix else []
                logprobs = choice.logprobs if choice.logprobs is not None else [None] * len(choice.ids)
                ids = [*parent.prompt_ids, *choice.ids, *delta]
                self._check_length(ids, sampling)
                return Call(0, messages, tools, ids, [*parent.prompt_mask, *[1] * len(choice.ids), *[0] * len(delta)],
                            [*parent.prompt_logprobs, *logprobs, *[None] * len(delta)], (parent.index, c),
                            len(parent.prompt_ids) + len(choice.ids), False, sampling)
        ids = list(tokenizer(render(tokenizer, messages, tools), add_special_tokens=False)["input_ids"])
        self._check_length(ids, sampling)
        return Call(0, messages, tools, ids, [0] * len(ids), [None] * len(ids), None, 0, False, sampling)

    def _check_length(self, ids: list[int], sampling: Mapping[str, Any]) -> None:
        if len(ids) + sampling["max_tokens"] > self.context_tokens:
            raise GatewayError(400, f"The prompt is {len(ids)} tokens and max_tokens {sampling['max_tokens']}: "
                               f"more than the model's context of {self.context_tokens}. Shorten the "
                               "conversation or lower max_tokens.", param="messages",
                               code="context_length_exceeded")

    def _response(self, call: Call, rollout_id: str | None, *, logprobs: bool) -> dict[str, Any]:
        choices = []
        for k, choice in enumerate(call.choices):
            entry: dict[str, Any] = {"index": k, "message": choice.output.message(choice.call_ids),
                                     "finish_reason": choice.output.finish_reason, "logprobs": None}
            if logprobs and choice.logprobs is not None:
                entry["logprobs"] = {"content": [self._token_logprob(i, lp) for i, lp in
                                                 zip(choice.ids, choice.logprobs)], "refusal": None}
            choices.append(entry)
        completion = sum(len(c.ids) for c in call.choices)
        return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name, "choices": choices, "system_fingerprint": None,
                "usage": {"prompt_tokens": len(call.prompt_ids), "completion_tokens": completion,
                          "total_tokens": len(call.prompt_ids) + completion},
                "agentgym": {"rollout": rollout_id, "call": call.index if rollout_id else None,
                             "extends": list(call.parent) if call.parent else None, "branched": call.branched,
                             "reused_tokens": call.reused_tokens}}

    def _token_logprob(self, token_id: int, logprob: float) -> dict[str, Any]:
        text = self.tokenizer.decode([token_id])
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8")), "top_logprobs": []}

    def close(self) -> None:
        for rollout_id in list(self.rollouts):
            self.close_rollout(rollout_id)
        if self.engine is not None:
            self.engine.close()
