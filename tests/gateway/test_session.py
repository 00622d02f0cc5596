"""What an agent is told: the env's task without the text protocol's tags (it answers by returning its text, and
calls tools as functions), the task itself unchanged."""

from __future__ import annotations

import re

import pytest
from helpers.gates import env_params

import agentgym
from agentgym.gateway.session import agent_prompt

PROTOCOL_TAGS = re.compile(r"<(answer|think|code|search|interpreter|information)>")


@pytest.mark.parametrize("env_id", env_params(["agentgym/SearchQA-v0", "agentgym/MathTool-v0", "agentgym/PyCode-v0",
                                               "agentgym/WebShop-v0", "agentgym/ALFWorld-v0"]))
def test_the_agents_prompt_has_no_protocol_tags_and_keeps_the_task(env_id):
    env = agentgym.make(env_id, action_format="dict")
    try:
        observation, info = env.reset(seed=0)
        prompt = agent_prompt(env, observation)
        assert not PROTOCOL_TAGS.search(prompt), prompt
        text = str(info.get("question") or info.get("problem") or "")
        assert text[:40] in prompt  # the task is still there
        assert "the final answer" not in prompt or "<" not in prompt.split("the final answer", 1)[1][:60]
    finally:
        env.close()


def test_only_the_protocols_tags_go_and_a_tasks_own_text_stays():
    class Env:  # an env with no dict format: only the tag phrases are scrubbed
        pass

    text = ("Think step by step inside <think> and </think>. Fix the issue:\n"
            "<issue>the value must go between <b> and </b>, not outside</issue>")
    assert agent_prompt(Env(), text) == ("Think step by step. Fix the issue:\n"
                                         "<issue>the value must go between <b> and </b>, not outside</issue>")
