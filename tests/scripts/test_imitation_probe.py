"""scripts/imitation_probe.py: how well a model predicts its tool's output, on the trainer's own token sequences."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from helpers.gates import requires_smollm2, requires_train

pytestmark = [requires_smollm2, requires_train, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_the_probe_scores_the_interpreters_digits_apart_from_the_rest():
    """Held-out problem 0 (1497 * 3340), played greedily by the default model through the tool: the interpreter's
    product, 4999980, is 7 digit tokens of the observation; the model's own tokens are the ones GRPO trains."""
    script = runpy.run_path(str(ROOT / "scripts" / "imitation_probe.py"))
    recipe = str(ROOT / "docs" / "training" / "mathtool-tooluse.yaml")
    report = script["main"](["--config", recipe, "--reference", "smollm2", "--models", "smollm2", "--tasks", "1"])
    assert report["episodes"] == report["episodes_with_tool_call"] == 1
    scores = report["scores"]["smollm2"]
    assert set(scores) == {"model", "observation", "interpreter_digits"}
    assert scores["interpreter_digits"]["tokens"] == len("4999980")
    # the model wrote its turns greedily, so it predicts them far better than the product it cannot compute
    assert scores["model"]["top1"] > 0.9 and scores["model"]["nll"] < scores["interpreter_digits"]["nll"]
    assert scores["observation"]["tokens"] > 10


def test_segments_follow_the_mask_and_the_interpreter_tags():
    from agentgym.lm.local import load_for_training, resolve_model

    segments = runpy.run_path(str(ROOT / "scripts" / "imitation_probe.py"))["_segments"]
    _, tokenizer = load_for_training(resolve_model("smollm2"))
    model_ids = tokenizer.encode("<code>print(12 * 3)</code>", add_special_tokens=False)
    obs_ids = tokenizer.encode("\n<interpreter>36\n</interpreter>\n7", add_special_tokens=False)
    answer_ids = tokenizer.encode("<answer>36</answer>", add_special_tokens=False)
    ids = model_ids + obs_ids + answer_ids
    mask = [1] * len(model_ids) + [0] * len(obs_ids) + [1] * len(answer_ids)
    kinds = segments(tokenizer, ids, mask)
    digits = [tokenizer.decode([t]) for t, k in zip(ids, kinds) if k == "interpreter_digits"]
    assert "".join(d.strip() for d in digits) == "36"  # not the 7 after </interpreter>, not the model's digits
    assert kinds[:len(model_ids)] == ["model"] * len(model_ids) and kinds[-len(answer_ids):] == ["model"] * len(
        answer_ids)


def test_segments_mark_the_retrieved_passages_of_searchqa():
    from agentgym.lm.local import load_for_training, resolve_model

    segments = runpy.run_path(str(ROOT / "scripts" / "imitation_probe.py"))["_segments"]
    _, tokenizer = load_for_training(resolve_model("smollm2"))
    query = tokenizer.encode("<search>Kushinagar</search>", add_special_tokens=False)
    passage = "Doc 1 (Title: Kushinagar) Kushinagar is a city of India."
    obs = tokenizer.encode(f"<|im_end|>\n<|im_start|>tool\n\n<information>{passage}\n</information>\n\n<|im_end|>",
                           add_special_tokens=False)
    answer = tokenizer.encode("<answer>India</answer>", add_special_tokens=False)
    ids, mask = query + obs + answer, [1] * len(query) + [0] * len(obs) + [1] * len(answer)
    kinds = segments(tokenizer, ids, mask)
    inside = tokenizer.decode([t for t, k in zip(ids, kinds) if k == "passage"])
    assert passage in inside and "information" not in inside and "tool" not in inside
    assert kinds.count("model") == len(query) + len(answer) and "interpreter_digits" not in kinds
    assert {k for t, k in zip(ids, kinds) if k == "observation"} and kinds.count("observation") < len(obs)
