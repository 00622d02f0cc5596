"""One client's HTTP requests in flight are capped across routes and connections, and served fairly
(``agentgym.server.admission``): the rules on their own, then a real ``agentgym serve`` whose one host sends more
than its share over many connections while another client (by the token the operator issued it) is served at once."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time

import httpx
import pytest
from helpers.gates import requires_server

from agentgym.errors import ConfigError

pytestmark = requires_server


def _admission(**caps):
    from agentgym.server.admission import Admission

    return Admission(**caps)


def test_a_client_runs_at_most_its_cap_its_others_wait_in_order_and_past_the_queue_are_refused():
    from agentgym.server.api_error import ApiError

    async def main():
        admission = _admission(max_client=2, max_client_queued=2, max_in_flight=100)
        started = []

        async def request(name):
            async with admission.slot("host"):
                started.append(name)
                await gate.wait()

        gate = asyncio.Event()
        tasks = [asyncio.create_task(request(k)) for k in range(4)]
        await asyncio.sleep(0)
        assert started == [0, 1] and admission.counts().waiting == 2
        with pytest.raises(ApiError) as refused:
            await admission.acquire("host")
        assert refused.value.status == 429 and refused.value.code == "too_many_requests"
        assert "--max-client-queued 2" in refused.value.message and refused.value.headers == {"Retry-After": "1"}
        await admission.acquire("other")  # another client is not behind this one's queue
        admission.release("other")
        gate.set()
        await asyncio.gather(*tasks)
        assert started == [0, 1, 2, 3]  # the waiting ones in the order they came
        assert admission.counts().running == admission.counts().waiting == 0

    asyncio.run(main())


def test_when_the_server_is_full_the_client_with_the_fewest_running_goes_next():
    async def main():
        admission = _admission(max_client=10, max_in_flight=3)
        order = []
        for _ in range(3):
            await admission.acquire("flood")  # the server is full of one client's requests

        async def wait(client):
            await admission.acquire(client)
            order.append(client)

        waiters = [asyncio.create_task(wait("flood")) for _ in range(3)]
        await asyncio.sleep(0)
        honest = asyncio.create_task(wait("honest"))  # came last
        await asyncio.sleep(0)
        admission.release("flood")
        await asyncio.sleep(0)
        assert order == ["honest"]  # none running: next, past the flood's older waiters
        for _ in range(3):
            admission.release(order[-1] if order[-1] == "honest" else "flood")
            await asyncio.sleep(0)
        assert order == ["honest", "flood", "flood", "flood"]
        for task in [*waiters, honest]:
            await task

    asyncio.run(main())


def test_a_waiter_that_gives_up_leaves_the_queue_and_one_let_in_as_it_gave_up_passes_its_place_on():
    async def main():
        admission = _admission(max_client=1)
        await admission.acquire("host")
        gone = asyncio.create_task(admission.acquire("host"))
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert admission.counts().waiting == 0
        late = asyncio.create_task(admission.acquire("host"))
        after = asyncio.create_task(admission.acquire("host"))
        await asyncio.sleep(0)
        admission.release("host")  # lets `late` in ...
        late.cancel()  # ... as its client goes away: the place goes to `after`
        with pytest.raises(asyncio.CancelledError):
            await late
        await asyncio.wait_for(after, 5)
        assert admission.counts().running == 1

    asyncio.run(main())


@pytest.mark.parametrize("caps", [{"max_client": 0}, {"max_client": 2, "max_in_flight": True},
                                  {"max_client": 2, "max_client_queued": -1}])
def test_caps_are_whole_numbers(caps):
    with pytest.raises(ConfigError, match="must be a whole number >= 1"):
        _admission(**caps)


MATH, SEARCH = "agentgym/MathTool-v0", "agentgym/SearchQA-v0"
ISSUED = "honest-client-issued-token-01"


def _gauge(text: str, name: str) -> float:
    return float(re.search(rf"^{name} (\S+)$", text, re.MULTILINE)[1])


def _partial_request(port: int, body: bytes) -> socket.socket:
    """A connection from this host that sent a verify request's headers and half its body (the server works on it
    while it reads the rest: it holds a place)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/verify HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n" % len(body) + body[:len(body) // 2])
    return sock


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


@pytest.mark.slow
def test_a_host_over_many_connections_gets_one_clients_places_and_another_client_is_served_at_once():
    """One host, six connections, each in the middle of sending its request: the server works on two
    (--max-client-requests 2), four wait their turn, a seventh past --max-client-queued 4 is refused with 429; the
    client the operator issued a token (same host) is answered at once; then all six are answered."""
    from agentgym.testing import serving

    body = json.dumps({"verifier": "qa_em", "prediction": "Lima", "task": {"golden_answers": ["Lima"]}}).encode()
    with serving(SEARCH, "--max-client-requests", "2", "--max-client-queued", "4",
                 "--client-token", f"honest={ISSUED}") as (url, _), \
            httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {ISSUED}"}) as honest:
        port = int(url.rsplit(":", 1)[1])
        flood = [_partial_request(port, body) for _ in range(6)]
        try:
            deadline = time.monotonic() + 60
            while True:
                metrics = honest.get("/metrics").text
                if _gauge(metrics, "agentgym_requests_waiting") == 4:
                    break
                assert time.monotonic() < deadline, metrics
                time.sleep(0.05)
            assert _gauge(metrics, "agentgym_requests_running_busiest_client") == 2
            with httpx.Client(base_url=url, timeout=30) as seventh:  # the same host, one more connection
                refused = seventh.get("/healthz")
            assert refused.status_code == 429 and refused.json()["code"] == "too_many_requests", refused.text
            assert "--max-client-queued 4" in refused.json()["message"]
            start = time.perf_counter()
            verdict = honest.post("/v1/verify", content=body, headers={"content-type": "application/json"})
            waited = time.perf_counter() - start
            assert verdict.status_code == 200 and verdict.json()["correct"] is True, verdict.text
            assert _gauge(honest.get("/metrics").text, "agentgym_requests_waiting") == 4  # the flood still waits
            for sock in flood:
                sock.sendall(body[len(body) // 2:])
            assert [_status(sock) for sock in flood] == [200] * 6
        finally:
            for sock in flood:
                sock.close()
    assert waited < 5.0, waited  # milliseconds alone; waiting for the flood's turn would be forever here


NAPPING = """
import time
import agentgym

def nap(seconds: float) -> str:
    \"\"\"Sleep, and say when it began and ended.\"\"\"
    start = time.time()
    time.sleep(seconds)
    return f"{start} {time.time()}"

agentgym.register("test-admission/Nap-v0", agentgym.ToolEnv, tools=[nap],
                  tasks=[{"question": "Nap.", "answer": "ok"}] * 8)
"""


@pytest.mark.slow
def test_requests_waiting_on_env_threads_lend_their_place(tmp_path):
    """--max-client-requests 1, eight steps of one client whose tool sleeps 3 s on an env thread: they run at once
    (a step waiting on its thread holds no place), every one started before any ended; one after another, each
    would start after the one before it ended."""
    from agentgym.testing import serving

    path = tmp_path / "napping.py"
    path.write_text(NAPPING)
    env_id = "test-admission/Nap-v0"
    nap = '<tool_call>{"name": "nap", "arguments": {"seconds": 3}}</tool_call>'
    with serving(env_id, "--import", str(path), "--max-client-requests", "1", "--workers", "8") as (url, _):
        clients = [httpx.Client(base_url=url, timeout=120) for _ in range(8)]
        try:
            sessions = []
            for client in clients:
                created = client.post("/v1/sessions", json={"env_id": env_id,
                                                            "kwargs": {"action_format": "hermes"}})
                assert created.status_code == 201, created.text
                sessions.append(created.json()["session_id"])
            answers: list[httpx.Response] = []

            def step(client, sid):
                answers.append(client.post(f"/v1/sessions/{sid}/step", json={"action": nap}))

            threads = [threading.Thread(target=step, args=pair) for pair in zip(clients, sessions)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
        finally:
            for client in clients:
                client.close()
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    spans = [[float(x) for x in re.findall(r"\d{9,}\.\d+", a.json()["observation"])] for a in answers]
    assert all(len(span) == 2 for span in spans), [a.json()["observation"] for a in answers]
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans
