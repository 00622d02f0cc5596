"""WebSocket limits: a connection that sends no data frame is closed after the idle timeout (pings do not count),
and one client's open connections are capped, so idle sockets cannot take every file descriptor of the server."""

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator

import gymnasium as gym
import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

import agentgym  # noqa: F401 - registers the env ids
from agentgym.errors import ConfigError
from agentgym.server import create_app
from agentgym.server.ws_limits import IDLE_CLOSE_CODE, WebSocketLimits, default_idle_timeout_s
from helpers.gates import import_or_skip
from helpers.server_process import free_port

websockets = import_or_skip("websockets", "dev")
from websockets.asyncio.client import connect as connect_async  # noqa: E402 - after the gate
from websockets.sync.client import connect  # noqa: E402 - after the gate

SEARCH = "agentgym/SearchQA-v0"
WS_PATH = f"/openenv/{SEARCH}/ws"


# ---- in process --------------------------------------------------------------------
def test_an_idle_websocket_is_closed_with_a_code_and_reason():
    with TestClient(create_app([SEARCH], ws_idle_timeout_s=0.3)) as client, client.websocket_connect(WS_PATH) as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        assert ws.receive_json()["type"] == "observation"
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()  # nothing sent: the server closes it
        assert closed.value.code == IDLE_CLOSE_CODE and closed.value.reason == "idle_timeout: no frame in 0.3 s"
        assert client.get("/healthz").json()["sessions"] == 0  # its session closed with it


def test_a_client_past_its_cap_is_refused_and_a_closed_connection_frees_a_place():
    with TestClient(create_app([SEARCH], max_ws_per_client=2)) as client:
        with client.websocket_connect(WS_PATH), client.websocket_connect(WS_PATH) as second:
            with pytest.raises(WebSocketDenialResponse) as refused, client.websocket_connect(WS_PATH):
                pass
            assert refused.value.status_code == 429 and refused.value.json()["code"] == "too_many_websockets"
            assert "--max-ws-per-client" in refused.value.json()["message"]
            second.send_json({"type": "close"})
            with pytest.raises(WebSocketDisconnect):  # the server closed it
                second.receive_json()
            with client.websocket_connect(WS_PATH) as third:  # the closed one's place
                third.send_json({"type": "state"})
                assert third.receive_json()["type"] == "state"


def test_limits_defaults_and_bad_settings():
    assert default_idle_timeout_s(600.0) == 600.0 and default_idle_timeout_s(1.0) == 300.0
    with pytest.raises(ConfigError, match="--ws-idle-timeout-s"):
        create_app([SEARCH], ws_idle_timeout_s=0)
    with pytest.raises(ConfigError, match="--max-ws-per-client"):
        WebSocketLimits(60.0, 0)


# ---- a real server, few file descriptors, many idle sockets -------------------------------
FD_LIMIT = 256
IDLE_S = 5.0
CAP = 32
SOCKETS = 1000
# Handshakes in flight at once. Past the server's free descriptors, a burst is not the server's to answer: the event
# loop (libuv) accepts and at once closes connections while it is out of descriptors, whatever the app does.
IN_FLIGHT = 64


@contextlib.contextmanager
def serving_with_fd_limit(*args: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``agentgym serve *args`` with at most ``FD_LIMIT`` open file descriptors."""
    port = free_port()

    def limit_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))

    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "serve", *args, "--port", str(port)],
                                env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=limit_fds)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log.seek(0) or log.read()
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
            yield url, proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.seek(0)
            output = log.read()
        assert "Traceback" not in output and "Exception in ASGI application" not in output, output


@pytest.fixture
def many_fds():
    """This process holds up to SOCKETS sockets at once (the old server accepted them all)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = SOCKETS + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"needs {need} file descriptors; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


ISSUED = "player-token-0123456789"


def play_episode(ws_url: str) -> float:
    """An oracle episode over the WebSocket as another client (a token the operator issued it; on one host, no
    loopback address would be another client): its reward."""
    local = gym.make(SEARCH).unwrapped
    local.reset(seed=1)
    with connect(ws_url, proxy=None, open_timeout=30,
                 additional_headers={"Authorization": f"Bearer {ISSUED}"}) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        done, reward = False, None
        while not done:
            ws.send(json.dumps({"type": "step", "data": {"message": local.oracle_action()}}))
            data = json.loads(ws.recv(timeout=30))["data"]
            local.step(local.oracle_action())
            done, reward = data["done"], data["reward"]
    return reward


async def attack(ws_url: str) -> dict:
    """CAP sockets held open (pinging; sending data frames only until the burst and the episode are over), then
    SOCKETS - CAP more at once while a client from another address plays an episode."""
    held = [await connect_async(ws_url, proxy=None, open_timeout=30) for _ in range(CAP)]
    data_frames = True

    async def keep(ws) -> tuple[float, float, int | None, str]:
        """Ping every 0.25 s (awaiting the pong), and send a state frame too while ``data_frames``: when the server
        closed it, how long after the last data frame, and its close code and reason."""
        last_frame = time.monotonic()
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                if data_frames:
                    await ws.send(json.dumps({"type": "state"}))
                    last_frame = time.monotonic()
                    await ws.recv()
                await asyncio.wait_for(await ws.ping(), 10)
                await asyncio.sleep(0.25)
        return time.monotonic(), time.monotonic() - last_frame, ws.close_code, ws.close_reason

    keepers = [asyncio.create_task(keep(ws)) for ws in held]

    in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def one_more() -> tuple:
        async with in_flight:
            try:
                ws = await connect_async(ws_url, proxy=None, open_timeout=30)
            except websockets.InvalidStatus as e:
                return e.response.status_code, json.loads(e.response.body)["code"]
            except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake) as e:
                return type(e).__name__, None
        held.append(ws)  # the old server accepted them all, and they stay open: the socket is closed at the end
        return "accepted", None

    burst, reward = await asyncio.gather(asyncio.gather(*(one_more() for _ in range(SOCKETS - CAP))),
                                         asyncio.to_thread(play_episode, ws_url))
    stopped = time.monotonic()
    data_frames = False  # from now on only pings: the server must close them all
    closes = await asyncio.wait_for(asyncio.gather(*keepers), IDLE_S + 60)
    await asyncio.gather(*(ws.close() for ws in held))
    again = await connect_async(ws_url, proxy=None, open_timeout=30)  # the closed ones freed their places
    await again.close()
    return {"burst": burst, "reward": reward, "stopped": stopped, "closes": closes}


@pytest.mark.slow
def test_a_thousand_idle_websockets_neither_exhaust_the_server_nor_stop_other_clients(many_fds):
    with serving_with_fd_limit(SEARCH, "--ws-idle-timeout-s", str(IDLE_S), "--max-ws-per-client", str(CAP),
                               "--client-token", f"player={ISSUED}") as (
            url, _):
        ws_url = url.replace("http://", "ws://") + WS_PATH
        result = asyncio.run(attack(ws_url))
        assert httpx.get(f"{url}/healthz").json()["sessions"] == 0
    assert result["reward"] == 1.0  # the other client's episode, while the sockets were held
    assert Counter(result["burst"]) == {(429, "too_many_websockets"): SOCKETS - CAP}
    for closed_at, idle_s, code, reason in result["closes"]:
        assert (code, reason) == (IDLE_CLOSE_CODE, f"idle_timeout: no frame in {IDLE_S:g} s")
        assert closed_at > result["stopped"] and idle_s >= IDLE_S * 0.9  # pings did not keep it open
