"""TRL's environment mode (``GRPOTrainer(environment_factory=...)``) on agentgym envs: the adapter's tools,
oracle episodes scored as in process (local and against a real ``agentgym serve``), TRL's own tool-call parser
driving the env, and TRL's GRPOTrainer completing optimizer steps with the default model."""

from __future__ import annotations

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
        public = sorted(name for name in dir(tool_env) if not name.startswith("_")
                        and callable(getattr(tool_env, name)))
        assert public == sorted([*schemas, "reset"])  # TRL exposes every public method but reset as a tool
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


@requires_smollm2
def test_trls_grpo_trainer_completes_steps_against_the_env(tmp_path):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from agentgym.lm.local import load_for_training, resolve_model

    torch.manual_seed(0)
    model, tokenizer = load_for_training(resolve_model("smollm2"))
    tokenizer.chat_template = qwen2_5_chat_template
    rows = dataset("agentgym/MathTool-v0", split="train", count=4)
    config = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=2,
                        max_completion_length=32, max_tool_calling_iterations=1, logging_steps=1,
                        report_to="none", use_cpu=True, disable_tqdm=True, save_strategy="no",
                        gradient_checkpointing=False, learning_rate=1e-5)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=Dataset.from_list(rows),
                          environment_factory=environment_factory("agentgym/MathTool-v0"), reward_funcs=reward,
                          args=config)
    trainer.train()
    assert trainer.state.global_step == 2
    assert all("rewards/reward/mean" in log for log in trainer.state.log_history if "loss" in log)
    for tool_env in trainer.environments:  # each rollout reset to its row's task, then ended and scored
        assert tool_env.info["task_id"] in {row["task_id"] for row in rows}
        assert tool_env.env.unwrapped.turn >= 1
