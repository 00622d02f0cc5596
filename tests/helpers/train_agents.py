"""Scripted agents for ``train --agent``'s tests: each calls the model (the policy in training) through its
base_url, then answers right or wrong by its rollout's number, so every GRPO group has a signal."""

from __future__ import annotations

import re

from helpers.oracle_agent import oracle
from openai import OpenAI


def _number(task) -> tuple[int, int]:
    """(rollout number in the step, attempt) from the trainer's rollout id ``s<call>-r<i>-a<attempt>-<hex>``."""
    found = re.match(r"s\d+-r(\d+)-a(\d+)-", task.rollout_id)
    assert found, task.rollout_id
    return int(found[1]), int(found[2])


def _ask(task, messages, max_tokens=6):
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    reply = client.chat.completions.create(model=task.model, messages=messages, max_tokens=max_tokens, temperature=0)
    return reply.choices[0].message


def _answer(task) -> str:
    i, _ = _number(task)
    return oracle(task) if i % 2 == 0 else "-1"


def half_right(task):
    """One model call, then the right answer on even rollouts."""
    _ask(task, [{"role": "user", "content": task.prompt}])
    return _answer(task)


def two_turns(task):
    """A model call, then a second that extends it (its reply sent back, then a user message)."""
    messages = [{"role": "user", "content": task.prompt}]
    reply = _ask(task, messages)
    _ask(task, [*messages, reply.model_dump(exclude_none=True), {"role": "user", "content": "Sure?"}])
    return _answer(task)


def branching(task):
    """Two model calls, the second on an edited history (it extends nothing: a branch)."""
    _ask(task, [{"role": "user", "content": task.prompt}])
    _ask(task, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": task.prompt}])
    return _answer(task)


def flaky(task):
    """Rollout 1 raises on its first attempt only."""
    i, attempt = _number(task)
    _ask(task, [{"role": "user", "content": task.prompt}])
    if i == 1 and attempt == 0:
        raise ConnectionError("a transient failure")
    return _answer(task)


def broken_for_one(task):
    """Rollout 0 raises on every attempt."""
    i, _ = _number(task)
    _ask(task, [{"role": "user", "content": task.prompt}])
    if i == 0:
        raise ValueError("the agent's own bug")
    return _answer(task)


def long_talker(task):
    """One call asking for 12 tokens."""
    _ask(task, [{"role": "user", "content": task.prompt}], max_tokens=12)
    return _answer(task)


def flat_first_group(task):
    """The first step's first group (rollouts 0 and 1) answers wrong: no signal there; every later play as
    ``half_right``."""
    found = re.match(r"s(\d+)-r(\d+)-", task.rollout_id)
    _ask(task, [{"role": "user", "content": task.prompt}])
    if found[1] == "0" and int(found[2]) < 2:
        return "-1"
    return _answer(task)
