"""Input a client chose never reaches env code unchecked (issue 19): seeds and reset options are fuzzed,
and a verification over HTTP is held to the verifier budget like one in process."""

import time

import pytest
from helpers.gates import requires_math_verify
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.server import create_app
from agentgym.verifiers.budget import OVER_BUDGET, shutdown_workers

SEARCH = "agentgym/SearchQA-v0"
APP = create_app([SEARCH], max_sessions=16)

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children,
                                                                                       max_size=3),
                    max_leaves=6)
# the keys a reset accepts, mixed with keys it does not, each with any JSON value
OPTIONS = st.dictionaries(st.sampled_from(["task_id", "split", "index", "level", ""]),
                          JSON | st.integers(min_value=-2**70, max_value=2**70) | st.sampled_from(["train", "test"]),
                          max_size=3)
SEEDS = JSON | st.integers(min_value=-2**80, max_value=2**80)


@pytest.fixture(scope="module")
def client():
    with TestClient(APP) as c:
        yield c


@given(seed=SEEDS, options=OPTIONS | JSON)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_seed_and_options_are_a_reset_or_a_422_naming_the_field(client, seed, options):
    sid = client.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
    try:
        response = client.post(f"/v1/sessions/{sid}/reset", json={"seed": seed, "options": options})
        body = response.json()
        assert response.status_code in (200, 422), response.text
        if response.status_code == 422:
            named = ("seed", "options", "split", "index", "task_id")
            assert body["code"] in ("invalid_payload", "invalid_request") and any(f in body["message"] for f in named), body
        # the session lives on, whatever the answer was
        step = client.post(f"/v1/sessions/{sid}/step", json={"action": "<answer>x</answer>"})
        assert step.status_code in (200, 409), step.text  # 409: a reset is needed after a rejected first reset
    finally:
        client.delete(f"/v1/sessions/{sid}")


@given(seed=SEEDS, options=OPTIONS | JSON)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_seed_and_options_on_create_are_a_session_or_a_422(client, seed, options):
    response = client.post("/v1/sessions", json={"env_id": SEARCH, "seed": seed, "options": options})
    assert response.status_code in (201, 422), response.text
    if response.status_code == 201:
        client.delete(f"/v1/sessions/{response.json()['session_id']}")
    else:
        assert response.json()["message"]


def test_an_oversized_seed_is_named(client):
    sid = client.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
    response = client.post(f"/v1/sessions/{sid}/reset", json={"seed": 2**64})
    assert response.status_code == 422 and "seed" in response.json()["message"]


@requires_math_verify
def test_a_slow_verification_over_http_is_cut_at_the_budget(client, monkeypatch):
    """sympy spends minutes comparing these sets in process; over HTTP it is a 200 with the overrun flagged."""
    monkeypatch.setenv("AGENTGYM_VERIFIER_BUDGET_S", "1")
    shutdown_workers()
    start = time.perf_counter()
    response = client.post("/v1/verify", json={"verifier": "math", "prediction": r"\{(a+b+c+d)^{40}, 1\}",
                                                "task": {"answer": r"\{(a+b+c+d+1)^{40}, 1\}"}})
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["reward"] == 0.0 and body["details"]["reason"] == OVER_BUDGET and body["details"]["budget_exceeded"]
    assert elapsed < 1.0 + 15.0, elapsed  # a loaded CI machine: the replacement worker imports sympy
    assert client.get("/healthz").status_code == 200
