"""PrimeIntellect's verifiers 0.4, both ways, with verifiers' own code against a real OpenAI-compatible endpoint:
agentgym's gateway, its model scripted (``helpers.scripted_generator``) to write the oracle's actions.

- verifiers plays agentgym: ``load_environment("agentgym/SearchQA-v0")`` is played by verifiers' ``Env.serving`` /
  ``run_slot`` (its interception server, rollout, ``Task.score``), and loaded by name by ``vf-eval``.
- agentgym plays verifiers: ``agentgym eval --env vf:vf_capitals`` plays a taskset written in verifiers' API
  (``tests/helpers/vf_capitals.py``) with the ``openai:`` policy.

verifiers 0.4.0 pins mcp 2.0.0 and openai < 3, so it is not in ``./install.sh``: these skip without it, and .ci/run
runs them in a venv of their own on top of the main one (``scripts/overlay_venv.sh verifiers``,
AGENTGYM_REQUIRE_VERIFIERS=1)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gates import requires_envs, requires_smollm2, requires_train, requires_verifiers
from helpers.oracle import Oracle
from helpers.scripted_generator import ScriptedGenerator

import agentgym
from agentgym.errors import ConfigError, EnvNotFound

SEARCH = "agentgym/SearchQA-v0"
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

@pytest.fixture
def scripted_gateway(smollm2_tokenizer):
    """Serve agentgym's gateway on a free port with its model writing ``texts``; ``(generator, base URL)``."""
    from agentgym.gateway.engine import Engine
    from agentgym.gateway.server import GatewayServer
    from agentgym.gateway.service import Gateway

    served = []

    def serve(texts):
        generator = ScriptedGenerator(smollm2_tokenizer, texts)
        gateway = Gateway(model_name="scripted", engine=Engine(generator, gather_s=0.001))
        served.append((gateway, GatewayServer(gateway).start()))
        return generator, f"{served[-1][1].url}/v1"

    yield serve
    for gateway, server in served:
        server.stop()
        gateway.close()


def _oracle_actions(env_id: str, task_id: str) -> list[str]:
    oracle = Oracle(env_id, task_id)
    while not oracle.env._done:
        oracle()
    return oracle.actions


def _agentgym_replay(env_id: str, task_id: str, actions: list[str]) -> tuple[float, list[str]]:
    """agentgym's reward of the transcript's actions, played in process, and its observations."""
    env = agentgym.make(env_id)
    env.reset(options={"task_id": task_id})
    observations, reward = [], 0.0
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(action)
        observations.append(observation)
        if terminated or truncated:
            break
    env.close()
    return reward, observations


def _run_episodes(environment, plays, base_url):
    """verifiers' own rollout machinery: one ``run_slot`` per ``(task, texts)``, in order, inside ``serving``."""
    import verifiers.v1 as vf
    from verifiers.v1.env import RunSlot

    ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=base_url, api_key_var="VF_TEST_KEY"))

    async def main():
        async with environment.serving():
            return [await environment.run_slot(RunSlot(task), ctx) for task in plays]

    return asyncio.run(main())


@requires_verifiers
@requires_smollm2
@requires_envs([SEARCH])
def test_verifiers_plays_searchqa_the_oracle_scores_1_a_wrong_answer_0_as_in_agentgym(scripted_gateway, monkeypatch):
    from agentgym.integrations.verifiers import load_environment

    monkeypatch.setenv("VF_TEST_KEY", "unused")
    environment = load_environment(SEARCH)
    first, second = list(environment.taskset.take(2))
    oracle = _oracle_actions(SEARCH, first.data.id)
    wrong = ["<answer>Atlantis</answer>"]
    generator, url = scripted_gateway([*oracle, *wrong])
    right_episode, wrong_episode = _run_episodes(environment, [first, second], url)

    assert len(generator.contexts) == len(oracle) + 1  # every turn was one call to the endpoint
    for episode, task, actions, expected in [(right_episode, first, oracle, 1.0), (wrong_episode, second, wrong, 0.0)]:
        assert episode.ok and not episode.errors
        (trace,) = episode.traces
        replies = [m.content for m in trace.assistant_messages]
        assert replies == actions  # the transcript verifiers recorded is the model's
        reward, observations = _agentgym_replay(SEARCH, task.data.id, replies)
        assert trace.rewards["agentgym"].score == trace.reward == reward == expected  # verifiers' score = agentgym's
        assert trace.metrics["env_steps"] == len(actions)  # each reply stepped the env once
        users = [m.content for m in trace.messages if m.role == "user"]
        assert users == [task.data.prompt, *observations[:-1]]  # the env's observations went back to the model


@requires_verifiers
@requires_smollm2
@requires_envs([SEARCH])
def test_vf_eval_loads_agentgym_by_its_taskset_id_and_scores_the_oracle_1(scripted_gateway, tmp_path):
    oracle = _oracle_actions(SEARCH, "test_0")  # the split's first task: what -n 1 plays
    generator, url = scripted_gateway(oracle)
    run = subprocess.run([str(BIN / "vf-eval"), "agentgym-verifiers", "--env.taskset.env", SEARCH, "-n", "1",
                          "-m", "scripted", "--client.base-url", url, "--client.api-key-var", "VF_TEST_KEY",
                          "--no-push", "--no-rich", "-o", str(tmp_path)],
                         env={**os.environ, "VF_TEST_KEY": "unused"}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    (traces,) = tmp_path.glob("*/traces.jsonl")
    (episode,) = [json.loads(line) for line in traces.read_text().splitlines()]
    (trace,) = episode["traces"]
    assert episode["ok"] and episode["task"]["data"]["id"] == "test_0"
    assert trace["rewards"]["agentgym"]["score"] == 1.0 and trace["metrics"]["env_steps"] == len(oracle)
    assert len(generator.contexts) == len(oracle)


@requires_verifiers
@requires_smollm2
def test_agentgym_eval_plays_a_verifiers_environment_with_its_tools_and_rubric(scripted_gateway, tmp_path):
    lookup = '<tool_call>\n{"name": "atlas_lookup", "arguments": {"country": "France"}}\n</tool_call>'
    # the eval's pre-flight call to the endpoint takes the first text; then episode 0 (France), episode 1 (Peru)
    generator, url = scripted_gateway(["ok", lookup, "Paris", "Quito"])
    results = tmp_path / "results.jsonl"
    run = subprocess.run([str(BIN / "agentgym"), "eval", "--env", "vf:vf_capitals", "--policy", f"openai:{url}",
                          "--model", "scripted", "--episodes", "2", "--concurrency", "1", "--results", str(results)],
                         env={**os.environ, "PYTHONPATH": str(HELPERS), "OPENAI_API_KEY": "unused"},
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    france, peru = [json.loads(line) for line in results.read_text().splitlines()]
    assert (france["task_id"], france["reward"], france["turns"], france["tool_calls"]) == ("capital-france", 1.0, 2, 1)
    assert france["verification"]["details"]["rewards"] == {"exact_match": {"score": 1.0, "weight": 1.0}}
    assert france["verification"]["details"]["metrics"] == {"tool_calls": 1.0}  # verifiers' trace held the call
    assert (peru["task_id"], peru["reward"], peru["turns"], peru["tool_calls"]) == ("capital-peru", 0.0, 1, 0)
    assert len(generator.contexts) == 4
    assert "Paris" in generator.tokenizer.decode(generator.contexts[2])  # the tool's output reached the model


@requires_verifiers
def test_a_verifiers_env_in_process_calls_the_taskset_tool_and_scores_with_its_rubric(monkeypatch):
    monkeypatch.syspath_prepend(str(HELPERS))
    import vf_capitals

    env = agentgym.make("vf:vf_capitals")
    try:
        _, info = env.reset(options={"task_id": "capital-kenya"})
        assert [t["function"]["name"] for t in info["tools"]] == ["atlas_lookup"]
        before = len(vf_capitals.CALLS)
        observation, reward, terminated, _, _ = env.step(
            '<tool_call>{"name": "atlas_lookup", "arguments": {"country": "Kenya"}}</tool_call>')
        assert "Nairobi" in observation and reward == 0.0 and not terminated
        assert vf_capitals.CALLS[before:] == ["Kenya"]
        _, bad, _, _, info = env.step('<tool_call>{"name": "atlas_lookup", "arguments": {}}</tool_call>')
        assert info["action_error"] and bad == 0.0  # a bad argument is an observation, not an exception
        _, reward, terminated, _, info = env.step("<answer>Nairobi</answer>")
        assert terminated and reward == 1.0 and info["verification"]["details"]["metrics"] == {"tool_calls": 1.0}
        env.reset(options={"task_id": "capital-japan"})
        assert env.step("Kyoto")[1] == 0.0
    finally:
        env.close()


@requires_verifiers
def test_bad_names_are_clear_errors():
    from agentgym.integrations.verifiers import load_environment

    with pytest.raises(ConfigError, match="verifiers cannot load this taskset"):
        agentgym.make("vf:no_such_taskset_here")
    with pytest.raises(EnvNotFound):
        load_environment("agentgym/SearchQ-v0")


def test_without_verifiers_a_vf_env_is_a_one_line_config_error_naming_the_install():
    code = ("import sys; sys.modules['verifiers'] = None\n"  # verifiers absent, whatever this venv holds
            "import agentgym\n"
            "from agentgym.core.registry import env_info\n"
            "from agentgym.errors import ConfigError\n"
            "assert env_info('vf:anything').entry_point.endswith(':VerifiersEnv')\n"
            "try:\n    agentgym.make('vf:anything')\n"
            "except ConfigError as e:\n    print(str(e))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1 and "pip install 'agentgym-suite[verifiers]'" in lines[0]


@requires_verifiers
@requires_smollm2
@requires_train
def test_train_agent_takes_a_grpo_step_on_a_verifiers_environment(tmp_path, smollm2_tokenizer, monkeypatch):
    """``train --agent`` on ``vf:vf_capitals``: the agent's calls are trained on, its answers scored by the
    taskset's own reward (right on even rollouts, wrong on odd), and the weights move."""
    import torch
    from helpers.trainer_fixtures import tiny_model

    from agentgym.trainer.grpo import TrainConfig, train

    monkeypatch.syspath_prepend(str(HELPERS))  # verifiers' loader imports the taskset module vf_capitals
    model = tiny_model(smollm2_tokenizer, seed=5)
    before = [p.detach().clone() for p in model.parameters()]
    config = TrainConfig(env=["vf:vf_capitals"], split="test", tasks=2, output_dir=str(tmp_path / "run"),
                         group_size=2, groups_per_step=2, steps=1, max_turn_tokens=6, max_completion_tokens=400,
                         learning_rate=1e-2, save_steps=100, temperature=1.0,
                         agent=f"{HELPERS / 'vf_capitals_agent.py'}:half_right")
    train(config, model=model, tokenizer=smollm2_tokenizer)
    [row] = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert row["agent_errors"] == 0 and row["agent_calls"] == 1 and row["samples"] == 4  # calls: a rollout's
    assert row["reward_mean"] == 0.5  # two right, two wrong: the taskset's exact_match, through agentgym's env
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
