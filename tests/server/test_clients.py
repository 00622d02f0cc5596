"""A client is what it cannot choose (agentgym.server.clients): its host, or a token the operator issued it.
Made-up tokens, forwarded headers and other loopback addresses do not make one client many; per-client shares hold
for WebSockets, sessions and the env threads."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest
from fastapi.testclient import TestClient
from helpers.gates import import_or_skip
from helpers.server_process import serving

from agentgym.server import create_app
from agentgym.server.clients import CURRENT_CLIENT
from agentgym.server.threads import EnvThreads

websockets = import_or_skip("websockets", "dev")
from websockets.exceptions import InvalidStatus  # noqa: E402 - after the gate
from websockets.sync.client import connect  # noqa: E402 - after the gate

SEARCH = "agentgym/SearchQA-v0"


def _ws(url: str, *, source: str = "127.0.0.1", **headers: str):
    return connect(url.replace("http://", "ws://") + f"/openenv/{SEARCH}/ws", additional_headers=headers,
                   source_address=(source, 0), open_timeout=30)


ISSUED = "trainer-token-0123456789"


@pytest.mark.parametrize("trusted", [False, True])
def test_made_up_tokens_and_forwarded_addresses_are_one_client_unless_the_proxy_is_named(trusted):
    """One local process posing as many (a new bearer token, X-Forwarded-For and loopback address each time)
    holds the cap of one client; a client with a token the operator issued it has its own share. Naming 127.0.0.1
    as a proxy makes its forwarded addresses count."""
    args = [SEARCH, "--max-ws-per-client", "2", "--client-token", f"trainer={ISSUED}"]
    args += ["--forwarded-allow-ips", "127.0.0.1"] if trusted else []
    with serving(*args) as url, contextlib.ExitStack() as held:
        for i in range(2):
            held.enter_context(_ws(url, source=f"127.0.0.{i + 1}", Authorization=f"Bearer made-up-{i}",
                                   **{"X-Forwarded-For": f"10.9.0.{i}"}))
        if trusted:  # the named proxy's forwarded addresses are the clients: a third is a new one
            with _ws(url, **{"X-Forwarded-For": "10.9.0.7"}):
                pass
        else:
            for source in ("127.0.0.1", "127.0.0.9"):  # any loopback address is the same host
                with pytest.raises(InvalidStatus) as refused:
                    _ws(url, source=source, Authorization="Bearer made-up-9", **{"X-Forwarded-For": "10.9.0.9"})
                assert refused.value.response.status_code == 429
                assert b"loopback holds 2 open WebSockets" in refused.value.response.body
        with _ws(url, Authorization=f"Bearer {ISSUED}"):  # the issued token: its own share, from the same host
            pass


def test_a_client_is_its_host_and_an_issued_token_names_one():
    """Every loopback address is one client, an IPv4-mapped IPv6 address its IPv4 address, IPv6 addresses by
    their /64 (configurable); an issued token is its client from any address and a credential; a made-up one is
    neither."""
    from agentgym.errors import ConfigError
    from agentgym.server.clients import ClientTokens, address_client, client_key

    assert {address_client(a) for a in ("127.0.0.1", "127.0.0.2", "127.255.0.9", "::1")} == {"loopback"}
    assert address_client("::ffff:192.0.2.7") == address_client("192.0.2.7") == "192.0.2.7"
    assert address_client("2001:db8:1:2::1") == address_client("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert address_client("2001:db8:1:3::1") != address_client("2001:db8:1:2::1")
    assert address_client("2001:db8:1:2::1", prefix=48) == address_client("2001:db8:1:3::1", prefix=48)
    assert address_client("fe80::1%eth0") == "fe80::/64" and address_client("/tmp/s.sock") == "/tmp/s.sock"
    tokens = ClientTokens({"trainer": ISSUED}, "server-token")
    import base64
    assert tokens.client_of(b"Bearer " + ISSUED.encode()) == "trainer"
    assert tokens.client_of(b"Basic " + base64.b64encode(b"x:" + ISSUED.encode())) == "trainer"
    assert tokens.client_of(b"Bearer made-up") is None and tokens.client_of(b"") is None
    assert client_key({"client": ("127.0.0.5", 1), "agentgym.client": "client:trainer"}) == "client:trainer"
    for bad, why in (({"a b": ISSUED}, "name"), ({"t": "short"}, "16"), ({"t": "server-token-xxxxxxx"}, "server"),
                     ({"a": ISSUED, "b": ISSUED}, "same token")):
        with pytest.raises(ConfigError, match=why):
            ClientTokens(bad, "server-token-xxxxxxx")
    app = create_app([SEARCH], token="server-token-xxxxxxx", client_tokens={"trainer": ISSUED})
    with TestClient(app) as client:
        seen = client.get("/v1/envs", headers={"Authorization": f"Bearer {ISSUED}"})
        assert seen.status_code == 200, seen.text
        assert client.get("/v1/envs", headers={"Authorization": "Bearer made-up"}).status_code == 401


def _as(peer: str, app):
    """``app`` as seen from ``peer`` (an in-process stand-in for a connection from that address)."""
    async def wrapped(scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "client": (peer, 1234)}
        await app(scope, receive, send)
    return wrapped


def test_one_client_cannot_take_every_session():
    app = create_app([SEARCH], max_sessions=16)  # one client may hold 14: two stay for the others
    flood, honest = TestClient(_as("10.0.0.1", app)), TestClient(_as("10.0.0.2", app))
    with flood:
        created = [flood.post("/v1/sessions", json={"env_id": SEARCH}) for _ in range(15)]
        assert [r.status_code for r in created] == [201] * 14 + [429]
        assert "holds 14 sessions" in created[-1].json()["message"]
        assert "--max-sessions-per-client" in created[-1].json()["message"]
        assert honest.post("/v1/sessions", json={"env_id": SEARCH}).status_code == 201
        sid = created[0].json()["session_id"]
        assert flood.delete(f"/v1/sessions/{sid}").status_code == 200  # a closed session frees its place
        assert flood.post("/v1/sessions", json={"env_id": SEARCH}).status_code == 201


def test_the_env_threads_serve_a_second_client_while_the_first_holds_them_all():
    """Client A keeps every thread busy with slow jobs and more queued; client B's quick job runs at once, not
    after A's queue (first-come order made it wait for all of A's jobs)."""
    threads = EnvThreads(2)
    release = threading.Event()

    async def main() -> float:
        async def as_client(client: str, fn):
            CURRENT_CLIENT.set(client)  # this task's own context
            return await threads.run(fn)

        slow = [asyncio.ensure_future(as_client("a", lambda: release.wait(30))) for _ in range(6)]
        await asyncio.sleep(0.2)  # A holds both threads and has 4 more queued
        start = time.perf_counter()
        await as_client("b", lambda: None)
        waited = time.perf_counter() - start
        release.set()
        assert all(await asyncio.gather(*slow))
        return waited

    try:
        waited = asyncio.run(main())
    finally:
        release.set()
        threads.shutdown()
    assert waited < 5.0, waited  # at once (ms); before: after A's jobs, i.e. never until they were released


def test_the_threads_take_the_client_with_the_fewest_running_first():
    threads = EnvThreads(1)
    order: list[str] = []
    gate = threading.Event()

    async def main() -> None:
        async def job(client: str, fn):
            CURRENT_CLIENT.set(client)
            return await threads.run(fn)

        first = asyncio.ensure_future(job("a", lambda: gate.wait(30)))
        await asyncio.sleep(0.1)
        # queued while the thread is busy: A's three, then B's one; B has nothing running, so its goes first
        queued = [asyncio.ensure_future(job(c, lambda c=c: order.append(c))) for c in ("a", "a", "a", "b")]
        await asyncio.sleep(0.1)
        gate.set()
        await asyncio.gather(first, *queued)

    try:
        asyncio.run(main())
    finally:
        gate.set()
        threads.shutdown()
    assert order[0] == "b" and order.count("a") == 3, order


def test_a_forwarded_header_from_an_unnamed_peer_is_ignored_in_the_uvicorn_config():
    from agentgym.server.connections import uvicorn_config

    assert uvicorn_config(create_app([SEARCH])).proxy_headers is False
    named = uvicorn_config(create_app([SEARCH]), forwarded_allow_ips="10.0.0.5")
    assert named.proxy_headers is True and named.forwarded_allow_ips == "10.0.0.5"


def test_what_counts_as_correct_is_the_servers():
    """SearchQA's cover_em scores an answer that lists every candidate 1: a client may not choose it, only repeat
    the server's metric (an old client that sends the default keeps working); the operator may set it."""
    with TestClient(create_app([SEARCH])) as client:
        chosen = client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"reward_metric": "cover_em"}})
        assert chosen.status_code == 422 and "reward_metric" in chosen.json()["message"]
        assert "the server's" in chosen.json()["message"]
        same = client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"reward_metric": "em"}})
        assert same.status_code == 201, same.text
        assert client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"topk": 2}}).status_code == 201
    operator = create_app([SEARCH], server_kwargs={SEARCH: {"reward_metric": "f1"}})
    with TestClient(operator) as client:
        assert client.post("/v1/sessions", json={"env_id": SEARCH,
                                                  "kwargs": {"reward_metric": "f1"}}).status_code == 201
        assert client.post("/v1/sessions", json={"env_id": SEARCH,
                                                  "kwargs": {"reward_metric": "em"}}).status_code == 422


def test_a_real_servers_step_is_not_queued_behind_another_clients_slow_steps():
    """Over the real socket (the step is the server's plain-ASGI hot path): client A's sessions hold both env
    threads with 4-second code steps and queue more; client B's SearchQA step is served at
    once (first-come order made it wait for A's steps). B is on the same host with a token the operator issued it."""
    import httpx

    with serving(SEARCH, "agentgym/MathTool-v0", "--workers", "2", "--client-token", f"b={ISSUED}") as url:
        stop = threading.Event()

        def holder() -> None:
            with httpx.Client(base_url=url, timeout=120) as a:
                created = a.post("/v1/sessions", json={"env_id": "agentgym/MathTool-v0",
                                                       "kwargs": {"max_turns": 100}})
                sid = created.json()["session_id"]
                while not stop.is_set():
                    a.post(f"/v1/sessions/{sid}/step", json={"action": "<code>import time\ntime.sleep(4)</code>"})

        holders = [threading.Thread(target=holder, daemon=True) for _ in range(4)]
        # B runs on the same host: it is another client by the token the operator issued it, not by its address
        with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {ISSUED}"}) as b:
            sid = b.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
            for thread in holders:
                thread.start()
            time.sleep(3)  # A's steps hold both threads, two more queued
            waits = []
            for _ in range(3):
                start = time.perf_counter()
                assert b.post(f"/v1/sessions/{sid}/step", json={"action": "<search>Lima</search>"}).status_code == 200
                waits.append(time.perf_counter() - start)
            stop.set()
    assert max(waits) < 2.0, waits  # milliseconds here; behind A's queue it was 4 s and more


def test_a_request_a_sibling_process_passes_on_counts_against_the_client_it_came_from():
    """`--processes N`: a request for a session another process holds reaches it over that process's private unix
    socket (no peer address), naming the address it came from; a TCP peer's own address is always what counts."""
    from agentgym.server.affinity import PEER
    from agentgym.server.clients import client_key

    passed_on = {"type": "http", "client": None, "headers": [(PEER, b"10.0.0.7"), (b"x-agentgym-forwarded", b"1")]}
    assert client_key(passed_on) == "10.0.0.7"
    assert client_key({**passed_on, "headers": [(PEER, b"127.0.0.9")]}) == "loopback"
    assert client_key({**passed_on, "headers": []}) == "unknown"
    # a TCP client cannot name another address by sending the header itself
    assert client_key({**passed_on, "client": ("10.0.0.8", 5000)}) == "10.0.0.8"
