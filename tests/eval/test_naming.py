"""What a leaderboard row calls a model: ``--name``, else a name read from the model, quantisation stated, never
a path of the machine that ran it."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from agentgym.errors import ConfigError
from agentgym.eval.command import EvalRequest, run_eval, submit
from agentgym.eval.leaderboard import build_leaderboard
from agentgym.lm.naming import MODEL_CARD, describe_gguf, model_name, trained_model_card

SEARCH = "agentgym/SearchQA-v0"


def test_gguf_names_state_their_quantisation():
    assert describe_gguf("SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32)"
    assert describe_gguf("/models/Qwen2.5-0.5B-Instruct-Q8_0.gguf", None) == "Qwen2.5-0.5B-Instruct (Q8_0 GGUF)"
    assert describe_gguf("llama-3-8b.IQ3_XS.gguf", "bfloat16") == "llama-3-8b (IQ3_XS GGUF, dequantised to bf16)"
    assert describe_gguf("plain.gguf", None) == "plain (GGUF)"


def test_model_folders_are_named_by_what_they_hold_never_by_their_path(tmp_path):
    assert model_name("smollm2") == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32)"
    # a converted GGUF (the trainer's starting checkpoint): its source file
    converted = tmp_path / "SmolLM2-fp32"
    converted.mkdir()
    (converted / "agentgym_source.json").write_text(json.dumps({"file": "SmolLM2-135M-Instruct.Q4_1.gguf",
                                                                "dtype": "float32"}))
    assert model_name(f"hf:{converted}") == model_name("smollm2")
    # a trained model: its card, written by the trainer
    final = tmp_path / "runs" / "search-agent" / "final"
    final.mkdir(parents=True)
    card = trained_model_card(str(converted), method="SFT", run=tmp_path / "runs" / "search-agent")
    (final / MODEL_CARD).write_text(json.dumps(card))
    assert model_name(f"hf:{final}") == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32) + SFT (search-agent)"
    # a trained model trained further names both stages
    card2 = trained_model_card(str(final), method="GRPO", run="runs/search-agent-rl")
    assert card2["name"].endswith("+ SFT (search-agent) + GRPO (search-agent-rl)")
    # a plain HF folder: the hub id its config names, else the folder's own name (with its run for 'final')
    plain = tmp_path / "tmp" / "train" / "arith" / "final"
    plain.mkdir(parents=True)
    (plain / "config.json").write_text(json.dumps({"_name_or_path": str(plain)}))
    assert model_name(f"hf:{plain}") == "arith/final"
    (plain / "config.json").write_text(json.dumps({"_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct"}))
    assert model_name(f"hf:{plain}") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert model_name("hf:/tmp/elsewhere/run7/checkpoint-30") == "run7/checkpoint-30"  # not on this machine
    assert str(tmp_path) not in model_name(f"hf:{plain}")
    assert model_name("hf:Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert model_name("openai:http://127.0.0.1:8000/v1", "gpt-4o-mini") == "gpt-4o-mini"
    assert model_name("oracle") == "oracle"


def _run(tmp_path, **kw):
    request = EvalRequest(policy="oracle", envs=(SEARCH,), episodes=2, results=tmp_path / "r.jsonl", **kw)
    return request, run_eval(request, Console(file=io.StringIO()))


def test_submitted_rows_carry_the_name_given_or_read(tmp_path):
    request, outcome = _run(tmp_path, name="My agent v2")
    record = json.loads(submit(request, outcome, tmp_path / "board").read_text())
    assert record["name"] == "My agent v2"
    readme, _ = build_leaderboard(tmp_path / "board")
    assert "My agent v2" in readme.read_text()
    request, outcome = _run(tmp_path)
    record = json.loads(submit(request, outcome, tmp_path / "board2").read_text())
    assert record["name"] == "oracle"
    with pytest.raises(ConfigError, match="--name"):
        EvalRequest(policy="oracle", name=" ")
    with pytest.raises(ConfigError, match="--name"):
        EvalRequest(policy="oracle", name="a\nb")
