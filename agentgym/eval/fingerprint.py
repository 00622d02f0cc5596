"""What a policy's model *is*, as a short hash: the resume key and every record carry it, so a model retrained
into the same folder, or a different model served under the same name, is never mistaken for the old one.

- ``hf:<dir>`` (and ``vllm:<dir>``): every weights file (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.gguf``)
  by name, size, its safetensors header (tensor names, shapes, dtypes, offsets) and 64 KiB blocks sampled at
  16 evenly spaced offsets; every config and tokenizer file (``*.json``, ``*.txt``, ``*.model``,
  ``*.jinja``) in full. Reading stays fast on a 15 GB model (about 1 MB read); a change that alters no
  size, no header and none of the sampled blocks would go unseen, which retraining never does.
- ``hf:<file>.gguf``, ``smollm2``: that one file, the same way.
- ``hf:<hub id>`` / ``vllm:<hub id>``: the cached snapshot folder when it is there, else the id itself.
- ``openai:<url>``: what ``GET <url>/models`` says of the model (its ``id``, and ``root`` / ``parent`` where
  the server reports them, as vLLM does); the ``--model`` name alone when the endpoint does not say.
- ``oracle``, ``random``, ``empty``: None (no model; their keys are as they always were).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx

__all__ = ["fingerprint", "model_files_fingerprint"]

_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_SMALL = (".json", ".txt", ".model", ".jinja", ".tiktoken")
_BLOCK_BYTES = 64 * 1024
_BLOCKS = 16
_MAX_HEADER_BYTES = 100 * 1024 * 1024  # the safetensors format's own cap on its JSON header


def _digest(parts: list[Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _weights_summary(path: Path) -> list[Any]:
    """Name, size, safetensors header and sampled blocks of one weights file."""
    size = path.stat().st_size
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if path.suffix == ".safetensors" and size >= 8:
            length = int.from_bytes(f.read(8), "little")
            if length <= min(size - 8, _MAX_HEADER_BYTES):
                h.update(f.read(length))
        for i in range(_BLOCKS):
            f.seek(max(0, size - _BLOCK_BYTES) * i // (_BLOCKS - 1))
            h.update(f.read(_BLOCK_BYTES))
    return [path.name, size, h.hexdigest()]


def _file_summary(path: Path, root: Path) -> list[Any] | None:
    name = path.name
    if name.endswith(_WEIGHTS):
        return [str(path.relative_to(root)), *_weights_summary(path)[1:]]
    if name.endswith(_SMALL) and path.stat().st_size <= 64 * 1024 * 1024:
        return [str(path.relative_to(root)), hashlib.sha256(path.read_bytes()).hexdigest()]
    return None


def model_files_fingerprint(path: str | os.PathLike[str]) -> str:
    """The fingerprint of a local model folder or single weights file (see the module docstring)."""
    path = Path(path).expanduser()
    if path.is_file():
        return _digest([_weights_summary(path)])
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".cache" not in p.relative_to(path).parts)
    return _digest([s for p in files if (s := _file_summary(p, path)) is not None])


def _hub_snapshot(model_id: str) -> Path | None:
    """The local snapshot folder of a hub id already in the cache; None when it is not there."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not installed, not cached, not an id: the id stands for itself
        return None


def _local_model(model: str) -> str:
    local = Path(model).expanduser()
    if local.exists():
        return model_files_fingerprint(local)
    snapshot = _hub_snapshot(model)
    return model_files_fingerprint(snapshot) if snapshot is not None else _digest([model])


def _served_model(base_url: str, model: str, *, timeout_s: float = 10) -> str:
    """What the endpoint reports of ``model`` at ``GET /models``; the name alone when it reports nothing."""
    from agentgym.policies.openai import _api_root

    key = os.environ.get("OPENAI_API_KEY", "EMPTY")
    try:
        response = httpx.get(f"{_api_root(base_url)}/models", timeout=timeout_s,
                             headers={"Authorization": f"Bearer {key}"})
        listed = response.json().get("data", []) if response.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        listed = []
    found = next((m for m in listed if isinstance(m, dict) and m.get("id") == model), None)
    if found is None:
        return _digest(["openai", model])
    # not "created": vLLM stamps it with the time of the request
    return _digest(["openai", model, found.get("root"), found.get("parent")])


def fingerprint(policy: str, model: str | None = None) -> str | None:
    """The fingerprint of the policy spec ``policy`` (with ``--model``); None for policies without a model."""
    if policy in ("oracle", "random", "empty"):
        return None
    if policy == "smollm2":
        from agentgym.lm.local import smollm2_path

        directory, gguf_file = smollm2_path()
        return model_files_fingerprint(Path(directory) / gguf_file)
    if policy.startswith("hf:") or policy == "hf":
        return _local_model(policy[3:] or model or "")
    if policy.startswith("vllm:"):
        return _local_model(policy.removeprefix("vllm:"))
    if policy.startswith("openai:"):
        return _served_model(policy.removeprefix("openai:"), model or "")
    return None
