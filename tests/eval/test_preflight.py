"""The policy's pre-flight: a run whose every episode would fail stops before the first, with one line."""

from __future__ import annotations

import json

import pytest

from agentgym.errors import PolicyError
from agentgym.eval.preflight import check_policy
from agentgym.policies import make_policy


def test_an_endpoint_that_answers_one_token_passes(fake_openai):
    policy = make_policy(f"openai:{fake_openai.url}", model="gpt-x")
    check_policy(f"openai:{fake_openai.url}", policy)
    assert fake_openai.requests[-1]["max_tokens"] == 1 and fake_openai.requests[-1]["model"] == "gpt-x"


def test_an_endpoint_that_refuses_fails_with_the_servers_message(fake_openai):
    fake_openai.status = 503
    policy = make_policy(f"openai:{fake_openai.url}", model="gpt-x")
    with pytest.raises(PolicyError, match=r"Pre-flight: .* 503 .*model is loading"):
        check_policy(f"openai:{fake_openai.url}", policy)


def test_an_endpoint_that_is_not_there_fails_in_one_line():
    spec = "openai:http://127.0.0.1:9/v1"
    with pytest.raises(PolicyError, match="did not answer a one-token request") as caught:
        check_policy(spec, make_policy(spec, model="gpt-x"))
    assert "\n" not in str(caught.value)


def test_a_model_folder_needs_a_readable_config(tmp_path):
    check_policy("hf:org/model")  # a hub id: loading it from the local cache says what is missing
    with pytest.raises(PolicyError, match="no model folder"):
        check_policy(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(PolicyError, match="config.json does not load"):
        check_policy(f"hf:{tmp_path}")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(PolicyError, match="config.json does not load"):
        check_policy(f"vllm:{tmp_path}")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    check_policy(f"hf:{tmp_path}")
    with pytest.raises(PolicyError, match="no such GGUF file"):
        check_policy(f"hf:{tmp_path / 'm.gguf'}")
    check_policy("oracle")
