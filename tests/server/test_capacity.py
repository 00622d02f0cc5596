"""Capacity by resources: per-env session limits, their defaults from host memory, and /healthz and /metrics on them."""

import subprocess
import sys

import httpx
import pytest
from fastapi.testclient import TestClient

from agentgym.errors import ConfigError, EnvNotFound
from agentgym.server import create_app
from agentgym.server.capacity import MEMORY_SHARE, SESSION_COSTS, default_env_limits, host_memory_mb
from helpers.crashy_env import CRASHY
from helpers.server_process import free_port, serving

SEARCH = "agentgym/SearchQA-v0"
SWE = "agentgym/SWEBench-v0"
BROWSER = "agentgym/WebShopBrowser-v0"


def test_an_env_limit_refuses_with_a_429_naming_env_limit_and_flag():
    with TestClient(create_app([SEARCH, CRASHY.id], max_sessions=10, env_limits={CRASHY.id: 2})) as client:
        crashy = [client.post("/v1/sessions", json={"env_id": CRASHY.id}).json()["session_id"] for _ in range(2)]
        full = client.post("/v1/sessions", json={"env_id": CRASHY.id})
        assert full.status_code == 429 and full.json()["code"] == "capacity"
        message = full.json()["message"]
        assert f"limit of 2 {CRASHY.id} sessions" in message and f"--env-limit {CRASHY.id}=N" in message
        compat = client.post(f"/{CRASHY.id}/create")  # the AgentGym routes count against the same limit
        assert compat.status_code == 429 and compat.json()["code"] == "capacity"
        assert client.post("/v1/sessions", json={"env_id": SEARCH}).status_code == 201  # other envs unaffected

        capacity = client.get("/healthz").json()["capacity"]
        assert capacity == {"max_sessions": 10, "free": 7, "envs": {
            SEARCH: {"sessions": 1, "limit": 10, "free": 7}, CRASHY.id: {"sessions": 2, "limit": 2, "free": 0}}}
        metrics = client.get("/metrics").text
        assert f'agentgym_session_limit{{env_id="{CRASHY.id}"}} 2.0' in metrics
        assert f'agentgym_session_limit{{env_id="{SEARCH}"}} 10.0' in metrics
        assert "agentgym_max_sessions 10.0" in metrics
        assert f'agentgym_sessions_refused_total{{env_id="{CRASHY.id}"}} 2.0' in metrics
        assert f'agentgym_sessions{{env_id="{CRASHY.id}"}} 2.0' in metrics

        client.delete(f"/v1/sessions/{crashy[0]}")
        assert client.post(f"/{CRASHY.id}/create").status_code == 200
        assert client.get("/healthz").json()["capacity"]["envs"][CRASHY.id] == {"sessions": 2, "limit": 2, "free": 0}


def test_the_server_wide_limit_says_which_flag_raises_it():
    with TestClient(create_app([SEARCH], max_sessions=1)) as client:
        client.post("/v1/sessions", json={"env_id": SEARCH})
        full = client.post("/v1/sessions", json={"env_id": SEARCH})
        assert full.status_code == 429 and "--max-sessions" in full.json()["message"]
        assert client.get("/healthz").json()["capacity"]["envs"][SEARCH]["free"] == 0


def test_a_failed_first_reset_frees_its_slot_and_leaves_the_gauges_alone():
    with TestClient(create_app([SEARCH, CRASHY.id], env_limits={CRASHY.id: 1})) as client:
        for _ in range(3):
            bad = client.post("/v1/sessions", json={"env_id": CRASHY.id, "options": {"task_id": "nope"}})
            assert bad.status_code == 422
        assert client.get("/healthz").json()["capacity"]["envs"][CRASHY.id]["free"] == 1
        assert f'agentgym_sessions{{env_id="{CRASHY.id}"}} 0.0' in client.get("/metrics").text
        assert client.post("/v1/sessions", json={"env_id": CRASHY.id}).status_code == 201


def test_sessions_that_hold_processes_and_memory_get_default_limits_from_host_memory():
    limits = default_env_limits([SEARCH, SWE, "agentgym/PyCode-v0", "agentgym/MathTool-v0"], memory_mb=24_000)
    # half of 24 GB over ~3.1 GB a session may pin: two sandboxes (working copy, grader), three 512 MB tmpfs each
    assert limits == {SWE: 3}
    both = default_env_limits([SWE, BROWSER], memory_mb=24_000)  # costly envs share the budget
    assert both == {SWE: 1, BROWSER: 18}
    assert default_env_limits([SWE], memory_mb=512) == {SWE: 1}

    served = create_app([SEARCH, SWE, BROWSER]).state.store
    host = host_memory_mb()
    assert served.env_limits == default_env_limits([SWE, BROWSER], memory_mb=host)
    for env_id, limit in served.env_limits.items():  # full, they fit in the share of memory they were given
        assert limit == 1 or limit * SESSION_COSTS[env_id].memory_mb <= MEMORY_SHARE * host / 2
    assert served.env_limits[SWE] < 1024  # the default max_sessions that could exhaust memory
    assert create_app([SWE], env_limits={SWE: 2000}).state.store.env_limits == {SWE: 2000}


@pytest.mark.parametrize("limits, error, match", [
    ({SWE: 3}, ConfigError, "does not serve"),
    ({"agentgym/SerchQA-v0": 3}, EnvNotFound, "Did you mean"),
    ({SEARCH: 0}, ConfigError, "integer >= 1"),
    ({SEARCH: 2.5}, ConfigError, "integer >= 1"),
])
def test_bad_env_limits_fail_at_startup(limits, error, match):
    with pytest.raises(error, match=match):
        create_app([SEARCH], env_limits=limits)


def test_env_limit_flag_over_a_real_socket():
    with serving(SEARCH, "--env-limit", f"{SEARCH}=1") as url:
        assert httpx.post(f"{url}/v1/sessions", json={"env_id": SEARCH}).status_code == 201
        full = httpx.post(f"{url}/v1/sessions", json={"env_id": SEARCH})
        assert full.status_code == 429 and f"--env-limit {SEARCH}=N" in full.json()["message"]
        assert httpx.get(f"{url}/healthz").json()["capacity"]["envs"][SEARCH] == {"sessions": 1, "limit": 1,
                                                                                  "free": 0}


@pytest.mark.parametrize("flag, message", [
    (f"{SEARCH}=many", "ENV_ID=N"),
    (f"{SWE}=3", "does not serve"),
    (f"{SEARCH}=0", "integer >= 1"),
])
def test_bad_env_limit_flags_are_one_line_errors(flag, message):
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "serve", SEARCH, "--port", str(free_port()),
                           "--env-limit", flag], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
