"""The gateway over HTTP, driven with the ``openai`` client: OpenAI's shapes, token-exact records (sampled ids reused
when the agent sends its history back, a branch when it edits it), batching across rollouts, errors in OpenAI's
shape, and the upstream pass-through.

The ``scripted`` gateway (conftest) writes chosen text where a test needs a given model turn (a tool call);
everything else runs the real default model."""

from __future__ import annotations

import concurrent.futures
import json
import time

import httpx
import pytest
from helpers.gates import requires_server, requires_smollm2

from agentgym.gateway.server import GatewayServer, load_gateway

pytestmark = [requires_server]
openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "python", "description": "Run Python code.",
                                           "parameters": {"type": "object", "properties": {"code": {"type": "string"}},
                                                          "required": ["code"]}}}]


def _client(url, rollout=None):
    base = f"{url}/rollouts/{rollout}/v1" if rollout else f"{url}/v1"
    return openai.OpenAI(base_url=base, api_key="unused", max_retries=0)


def test_a_tool_call_comes_back_as_tool_calls_and_the_next_call_reuses_the_sampled_ids(scripted, smollm2_tokenizer):
    gateway, generator, url = scripted('<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"}}\n'
                                       '</tool_call>', "The answer is 42.")
    gateway.create_rollout("r1")
    client = _client(url, "r1")
    messages = [{"role": "user", "content": "What is 6*7?"}]
    first = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and message.content is None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("python", {"code": "print(6*7)"})]
    messages += [message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "42"}]
    second = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "The answer is 42."
    record = gateway.rollout("r1")
    call0, call1 = record.calls
    sampled0 = call0.choices[0].ids
    # the model was given its own ids back, then only the tool message's
    assert generator.contexts[1][:len(call0.prompt_ids) + len(sampled0)] == call0.prompt_ids + sampled0
    assert call1.parent == (0, 0) and not call1.branched
    assert call1.reused_tokens == len(call0.prompt_ids) + len(sampled0)
    assert second.model_extra["agentgym"]["extends"] == [0, 0]
    [sample] = record.samples()
    ids, mask = sample["token_ids"], sample["loss_mask"]
    assert ids == call1.prompt_ids + call1.choices[0].ids
    sampled = [i for i, m in zip(ids, mask) if m]
    assert sampled == sampled0 + call1.choices[0].ids
    assert [lp for lp, m in zip(sample["logprobs"], mask) if m] == [-0.25] * len(sampled)
    assert all(lp is None for lp, m in zip(sample["logprobs"], mask) if not m)
    text = smollm2_tokenizer.decode(ids)
    assert text.count("<|im_start|>assistant") == 2 and "<|im_start|>tool\n42<|im_end|>" in text


@pytest.mark.parametrize("changed", [True, 1.0, "1", [1]], ids=["true", "1.0", "string", "list"])
def test_a_tool_calls_argument_changed_to_another_json_type_is_a_branch(scripted, changed):
    """The model wrote ``{"n": 1}``; an agent that sends it back as ``true`` or ``1.0`` (equal in Python) sent a turn
    the model did not write: a branch, the edited turn prompt (mask 0). Sent back unchanged it extends."""
    call = '<tool_call>\n{"name": "python", "arguments": {"code": "x", "n": 1}}\n</tool_call>'
    gateway, _, url = scripted(call, "ok", "ok")
    gateway.create_rollout("rj")
    client = _client(url, "rj")
    messages = [{"role": "user", "content": "go"}]
    message = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS).choices[0].message
    sent = message.model_dump(exclude_none=True)
    tool = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "done"}
    client.chat.completions.create(model="scripted", messages=[*messages, sent, tool], tools=TOOLS)
    edited = json.loads(json.dumps(sent))
    edited["tool_calls"][0]["function"]["arguments"] = json.dumps({"code": "x", "n": changed})
    third = client.chat.completions.create(model="scripted", messages=[*messages, edited, tool], tools=TOOLS)
    calls = gateway.rollout("rj").calls
    assert calls[1].parent == (0, 0) and not calls[1].branched
    assert third.model_extra["agentgym"]["branched"] is True and calls[2].parent is None


def test_an_edited_history_branches_and_each_leaf_is_a_sample(scripted):
    gateway, generator, url = scripted("Paris.", "Lima.", "Quito.")
    gateway.create_rollout("r2")
    client = _client(url, "r2")
    messages = [{"role": "user", "content": "A capital?"}]
    first = client.chat.completions.create(model="scripted", messages=messages)
    kept = [*messages, {"role": "assistant", "content": first.choices[0].message.content},
            {"role": "user", "content": "Another?"}]
    client.chat.completions.create(model="scripted", messages=kept)
    edited = [*messages, {"role": "assistant", "content": "Rome."}, {"role": "user", "content": "Another?"}]
    third = client.chat.completions.create(model="scripted", messages=edited)
    assert third.model_extra["agentgym"]["branched"] is True and third.model_extra["agentgym"]["extends"] is None
    record = gateway.rollout("r2")
    assert record.summary()["branches"] == 1 and record.summary()["extended"] == 1
    leaves = record.samples()
    assert [s["calls"] for s in leaves] == [[0, 1], [2]]
    # the edited turn was never sampled: it is prompt (mask 0) in its branch
    assert sum(leaves[1]["loss_mask"]) == len(record.calls[2].choices[0].ids)


def test_n_choices_and_the_one_the_agent_keeps(scripted):
    gateway, generator, url = scripted("A.", "B.", "C.")
    gateway.create_rollout("r3")
    client = _client(url, "r3")
    messages = [{"role": "user", "content": "Pick"}]
    both = client.chat.completions.create(model="scripted", messages=messages, n=2)
    assert [c.message.content for c in both.choices] == ["A.", "B."]
    client.chat.completions.create(model="scripted", messages=[
        *messages, {"role": "assistant", "content": "B."}, {"role": "user", "content": "Why?"}])
    record = gateway.rollout("r3")
    assert record.calls[1].parent == (0, 1)
    assert sorted(s["calls"] for s in record.samples()) == [[0], [0, 1]]


def test_a_trainers_gateway_samples_as_the_recipe_says_whatever_the_agent_asks(smollm2_tokenizer):
    """``train --agent``'s gateway: the recipe's temperature and top_p for every call (an agent asking for greedy
    still explores), max_tokens capped at the recipe's turn budget, and each batch under the trainer's context
    (its bf16 autocast is per thread)."""
    import contextlib

    from helpers.scripted_generator import ScriptedGenerator

    from agentgym.gateway.engine import Engine
    from agentgym.gateway.service import Gateway

    class Recording(ScriptedGenerator):
        def generate(self, contexts, *, stops, max_new_tokens, seed):
            seen.append((self.temperature, self.top_p, max_new_tokens, entered[-1]))
            return super().generate(contexts, stops=stops, max_new_tokens=max_new_tokens, seed=seed)

    seen, entered = [], [False]

    @contextlib.contextmanager
    def context():
        entered.append(True)
        yield
        entered.append(False)

    gateway = Gateway(model_name="m", engine=Engine(Recording(smollm2_tokenizer, ["A.", "B."]), gather_s=0.001,
                                                    context=context),
                      sampling={"temperature": 0.5, "top_p": 0.9, "max_tokens": 48})
    try:
        gateway.create_rollout("r")
        gateway.chat({"messages": [{"role": "user", "content": "Hi"}], "temperature": 0, "max_tokens": 256}, "r")
        gateway.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}, "r")
        assert seen == [(0.5, 0.9, 48, True), (0.5, 0.9, 8, True)]
        assert gateway.rollout("r").calls[0].sampling["temperature"] == 0.5  # the record says what was sampled
    finally:
        gateway.close()


def test_a_stop_string_ends_the_content_and_the_ids_stay_as_sampled(scripted, smollm2_tokenizer):
    gateway, generator, url = scripted("one two STOP three", "four.")
    gateway.create_rollout("r4")
    client = _client(url, "r4")
    messages = [{"role": "user", "content": "x"}]
    reply = client.chat.completions.create(model="scripted", messages=messages, stop=["STOP"])
    assert reply.choices[0].message.content == "one two " and reply.choices[0].finish_reason == "stop"
    sampled = gateway.rollout("r4").calls[0].choices[0].ids
    assert "STOP" in smollm2_tokenizer.decode(sampled)  # what the model wrote, kept for training
    client.chat.completions.create(model="scripted", messages=[
        *messages, {"role": "assistant", "content": "one two "}, {"role": "user", "content": "more"}])
    assert gateway.rollout("r4").calls[1].parent == (0, 0)  # the agent sent back what it got: no branch


def test_bad_requests_are_4xx_in_openais_shape(scripted):
    gateway, _, url = scripted()
    gateway.create_rollout("r5")
    cases = [
        ("/v1/chat/completions", b"{not json", 400, "not valid JSON"),
        ("/v1/chat/completions", {"model": "scripted"}, 400, "messages must be a non-empty list"),
        ("/v1/chat/completions", {"model": "scripted", "messages": [{"role": "wizard", "content": "x"}]}, 400,
         "messages[0].role must be one of"),
        ("/v1/chat/completions", {"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]}, 404,
         "The model 'gpt-9' is not served here"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "temperature": 9}, 400,
         "temperature must be a number in [0, 2]"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}, 400,
         "top_logprobs is not supported"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_tokens": 10**6}, 400,
         "max_tokens must be an integer"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web"}]}, 400,
         "only function tools are supported"),
        ("/rollouts/nope/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}, 404,
         "No rollout 'nope'"),
        ("/rollouts/r5/tools", None, 404, "has no env session"),
        ("/rollouts", {"id": "r5"}, 409, "exists already"),
        ("/rollouts", {"id": "a/b"}, 400, "A rollout id is"),
        ("/v2/anything", {}, 404, "No route"),
    ]
    for path, body, status, words in cases:
        if body is None:
            response = httpx.get(url + path)
        elif isinstance(body, bytes):
            response = httpx.post(url + path, content=body)
        else:
            response = httpx.post(url + path, json=body)
        assert response.status_code == status, (path, body, response.text)
        error = response.json()["error"]
        assert words in error["message"] and error["type"], (path, error)
    gateway.close_rollout("r5")
    closed = httpx.post(f"{url}/rollouts/r5/v1/chat/completions", json={"messages": [{"role": "user",
                                                                                      "content": "x"}]})
    assert closed.status_code == 404 and "is closed" in closed.json()["error"]["message"]
    assert len(gateway.rollout("r5").calls) == 0  # nothing refused was recorded


@pytest.fixture(scope="module")
def smollm2_gateway():
    # a long gathering gap: the concurrent agents' requests form one batch even on a machine five times slower
    gateway = load_gateway("smollm2", dtype="float32", gather_s=0.5)
    server = GatewayServer(gateway).start()
    yield gateway, server.url
    server.stop()
    gateway.close()


@requires_smollm2
def test_the_real_model_answers_with_logprobs_and_streams(smollm2_gateway):
    gateway, url = smollm2_gateway
    gateway.create_rollout("m1")
    client = _client(url, "m1")
    reply = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Say hi."}],
                                           max_tokens=8, temperature=0, logprobs=True)
    choice = reply.choices[0]
    recorded = gateway.rollout("m1").calls[0].choices[0]
    assert [t.logprob for t in choice.logprobs.content] == pytest.approx(recorded.logprobs)
    assert all(lp <= 0 for lp in recorded.logprobs) and len(recorded.ids) == reply.usage.completion_tokens
    chunks = list(_client(url).chat.completions.create(model="smollm2", max_tokens=8, temperature=0, stream=True,
                                                       messages=[{"role": "user", "content": "Say hi."}]))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == choice.message.content  # greedy: the same text, streamed
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    gateway.close_rollout("m1")


@requires_smollm2
def test_concurrent_agents_are_batched_and_each_extends_its_own_rollout(smollm2_gateway):
    gateway, url = smollm2_gateway
    ids = [f"c{i}" for i in range(6)]
    for rid in ids:
        gateway.create_rollout(rid)
    before = dict(gateway.engine.stats)

    def converse(rid):
        client = _client(url, rid)
        messages = [{"role": "user", "content": f"Count to {rid[1:]}."}]
        for _ in range(2):
            reply = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=12,
                                                   temperature=0.7, seed=1)
            messages += [{"role": "assistant", "content": reply.choices[0].message.content},
                         {"role": "user", "content": "Go on."}]
        return gateway.close_rollout(rid).summary()

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        summaries = list(pool.map(converse, ids))
    assert all(s["calls"] == 2 and s["extended"] == 1 and s["branches"] == 0 for s in summaries)
    batches = gateway.engine.stats["batches"] - before["batches"]
    assert batches < 12, f"12 calls of 6 agents ran in {batches} batches: not batched"


@requires_smollm2
def test_an_upstream_is_passed_through_and_recorded_as_text_only(smollm2_gateway):
    _, url = smollm2_gateway
    front = load_gateway("smollm2", upstream=f"{url}/v1", upstream_model="smollm2")
    server = GatewayServer(front).start()
    try:
        front.create_rollout("u1")
        reply = _client(server.url, "u1").chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0)
        record = front.rollout("u1").as_dict()
        assert record["text_only"] is True and record["samples"] == []
        assert record["calls"][0]["choices"][0]["message"]["content"] == reply.choices[0].message.content
    finally:
        server.stop()
        front.close()


@requires_smollm2
def test_forced_sampling_reaches_an_upstream_and_its_record(smollm2_gateway):
    """eval --agent's sampling on a gateway in front of an upstream: what the agent asks (temperature 0, a seed, 20
    tokens) is replaced by the command's (temperature 0.9, top_p 0.5, no seed, at most 3 tokens) in what the
    upstream is sent, and the front's record says what was sampled."""
    backend, url = smollm2_gateway
    backend.create_rollout("up1")  # the upstream records what it was sent
    front = load_gateway("smollm2", upstream=f"{url}/rollouts/up1/v1", upstream_model="smollm2",
                         sampling={"temperature": 0.9, "top_p": 0.5, "seed": None, "max_tokens": 3})
    server = GatewayServer(front).start()
    try:
        front.create_rollout("u2")
        reply = _client(server.url, "u2").chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=20, temperature=0, seed=7)
        assert reply.usage.completion_tokens <= 3
        sent = backend.close_rollout("up1").as_dict()["calls"][0]["sampling"]
        assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.9, 0.5, 3, None)
        kept = front.rollout("u2").as_dict()["calls"][0]["sampling"]
        assert (kept["temperature"], kept["top_p"], kept["max_tokens"], kept["seed"]) == (0.9, 0.5, 3, None)
        call = front.rollout("u2").calls[0]  # it ended before now (a transcript orders turns and steps by it)
        assert call.wall_s > 0 and call.started + call.wall_s <= time.time()
    finally:
        server.stop()
        front.close()


@requires_smollm2
def test_agentgym_gateway_serves_until_ctrl_c():
    """The command a user types: it prints where it serves, answers, and stops cleanly on Ctrl-C."""
    import os
    import re
    import signal
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "gateway", "--port", "0", "--threads", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"},
                               # Ctrl-C's default action, as a terminal starts it: a parent started in the background
                               # of a non-interactive shell (`pytest &`) ignores SIGINT, and its children inherit that
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = process.stdout.readline()
        url = re.search(r"at (http://\S+)/v1", line).group(1)
        rollout = httpx.post(f"{url}/rollouts", json={"id": "cli"}).json()
        reply = _client(url, "cli").chat.completions.create(model="smollm2", max_tokens=2,
                                                            messages=[{"role": "user", "content": "hi"}])
        assert rollout["base_url"].endswith("/rollouts/cli/v1") and reply.usage.completion_tokens <= 2
        record = httpx.get(f"{url}/rollouts/cli").json()
        assert record["summary"]["calls"] == 1 and len(record["samples"]) == 1
    finally:
        process.send_signal(signal.SIGINT)
        try:
            out, _ = process.communicate(timeout=300)  # a loaded machine (CI at load 8) takes its time to wind down
        finally:
            process.kill()  # never left behind
    assert process.returncode == 0, out


def test_the_gateway_refuses_to_listen_beyond_this_machine():
    from typer.testing import CliRunner

    from agentgym.cli import app
    from agentgym.errors import ConfigError

    done = CliRunner().invoke(app, ["gateway", "--host", "0.0.0.0"])
    assert isinstance(done.exception, ConfigError) and "serves this machine only" in str(done.exception)

