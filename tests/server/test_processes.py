"""``agentgym serve --processes 2`` as a real process tree over a real socket: every route from any connection.

Each ``httpx.post(...)`` below opens a new connection, which the kernel gives to either
process: requests for a session land on the process holding it or on the other one,
which passes them on. Tests make sure both processes hold sessions before they assert.
"""

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from helpers.gates import import_or_skip
from helpers.oracle import play_oracle_over_mcp
from prometheus_client.parser import text_string_to_metric_families
from helpers.server_process import serving
from test_compat_dialects import SearchQAClient

import agentgym
from agentgym.client import RemoteEnv
from agentgym.errors import RemoteEnvError

SEARCH = "agentgym/SearchQA-v0"
FORWARDED = {"x-agentgym-forwarded": "1"}  # ask a process for its own /healthz or /metrics only
MAX_SESSIONS = 10
STEP_ROUTE = "/v1/sessions/{session_id}/step"


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def health(url: str, **headers: str) -> dict:
    return httpx.get(f"{url}/healthz", headers=headers).json()


@contextlib.contextmanager
def two_processes(*args: str, token: str | None = None) -> Iterator[tuple[str, object]]:
    with serving(SEARCH, "--processes", "2", *args, token=token, return_process=True) as (url, proc):
        wait_for(lambda: health(url)["status"] == "ok" and len(health(url)["processes"]) == 2)
        yield url, proc
    output = proc.stdout.read()
    assert "Traceback" not in output and "Exception" not in output, output


@pytest.fixture(scope="module")
def server():
    with two_processes("--max-sessions", str(MAX_SESSIONS)) as (url, _):
        yield url


@pytest.fixture()
def url(server):
    yield server
    assert health(server)["sessions"] == 0, "a test left sessions open"


def owner(session_id: str | int) -> int:
    return session_id & 0xFF if isinstance(session_id, int) else int(session_id.split(".")[0])


def create_on_both(url: str, each: int = 2, headers: dict | None = None) -> list[tuple[str, int]]:
    """Sessions (id, seed), ``each`` on each process: one batch create, which spreads its sessions over the
    processes in turn (whichever process the kernel gave the connection to; that it gives connections to both
    is its own test below)."""
    body = {"sessions": [{"env_id": SEARCH, "seed": seed} for seed in range(2 * each)]}
    # a process's first create builds its env (a cold start: over httpx's default 5 s on a loaded machine)
    response = httpx.post(f"{url}/v1/create", json=body, headers=headers, timeout=120)
    assert response.status_code == 200, response.text
    made = [(item["session_id"], seed) for seed, item in enumerate(response.json()["results"])]
    assert sorted(owner(sid) for sid, _ in made) == [0] * each + [1] * each, made
    return made


def test_the_kernel_gives_new_connections_to_every_process(url):
    """Each process accepts connections on the one address (SO_REUSEPORT): new connections reach both."""
    seen = set()
    for _ in range(200):
        seen.update(p["index"] for p in health(url, **FORWARDED)["processes"])  # the answering process's own
        if seen == {0, 1}:
            return
    raise AssertionError(f"200 new connections all reached process(es) {sorted(seen)}")


def close_all(url: str, sessions: list[tuple[str, int]]) -> None:
    for sid, _ in sessions:
        assert httpx.delete(f"{url}/v1/sessions/{sid}").json() == {"closed": True}


def play_oracle(url: str, sid: str, seed: int, headers: dict | None = None) -> float:
    """The oracle's episode on session ``sid`` (reset with ``seed``), each step on a new connection, checked
    against the same episode in process; the final reward."""
    local = agentgym.make(SEARCH).unwrapped
    local.reset(seed=seed)
    while True:
        action = local.oracle_action()
        expected = local.step(action)
        got = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": action}, headers=headers).json()
        assert (got["observation"], got["reward"], got["terminated"], got["truncated"], got["info"]) == expected
        if got["terminated"] or got["truncated"]:
            return got["reward"]


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_sessions_made_on_any_connection_are_played_from_any_connection(url):
    sessions = create_on_both(url)
    for sid, seed in sessions:
        assert play_oracle(url, sid, seed) == 1.0
    processes = health(url)["processes"]
    assert [p["index"] for p in processes] == [0, 1] and all(p["sessions"] >= 2 for p in processes)
    forwarded = samples(httpx.get(f"{url}/metrics").text)[("agentgym_forwarded_requests_total", frozenset())]
    assert forwarded > 0  # some steps landed on the process not holding their session
    for _ in range(4):  # routes of no session answer wherever they land
        assert [e["id"] for e in httpx.get(f"{url}/v1/envs").json()] == [SEARCH]
        verified = httpx.post(f"{url}/v1/verify", json={"verifier": "qa_em", "prediction": "Lima",
                                                         "task": {"golden_answers": ["Lima"]}})
        assert verified.json()["reward"] == 1.0
    close_all(url, sessions)
    for sid, _ in sessions:
        gone = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": "x"})
        assert gone.status_code == 404 and gone.json()["code"] == "session_not_found"


def test_batches_over_sessions_of_both_processes(url):
    sessions = create_on_both(url)
    locals_ = [agentgym.make(SEARCH).unwrapped for _ in sessions]
    for env, (_, seed) in zip(locals_, sessions):
        env.reset(seed=seed)
    ids = [sid for sid, _ in sessions]
    steps = [{"session_id": sid, "action": f"<search>capital of Peru {i}</search>"} for i, sid in enumerate(ids)]
    unknown = [{"session_id": "1.0.nope", "action": "x"}, {"session_id": "nope", "action": "x"}]
    results = httpx.post(f"{url}/v1/step", json={"steps": [*steps[:2], *unknown, *steps[2:]]}).json()["results"]
    assert [r["session_id"] for r in results] == [*ids[:2], "1.0.nope", "nope", *ids[2:]]  # the request's order
    assert [r["error"]["code"] for r in results[2:4]] == ["session_not_found"] * 2
    for env, step, result in zip(locals_, steps, results[:2] + results[4:]):
        observation, reward, terminated, truncated, info = env.step(step["action"])
        assert result["result"] == {"observation": observation, "reward": reward, "terminated": terminated,
                                    "truncated": truncated, "info": info}
    bad = httpx.post(f"{url}/v1/step", json={"steps": [*steps, {"session_id": ids[0]}]})  # no action
    assert bad.status_code == 422  # refused whole, before any part ran
    resets = [{"session_id": sid, "seed": 100 + i} for i, sid in enumerate(ids)]
    results = httpx.post(f"{url}/v1/reset", json={"resets": resets}).json()["results"]
    for env, item, result in zip(locals_, resets, results):
        observation, info = env.reset(seed=item["seed"])
        assert result == {"session_id": item["session_id"], "result": {"observation": observation, "info": info}}
    # the 422 stepped nothing: each session's next step is its first since the reset
    results = httpx.post(f"{url}/v1/step", json={"steps": steps}).json()["results"]
    assert [r["result"]["info"]["turn"] for r in results] == [1] * len(ids)
    close_all(url, sessions)
    # a batch create spreads its sessions over the processes, in the request's order
    made = httpx.post(f"{url}/v1/create", json={"sessions": [{"env_id": SEARCH, "seed": seed} for seed in range(4)]})
    results = made.json()["results"]
    local = agentgym.make(SEARCH).unwrapped
    assert [r["observation"] for r in results] == [local.reset(seed=seed)[0] for seed in range(4)]
    assert sorted(owner(r["session_id"]) for r in results) == [0, 0, 1, 1]
    close_all(url, [(r["session_id"], 0) for r in results])


def test_agentgym_clients_play_their_episodes_across_processes(url):
    clients: list[SearchQAClient] = []
    while len({owner(c.env_id) for c in clients}) < 2:
        assert len(clients) < 40, "the kernel gave every connection to one process"
        clients.append(SearchQAClient(f"{url}/{SEARCH}"))
    for index, client in enumerate(clients[-2:]):  # the last two: one of each process
        oracle = agentgym.make(SEARCH).unwrapped
        prompt, _ = oracle.reset(options={"index": index})
        assert client.reset(index) == prompt == client.observe()
        done, reward = False, 0.0
        while not done:
            action = oracle.oracle_action()
            expected, *_ = oracle.step(action)
            observation, reward, done = client.step(action)
            assert observation == expected
        assert reward == 1.0
    for client in clients:
        assert client.close() is True


def pinned(url: str, index: int) -> httpx.Client:
    """A keep-alive connection the kernel gave to process ``index``."""
    for _ in range(60):
        client = httpx.Client(base_url=url)
        if client.get("/healthz", headers=FORWARDED).json()["processes"][0]["index"] == index:
            return client
        client.close()
    raise AssertionError(f"no connection landed on process {index}")


def test_healthz_and_metrics_are_the_sums_over_processes(url):
    gauge = ("agentgym_sessions", frozenset({("env_id", SEARCH)}))
    steps = ("agentgym_http_requests_total", frozenset({("route", STEP_ROUTE), ("status", "200")}))
    latencies = ("agentgym_http_request_seconds_count", frozenset({("route", STEP_ROUTE)}))
    steps_before = samples(httpx.get(f"{url}/metrics").text).get(steps, 0)
    sessions = create_on_both(url)
    for sid, _ in sessions:
        assert httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": "<search>Lima</search>"}).is_success
    own = {}
    for index in (0, 1):
        with contextlib.closing(pinned(url, index)) as client:
            own[index] = (client.get("/healthz", headers=FORWARDED).json(),
                          samples(client.get("/metrics", headers=FORWARDED).text))
    whole, metrics = health(url), samples(httpx.get(f"{url}/metrics").text)
    assert whole["sessions"] == len(sessions) == sum(h["sessions"] for h, _ in own.values())
    assert [p["sessions"] for p in whole["processes"]] == [own[0][0]["sessions"], own[1][0]["sessions"]]
    assert whole["capacity"]["free"] == MAX_SESSIONS - len(sessions)
    assert whole["capacity"]["envs"][SEARCH] == {"sessions": len(sessions), "limit": MAX_SESSIONS,
                                                  "free": MAX_SESSIONS - len(sessions)}
    for key in (gauge, steps, latencies):
        assert metrics[key] == own[0][1].get(key, 0) + own[1][1].get(key, 0)
    assert metrics[gauge] == len(sessions) and metrics[steps] == steps_before + len(sessions)
    assert metrics[("agentgym_max_sessions", frozenset())] == MAX_SESSIONS  # a setting, not a sum
    close_all(url, sessions)


def test_max_sessions_holds_over_all_processes(url):
    sessions = create_on_both(url, each=1)
    body = {"env_id": SEARCH}
    while len(sessions) < MAX_SESSIONS:
        response = httpx.post(f"{url}/v1/sessions", json=body)
        assert response.status_code == 201, response.text
        sessions.append((response.json()["session_id"], 0))
    assert health(url)["capacity"]["free"] == 0
    clients = [pinned(url, 0), pinned(url, 1)]
    for client in clients:  # each process refuses: the limit is the server's, not each process's
        refused = client.post("/v1/sessions", json=body)
        assert refused.status_code == 429 and "limit of 10 sessions" in refused.json()["message"]
    theirs = next(sid for sid, _ in sessions if owner(sid) == 0)
    assert clients[1].delete(f"/v1/sessions/{theirs}").json() == {"closed": True}  # freed for every process
    sessions = [s for s in sessions if s[0] != theirs]
    made = clients[1].post("/v1/create", json={"sessions": [body, body]}).json()["results"]
    created = [r for r in made if "session_id" in r]  # the two (one per process) raced for the one free slot
    assert len(created) == 1 and [r["error"]["code"] for r in made if "error" in r] == ["capacity"]
    sessions.append((created[0]["session_id"], 0))
    for client in clients:
        client.close()
    close_all(url, sessions)
    assert health(url)["capacity"]["free"] == MAX_SESSIONS


def test_openenv_routes_answer_on_any_process(url):
    connect = import_or_skip("websockets.sync.client", "dev").connect
    base = f"{url}/openenv/{SEARCH}"
    for _ in range(4):
        assert httpx.post(f"{base}/reset", json={"seed": 1}).json()["done"] is False
    local = agentgym.make(SEARCH).unwrapped
    local.reset(seed=2)
    with connect(base.replace("http://", "ws://") + "/ws") as ws:  # the session lives on the process it reached
        ws.send('{"type": "reset", "data": {"seed": 2}}')
        assert ws.recv(timeout=30)
        while True:
            action = local.oracle_action()
            local.step(action)
            ws.send(json.dumps({"type": "step", "data": {"message": action}}))
            reply = json.loads(ws.recv(timeout=30))["data"]
            if reply["done"]:
                break
        assert reply["reward"] == 1.0
    wait_for(lambda: health(url)["sessions"] == 0)


def _rpc(base: str, method: str, params: dict, headers: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=60)  # a new connection: either process
    assert response.status_code == 200 and response.json()["id"] == 7, response.text
    return response.json()


def _mcp_session_on(base: str, process: int, headers: dict) -> str:
    """An OpenEnv MCP session held by ``process`` (the others made on the way are closed)."""
    for seed in range(40):
        sid = _rpc(base, "openenv/session/create", {"seed": seed}, headers)["result"]["session_id"]
        if owner(sid) == process:
            return sid
        assert _rpc(base, "openenv/session/close", {"session_id": sid}, headers)["result"]["closed"]
    raise AssertionError(f"the kernel never gave a create to process {process}")


def test_openenv_mcp_sessions_are_played_from_any_process(url):
    """POST /mcp names its session in the JSON-RPC params: the call goes to the process holding it."""
    base = f"{url}/openenv/{SEARCH}"
    made: dict[int, list[tuple[str, int]]] = {0: [], 1: []}
    for seed in range(40):  # each create lands on whichever process the kernel picks: until both hold two
        sid = _rpc(base, "openenv/session/create", {"seed": seed})["result"]["session_id"]
        if len(made[owner(sid)]) == 2:  # within --max-sessions, however unevenly the kernel spreads them
            assert _rpc(base, "openenv/session/close", {"session_id": sid})["result"]["closed"]
        else:
            made[owner(sid)].append((sid, seed))
        if min(len(v) for v in made.values()) >= 2:
            break
    sessions = made[0] + made[1]
    assert min(len(v) for v in made.values()) >= 2, made
    for sid, seed in sessions:
        tools = {t["name"] for t in _rpc(base, "tools/list", {"session_id": sid})["result"]["tools"]}
        assert tools == {"search", "answer"}
        local = agentgym.make(SEARCH).unwrapped
        local.reset(seed=seed)
        result = play_oracle_over_mcp(local, lambda name, arguments, sid=sid: _rpc(
            base, "tools/call", {"name": name, "arguments": arguments, "session_id": sid})["result"])
        assert result["data"]["reward"] == 1.0
    forwarded = samples(httpx.get(f"{url}/metrics").text)[("agentgym_forwarded_requests_total", frozenset())]
    assert forwarded > 0
    for sid, _ in sessions:
        assert _rpc(base, "openenv/session/close", {"session_id": sid})["result"]["closed"] is True
    for sid, _ in sessions:  # closed wherever it was held
        error = _rpc(base, "tools/call", {"name": "search", "arguments": {"query": "x"}, "session_id": sid})["error"]
        assert error["data"]["code"] == "session_not_found", error
    # a body that is no JSON-RPC request is answered where it lands, as with one process
    assert httpx.post(f"{base}/mcp", content=b"{not json").json()["error"]["code"] == -32700


def test_a_killed_process_loses_only_its_sessions():
    token = "t0ken"
    with two_processes("--max-sessions", "20", token=token) as (url, proc):
        envs: list[RemoteEnv] = []
        while min(sum(owner(e.session_id) == i for e in envs) for i in (0, 1)) < 2:
            assert len(envs) < 40, "the kernel gave every connection to one process"
            env = RemoteEnv(SEARCH, url, token=token, env_kwargs={"max_turns": 1000})
            env.reset(seed=len(envs))
            envs.append(env)
        oracles = []
        for seed, env in enumerate(envs):  # every episode under way
            oracle = agentgym.make(SEARCH, max_turns=1000).unwrapped
            oracle.reset(seed=seed)
            action = oracle.oracle_action()
            assert env.step(action) == oracle.step(action)
            oracles.append(oracle)
        lost = [e for e in envs if owner(e.session_id) == 1]
        unauthorized = httpx.post(f"{url}/v1/sessions/{lost[0].session_id}/step", json={"action": "x"})
        assert unauthorized.status_code == 401  # refused wherever it lands, never passed on
        auth = {"Authorization": f"Bearer {token}"}
        others = create_on_both(url, each=1, headers=auth)  # for a batch: sessions no RemoteEnv keeps count of
        mcp = _mcp_session_on(f"{url}/openenv/{SEARCH}", 1, auth)  # an OpenEnv MCP session of process 1
        pid = httpx.get(f"{url}/healthz").json()["processes"][1]["pid"]

        def step_until_error(env: RemoteEnv, errors: list) -> None:
            try:
                while True:
                    env.step("<search>Lima</search>")
            except RemoteEnvError as e:
                errors.append(e)

        errors: list[RemoteEnvError] = []
        busy = threading.Thread(target=step_until_error, args=(lost[0], errors))
        busy.start()
        time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)  # mid-run: a step of lost[0] is in flight or about to be
        busy.join(timeout=15)
        assert not busy.is_alive() and errors[0].code == "session_lost" and errors[0].status_code == 410
        for env in lost[1:]:
            with pytest.raises(RemoteEnvError, match=rf"server process 1 \(pid {pid}\), which was killed by SIGKILL"):
                env.step("<search>Lima</search>")
        for _ in range(4):  # wherever the call lands: the replacement, or process 0 passing it on
            error = _rpc(f"{url}/openenv/{SEARCH}", "tools/call", {"name": "search", "arguments": {"query": "x"},
                                                                  "session_id": mcp}, auth)["error"]
            assert error["data"]["code"] == "session_lost" and error["code"] == -32602, error
        batch = httpx.post(f"{url}/v1/step", headers=auth, json={"steps": [
            {"session_id": sid, "action": "<search>Lima</search>"} for sid, _ in others]}).json()["results"]
        for (sid, _), result in zip(others, batch):
            if owner(sid) == 0:
                assert result["result"]["info"]["turn"] == 1
            else:
                assert result["error"]["code"] == "session_lost"
        for env, oracle in zip(envs, oracles):  # the other process's sessions play on, to the end
            if env in lost:
                continue
            done = False
            while not done:
                action = oracle.oracle_action()
                expected = oracle.step(action)
                assert env.step(action) == expected
                done = expected[2] or expected[3]
            assert expected[1] == 1.0
        # a replacement of the next generation; the lost sessions' capacity is free again
        wait_for(lambda: health(url)["status"] == "ok")
        replaced = health(url)
        assert replaced["processes"][1]["generation"] == 1 and replaced["processes"][1]["pid"] != pid
        live = len(envs) - len(lost) + sum(owner(sid) == 0 for sid, _ in others)
        assert replaced["sessions"] == replaced["processes"][0]["sessions"] == live
        assert replaced["capacity"]["free"] == 20 - live
        for env in lost:  # a lost session's RemoteEnv starts over on a new session at its next reset
            env.reset(seed=7)
            assert env.step("<answer>Lima</answer>")[2]
        for env in envs:
            env.close()
        assert "server process 1 (pid" in proc.stdout.read()


def test_idle_sessions_expire_on_every_process_and_free_the_servers_capacity():
    # a TTL with room for a machine 5x slower between the create and the first /healthz (1 s expired a session
    # in between on a loaded 2-core machine)
    with two_processes("--session-ttl-s", "5", "--max-sessions", "8") as (url, _):
        sessions = create_on_both(url, each=1)
        assert health(url)["capacity"]["free"] == 8 - len(sessions)
        wait_for(lambda: health(url)["sessions"] == 0, timeout_s=60)
        assert health(url)["capacity"]["free"] == 8
        for sid, _ in sessions:  # expired, not lost: 404 from either process
            gone = httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": "x"})
            assert gone.status_code == 404 and "expired after 5 s idle" in gone.json()["message"]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopping_the_parent_leaves_no_server_process(signum):
    with two_processes() as (url, proc):
        pids = [p["pid"] for p in health(url)["processes"]]
        sid = httpx.post(f"{url}/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
        assert sid and all(alive(pid) for pid in pids)
        proc.send_signal(signum)
        assert proc.wait(timeout=45) == (-signal.SIGKILL if signum == signal.SIGKILL else 0)
        wait_for(lambda: not any(alive(pid) for pid in pids), timeout_s=15)  # SIGKILL: the parent-death signal


def test_bad_process_counts_and_a_taken_port_are_one_line_before_any_process(server):
    import subprocess
    import sys

    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "agentgym.cli", "serve", SEARCH, *args], capture_output=True,
                              text=True, timeout=60, check=False)

    for count in ("0", "257"):
        proc = serve("--processes", count, "--port", "0")
        assert proc.returncode == 2 and proc.stderr.startswith("error: --processes must be between 1 and 256")
    port = server.rsplit(":", 1)[1]  # held by the module's two processes: a second server never joins them
    proc = serve("--processes", "2", "--port", port)
    assert proc.returncode == 2 and "Address already in use" in proc.stderr and proc.stdout == ""


def test_ids_name_their_process_and_dead_generations_are_told_apart(tmp_path):
    from agentgym.server.siblings import ProcessSlot, owner_of, record_death

    slot = ProcessSlot(index=3, generation=1, count=4, directory=tmp_path)
    sid, compat_id = slot.new_session_id(), slot.new_compat_id({})
    assert owner_of(sid) == owner_of(compat_id) == (3, 1) and 2**40 < compat_id < 2**63
    assert [owner_of(x) for x in ("abc", "3.1.", "x.1.abc", "1234.0.abc", 0, -5)] == [None] * 6
    assert slot.lost(sid) is None and slot.lost("3.0.old") is None  # no death recorded: an unknown id, 404
    assert "killed by SIGKILL" in record_death(tmp_path, 3, 0, pid=42, exitcode=-9)
    lost = slot.lost("3.0.old")
    assert lost.status == 410 and lost.code == "session_lost" and "server process 3 (pid 42)" in lost.message
    assert slot.lost(compat_id - (1 << 8)).status == 410  # the same process's previous generation, as an int id


def test_shared_capacity_counts_every_process_and_frees_a_dead_ones(tmp_path):
    from agentgym.server.siblings import SharedCapacity

    envs = [SEARCH, "agentgym/PyCode-v0"]
    SharedCapacity.create(tmp_path / "capacity", 2, envs)
    one, two = (SharedCapacity(tmp_path / "capacity", envs, index) for index in (0, 1))
    assert [one.reserve(SEARCH, 4, None), two.reserve(SEARCH, 4, None), two.reserve(envs[1], 4, 1)] == [None] * 3
    assert two.reserve(envs[1], 4, 1) == "env"  # a per-env limit, over both processes
    assert one.reserve(SEARCH, 4, None) is None and two.reserve(SEARCH, 4, None) == "server"
    assert one.used() == two.used() == (4, {SEARCH: 3, envs[1]: 1})
    one.release(SEARCH)
    SharedCapacity(tmp_path / "capacity", envs).clear(1)  # the parent, when process 1 died
    assert two.used() == (1, {SEARCH: 1, envs[1]: 0})


def test_merged_metrics_sum_counts_and_keep_settings():
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

    from agentgym.server.gather import merge_metrics

    texts = []
    for steps, sessions in ((3, 2), (4, 5)):
        registry = CollectorRegistry()
        Counter("agentgym_http_requests", "r", ["route"], registry=registry).labels("/s").inc(steps)
        Gauge("agentgym_sessions", "s", ["env_id"], registry=registry).labels(SEARCH).set(sessions)
        Gauge("agentgym_max_sessions", "m", registry=registry).set(10)
        Histogram("agentgym_http_request_seconds", "l", registry=registry, buckets=(1,)).observe(steps / 10)
        texts.append(generate_latest(registry).decode())
    merged = samples(merge_metrics(texts).decode())
    assert merged[("agentgym_http_requests_total", frozenset({("route", "/s")}))] == 7
    assert merged[("agentgym_sessions", frozenset({("env_id", SEARCH)}))] == 7
    assert merged[("agentgym_max_sessions", frozenset())] == 10
    assert merged[("agentgym_http_request_seconds_count", frozenset())] == 2
    assert merged[("agentgym_http_request_seconds_bucket", frozenset({("le", "1.0")}))] == 2
    created = [v for (name, _), v in merged.items() if name == "agentgym_http_requests_created"]
    assert len(created) == 1 and created[0] == min(s.value for t in texts for f in text_string_to_metric_families(t)
                                                   for s in f.samples if s.name == "agentgym_http_requests_created")


def test_relay_reads_each_body_form_keeps_connections_and_says_when_nothing_answers(tmp_path):
    import asyncio

    from agentgym.server.relay import Relay, RelayError

    answers = [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi",
               b"HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n1;x=y\r\nc\r\n0\r\n\r\n",
               b"HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\nbye"]
    connections = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:  # the client closed its connection
                return
            assert b"\r\nx-test: 1\r\n" in head
            body = await reader.readexactly(int(head.split(b"content-length: ")[1].split(b"\r\n")[0]))
            writer.write(answers[int(body)])
            if int(body) == 2:
                writer.close()
                return

    async def main() -> None:
        path = str(tmp_path / "s.sock")
        server = await asyncio.start_unix_server(handle, path=path)
        relay = Relay(path, keep_alive_s=10)

        def ask(n: int) -> Any:
            return relay.request("POST", "/x", [(b"x-test", b"1")], str(n).encode())
        assert [(s, b) for s, _, b in [await ask(0), await ask(1), await ask(0)]] == [(200, b"hi"), (201, b"abc"),
                                                                                       (200, b"hi")]
        assert len(connections) == 1  # one connection, kept
        assert (await ask(2))[::2] == (404, b"bye") and (await ask(0))[0] == 200  # closed by the server: a new one
        assert len(connections) == 2
        server.close()
        await server.wait_closed()
        os.unlink(path)
        with pytest.raises(RelayError, match="cannot connect"):
            await Relay(path, keep_alive_s=10).request("GET", "/", [], b"")

    asyncio.run(main())
