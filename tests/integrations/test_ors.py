"""ORS (the Open Reward Standard) on ``agentgym serve``, checked with OpenReward's own SDK client and trained by TRL's
own ``trl.experimental.openreward.OpenRewardSpec``. The SDK pins sse-starlette 2.3.6 (mcp needs >= 3), so it is
not in ``./install.sh``: these skip without it, and .ci/run runs them in a venv of their own on top of the main
one (``scripts/overlay_venv.sh ors``, AGENTGYM_REQUIRE_ORS=1)."""

from __future__ import annotations

import json
import os

import gymnasium as gym
import pytest
from helpers.gates import requires_code, requires_openreward, requires_server, requires_smollm2, requires_train
from helpers.server_process import serving

import agentgym  # noqa: F401 - registers the envs

pytestmark = [requires_openreward, requires_server, requires_code]

MATH, SEARCH = "agentgym/MathTool-v0", "agentgym/SearchQA-v0"


@pytest.fixture(scope="module")
def url():
    with serving(MATH, SEARCH) as base:  # MathTool first: the default env, the bare routes'
        yield base


@pytest.fixture
def client(url, monkeypatch):
    """The SDK's client of a server at ``url``: it would address sessions at ``sessions.<host>`` without
    OPENREWARD_SESSION_URL (what the README says to set)."""
    from openreward import OpenReward

    monkeypatch.setenv("OPENREWARD_SESSION_URL", url)
    return OpenReward(base_url=url)


def _oracle(env_id: str, task_id: str):
    twin = gym.make(env_id, action_format="dict")
    twin.reset(options={"task_id": task_id})
    return twin


def _play(session, twin) -> list:
    """The oracle's moves as ORS tool calls (its answer through the ``answer`` tool); the outputs."""
    outputs = []
    for _ in range(10):
        move = json.loads(twin.unwrapped.oracle_action())
        twin.step(json.dumps(move))
        name, arguments = ((move["name"], move["arguments"]) if "name" in move
                           else ("answer", {"answer": move["answer"]}))
        outputs.append(session.call_tool(name, arguments))
        if outputs[-1].finished:
            return outputs
    raise AssertionError("the oracle did not finish in 10 calls")


@pytest.mark.parametrize(("env_id", "tool"), [(MATH, "python"), (SEARCH, "search")])
def test_the_sdk_lists_tasks_and_tools_and_plays_the_oracle_to_reward_1(client, env_id, tool):
    from openreward.api.errors import ToolCallError

    name = env_id.split("/")[1].lower()
    env = client.environments.get(name, variant=name)
    assert sorted(env.list_splits()) == ["test", "train"]
    tasks = env.get_task_range("train", 0, 2)
    assert env.num_tasks("train") > 2 and [t.task_spec["index"] for t in tasks] == [0, 1]
    assert set(tasks[0].task_spec) == {"task_id", "split", "index"}  # never the answer
    assert sorted(t.name for t in env.list_tools()) == sorted([tool, "answer"])
    for task in tasks:
        with env.session(task=task) as session:
            prompt = session.get_prompt()[0].text
            assert prompt and "<answer>" not in prompt  # the answer is a tool call here
            outputs = _play(session, _oracle(env_id, task.task_spec["task_id"]))
            assert [o.reward for o in outputs] == [0.0] * (len(outputs) - 1) + [1.0]  # inline, the verifier's
            assert outputs[-1].metadata["task_id"] == task.task_spec["task_id"]
            with pytest.raises(ToolCallError) as after:  # none after the episode ended
                session.call_tool("answer", {"answer": "1"})
            assert after.value.reason == "episode_finished"


def test_a_bad_call_is_an_error_that_changes_nothing(client):
    from openreward.api.errors import ToolCallError

    env = client.environments.get("mathtool-v0", variant="mathtool-v0")
    task = env.get_task("train", 3)
    with env.session(split="train", index=3) as session:
        for name, arguments, reason in [("nope", {}, "not_found"), ("answer", {"reply": "7"}, "input_validation"),
                                        ("answer", {}, "input_validation")]:
            with pytest.raises(ToolCallError) as bad:
                session.call_tool(name, arguments)
            assert bad.value.reason == reason
        outputs = _play(session, _oracle(MATH, task.task_spec["task_id"]))
    # the episode went on as if the bad calls never came: its first step is turn 1, and it scores 1
    assert [o.metadata["turn"] for o in outputs] == list(range(1, len(outputs) + 1))
    assert outputs[-1].reward == 1.0


def test_the_bare_routes_serve_the_first_env_named(client):
    env = client.environments.get("env")  # what a client given only the URL calls (TRL's spec does)
    assert sorted(t.name for t in env.list_tools()) == ["answer", "python"]
    with env.session(split="train", index=0) as session:
        assert session.call_tool("python", {"code": "print(6 * 7)"}).blocks[0].text.strip() == "42"


def test_the_servers_token_goes_as_the_sdks_api_key(monkeypatch):
    from openreward import OpenReward

    with serving(MATH, token="s3cret") as base:
        monkeypatch.setenv("OPENREWARD_SESSION_URL", base)
        env = OpenReward(base_url=base, api_key="s3cret").environments.get("mathtool-v0", variant="mathtool-v0")
        with env.session(split="train", index=0) as session:
            assert session.call_tool("python", {"code": "print(1 + 1)"}).blocks[0].text.strip() == "2"
        anonymous = OpenReward(base_url=base).environments.get("mathtool-v0", variant="mathtool-v0")
        with pytest.raises(Exception, match="unauthorized"):
            anonymous.list_splits()


def _scripted_generate(tokenizer, golds):
    """``model.generate`` as a scripted policy: the ``python`` tool first, then the ``answer`` tool (the gold for
    every other rollout, so a group's rewards differ), then a closing message. The real model still scores every
    token (TRL's forward pass for the loss)."""
    import torch

    calls = {"n": 0}

    def generate(input_ids, attention_mask=None, **_):
        rows = []
        for ids, mask in zip(input_ids, attention_mask):
            prompt = tokenizer.decode(ids[mask.bool()])
            answered = prompt.count("<tool_response>")
            if answered == 0:
                call = {"name": "python", "arguments": {"code": "print(6 * 7)"}}
            elif answered == 1:
                gold = next(g for question, g in golds.items() if question in prompt)
                calls["n"] += 1
                call = {"name": "answer", "arguments": {"answer": gold if calls["n"] % 2 else "-1"}}
            else:
                call = None
            text = "Done.<|im_end|>" if call is None else f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
            rows.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        completion = torch.tensor([row + [pad] * (width - len(row)) for row in rows], dtype=input_ids.dtype)
        return torch.cat([input_ids, completion], dim=1)

    return generate


@requires_train
@requires_smollm2
def test_trls_openreward_spec_takes_a_grpo_step_whose_tool_calls_reach_the_env(url, monkeypatch, tmp_path):
    """TRL's OpenRewardSpec, given the server's URL: its dataset, its env factory (an ORS session per rollout, tools
    bound from the server's list) and its reward; GRPOTrainer's own tool loop makes each episode's calls, which
    the server plays as steps of one agentgym episode (turn 1, then 2), and the rewards are the env's."""
    monkeypatch.setenv("OPENREWARD_SESSION_URL", url)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template
    from trl.experimental.openreward import OpenRewardSpec
    from trl.experimental.openreward.environment import _RolloutEnvironment

    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.grpo import uses_bf16

    torch.manual_seed(0)
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    tokenizer.chat_template = qwen2_5_chat_template
    spec = OpenRewardSpec(url, num_tasks=2, split="train")
    rows = spec.train_dataset
    probe = gym.make(MATH, action_format="dict").unwrapped
    tasks = {task.id: task for task in probe.tasks.tasks("train")}
    golds = {tasks[t].prompt.strip(): tasks[t].gold["answer"] for t in rows["task_id"]}
    model.generate = _scripted_generate(tokenizer, golds)
    config = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                        max_completion_length=384, max_tool_calling_iterations=3, logging_steps=1,
                        report_to="none", use_cpu=True, disable_tqdm=True, save_strategy="no",
                        gradient_checkpointing=False, learning_rate=1e-4, bf16=uses_bf16("auto"))
    episodes = []
    original = _RolloutEnvironment._call_ors_tool

    def recording(self, tool_name, tool_input):
        text = original(self, tool_name, tool_input)
        episodes.append((id(self), tool_name, self.metadata[-1], self.rewards[-1]))
        return text

    _RolloutEnvironment._call_ors_tool = recording
    try:
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=rows,
                              environment_factory=spec.environment_factory, reward_funcs=spec.reward_funcs,
                              args=config)
        assert sorted(tool.__name__ for tool in trainer.tools) == ["answer", "python"]
        trainer.train()
    finally:
        _RolloutEnvironment._call_ors_tool = original
    assert trainer.state.global_step == 1
    by_rollout: dict[int, list] = {}
    for rollout, tool_name, metadata, step_reward in episodes:
        by_rollout.setdefault(rollout, []).append((tool_name, metadata["turn"], metadata["task_id"], step_reward))
    assert len(by_rollout) >= 2
    for calls in by_rollout.values():  # each rollout: one episode of two steps on the server
        assert [(name, turn) for name, turn, _, _ in calls] == [("python", 1), ("answer", 2)], calls
        assert len({task_id for _, _, task_id, _ in calls}) == 1 and calls[0][3] == 0.0
    assert sorted(calls[-1][3] for calls in by_rollout.values())[-1] == 1.0  # a gold answer scored 1 by the env
    logs = [log for log in trainer.state.log_history if "loss" in log]
    assert logs and all(log["tools/call_frequency"] > 0 for log in logs), logs
    assert any(log["rewards/_outcome_only_reward_func/std"] > 0 for log in logs), logs
