"""Batch create and batch reset (issue 18): many sessions in one request, each item succeeding or failing alone,
answers the same as one session at a time; and the loaded data taken out of the garbage collector's reach."""

import gc

import pytest
from helpers.crashy_env import CRASHY
from fastapi.testclient import TestClient

from agentgym.server import create_app

SEARCH = "agentgym/SearchQA-v0"


@pytest.fixture()
def client():
    with TestClient(create_app([SEARCH, CRASHY.id], max_sessions=6)) as c:
        yield c


def test_batch_create_items_succeed_or_fail_alone_and_count(client):
    body = {"sessions": [{"env_id": SEARCH, "seed": 3}, {"env_id": SEARCH, "seed": 3, "kwargs": {"topk": 2}},
                         {"env_id": "agentgym/Nope-v0"}, {"env_id": SEARCH, "kwargs": {"corpus": "/etc/passwd"}},
                         {"env_id": SEARCH, "options": {"split": "nope"}}, {"env_id": CRASHY.id, "seed": 666},
                         {"env_id": CRASHY.id}]}
    response = client.post("/v1/create", json=body)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["env_id"] for r in results] == [s["env_id"] for s in body["sessions"]]
    single = client.post("/v1/sessions", json={"env_id": SEARCH, "seed": 3}).json()
    assert results[0]["observation"] == single["observation"] and results[0]["info"] == single["info"]
    assert all(results[i]["session_id"] and results[i].get("error") is None for i in (0, 1, 6))
    assert all(results[i].get("session_id") is None for i in (2, 3, 4, 5))
    assert [r["error"]["code"] if r.get("error") else None for r in results] == [
        None, None, "env_not_found", "invalid_kwargs", "invalid_request", "env_error", None]
    assert client.get("/healthz").json()["sessions"] == 4  # three from the batch, one alone
    # past capacity, the extra items get 429 and the rest are created
    over = client.post("/v1/create", json={"sessions": [{"env_id": SEARCH}] * 4}).json()["results"]
    assert sorted(r["error"]["code"] if r.get("error") else "ok" for r in over) == ["capacity", "capacity", "ok", "ok"]
    for r in results + over:
        if r.get("session_id"):
            assert client.delete(f"/v1/sessions/{r['session_id']}").status_code == 200


def test_batch_reset_items_fail_alone_and_match_single_resets(client):
    a, b = (client.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"] for _ in range(2))
    crashy = client.post("/v1/sessions", json={"env_id": CRASHY.id}).json()["session_id"]
    client.post(f"/v1/sessions/{a}/step", json={"action": "<search>Lima</search>", "step_id": 1})
    body = {"resets": [{"session_id": a, "seed": 7}, {"session_id": b, "options": {"split": "train", "index": 3}},
                       {"session_id": "missing"}, {"session_id": a}, {"session_id": crashy, "seed": 666},
                       {"session_id": crashy}]}
    results = client.post("/v1/reset", json=body).json()["results"]
    codes = [r["error"]["code"] if r.get("error") else None for r in results]
    assert codes == [None, None, "session_not_found", "duplicate_session", "env_error", "duplicate_session"]
    alone = client.post(f"/v1/sessions/{a}/reset", json={"seed": 7}).json()
    assert results[0]["result"] == alone
    alone_b = client.post(f"/v1/sessions/{b}/reset", json={"options": {"split": "train", "index": 3}}).json()
    assert results[1]["result"] == alone_b
    # the reset restarted the turn count: step_id 1 is the next step again
    assert client.post(f"/v1/sessions/{a}/step", json={"action": "x", "step_id": 1}).status_code == 200
    # the crashed env's session is closed, the others live on
    assert client.post(f"/v1/sessions/{crashy}/step", json={"action": "x"}).json()["code"] == "session_not_found"
    assert client.get("/healthz").json()["sessions"] == 2


@pytest.mark.parametrize("body", [{"resets": [{"session_id": "x", "seed": -1}]},
                                  {"resets": [{"session_id": "x", "options": {"index": "0"}}]},
                                  {"resets": [{"session_id": "x"}] * 4097}, {"resets": "x"},
                                  {"sessions": [{"env_id": SEARCH, "seed": -1}]}])
def test_bad_batch_bodies_are_422s(client, body):
    route = "/v1/reset" if "resets" in body else "/v1/create"
    response = client.post(route, json=body)
    assert response.status_code == 422 and response.json()["code"] == "invalid_payload", response.text


def test_loaded_data_is_frozen_after_the_first_session(client):
    gc.unfreeze()
    before = gc.get_freeze_count()
    client.post("/v1/sessions", json={"env_id": SEARCH})
    frozen = gc.get_freeze_count()
    assert frozen > before + 10_000  # the corpus, the index and the tasks: out of every future collection
    client.post("/v1/sessions", json={"env_id": SEARCH})
    client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"topk": 2}})
    assert gc.get_freeze_count() <= frozen  # once per env, not per session or per client kwargs
    gc.unfreeze()
