"""The gateway holds under any request: generation in chunks that new requests join (a long request never holds a
short one past a chunk), a client that goes away cancels its request, a per-request time limit, and limits on body
size, metadata and open rollouts (idle ones expire), each a 4xx that says which.

``Paced`` stands in for the model where a test needs a turn of a given length at a known pace (one id every
``step_s``, never ending on its own); the chunked generation's equivalence is checked on the real model."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from helpers.gates import requires_server, requires_smollm2

from agentgym.gateway.engine import Engine
from agentgym.gateway.server import GatewayServer, load_gateway
from agentgym.gateway.service import Gateway, Limits
from agentgym.lm.generation import Turn

pytestmark = [requires_server]


class Paced:
    """Writes ``x`` ids at ``step_s`` a step for the batch's longest row; records each call's rows and limits."""

    def __init__(self, tokenizer, step_s: float = 0.01):
        self.tokenizer, self.step_s, self.calls = tokenizer, step_s, []
        self.temperature, self.top_p = 1.0, 1.0
        self.token = tokenizer("x", add_special_tokens=False)["input_ids"][0]

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        limits = [max_new_tokens] * len(contexts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        self.calls.append(limits)
        time.sleep(self.step_s * max(limits))
        return [Turn(ids=[self.token] * k, ended=False, stopped=False, logprobs=[-0.5] * k) for k in limits]


@pytest.fixture
def paced(smollm2_tokenizer):
    """``serve(limits=None, chunk_tokens=16)``: a gateway over :class:`Paced` on a free port."""
    served = []

    def serve(limits=None, chunk_tokens=16):
        generator = Paced(smollm2_tokenizer)
        gateway = Gateway(model_name="paced", engine=Engine(generator, gather_s=0.001, chunk_tokens=chunk_tokens),
                          limits=limits, context_tokens=100_000)
        server = GatewayServer(gateway).start()
        served.append((gateway, server))
        return gateway, generator, server.url

    serve.served = served  # (gateway, server) pairs, in order
    yield serve
    for gateway, server in served:
        server.stop()
        gateway.close()


def _chat(url, rollout=None, **body):
    base = f"{url}/rollouts/{rollout}/v1" if rollout else f"{url}/v1"
    return {"messages": [{"role": "user", "content": "go"}], **body}, f"{base}/chat/completions"


def test_a_long_request_does_not_hold_a_short_one_and_a_client_that_leaves_cancels_its_request(paced):
    """16 rows of 4,000 ids (40 s at this pace, alone); a 4-id request sent after it starts is answered within a
    chunk or two (16 ids: 0.16 s a chunk), and the long one's client giving up takes its rows out of the batch."""
    gateway, generator, url = paced()
    body, route = _chat(url, n=16, max_tokens=4000)
    gave_up = threading.Event()

    def long_request():
        try:
            httpx.post(route, json=body, timeout=3)
        except httpx.TimeoutException:
            gave_up.set()

    thread = threading.Thread(target=long_request)
    thread.start()
    deadline = time.monotonic() + 30
    while not generator.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert generator.calls, "the long request never started"
    body, route = _chat(url, max_tokens=4)
    started = time.monotonic()
    short = httpx.post(route, json=body, timeout=60)
    waited = time.monotonic() - started
    assert short.status_code == 200 and short.json()["usage"]["completion_tokens"] == 4
    assert waited < 10, f"a 4-id request waited {waited:.1f} s behind a long one (a chunk is 0.16 s here)"
    assert any(len(limits) == 17 for limits in generator.calls), "the short request never joined the batch"
    thread.join(timeout=30)
    assert gave_up.is_set()
    deadline = time.monotonic() + 30
    while gateway.engine.stats["cancelled"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gateway.engine.stats["cancelled"] == 1, "the abandoned request was not cancelled"
    calls = len(generator.calls)
    time.sleep(0.5)
    assert len(generator.calls) == calls, "rows of the abandoned request are still generated"
    rows = sum(len(limits) for limits in generator.calls)
    assert rows < 16 * 4000 / 16, "the abandoned request ran to its end"


def test_a_request_past_its_time_limit_is_a_408_and_leaves_the_batch(paced):
    gateway, generator, url = paced(Limits(request_s=0.5))
    body, route = _chat(url, max_tokens=50_000)
    started = time.monotonic()
    answer = httpx.post(route, json=body, timeout=60)
    assert answer.status_code == 408 and answer.json()["error"]["code"] == "request_timeout"
    assert "--request-timeout" in answer.json()["error"]["message"]
    assert time.monotonic() - started < 15
    deadline = time.monotonic() + 30
    while gateway.engine.stats["cancelled"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gateway.engine.stats["cancelled"] == 1


def test_body_metadata_and_open_rollouts_have_limits_each_a_4xx_with_its_reason(paced):
    gateway, _, url = paced(Limits(body_bytes=4096, metadata_bytes=256, open_rollouts=2, idle_s=0.5,
                                   closed_records=3))
    body, route = _chat(url, max_tokens=1, messages=[{"role": "user", "content": "x" * 5000}])
    answer = httpx.post(route, json=body)  # announced by its Content-Length
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"

    def streamed():  # no Content-Length: read until past the limit, then refused
        for _ in range(10):
            yield b" " * 1000

    answer = httpx.post(route, content=streamed(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"
    answer = httpx.post(f"{url}/rollouts", json={"metadata": {"blob": "y" * 300}})
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "metadata_too_large"
    assert httpx.post(f"{url}/rollouts", json={"id": "a"}).status_code == 201
    assert httpx.post(f"{url}/rollouts", json={"id": "b"}).status_code == 201
    full = httpx.post(f"{url}/rollouts", json={"id": "c"})
    assert full.status_code == 429 and full.json()["error"]["code"] == "too_many_rollouts"
    assert "DELETE /rollouts/ID" in full.json()["error"]["message"]
    time.sleep(0.6)  # a and b idle past the limit: closed to make room
    assert httpx.post(f"{url}/rollouts", json={"id": "c"}).status_code == 201
    body, route = _chat(url, "a", max_tokens=1)
    expired = httpx.post(route, json=body)
    assert expired.status_code == 404 and "idle for more than 0.5 s" in expired.json()["error"]["message"]
    # the records of the newest 3 closed rollouts stay readable; older ones are forgotten
    for rid in ("c", "d"):
        if rid == "d":
            assert httpx.post(f"{url}/rollouts", json={"id": "d"}).status_code == 201
        assert httpx.delete(f"{url}/rollouts/{rid}").status_code == 200
    assert [httpx.get(f"{url}/rollouts/{rid}").status_code for rid in "abcd"] == [404, 200, 200, 200]
    assert sorted(gateway.rollouts) == ["b", "c", "d"]


def test_closing_an_agent_run_does_not_wait_for_a_long_request(paced, tmp_path):
    """An aborted eval --agent (a second Ctrl-C) closes its gateway while a 40-second request generates: the
    request fails at the next chunk and the close takes seconds, not the server's shutdown timeout plus the batch."""
    from agentgym.eval.agent import AgentPolicy, AgentSpec

    gateway, generator, url = paced()
    server = paced.served[-1][1]
    body, route = _chat(url, n=4, max_tokens=4000)
    answers = []
    thread = threading.Thread(target=lambda: answers.append(httpx.post(route, json=body, timeout=120)))
    thread.start()
    deadline = time.monotonic() + 30
    while not generator.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    policy = AgentPolicy(AgentSpec(target="x.py:agent"), gateway, server=server, base_url=url)
    started = time.monotonic()
    policy.close()
    assert time.monotonic() - started < 8, "closing waited for the long request"
    thread.join(timeout=30)
    assert answers and answers[0].status_code == 500 and "closed" in answers[0].json()["error"]["message"]


@requires_smollm2
def test_chunked_generation_samples_what_one_pass_samples(smollm2_tokenizer):
    """The real model, greedy: 24 ids in chunks of 7 (each chunk goes on from the cached row) are the ids of one
    pass, logprobs included; a stop string that spans two chunks ends the turn where one pass ends it."""
    gateway = load_gateway("smollm2", dtype="float32")
    try:
        generator = gateway.engine.generator
        whole = Engine(generator, chunk_tokens=1000)
        chunked = Engine(generator, chunk_tokens=7)
        from agentgym.gateway.engine import Request

        text = smollm2_tokenizer.apply_chat_template(
            [{"role": "user", "content": "Write a short story about a lighthouse keeper."}],
            add_generation_prompt=True, tokenize=False)
        prompt = list(smollm2_tokenizer(text, add_special_tokens=False)["input_ids"])

        def run(engine, stops=()):
            request = Request(prompt, n=2, stops=tuple(stops), max_tokens=24, temperature=0.0, top_p=1.0, seed=1,
                              order=(0, 0))
            return engine.submit(request).result(timeout=600)

        one, parts = run(whole), run(chunked)
        assert [t.ids for t in parts] == [t.ids for t in one] and len(one[0].ids) > 14
        assert all(max(abs(a - b) for a, b in zip(p.logprobs, o.logprobs)) < 1e-4 for p, o in zip(parts, one))
        stop = smollm2_tokenizer.decode(one[0].ids[5:10])  # ids 5..9: spans the chunk boundary at 7
        assert len(stop.strip()) >= 3, stop
        one, parts = run(whole, [stop]), run(chunked, [stop])
        assert [t.ids for t in parts] == [t.ids for t in one] and all(t.stopped for t in one)
        whole.close()
        chunked.close()
    finally:
        gateway.close()
