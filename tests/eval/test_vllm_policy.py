"""vllm:<model> needs a CUDA GPU; CI has none, so this runs only where one is lent (marker gpu)."""

import importlib.util

import pytest

from agentgym.errors import DependencyNotInstalled
from agentgym.policies import make_policy


def test_missing_vllm_says_how_to_install():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")  # pragma: no cover - only on GPU machines
    with pytest.raises(DependencyNotInstalled, match="pip install vllm"):
        make_policy("vllm:HuggingFaceTB/SmolLM2-135M-Instruct")


@pytest.mark.gpu
def test_vllm_plays_an_episode():
    import agentgym
    from agentgym.eval.episode import run_episode

    policy = make_policy("vllm:HuggingFaceTB/SmolLM2-135M-Instruct")
    env = agentgym.make("agentgym/SearchQA-v0", max_turns=2)
    result = run_episode(env, policy, seed=0)
    assert result.turns >= 1 and result.completion_tokens > 0
