"""Fingerprints: what a policy's model is, so a model changed under the same name is never taken for the old one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentgym.eval.fingerprint import fingerprint, model_files_fingerprint


def fake_safetensors(path: Path, values: bytes, *, tensor: str = "w") -> None:
    """A valid-looking safetensors file: 8-byte header length, JSON header, raw data."""
    header = json.dumps({tensor: {"dtype": "U8", "shape": [len(values)], "data_offsets": [0, len(values)]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + values)


def model_folder(root: Path, values: bytes = b"\x01" * 4096) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    (root / "tokenizer.json").write_text(json.dumps({"vocab": {"a": 0}}))
    fake_safetensors(root / "model.safetensors", values)
    return root


def test_a_model_folder_changed_in_place_gets_a_new_fingerprint(tmp_path):
    folder = model_folder(tmp_path / "final")
    before = fingerprint(f"hf:{folder}")
    assert before == fingerprint(f"hf:{folder}") == model_files_fingerprint(folder)  # stable
    os.utime(folder / "model.safetensors", (0, 0))
    assert fingerprint(f"hf:{folder}") == before  # a touched file is the same model
    fake_safetensors(folder / "model.safetensors", b"\x02" * 4096)  # retrained: same size, same header
    retrained = fingerprint(f"hf:{folder}")
    assert retrained != before
    (folder / "tokenizer.json").write_text(json.dumps({"vocab": {"b": 0}}))
    assert fingerprint(f"hf:{folder}") not in (before, retrained)
    assert fingerprint(f"vllm:{folder}") == fingerprint(f"hf:{folder}")


def test_the_header_and_the_size_count_and_unrelated_files_do_not(tmp_path):
    a, b = model_folder(tmp_path / "a"), model_folder(tmp_path / "b")
    assert model_files_fingerprint(a) == model_files_fingerprint(b)  # the content, not the path
    (b / "README.md").write_text("notes")
    (b / "training_log.csv").write_text("1,2")
    assert model_files_fingerprint(a) == model_files_fingerprint(b)
    fake_safetensors(b / "model.safetensors", b"\x01" * 4096, tensor="renamed")
    assert model_files_fingerprint(a) != model_files_fingerprint(b)
    fake_safetensors(b / "model.safetensors", b"\x01" * 4097)
    assert model_files_fingerprint(a) != model_files_fingerprint(b)


def test_a_gguf_file_and_a_hub_id_not_in_the_cache(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\x00" * 1000)
    first = fingerprint(f"hf:{gguf}")
    gguf.write_bytes(b"GGUF" + b"\x01" * 1000)
    assert fingerprint(f"hf:{gguf}") != first
    assert fingerprint("hf:nobody/not-a-cached-model-xyz") == fingerprint("hf:nobody/not-a-cached-model-xyz")


def test_baselines_have_none():
    assert [fingerprint(p) for p in ("oracle", "random", "empty")] == [None, None, None]


def test_an_endpoint_is_fingerprinted_by_what_it_reports(fake_openai):
    served = fingerprint(f"openai:{fake_openai.url}", "gpt-x")
    assert served == fingerprint(f"openai:{fake_openai.url}", "gpt-x")
    fake_openai.models = [{"id": "gpt-x", "object": "model", "root": "/models/b"}]  # another model, same name
    assert fingerprint(f"openai:{fake_openai.url}", "gpt-x") != served
    fake_openai.models = []  # an endpoint that does not say: the name alone
    assert fingerprint(f"openai:{fake_openai.url}", "gpt-x") == fingerprint("openai:http://127.0.0.1:9/v1", "gpt-x")
