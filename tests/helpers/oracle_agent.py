"""Scripted agents for the agent harness's tests (``eval --agent``): each plays through ``task.call_tool`` only."""

from __future__ import annotations

import time

import agentgym


def oracle(task):
    """The env's oracle actions, read from a local env at the same task stepped in lockstep, sent as tool calls;
    the final answer returned (None where a tool call ended the episode)."""
    local = agentgym.make(task.env_id, **{**task.env_kwargs, "action_format": "dict"}).unwrapped
    local.reset(seed=task.seed, options={"task_id": task.task_id})
    try:
        while True:
            parsed = local.action_format.parse(local.oracle_action(), local.tools)
            if parsed.is_final:
                return parsed.answer
            call = parsed.tool_calls[0]
            task.call_tool(call.name, dict(call.arguments))
            _, _, terminated, truncated, _ = local.step({"name": call.name, "arguments": dict(call.arguments)})
            if terminated or truncated:
                return None
    finally:
        local.close()


def raises(task):
    raise ValueError("the agent's own bug")


def hangs(task):
    time.sleep(60)
    task.call_tool("search", {"query": "too late"})  # refused: the rollout was closed at the timeout
    return "late"


def returns_a_dict(task):
    return {"answer": "Lima"}


def bad_request(task):
    from openai import OpenAI

    OpenAI(base_url=task.base_url, api_key=task.api_key).chat.completions.create(
        model=task.model, messages=[{"role": "wizard", "content": "hi"}])
    return "unreachable"


def wrong_rollout(task):
    from openai import OpenAI

    base = task.base_url.replace(task.rollout_id, "no-such-rollout")
    OpenAI(base_url=base, api_key=task.api_key).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    return "unreachable"


def slow_start(task):
    """Logs when it started, then takes 0.5 s (a framework importing its client) before its first model call."""
    import os

    from openai import OpenAI

    with open(os.environ["AGENTGYM_TEST_EVENTS"], "a") as log:
        log.write(f"{time.monotonic()}\n")
    time.sleep(0.5)
    OpenAI(base_url=task.base_url, api_key=task.api_key).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": "hi"}], max_tokens=1)
    return "done"


def asks_greedy(task):
    """Asks for greedy, seeded, 24-token turns; logs when it started and ended (``AGENTGYM_TEST_EVENTS``)."""
    import os

    from openai import OpenAI

    events = os.environ.get("AGENTGYM_TEST_EVENTS")
    started = time.monotonic()
    text = OpenAI(base_url=task.base_url, api_key=task.api_key).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": "Name a random animal, a colour and a city."}],
        max_tokens=24, temperature=0, seed=3).choices[0].message.content
    if events:
        with open(events, "a") as log:
            log.write(f"{started} {time.monotonic()}\n")
    return text or "nothing"
