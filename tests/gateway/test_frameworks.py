"""Agent frameworks under ``eval --agent``: the example agents (the OpenAI Agents SDK on the rollout's MCP tools,
smolagents' ToolCallingAgent on ``task.tools``, the plain openai loop) play MathTool, SearchQA and SWEBench through
the gateway. With the default model every episode ends without an error, calls the model, offers it the env's tools
and records token-exact samples; with a scripted model the history each framework sends back is checked against the
ids the model sampled (the SDK's extends the rollout; smolagents rewrites tool calls as text, so it branches)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from helpers.gates import IN_CI, env_params, pip_install, requires_extra, requires_server, requires_smollm2

from agentgym.eval.agent import AgentPolicy, AgentSpec
from agentgym.eval.plan import plan_episodes
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry

pytestmark = [requires_smollm2, requires_server]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"
ENVS = ["agentgym/MathTool-v0", "agentgym/SearchQA-v0", "agentgym/SWEBench-v0"]
ENV_TOOLS = {"agentgym/MathTool-v0": {"python"}, "agentgym/SearchQA-v0": {"search"},
             "agentgym/SWEBench-v0": {"bash", "create", "edit", "search", "submit", "view"}}


def _requires(module: str, distribution: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not IN_CI and importlib.util.find_spec(module) is None,
                              reason=f"needs {distribution}, in the dev extra: {pip_install('dev')}")


# (example file, the tools its model is offered besides the env's, its gate)
FRAMEWORKS = {
    "openai_loop": ("openai_loop.py", set(), [_requires("openai", "openai")]),
    "openai_agents": ("openai_agents_mcp.py", {"answer"}, [_requires("agents", "openai-agents"),
                                                           requires_extra("mcp", system=False)]),
    "smolagents": ("smolagents_agent.py", {"final_answer"}, [_requires("smolagents", "smolagents[openai]")]),
}
# the same agents with fewer and shorter model turns and prompts, so that nine runs fit in a few minutes on a CPU,
# where a turn costs in proportion to the tokens it reads and writes: what is checked (each episode called the model
# with the env's tools and recorded what it sampled) does not depend on what the model writes, so 16 tokens a turn
BOUNDED = """
    from agentgym.eval.agent import load_agent

    def _bounded(file, **limits):
        agent = load_agent(f"{examples}/{{file}}:agent")
        return lambda task: agent(task, **limits)

    openai_loop = _bounded("openai_loop.py", max_turns=2, max_tokens=16)
    openai_agents = _bounded("openai_agents_mcp.py", max_turns=2, max_tokens=16)
    smolagents = _bounded("smolagents_agent.py", max_steps=1, max_tokens=16, system_prompt={smolagents_prompt!r})
"""
# smolagents' own system prompt is ~1,000 tokens of worked examples and the tools listed again, more than the rest
# of the prompt (the gateway lists the tools too); the checks do not depend on it, and the scripted test below plays
# the example with it
SMOLAGENTS_PROMPT = "Solve the task with the tools {{ tools.keys() | join(', ') }}; answer with final_answer."


@pytest.fixture(scope="module")
def bounded(tmp_path_factory):
    path = tmp_path_factory.mktemp("agents") / "bounded.py"
    path.write_text(textwrap.dedent(BOUNDED.format(examples=EXAMPLES, smolagents_prompt=SMOLAGENTS_PROMPT)))
    return path


def _play(built, url: str, target: str, env_id: str, *, episodes: int):
    """The episodes' results and, in the same order, their rollouts (the gateway keeps closed ones)."""
    before = set(built.rollouts)
    policy = AgentPolicy(AgentSpec(target=target), built, base_url=url, timeout_s=300, concurrency=2)
    policy.close = lambda: None  # the gateway outlives each run
    results = run_plan(plan_episodes([SuiteEntry(env_id, episodes=episodes)], seed=0), lambda: policy)
    rollouts = {r.metadata["episode"]: r for key, r in built.rollouts.items() if key not in before}
    return results, [rollouts[r.episode] for r in results]


def _assert_token_exact(result) -> None:
    """Each sample is aligned, the loss mask is 1 exactly where a logprob was sampled, and the masks of all samples
    together cover every sampled token once."""
    assert result.samples, "no samples recorded"
    for sample in result.samples:
        n = len(sample["token_ids"])
        assert len(sample["loss_mask"]) == n == len(sample["logprobs"])
        assert all((lp is None) == (m == 0) for lp, m in zip(sample["logprobs"], sample["loss_mask"]))
    masked = sum(sum(sample["loss_mask"]) for sample in result.samples)
    assert masked == result.agent["rollout"]["sampled_tokens"] == result.completion_tokens > 0


def _framework_params(env_ids, *, frameworks=tuple(FRAMEWORKS)):
    """One param per framework and env id, gated on both (an env's extras, a framework's package)."""
    return [pytest.param(name, env.values[0], marks=[*env.marks, *FRAMEWORKS[name][2]], id=f"{name}-{env.values[0]}")
            for name in frameworks for env in env_params(env_ids)]


@pytest.mark.parametrize(("framework", "env_id"), _framework_params(ENVS))
def test_each_framework_plays_each_env_with_the_default_model(gateway, bounded, framework, env_id):
    """Two episodes at once (their calls batched): no episode error, each called the model with the env's tools
    (for the SDK: listed from the rollout's MCP endpoint), and its samples are token-exact."""
    built, server = gateway
    results, rollouts = _play(built, server.url, f"{bounded}:{framework}", env_id, episodes=2)
    assert [r.error for r in results] == [None, None]
    offered = ENV_TOOLS[env_id] | FRAMEWORKS[framework][1]
    for result, rollout in zip(results, rollouts):
        assert result.agent["rollout"]["calls"] == len(rollout.calls) >= 1
        assert {t["function"]["name"] for t in rollout.calls[0].tools} == offered
        _assert_token_exact(result)


# the scripted model's turns: a python call, then the framework's way to answer
CALL = '<tool_call>\n{{"name": "{}", "arguments": {}}}\n</tool_call>'
PYTHON = CALL.format("python", '{"code": "print(6 * 7)"}')
SCRIPTS = {
    "openai_loop": ([PYTHON, "42"], {"calls": 2, "extended": 1, "branches": 0}),
    # the MCP answer tool ends the episode; the SDK then asks the model once more and gets its final text
    "openai_agents": ([PYTHON, CALL.format("answer", '{"answer": "42"}'), "42"],
                      {"calls": 3, "extended": 2, "branches": 0}),
    # smolagents sends a tool call back as assistant text ("Calling tools:\n[{...}]", its repr of the call) and the
    # tool's output as a user message, not as the tool_calls the gateway returned: the next call is a new root
    "smolagents": ([PYTHON, CALL.format("final_answer", '{"answer": "42"}')],
                   {"calls": 2, "extended": 0, "branches": 1}),
}


@pytest.mark.parametrize(("framework", "env_id"), _framework_params(["agentgym/MathTool-v0"]))
def test_a_frameworks_history_after_a_tool_call_extends_or_branches_its_rollout(scripted, framework, env_id):
    """Whether a framework's next request repeats the turn the gateway returned, so that the sampled ids are reused
    instead of the text re-encoded; either way the episode is played (the python step, the answer) and every
    sampled token is in exactly one sample with loss mask 1."""
    texts, expected = SCRIPTS[framework]
    built, generator, url = scripted(*texts)
    target = f"{EXAMPLES / FRAMEWORKS[framework][0]}:agent"
    results, rollouts = _play(built, url, target, env_id, episodes=1)
    [result], [rollout] = results, rollouts
    assert result.error is None
    assert generator.texts == []  # every scripted turn was asked for, and no more
    summary = result.agent["rollout"]
    assert {key: summary[key] for key in expected} == expected
    assert [e["name"] for e in result.transcript if e["role"] == "tool"] == ["python", "answer"]
    assert next(e["content"] for e in result.transcript if e["role"] == "tool") == "42\n"
    _assert_token_exact(result)
    if expected["extended"]:
        last = rollout.calls[-1]
        assert last.reused_tokens == len(rollout.calls[-2].prompt_ids) + len(rollout.calls[-2].choices[0].ids)


@pytest.mark.parametrize(("framework", "env_id"), _framework_params(["agentgym/MathTool-v0"],
                                                                  frameworks=["openai_agents"]))
def test_an_sdk_agent_out_of_turns_answers_empty_instead_of_failing(scripted, framework, env_id):
    """Still calling tools at its last turn (MaxTurnsExceeded) is the agent's outcome: an empty answer, scored 0."""
    built, generator, url = scripted(*[PYTHON] * 4)  # the example's max_turns
    [result], _ = _play(built, url, f"{EXAMPLES / FRAMEWORKS[framework][0]}:agent", env_id, episodes=1)
    assert result.error is None and generator.texts == []
    assert [e["name"] for e in result.transcript if e["role"] == "tool"] == ["python"] * 4 + ["answer"]
    assert result.reward == 0.0 and result.agent["rollout"]["extended"] == 3
