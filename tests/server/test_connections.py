"""Slow and silent clients against a real ``agentgym serve`` process over real sockets (slowloris)."""

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from helpers.server_process import serving

SEARCH = "agentgym/SearchQA-v0"
TIMEOUTS = ("--keep-alive-s", "1", "--request-timeout-s", "1")


@pytest.fixture(scope="module")
def server():
    with serving(SEARCH, "test/Crashy-v0", *TIMEOUTS, preload="helpers.crashy_env", return_process=True) as (url, proc):
        yield url, int(url.rsplit(":", 1)[1])
    output = proc.stdout.read()
    assert "Traceback" not in output and "Exception" not in output, output


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    start, data = time.monotonic(), b""
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - start


def trickle(sock: socket.socket, data: bytes, every_s: float = 0.1) -> threading.Thread:
    """Send ``data`` a byte every ``every_s`` in the background, until sent or the server closes the socket."""
    def run() -> None:
        for i in range(len(data)):
            try:
                sock.send(data[i:i + 1])
            except OSError:
                return
            time.sleep(every_s)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_connection_that_sends_nothing_is_closed_after_keep_alive(server):
    url, port = server
    with connect(port) as sock:
        data, waited = read_until_closed(sock)
    assert data == b"" and 0.8 < waited < 3, waited
    with connect(port) as sock:  # and idle after a response, as uvicorn always did
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        data, waited = read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 200") and 0.8 < waited < 3, waited


HEAD = b"POST /v1/sessions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"


@pytest.mark.parametrize("sent, trickled", [
    (b"", HEAD + b"content-length: 30\r\n\r\n"),  # headers a byte at a time
    (HEAD + b"content-length: 30\r\n\r\n", b'{"env_id": "agentgym/SearchQA-v0"}'),  # a body a byte at a time
    (b"POST /v1/sessions/x/step HTTP/1.1\r\nhost: x\r\ncontent-length: 40\r\n\r\n", b'{"action": "' + b"a" * 40),
    (HEAD + b"transfer-encoding: chunked\r\n\r\n", b"1\r\n{\r\n" * 40),  # chunked, never ending
])
def test_a_request_that_arrives_too_slowly_gets_408_and_the_connection_is_closed(server, sent, trickled):
    url, port = server
    with connect(port) as sock:
        sock.sendall(sent)
        sender = trickle(sock, trickled)  # bytes keep coming: the bound is on the whole request, not each read
        data, waited = read_until_closed(sock)
        sender.join()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head.lower(), data
    assert json.loads(body)["code"] == "request_timeout" and "--request-timeout-s" in json.loads(body)["message"]
    assert 0.8 < waited < 3, waited


def test_slow_clients_leave_the_others_unaffected(server):
    url, port = server
    with httpx.Client(base_url=url, timeout=30) as http:  # the env's first making (its index) is not the measure
        sid = http.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
        assert http.delete(f"/v1/sessions/{sid}").status_code == 200
    slow = [connect(port) for _ in range(50)]
    try:
        senders = [trickle(sock, HEAD + b"content-length: 2\r\n\r\n{}", every_s=0.05) for sock in slow]
        with httpx.Client(base_url=url, timeout=10) as http:
            # each ~20 ms alone; one held behind a slow client would wait out its 1 s request timeout
            latencies = []
            for _ in range(10):
                start = time.monotonic()
                sid = http.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
                step = http.post(f"/v1/sessions/{sid}/step", json={"action": "<search>Lima</search>"})
                assert step.status_code == 200
                assert http.delete(f"/v1/sessions/{sid}").status_code == 200
                latencies.append(time.monotonic() - start)
                time.sleep(0.1)
        assert max(latencies) < 1.0, latencies
        for sock in slow:  # and every slow one was cut at the bound
            data, _ = read_until_closed(sock)
            assert data.startswith(b"HTTP/1.1 408 "), data
        for sender in senders:
            sender.join()
    finally:
        for sock in slow:
            sock.close()


def test_slow_env_work_and_a_request_sent_in_time_are_not_timed_out(server):
    url, port = server
    with httpx.Client(base_url=url, timeout=30) as http:
        # 1.5 s to make the env and 1.5 s to reset it, past the 1 s bound: only the client's sending is bounded
        created = http.post("/v1/sessions", json={"env_id": "test/Crashy-v0", "kwargs": {"slow_s": 1.5}})
        assert created.status_code == 201, created.text
        sid = created.json()["session_id"]
        assert http.post(f"/v1/sessions/{sid}/step", json={"action": "slow"}).status_code == 200
        big = http.post(f"/v1/sessions/{sid}/step", json={"action": "a" * 900_000})  # near the 1 MiB limit, at once
        assert big.status_code == 200, big.text
    with connect(port) as sock:  # a request in pieces, whole within the bound, on a connection kept alive
        for piece in (b"POST /v1/sessions HTTP/1.1\r\nhost: x\r\n", b"content-type: application/json\r\n",
                      b"content-length: 34\r\n\r\n", b'{"env_id": "agentgym/Se', b'archQA-v0"}'):
            sock.sendall(piece)
            time.sleep(0.15)
        data = sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 201 "), data
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")


def test_timeouts_must_be_positive():
    from agentgym.errors import ConfigError
    from agentgym.server.connections import uvicorn_config

    for kwargs in ({"keep_alive_s": 0}, {"request_timeout_s": -1}):
        with pytest.raises(ConfigError, match="must be > 0"):
            uvicorn_config(None, **kwargs)


def test_many_connections_at_once_all_time_out(server):
    """A flood of silent connections: each one is closed at the idle bound, none holds on."""
    url, port = server
    with ThreadPoolExecutor(8) as pool:
        socks = [connect(port) for _ in range(100)]
        try:
            results = list(pool.map(read_until_closed, socks))
        finally:
            for sock in socks:
                sock.close()
    assert all(data == b"" and waited < 4 for data, waited in results)
    assert httpx.get(f"{url}/healthz").status_code == 200


def test_small_responses_are_not_held_back_by_delayed_acks(server):
    """TCP_NODELAY on every connection: a round trip takes about a millisecond, not the client's ~40 ms delayed ACK."""
    url, port = server
    with httpx.Client(base_url=url) as http:
        sid = http.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"max_turns": 100}}).json()["session_id"]
        for path, body in (("/healthz", None), (f"/v1/sessions/{sid}/step", {"action": "<search>Lima</search>"})):
            times = []
            for _ in range(21):
                start = time.perf_counter()
                response = http.get(path) if body is None else http.post(path, json=body)
                assert response.status_code == 200
                times.append(time.perf_counter() - start)
            assert sorted(times)[10] < 0.02, (path, sorted(times))


def test_the_server_extra_runs_on_uvloop_and_httptools():
    """The `server` extra installs uvicorn's fast loop and parser, and `agentgym serve` says it runs on them
    (asyncio + h11 measured about half the throughput)."""
    from agentgym.server.connections import engine

    assert engine() == "uvloop + httptools"
    with serving("agentgym/SearchQA-v0", return_process=True) as (url, proc):
        assert httpx.get(f"{url}/healthz").status_code == 200
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "uvloop + httptools" in out
