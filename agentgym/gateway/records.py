"""A rollout's record: every model call on its base URL, as a tree of token sequences.

Each call is a node: its request's messages, its prompt ids, and one choice per ``n`` (the ids the model sampled,
their log-probabilities, the assistant message returned). A later call whose messages repeat an earlier call's
messages and then that call's returned turn (as text or as the same tool calls) *extends* that choice: its prompt
ids are the earlier prompt's ids, the sampled ids as sampled, then only the new messages' ids, so nothing the model
wrote is ever re-encoded. A call that extends nothing is a new root: a *branch* (the agent edited history, or
started over), and its record says so.

``samples()`` gives one sample per leaf (a choice no later call extended): ``token_ids``, ``loss_mask`` (1 exactly
on sampled ids, along the whole path), ``logprobs`` (aligned; None where not sampled).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.gateway.chat import Output, same_assistant, same_json

__all__ = ["Call", "Choice", "Rollout"]


@dataclass
class Choice:
    """One sampled turn of a call."""

    ids: list[int]
    logprobs: list[float] | None
    text: str
    output: Output
    call_ids: list[str]
    #: a later call extends this choice (it is not a leaf)
    extended: bool = False


@dataclass
class Call:
    """One chat completion on the rollout's base URL."""

    index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_ids: list[int]
    prompt_mask: list[int]
    prompt_logprobs: list[float | None]
    #: (call index, choice index) this call extends, or None (a root)
    parent: tuple[int, int] | None
    #: prompt ids taken from the parent as they were (not re-encoded)
    reused_tokens: int
    #: a root after the rollout's first call: the agent's history did not match any earlier turn
    branched: bool
    sampling: dict[str, Any]
    choices: list[Choice] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    wall_s: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "messages": self.messages, "tools": [t["function"]["name"] for t in self.tools],
                "parent": list(self.parent) if self.parent else None, "branched": self.branched,
                "prompt_tokens": len(self.prompt_ids), "reused_tokens": self.reused_tokens,
                "sampling": self.sampling, "started": round(self.started, 3), "wall_s": round(self.wall_s, 4),
                "error": self.error,
                "choices": [{"message": c.output.message(c.call_ids), "finish_reason": c.output.finish_reason,
                             "completion_tokens": len(c.ids)} for c in self.choices]}


class Rollout:
    """Every call made on one rollout's base URL (thread-safe); ``text_only`` for a passed-through upstream."""

    def __init__(self, rollout_id: str, *, text_only: bool = False, metadata: Mapping[str, Any] | None = None) -> None:
        self.id = rollout_id
        self.text_only = text_only
        self.metadata = dict(metadata or {})
        self.calls: list[Call] = []
        self.created = time.time()
        #: when a call last used it (``time.monotonic``): an idle one is closed when the gateway needs room
        self.touched = time.monotonic()
        self.closed = False
        #: closed by the gateway for being idle, not by its owner
        self.expired = False
        #: set by the first chat request on the rollout (before the model runs)
        self.requested = threading.Event()
        self._lock = threading.Lock()

    def parent_of(self, messages: Sequence[Mapping[str, Any]],
                  tools: Sequence[Mapping[str, Any]]) -> tuple[Call, int] | None:
        """The latest (call, choice) whose messages and returned turn ``messages`` starts with, under the same
        tools; None when none does."""
        with self._lock:
            calls = list(self.calls)
        for call in reversed(calls):
            k = len(call.messages)
            if (len(messages) <= k or not same_json(call.tools, list(tools))
                    or not same_json(list(messages[:k]), call.messages)):
                continue
            for c, choice in enumerate(call.choices):
                if same_assistant(messages[k], choice.output):
                    return call, c
        return None

    def add(self, call: Call) -> Call:
        with self._lock:
            call.index = len(self.calls)
            call.branched = call.parent is None and bool(self.calls)
            if call.parent is not None:
                self.calls[call.parent[0]].choices[call.parent[1]].extended = True
            self.calls.append(call)
        return call

    def samples(self) -> list[dict[str, Any]]:
        """One per leaf: the whole token sequence, the loss mask (1 on sampled ids), aligned log-probabilities."""
        if self.text_only:
            return []
        out = []
        with self._lock:
            calls = list(self.calls)
        for call in calls:
            for c, choice in enumerate(call.choices):
                if choice.extended:
                    continue
                logprobs = choice.logprobs if choice.logprobs is not None else [None] * len(choice.ids)
                out.append({"call": call.index, "choice": c, "calls": self._path(calls, call),
                            "token_ids": [*call.prompt_ids, *choice.ids],
                            "loss_mask": [*call.prompt_mask, *[1] * len(choice.ids)],
                            "logprobs": [*call.prompt_logprobs, *logprobs]})
        return out

    @staticmethod
    def _path(calls: Sequence[Call], call: Call) -> list[int]:
        path = [call.index]
        while calls[path[-1]].parent is not None:
            path.append(calls[path[-1]].parent[0])  # type: ignore[index]
        return path[::-1]

    def summary(self) -> dict[str, Any]:
        """Counts a benchmark or a results line reports: calls, branches, tokens sampled and reused."""
        with self._lock:
            calls = list(self.calls)
        return {"calls": len(calls), "branches": sum(c.branched for c in calls),
                "extended": sum(c.parent is not None for c in calls),
                "sampled_tokens": sum(len(ch.ids) for c in calls for ch in c.choices),
                "reused_tokens": sum(c.reused_tokens for c in calls), "text_only": self.text_only}

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text_only": self.text_only, "metadata": self.metadata,
                "created": round(self.created, 3), "calls": [c.as_dict() for c in self.calls],
                "samples": self.samples(), **{"summary": self.summary()}}
