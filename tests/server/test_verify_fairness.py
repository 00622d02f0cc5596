"""``/v1/verify`` under one client's flood of slow verifications: another client's sessions, steps and honest
verifications keep their pace; a verification that cannot start within its budget is a 503 with Retry-After,
never a score; a client past its limit gets 429."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from agentgym import verifiers
from agentgym.errors import ConfigError
from agentgym.server import create_app
from agentgym.server.verification import client_key
from agentgym.verifiers.budget import run_budgeted, shutdown_workers
from agentgym.verifiers.score import Score
from helpers import verifier_helpers
from helpers.server_process import free_port

SEARCH = "agentgym/SearchQA-v0"
FLOOD = 50  # the slow client's verifications in flight at once
A = {"Authorization": "Bearer client-a"}
B = {"Authorization": "Bearer client-b"}
B_ISSUED = {"Authorization": "Bearer client-b-issued-token"}  # B on the real server: a token the operator issued it
# In-process tests tell clients apart by peer address, as the server does: this test-only wrapper gives each
# header set a peer of its own (a made-up token changes nothing on a real server: test_clients.py).
_PEERS = {b"Bearer client-a": "10.0.0.1", b"Bearer client-b": "10.0.0.2", b"Bearer client-c": "10.0.0.3"}


def peers(app):
    """``app`` with each test client's peer address set from its Authorization header (``_PEERS``)."""
    async def wrapped(scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            auth = dict(scope["headers"]).get(b"authorization", b"")
            scope = {**scope, "client": (_PEERS.get(auth, "10.0.0.9"), 1234)}
        await app(scope, receive, send)
    return wrapped


def slow(prediction: str | None, task: dict) -> Score:
    """A verification that runs past any budget (a real one, in a verifier worker, killed at the budget)."""
    return run_budgeted(verifier_helpers.sleep, 600.0, verifier="slow")


def quick(prediction: str | None, task: dict) -> Score:
    """An honest verification that needs a verifier worker (a QA one is scored in process: it waits for none)."""
    return run_budgeted(verifier_helpers.quick, prediction or "", verifier="quick")


@pytest.fixture
def verifier_pool(monkeypatch):
    """2 verifier workers that can import tests/helpers, a 2 s budget, and the slow verifier registered."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "2")
    monkeypatch.setenv("AGENTGYM_VERIFIER_BUDGET_S", "2")
    monkeypatch.setitem(verifiers.VERIFIERS, "slow", slow)
    monkeypatch.setitem(verifiers.VERIFIERS, "quick", quick)
    shutdown_workers()
    yield
    shutdown_workers()


def _post_verify(client, headers: dict, verifier: str = "quick", prediction: str = "Lima"):
    return client.post("/v1/verify", headers=headers, json={"verifier": verifier, "prediction": prediction,
                                                          "task": {"golden_answers": ["Lima"]}})


# A real server (real uvicorn, its own process) with the slow verifier registered, on the port in argv[1].
_SERVER = """
import sys
from agentgym import verifiers
from agentgym.server import create_app
from agentgym.server.connections import uvicorn_config
from test_verify_fairness import quick, slow
import uvicorn
verifiers.VERIFIERS["slow"] = slow
verifiers.VERIFIERS["quick"] = quick
config = uvicorn_config(create_app(["agentgym/SearchQA-v0"], client_tokens={"b": "client-b-issued-token"}),
                        host="127.0.0.1", port=int(sys.argv[1]),
                        log_level="warning", access_log=False)
uvicorn.Server(config).run()
"""

# Client A, in a process of its own: FLOOD threads, each sending the next slow verification as soon as one is
# answered (after Retry-After, or 1 s, when refused); each answer's status on a line.
_FLOOD = """
import sys, threading, time
import httpx
def flood():
    with httpx.Client(base_url=sys.argv[1], headers={"Authorization": "Bearer client-a"}, timeout=120) as client:
        while True:
            response = client.post("/v1/verify", json={"verifier": "slow", "prediction": "x", "task": {}})
            print(response.status_code, flush=True)
            if response.status_code != 200:
                time.sleep(float(response.headers.get("retry-after", 1)))
for _ in range(int(sys.argv[2])):
    threading.Thread(target=flood, daemon=True).start()
time.sleep(3600)
"""


@contextlib.contextmanager
def _process(script: str, *args: str, log: Path) -> Iterator[subprocess.Popen]:
    paths = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1]),
             os.environ.get("PYTHONPATH")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)


def _honest_client(client: httpx.Client) -> tuple[float, float]:
    """Client B's work: a new session, 12 steps that verify nothing, 12 verifications; (steps s, verify s)."""
    start = time.perf_counter()
    response = client.post("/v1/sessions", json={"env_id": SEARCH})
    assert response.status_code == 201, response.text
    sid = response.json()["session_id"]
    for _ in range(3):
        for _ in range(4):  # fewer than the 6 turns of an episode: no step ends one, so none verifies
            step = client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>Lima</search>"})
            assert step.status_code == 200 and not step.json()["terminated"], step.text
        assert client.post(f"/v1/sessions/{sid}/reset", json={}).status_code == 200
    assert client.delete(f"/v1/sessions/{sid}").status_code == 200
    steps_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(12):
        verdict = _post_verify(client, B_ISSUED)
        assert verdict.status_code == 200 and verdict.json()["correct"] is True, verdict.text
    return steps_s, time.perf_counter() - start


def _median_runs(client: httpx.Client, runs: int = 5) -> tuple[float, float]:
    times = [_honest_client(client) for _ in range(runs)]
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


@pytest.mark.slow
def test_one_clients_slow_verifications_leave_another_clients_work_at_its_pace(verifier_pool, tmp_path):
    """50 slow verifications of client A in flight (each overruns the 2 s budget and has its worker replaced);
    client B's new session, steps and verifications take at most twice what they take alone."""
    port = str(free_port())
    url = f"http://127.0.0.1:{port}"
    # A and B are on one host: B is another client by the token the operator issued it (A's made-up token is
    # nothing, nor would another loopback address be)
    with _process(_SERVER, port, log=tmp_path / "server.log") as server, \
            httpx.Client(base_url=url, headers=B_ISSUED, timeout=120) as client:
        deadline = time.monotonic() + 60
        while not _up(client):
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.1)
        _honest_client(client)  # starts B's verifier worker: its start-up is outside every timing
        solo_steps_s, solo_verify_s = _median_runs(client)
        flood_log = tmp_path / "flood.log"
        with _process(_FLOOD, url, str(FLOOD), log=flood_log):
            deadline = time.monotonic() + 60
            while "200" not in flood_log.read_text().split():  # A's verifications overrun, their workers replaced
                assert time.monotonic() < deadline, flood_log.read_text()
                time.sleep(0.2)
            loaded_steps_s, loaded_verify_s = _median_runs(client)  # on the old server: minutes, behind A's
            statuses = flood_log.read_text().split()
    # 2x solo, plus 0.5 s for CPU contention on shared cores (A's replaced workers start Python processes):
    # waiting behind even one of A's verifications would cost its whole 2 s budget
    assert loaded_steps_s <= 2 * solo_steps_s + 0.5, (loaded_steps_s, solo_steps_s)
    assert loaded_verify_s <= 2 * solo_verify_s + 0.5, (loaded_verify_s, solo_verify_s)
    # meanwhile A was refused past its limit (429) and its verifications that waited past the budget (503)
    assert {"200", "429", "503"} <= set(statuses), sorted(set(statuses))


def _up(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def test_a_verification_that_cannot_start_within_its_budget_is_a_503_with_retry_after(verifier_pool, monkeypatch):
    monkeypatch.setenv("AGENTGYM_VERIFIER_WORKERS", "1")
    with TestClient(peers(create_app([SEARCH]))) as client:
        assert _post_verify(client, B).status_code == 200  # the only worker is started
        holder = threading.Thread(target=_post_verify, args=(client, A, "slow", "x"))
        holder.start()
        time.sleep(0.5)  # A's slow verification holds the only worker
        start = time.perf_counter()
        response = _post_verify(client, B)
        waited = time.perf_counter() - start
        holder.join(timeout=60)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "2"
    body = response.json()
    assert body["code"] == "verifier_unavailable" and "could not start within its 2 s budget" in body["message"]
    assert "reward" not in body  # never a score
    assert waited < 2 * 2.0, waited  # it waited its budget, not for A's verification


def test_a_full_queue_is_a_503_and_a_client_past_its_limit_a_429(verifier_pool):
    app = create_app([SEARCH], max_client_verifications=2, max_queued_verifications=3)
    with TestClient(peers(app)) as client, ThreadPoolExecutor(4) as pool:
        a = [pool.submit(_post_verify, client, A, "slow", "x") for _ in range(2)]
        time.sleep(0.5)  # A has 2 in flight: its limit
        over_limit = _post_verify(client, A, "slow", "x")
        c = pool.submit(_post_verify, client, {"Authorization": "Bearer client-c"}, "slow", "x")
        time.sleep(0.5)  # 3 in flight: the server's limit
        queue_full = _post_verify(client, B)
        results = [f.result(timeout=60) for f in [*a, c]]
    assert over_limit.status_code == 429 and over_limit.json()["code"] == "too_many_verifications"
    assert "max_client_verifications=2" in over_limit.json()["message"]
    assert queue_full.status_code == 503 and queue_full.headers["retry-after"] == "2"
    assert "max_queued_verifications=3" in queue_full.json()["message"]
    # the three admitted ran: over budget, or unable to start on 2 workers with one client holding one
    assert sorted(r.status_code for r in results) in ([200, 200, 200], [200, 200, 503]), [r.text for r in results]


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
def test_bad_verification_limits_are_config_errors(limit):
    with pytest.raises(ConfigError, match="max_client_verifications"):
        create_app([SEARCH], max_client_verifications=limit)


def test_a_client_is_its_address_whatever_token_it_sends():
    def scope(host, auth=None):
        headers = [(b"authorization", auth)] if auth else []
        return {"client": (host, 1234), "headers": headers}

    assert client_key(scope("10.0.0.1")) == "10.0.0.1"
    assert client_key(scope("10.0.0.1", b"Bearer s3cret")) != client_key(scope("10.0.0.2", b"Bearer s3cret"))
    # a made-up token is not a new client: one client could otherwise pose as any number of them
    assert client_key(scope("10.0.0.1", b"Bearer s3cret")) == client_key(scope("10.0.0.1", b"Bearer other"))
    assert "s3cret" not in client_key(scope("10.0.0.1", b"Bearer s3cret"))


@pytest.mark.parametrize("prewarm", [True, False])
def test_a_server_starts_its_verifier_workers_when_it_starts_if_told_to(verifier_pool, prewarm):
    """``agentgym serve`` does (``prewarm_verifiers=True``): its first verification that needs a worker finds
    one; an app made without it (tests, embedding) starts none until a verification needs one."""
    from agentgym.verifiers import budget

    with TestClient(create_app([SEARCH], prewarm_verifiers=prewarm)):
        deadline = time.monotonic() + 120
        while prewarm and len(budget._POOL._idle) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        assert len(budget._POOL._idle) == (2 if prewarm else 0) and not budget._POOL._warming
