"""What a leaderboard row calls a model: ``--name``, else a name read from the model itself, never a path.

- ``smollm2``: ``SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32)``: the quantisation is part of the name.
- ``hf:<dir>``: the ``name`` of the folder's ``agentgym_model.json`` (written by ``agentgym train`` and
  ``agentgym sft`` beside the weights: the base model's name and how it was trained), else the source of a
  converted GGUF (``agentgym_source.json``), else the config's ``_name_or_path`` when it is a hub id, else the
  folder's own name (``run/final`` for a trainer's ``final`` or ``checkpoint-N`` folder).
- ``hf:<file>.gguf``: the file's stem and its quantisation.
- ``openai:`` / ``vllm:``: the model id (``--model``, or the served model).
- ``oracle``, ``random``, ``empty``: the policy's own name.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["MODEL_CARD", "describe_gguf", "model_name", "trained_model_card"]

#: written beside a trained model's weights: {"name", "base", "method", "run"}
MODEL_CARD = "agentgym_model.json"
_QUANT = re.compile(r"[._-](I?Q\d(?:_[A-Z0-9]+)*|F16|BF16|F32)$", re.IGNORECASE)
_GENERIC_FOLDER = re.compile(r"final|checkpoint-\d+|model|output|out")


def describe_gguf(file_name: str, dtype: str | None = "float32") -> str:
    """``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32)``."""
    stem = Path(file_name).name.removesuffix(".gguf")
    quant = _QUANT.search(stem)
    base = stem[:quant.start()] if quant else stem
    kind = f"{quant.group(1).upper()} GGUF" if quant else "GGUF"
    short = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(str(dtype), dtype)
    return f"{base} ({kind}, dequantised to {short})" if dtype else f"{base} ({kind})"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _folder_name(folder: Path) -> str:
    """A folder's name without the machine's path: ``runs/mathtool/final`` -> ``mathtool/final``."""
    folder = Path(os.path.abspath(folder))
    if _GENERIC_FOLDER.fullmatch(folder.name) and folder.parent.name:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name or str(folder)


def _dir_name(folder: Path) -> str:
    card = _read_json(folder / MODEL_CARD)
    if card and isinstance(card.get("name"), str) and card["name"].strip():
        return card["name"].strip()
    source = _read_json(folder / "agentgym_source.json")
    if source and isinstance(source.get("file"), str):
        return describe_gguf(source["file"], source.get("dtype"))
    config = _read_json(folder / "config.json") or {}
    hub_id = config.get("_name_or_path")
    if isinstance(hub_id, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", hub_id) and not os.path.exists(hub_id):
        return hub_id
    return _folder_name(folder)


def model_name(policy: str, model: str | None = None, dtype: str | None = None) -> str:
    """The display name of ``policy`` (an ``agentgym eval --policy`` spec) for a leaderboard row; a local model
    run in ``dtype`` bfloat16 says so (fp32 is the default and goes unsaid, but in a GGUF's description)."""
    name = _model_name(policy, model, dtype)
    if dtype == "bfloat16" and policy != "smollm2" and not name.endswith("to bf16)"):
        return f"{name} (bf16)"
    return name


def _model_name(policy: str, model: str | None, dtype: str | None) -> str:
    kind, _, target = policy.partition(":")
    if policy == "smollm2":
        from agentgym.errors import DependencyNotInstalled
        from agentgym.lm.local import smollm2_path

        try:
            return describe_gguf(smollm2_path()[1], dtype or "float32")
        except DependencyNotInstalled:
            return describe_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", dtype or "float32")
    if kind in ("openai", "vllm") and model:
        return model
    if kind in ("hf", "vllm") and target:
        path = Path(os.path.expanduser(target))
        if path.is_dir():
            return _dir_name(path)
        if path.suffix == ".gguf":
            return describe_gguf(path.name, dtype or "float32")
        if re.fullmatch(r"[\w.-]+/[\w.-]+", target) and not target.startswith("."):
            return target  # a hub id
        return _folder_name(path)  # a folder not on this machine: still not its path
    return model or policy


def trained_model_card(start_model: str, *, method: str, run: str | Path) -> dict[str, str]:
    """What ``agentgym train``/``sft`` writes as ``MODEL_CARD`` in its output: the base model's name + method."""
    base = model_name("smollm2") if start_model == "smollm2" else model_name(f"hf:{start_model}")
    run_name = Path(os.path.abspath(run)).name
    return {"name": f"{base} + {method} ({run_name})", "base": base, "method": method, "run": run_name}
