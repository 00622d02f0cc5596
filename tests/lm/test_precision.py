"""bf16 where the hardware computes it natively, fp32 elsewhere: the choice, the eval's dtype and the trainer's."""

from __future__ import annotations

import io
import json

import pytest
from helpers.gates import import_or_skip, requires_smollm2
from rich.console import Console

from agentgym.errors import ConfigError
from agentgym.lm.naming import model_name
from agentgym.lm.precision import cpu_flags, native_bf16, resolve_dtype

XEON_AVX512 = frozenset({"avx2", "avx512f", "avx512bw", "avx512_vnni"})  # this project's CI machines: no bf16
SAPPHIRE_RAPIDS = XEON_AVX512 | {"avx512_bf16", "amx_bf16", "amx_tile"}


def test_auto_is_bf16_only_where_the_cpu_computes_it_natively():
    assert resolve_dtype("auto", flags=XEON_AVX512) == "float32"
    assert resolve_dtype("auto", flags=SAPPHIRE_RAPIDS) == "bfloat16"
    assert resolve_dtype("auto", flags=frozenset({"avx512_bf16"})) == "bfloat16"  # Cooper Lake, Zen 4
    assert resolve_dtype("float32", flags=SAPPHIRE_RAPIDS) == "float32"
    assert resolve_dtype("bfloat16", flags=XEON_AVX512) == "bfloat16"  # asked for: emulated, slower, allowed
    with pytest.raises(ConfigError, match="dtype must be one of auto, float32, bfloat16, got 'fp16'"):
        resolve_dtype("fp16")


def test_this_machines_choice_follows_its_flags():
    flags = cpu_flags()
    assert flags, "/proc/cpuinfo lists this CPU's flags"
    assert native_bf16() == bool({"avx512_bf16", "amx_bf16"} & flags)
    assert resolve_dtype("auto") == ("bfloat16" if native_bf16() else "float32")


def test_a_dtype_is_for_local_models_only():
    from agentgym.policies import make_policy

    with pytest.raises(ConfigError, match="for the local models smollm2 and hf:<path>"):
        make_policy("oracle", dtype="bfloat16")
    with pytest.raises(ConfigError, match="--dtype must be one of"):
        from agentgym.eval.command import EvalRequest

        EvalRequest(policy="smollm2", dtype="half")


def test_bf16_runs_are_named_so():
    assert model_name("smollm2", dtype="bfloat16") == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to bf16)"
    assert model_name("hf:Qwen/Qwen2.5-0.5B-Instruct", dtype="bfloat16") == "Qwen/Qwen2.5-0.5B-Instruct (bf16)"
    assert model_name("hf:Qwen/Qwen2.5-0.5B-Instruct", dtype="float32") == "Qwen/Qwen2.5-0.5B-Instruct"


@requires_smollm2
def test_the_eval_plays_bf16_weights_under_keys_of_their_own(tmp_path):
    """A bfloat16 run loads bf16 weights, keys its episodes apart (so it never resumes an fp32 run's file), and
    its leaderboard name says bf16; an fp32 run's keys are as they were before dtypes existed."""
    import torch

    from agentgym.eval.command import EvalRequest, run_eval, submit
    from agentgym.policies import Sampling, make_policy

    assert next(make_policy("smollm2", dtype="bfloat16").load()[0].parameters()).dtype == torch.bfloat16
    assert next(make_policy("smollm2", dtype="float32").load()[0].parameters()).dtype == torch.float32
    runs = {}
    for dtype in ("float32", "bfloat16"):
        # one turn: what is checked is the weights, the keys, the file and the name, not the play
        request = EvalRequest(policy="smollm2", envs=("agentgym/MathTool-v0",), episodes=1, dtype=dtype,
                              sampling=Sampling(max_tokens=8), env_kwargs={"max_turns": 1},
                              results=tmp_path / "same-file.jsonl")
        outcome = run_eval(request, Console(file=io.StringIO()))
        runs[dtype] = (request, outcome)
    fp32, bf16 = (json.loads(runs[d][1].results[0].key) for d in ("float32", "bfloat16"))
    assert "dtype" not in fp32 and bf16.pop("dtype") == "bfloat16" and bf16 == fp32
    assert len((tmp_path / "same-file.jsonl").read_text().splitlines()) == 2  # played twice, not resumed
    record = json.loads(submit(*runs["bfloat16"], tmp_path / "board", allow_incomplete=True).read_text())
    assert record["name"] == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to bf16)"


def test_the_trainer_trains_under_bf16_autocast_when_asked(tmp_path, smollm2_tokenizer):
    import_or_skip("trl", "train")
    import torch
    from helpers.toy_env import ID, register
    from helpers.trainer_fixtures import tiny_model

    from agentgym.lm.rollout import TaskSpec
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    register()
    seen = []
    for precision, expected in (("bfloat16", torch.bfloat16), ("float32", None)):
        seen.clear()
        model = tiny_model(smollm2_tokenizer, seed=2)  # fresh: accelerate wraps a prepared model's forward
        model.model.norm.register_forward_hook(lambda module, args, out: seen.append(
            torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None))
        config = TrainConfig(env=[ID], output_dir=str(tmp_path / precision), group_size=2, groups_per_step=1,
                             steps=1, max_turn_tokens=6, max_completion_tokens=100, save_steps=100,
                             precision=precision)
        trainer, rollouts = build_trainer(config, model=model, tokenizer=smollm2_tokenizer,
                                          specs=[TaskSpec(ID, task_id="toy-0")])
        assert trainer.args.bf16 is (expected is not None)
        trainer.train()
        rollouts.close()
        assert seen and set(seen) == {expected}  # every forward: the rollouts' and the training's
        assert next(model.parameters()).dtype == torch.float32  # the weights stay fp32
