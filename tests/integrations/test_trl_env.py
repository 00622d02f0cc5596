"""TRL's environment mode (``GRPOTrainer(environment_factory=...)``) on agentgym envs: the adapter's tools,
oracle episodes scored as in process (local and against a real ``agentgym serve``), TRL's own tool-call parser
driving the env, and TRL's GRPOTrainer completing optimizer steps with the default model."""

from __future__ import annotations

import inspect
import json
import os
import pickle

import pytest
from helpers.gates import import_or_skip, requires_code, requires_server, requires_smollm2, requires_train
from helpers.server_process import serving

from agentgym.integrations.trl import AgentGymToolEnv, dataset, environment_factory, reward

pytestmark = [requires_train, requires_code, requires_server]
import_or_skip("trl", "train")

ENVS = ["agentgym/SearchQA-v0", "agentgym/MathTool-v0"]


def _play_oracle(tool_env: AgentGymToolEnv, oracle_env) -> float:
    """The oracle's moves as TRL would make them: tool calls through the methods, the answer as the last message."""
    fmt = oracle_env.unwrapped.action_format
    tools = oracle_env.unwrapped.tools
    for _ in range(10):
        action = oracle_env.unwrapped.oracle_action()
        parsed = fmt.parse(action, tools)
        assert parsed.error is None, parsed.error
        if parsed.is_final:
            oracle_env.step(action)
            return reward([[{"role": "assistant", "content": action}]], [tool_env])[0]
        for call in parsed.tool_calls:
            output = getattr(tool_env, call.name)(**call.arguments)
            assert isinstance(output, str) and output
        oracle_env.step(action)
    raise AssertionError("the oracle did not answer in 10 turns")


def _oracle_twin(env_id: str, task_id: str):
    import gymnasium as gym

    env = gym.make(env_id, action_format="hermes")
    env.reset(options={"task_id": task_id})
    return env


@pytest.mark.parametrize("env_id", ENVS)
def test_tools_are_methods_trl_can_render(env_id):
    from transformers.utils import get_json_schema

    factory = environment_factory(env_id)
    pickle.loads(pickle.dumps(factory))  # TRL asks for a picklable factory
    tool_env = factory()
    with tool_env:
        schemas = {s["function"]["name"]: s["function"] for s in tool_env.info["tools"]}
        # what TRL's GRPOTrainer lists: the functions of the instance's class (inspect.getmembers(type(env)))
        public = sorted(name for name, _ in inspect.getmembers(type(tool_env), predicate=inspect.isfunction)
                        if not name.startswith("_"))
        assert public == sorted([*schemas, "reset"])  # TRL exposes every public method but reset as a tool
        assert type(factory()) is type(tool_env)  # one class per env id
        for name, spec in schemas.items():
            rendered = get_json_schema(getattr(tool_env, name))["function"]
            assert rendered["name"] == name and rendered["description"] == spec["description"]
            assert rendered["parameters"]["properties"].keys() == spec["parameters"]["properties"].keys()
            assert set(rendered["parameters"].get("required", [])) == set(spec["parameters"].get("required", []))


@pytest.mark.parametrize("env_id", ENVS)
def test_oracle_episodes_reach_reward_1_locally_and_remotely(env_id):
    rows = dataset(env_id, count=2)
    with serving(env_id) as url:
        for tool_env in (environment_factory(env_id)(), environment_factory(env_id, base_url=url)()):
            with tool_env:
                for row in rows:
                    prompt = tool_env.reset(**row)
                    assert tool_env.info["task_id"] == row["task_id"] and "<answer>" in prompt
                    assert _play_oracle(tool_env, _oracle_twin(env_id, row["task_id"])) == 1.0
                    name = tool_env.info["tools"][0]["function"]["name"]
                    with pytest.raises(ValueError, match="episode is over"):  # TRL hands the message to the model
                        getattr(tool_env, name)(**{k: "x" for k in tool_env.info["tools"][0]["function"]
                                                   ["parameters"]["required"]})


def test_a_wrong_or_missing_answer_scores_0_and_bad_arguments_are_observations():
    with environment_factory("agentgym/MathTool-v0")() as tool_env:
        tool_env.reset(**dataset("agentgym/MathTool-v0", count=1)[0])
        assert "code" in tool_env.python(cude="print(1)")  # a wrong argument name: the env says what it takes
        assert not tool_env.done
        assert reward([[{"role": "assistant", "content": "<answer>\\boxed{-1}</answer>"}]], [tool_env]) == [0.0]
        tool_env.reset(**dataset("agentgym/MathTool-v0", count=1)[0])
        # the rollout ended on a tool's reply (cut by the token budget): no answer, reward 0
        assert reward([[{"role": "assistant", "content": "", "tool_calls": []},
                        {"role": "tool", "content": "2"}]], [tool_env]) == [0.0]


@requires_smollm2
def test_trls_tool_call_parser_drives_the_env():
    """The chat template renders the env's tools and TRL's response parser turns the model's tool call into a
    method call on the env, as in TRL's generation loop."""
    from trl.chat_template_utils import add_response_schema, parse_response, qwen2_5_chat_template

    from agentgym.lm.local import load_for_training, resolve_model

    _, tokenizer = load_for_training(resolve_model("smollm2"))
    tokenizer.chat_template = qwen2_5_chat_template  # ChatML, as SmolLM2's own, with tool calls
    add_response_schema(tokenizer)
    with environment_factory("agentgym/MathTool-v0")() as tool_env:
        row = dataset("agentgym/MathTool-v0", count=1)[0]
        prompt = [{"role": "user", "content": row["prompt"][0]["content"] + tool_env.reset(**row)}]
        text = tokenizer.apply_chat_template(prompt, tools=[tool_env.python], tokenize=False,
                                             add_generation_prompt=True)
        assert '"name": "python"' in text
        reply = '<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call><|im_end|>'
        prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        parsed = parse_response(tokenizer, tokenizer(reply, add_special_tokens=False)["input_ids"], prefix=prompt_ids)
        call = parsed["tool_calls"][0]["function"]
        assert getattr(tool_env, call["name"])(**call["arguments"]).strip() == "42"


def _scripted_generate(tokenizer, golds):
    """``model.generate`` as a scripted policy: a first turn that calls the ``python`` tool, and after the tool's
    reply an answer, the gold for every other rollout (so the rewards of a group differ). The real model still
    scores every token (TRL's forward pass for the loss)."""
    import torch

    calls = {"n": 0}

    def generate(input_ids, attention_mask=None, **_):
        rows = []
        for ids, mask in zip(input_ids, attention_mask):
            prompt = tokenizer.decode(ids[mask.bool()])
            if "<tool_response>" in prompt:
                gold = next(g for question, g in golds.items() if question in prompt)
                calls["n"] += 1
                text = f"<answer>{gold if calls['n'] % 2 else '-1'}</answer><|im_end|>"
            else:
                text = ('<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n'
                        "</tool_call><|im_end|>")
            rows.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        completion = torch.tensor([row + [pad] * (width - len(row)) for row in rows], dtype=input_ids.dtype)
        return torch.cat([input_ids, completion], dim=1)

    return generate


@requires_smollm2
def test_trls_grpo_trainer_calls_the_envs_tools_in_its_own_loop(tmp_path):
    """TRL's GRPOTrainer lists the env's tools, its own tool loop calls them (one env step each), and the reward
    is the env's verified reward for the same transcript."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import gymnasium as gym
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.grpo import uses_bf16

    torch.manual_seed(0)
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    tokenizer.chat_template = qwen2_5_chat_template
    rows = dataset("agentgym/MathTool-v0", split="train", count=2)
    probe = gym.make("agentgym/MathTool-v0", action_format="hermes").unwrapped
    tasks = {task.id: task for task in probe.tasks.tasks("train")}
    golds = {tasks[row["task_id"]].prompt.strip(): tasks[row["task_id"]].gold["answer"] for row in rows}
    model.generate = _scripted_generate(tokenizer, golds)
    params_before = [p.detach().clone() for p in model.parameters()][:4]
    config = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                        max_completion_length=256, max_tool_calling_iterations=2, logging_steps=1,
                        report_to="none", use_cpu=True, disable_tqdm=True, save_strategy="no",
                        gradient_checkpointing=False, learning_rate=1e-4,
                        # TRL's configs default to bf16 autocast; a CPU without native bf16 emulates it (7x slower)
                        bf16=uses_bf16("auto"))
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=Dataset.from_list(rows),
                          environment_factory=environment_factory("agentgym/MathTool-v0"), reward_funcs=reward,
                          args=config)
    assert sorted(tool.__name__ for tool in trainer.tools) == ["python"]  # what the bug hid: it was []
    steps = []
    original_step = AgentGymToolEnv._step

    def recording_step(self, action):
        observation = original_step(self, action)
        steps.append((id(self), self.info["task_id"], action, self.done, self.reward))
        return observation

    AgentGymToolEnv._step = recording_step
    try:
        trainer.train()
    finally:
        AgentGymToolEnv._step = original_step
    assert trainer.state.global_step == 1
    logs = [log for log in trainer.state.log_history if "loss" in log]
    assert logs and all(log["tools/call_frequency"] > 0 for log in logs), logs  # TRL's own count of tool calls
    assert any(log["rewards/reward/std"] > 0 for log in logs)  # a learning signal: the group's rewards differ
    assert any(not torch.equal(a, b) for a, b in zip(params_before, list(model.parameters())[:4]))
    # every episode: a tool call (a dict action) then the answer, two env steps, ended and scored; the reward is
    # what the env gives the same transcript played in process
    episodes, open_ = [], {}
    for env, *step in steps:  # TRL interleaves its rollouts: split each env's steps where an episode ended
        open_.setdefault(env, []).append(step)
        if step[2]:
            episodes.append(open_.pop(env))
    assert not open_ and len(episodes) == 2  # 1 step x 2 rollouts, each ended
    assert all(len(e) == 2 and isinstance(e[0][1], dict) and e[0][1]["name"] == "python" for e in episodes)
    assert {e[1][3] for e in episodes} == {0.0, 1.0}
    for (task_id, call, _, _), (_, answer, _, got) in episodes:
        replay = gym.make("agentgym/MathTool-v0", action_format="hermes")
        replay.reset(options={"task_id": task_id})
        replay.step(json.dumps(call) and f"<tool_call>{json.dumps(call)}</tool_call>")
        *_, info = replay.step(answer)
        assert info["verification"]["reward"] == got
