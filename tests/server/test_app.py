"""The server in process (Starlette's TestClient runs the real app and its lifespan)."""

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import agentgym
from agentgym.envs import ENVS
from agentgym.errors import ConfigError
from agentgym.server import create_app
from helpers.crashy_env import CRASHY

SEARCH = "agentgym/SearchQA-v0"
OPENAPI_FILE = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


@pytest.fixture()
def client():
    with TestClient(create_app([SEARCH, CRASHY.id], max_sessions=4)) as c:
        yield c


def create(client, env_id=SEARCH, **body):
    response = client.post("/v1/sessions", json={"env_id": env_id, **body})
    assert response.status_code == 201, response.text
    return response.json()


def test_list_envs_and_health(client):
    envs = client.get("/v1/envs").json()
    assert [e["id"] for e in envs] == [SEARCH, CRASHY.id] and "topk" in envs[0]["client_kwargs"]
    assert client.get("/healthz").json()["status"] == "ok"


def test_episode_matches_the_local_env(client):
    local = agentgym.make(SEARCH, topk=2).unwrapped
    local_obs, local_info = local.reset(seed=5)
    created = create(client, kwargs={"topk": 2}, seed=5)
    assert created["observation"] == local_obs and created["info"] == local_info
    sid = created["session_id"]
    while True:
        action = local.oracle_action()
        expected = local.step(action)
        got = client.post(f"/v1/sessions/{sid}/step", json={"action": action}).json()
        assert (got["observation"], got["reward"], got["terminated"], got["truncated"], got["info"]) == expected
        if got["terminated"] or got["truncated"]:
            break
    assert got["reward"] == 1.0
    reset = client.post(f"/v1/sessions/{sid}/reset", json={"seed": 5}).json()
    assert reset["observation"] == local_obs
    assert client.delete(f"/v1/sessions/{sid}").json() == {"closed": True}
    assert client.post(f"/v1/sessions/{sid}/step", json={"action": "x"}).json()["code"] == "session_not_found"


def test_malformed_action_is_an_observation_not_an_http_error(client):
    sid = create(client)["session_id"]
    response = client.post(f"/v1/sessions/{sid}/step", json={"action": "no tags here"})
    assert response.status_code == 200 and response.json()["info"]["action_error"]
    dict_action = client.post(f"/v1/sessions/{sid}/step", json={"action": {"name": "search", "arguments": {}}})
    assert "missing required argument" in dict_action.json()["info"]["action_error"]


@pytest.mark.parametrize("action", [5, 3.5, None, True, [1, "a"], {"answer": 7}])
def test_any_json_action_gets_the_observation_it_gets_in_process(client, action):
    local = agentgym.make(SEARCH).unwrapped
    local.reset(seed=2)
    expected = local.step(action)
    sid = create(client, seed=2)["session_id"]
    response = client.post(f"/v1/sessions/{sid}/step", json={"action": action})
    assert response.status_code == 200, response.text
    got = response.json()
    assert (got["observation"], got["reward"], got["terminated"], got["truncated"], got["info"]) == expected
    assert got["info"]["action_error"]
    batch = client.post("/v1/step", json={"steps": [{"session_id": sid, "action": action}]}).json()
    assert batch["results"][0]["result"]["info"]["action_error"] == got["info"]["action_error"]


@pytest.mark.parametrize("body, status, code", [
    ({"env_id": "agentgym/SerchQA-v0"}, 404, "env_not_found"),
    ({"env_id": SEARCH, "kwargs": {"corpus": "/etc/passwd"}}, 422, "invalid_kwargs"),
    ({"env_id": SEARCH, "kwargs": {"topk": 0}}, 422, "invalid_request"),
    ({"env_id": SEARCH, "options": {"task_id": "nope"}}, 422, "invalid_request"),
    ({"env_id": SEARCH, "unknown": 1}, 422, "invalid_payload"),
    ({"kwargs": {}}, 422, "invalid_payload"),
    ({"env_id": SEARCH, "seed": -1}, 422, "invalid_payload"),
    ({"env_id": SEARCH, "options": {"index": -1}}, 422, "invalid_payload"),
    ({"env_id": SEARCH, "options": {"level": 3}}, 422, "invalid_payload"),
    ({"env_id": SEARCH, "seed": 2**64}, 422, "invalid_payload"),
    ({"env_id": SEARCH, "options": {"index": 10**6}}, 422, "invalid_request"),  # in range for the protocol, not the split
])
def test_create_errors(client, body, status, code):
    response = client.post("/v1/sessions", json=body)
    assert response.status_code == status and response.json()["code"] == code and response.json()["message"]


@pytest.mark.parametrize("body", [{"seed": -1}, {"seed": "3"}, {"seed": 2**70}, {"seed": 1.5},
                                  {"options": {"index": "0"}}, {"options": {"index": 2**40}}, {"options": {"index": True}},
                                  {"options": {"split": "x"}}, {"options": {"split": 5}}, {"options": {"task_id": [1]}},
                                  {"options": {"nope": 1}}, {"options": [1]}, {"options": "index"}])
def test_bad_reset_input_is_a_422_naming_the_field(client, body):
    sid = client.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
    response = client.post(f"/v1/sessions/{sid}/reset", json=body)
    assert response.status_code == 422, response.json()
    field = "seed" if "seed" in body else next(iter(body["options"])) if isinstance(body["options"], dict) else "options"
    assert field in response.json()["message"] or "split" in response.json()["message"], response.json()
    assert client.post(f"/v1/sessions/{sid}/reset", json={"seed": 0}).status_code == 200  # the session lives on


@pytest.mark.parametrize("kwargs", [{"topk": "3"}, {"topk": 3.5}, {"top_k": 3}, {"max_turns": True}])
def test_bad_kwargs_get_422_with_the_message_make_gives(client, kwargs):
    with pytest.raises(ConfigError) as made:
        agentgym.make(SEARCH, **kwargs)
    response = client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": kwargs})
    assert response.status_code == 422 and response.json() == {"code": "invalid_kwargs", "message": str(made.value)}


def test_bad_operator_kwargs_fail_at_startup():
    with pytest.raises(ConfigError, match="topk must be int, got 'many'"):
        create_app([SEARCH], server_kwargs={SEARCH: {"topk": "many"}})


def test_did_you_mean_and_unknown_routes(client):
    assert "Did you mean 'agentgym/SearchQA-v0'" in client.post(
        "/v1/sessions", json={"env_id": "agentgym/SerchQA-v0"}).json()["message"]
    assert client.get("/v2/nothing").json()["code"] == "not_found"
    assert client.put("/v1/sessions").json()["code"] == "method_not_allowed"
    bad_json = client.post("/v1/sessions", content=b"{not json", headers={"content-type": "application/json"})
    assert bad_json.status_code == 422 and bad_json.json()["code"] == "invalid_payload"


def test_capacity_429_and_recovery(client):
    sessions = [create(client)["session_id"] for _ in range(4)]
    full = client.post("/v1/sessions", json={"env_id": SEARCH})
    assert full.status_code == 429 and full.json()["code"] == "capacity" and "4 sessions" in full.json()["message"]
    client.delete(f"/v1/sessions/{sessions[0]}")
    assert client.post("/v1/sessions", json={"env_id": SEARCH}).status_code == 201


def test_body_size_limit_413():
    with TestClient(create_app([SEARCH], max_body_bytes=1000)) as client:
        big = client.post("/v1/sessions", json={"env_id": SEARCH, "kwargs": {"x": "a" * 5000}})
        assert big.status_code == 413 and big.json()["code"] == "payload_too_large"
        sid = create(client)["session_id"]
        for path in ("step", "reset"):  # the hot path, with a Content-Length and chunked
            sized = client.post(f"/v1/sessions/{sid}/{path}", json={"action": "a" * 5000})
            chunked = client.post(f"/v1/sessions/{sid}/{path}", content=iter([b'{"action": "', b"a" * 5000, b'"}']))
            for response in (sized, chunked):
                assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
        assert client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>x</search>"}).status_code == 200


def test_token_required_except_health():
    with TestClient(create_app([SEARCH], token="s3cret")) as client:
        assert client.get("/healthz").status_code == 200
        denied = client.get("/v1/envs")
        assert denied.status_code == 401 and denied.json()["code"] == "unauthorized"
        assert client.get("/v1/envs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/v1/envs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        auth = {"Authorization": "Bearer s3cret"}
        sid = client.post("/v1/sessions", json={"env_id": SEARCH}, headers=auth).json()["session_id"]
        for path, body in (("step", {"action": "x"}), ("reset", {})):  # the hot path
            denied = client.post(f"/v1/sessions/{sid}/{path}", json=body)
            assert denied.status_code == 401 and denied.json()["code"] == "unauthorized"
            assert denied.headers["www-authenticate"] == "Bearer"
            assert client.post(f"/v1/sessions/{sid}/{path}", json=body, headers=auth).status_code == 200


def test_step_ids_make_retries_idempotent(client):
    sid = create(client, seed=1)["session_id"]
    first = client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>a</search>", "step_id": 1}).json()
    retry = client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>a</search>", "step_id": 1}).json()
    assert retry == first and retry["info"]["turn"] == 1
    skipped = client.post(f"/v1/sessions/{sid}/step", json={"action": "x", "step_id": 5})
    assert skipped.status_code == 409 and skipped.json()["code"] == "step_out_of_order"
    assert client.post(f"/v1/sessions/{sid}/step", json={"action": "x", "step_id": 2}).json()["info"]["turn"] == 2


def test_step_after_end_is_409(client):
    sid = create(client)["session_id"]
    client.post(f"/v1/sessions/{sid}/step", json={"action": "<answer>x</answer>"})
    again = client.post(f"/v1/sessions/{sid}/step", json={"action": "<answer>x</answer>"})
    assert again.status_code == 409 and again.json()["code"] == "reset_needed"


def test_crashing_env_fails_only_its_session(client):
    crashy = create(client, CRASHY.id)["session_id"]
    healthy = create(client)["session_id"]
    crash = client.post(f"/v1/sessions/{crashy}/step", json={"action": "crash"})
    assert crash.status_code == 500 and crash.json()["code"] == "env_error" and "boom" in crash.json()["message"]
    assert client.post(f"/v1/sessions/{crashy}/step", json={"action": "x"}).status_code == 404  # closed
    assert client.post(f"/v1/sessions/{healthy}/step", json={"action": "<search>Lima</search>"}).status_code == 200
    assert client.get("/healthz").json()["sessions"] == 1


def test_a_step_whose_verification_cannot_start_is_a_503_and_the_session_stays(client):
    """The verifier pool was busy past the budget: the server's failure, never a reward of 0 or a closed session."""
    crashy = create(client, CRASHY.id)["session_id"]
    busy = client.post(f"/v1/sessions/{crashy}/step", json={"action": "verifier busy"})
    assert busy.status_code == 503 and busy.json()["code"] == "verifier_unavailable", busy.text
    assert busy.headers["Retry-After"] == "5" and "reset the session" in busy.json()["message"]
    assert client.post(f"/v1/sessions/{crashy}/reset", json={}).status_code == 200  # the session is still there


def test_batch_step_items_fail_alone(client):
    a, b = create(client, seed=1)["session_id"], create(client, seed=2)["session_id"]
    crashy = create(client, CRASHY.id)["session_id"]
    body = {"steps": [{"session_id": a, "action": "<search>Lima</search>"},
                      {"session_id": b, "action": "<answer>x</answer>", "step_id": 1},
                      {"session_id": "missing", "action": "x"},
                      {"session_id": a, "action": "again"},
                      {"session_id": crashy, "action": "crash"}]}
    results = client.post("/v1/step", json=body).json()["results"]
    assert results[0]["result"]["observation"].startswith("\n\n<information>")
    assert results[1]["result"]["terminated"] is True
    assert results[2]["error"]["code"] == "session_not_found"
    assert results[3]["error"]["code"] == "duplicate_session"
    assert results[4]["error"]["code"] == "env_error"
    assert client.post(f"/v1/sessions/{a}/step", json={"action": "x", "step_id": 2}).status_code == 200


def test_verify_endpoint(client):
    good = client.post("/v1/verify", json={"verifier": "qa_em", "prediction": "the Lima",
                                           "task": {"golden_answers": ["Lima"]}}).json()
    assert good["reward"] == 1.0 and good["correct"] is True
    unknown = client.post("/v1/verify", json={"verifier": "qa_emm", "prediction": "x", "task": {}})
    assert unknown.status_code == 422 and "Did you mean 'qa_em'" in unknown.json()["message"]
    no_gold = client.post("/v1/verify", json={"verifier": "qa_f1", "prediction": "x", "task": {}})
    assert no_gold.status_code == 422 and "golden_answers" in no_gold.json()["message"]
    purchase = json.dumps({"asin": "B1", "product": {"name": "Rouge Matte Lipstick", "query": "lipstick"},
                           "options": {}, "price": 9.0})
    no_goal = client.post("/v1/verify", json={"verifier": "webshop", "prediction": purchase, "task": {"goal": {}}})
    assert no_goal.status_code == 422 and "names nothing wanted" in no_goal.json()["message"]
    goal = {"name": "Rouge Matte Lipstick", "query": "lipstick", "attributes": [], "price_upper": 20.0}
    bought = client.post("/v1/verify", json={"verifier": "webshop", "prediction": purchase, "task": {"goal": goal}})
    assert bought.status_code == 200 and bought.json()["reward"] > 0.5


def test_slow_verifications_do_not_hold_up_the_event_loop(client, monkeypatch):
    """Eight verifications of a second each run on the worker threads: /healthz and a step answer meanwhile."""
    from concurrent.futures import ThreadPoolExecutor

    from agentgym import verifiers
    from agentgym.verifiers.score import Score

    def slow(prediction, task):
        time.sleep(1.0)
        return Score(0.0, False, {})

    monkeypatch.setitem(verifiers.VERIFIERS, "slow", slow)
    sid = create(client)["session_id"]
    with ThreadPoolExecutor(8) as pool:
        running = [pool.submit(client.post, "/v1/verify", json={"verifier": "slow", "prediction": "x", "task": {}})
                   for _ in range(8)]
        time.sleep(0.2)
        start = time.monotonic()
        assert client.get("/healthz").status_code == 200
        health_s = time.monotonic() - start
        assert client.post(f"/v1/sessions/{sid}/step", json={"action": "<answer>x</answer>"}).status_code == 200
        assert all(f.result().status_code == 200 for f in running)
    assert health_s < 0.5, health_s  # 5x room over 0.1 s; a blocked loop would wait out a 1 s verification


def test_slow_env_work_on_every_route_leaves_the_event_loop_free(monkeypatch):
    """Every route that runs env or verifier code runs it on the worker threads: while slow work runs on all of
    them at once (create, reset, step, batch step, close, the AgentGym routes, verify), /healthz answers in < 500 ms (100 ms, with room for a machine 5x slower)."""
    from concurrent.futures import ThreadPoolExecutor

    from agentgym import verifiers
    from agentgym.verifiers.score import Score

    def slow_verifier(prediction, task):
        time.sleep(1.0)
        return Score(0.0, False, {})

    monkeypatch.setitem(verifiers.VERIFIERS, "slow", slow_verifier)
    # making, resetting and closing a Crashy env, and its action "slow", each take 1 s
    app = create_app([CRASHY.id], server_kwargs={CRASHY.id: {"slow_s": 1.0}}, env_threads=16)
    base = f"/{CRASHY.id}"
    with TestClient(app) as client, ThreadPoolExecutor(16) as pool:
        v1 = list(pool.map(lambda _: create(client, CRASHY.id)["session_id"], range(4)))
        compat = list(pool.map(lambda _: client.post(f"{base}/create").json()["id"], range(3)))
        slow_calls = [
            lambda: client.post("/v1/sessions", json={"env_id": CRASHY.id}),
            lambda: client.post(f"/v1/sessions/{v1[0]}/reset", json={}),
            lambda: client.post(f"/v1/sessions/{v1[1]}/step", json={"action": "slow"}),
            lambda: client.post("/v1/step", json={"steps": [{"session_id": v1[2], "action": "slow"}]}),
            lambda: client.delete(f"/v1/sessions/{v1[3]}"),
            lambda: client.post(f"{base}/create"),
            lambda: client.post(f"{base}/reset", json={"id": compat[0]}),
            lambda: client.post(f"{base}/step", json={"id": compat[1], "action": "slow"}),
            lambda: client.post(f"{base}/close", json={"id": compat[2]}),
            lambda: client.post("/v1/verify", json={"verifier": "slow", "prediction": "x", "task": {}}),
        ]
        running = [pool.submit(call) for call in slow_calls]
        time.sleep(0.15)
        health_s = []
        for _ in range(5):
            start = time.monotonic()
            assert client.get("/healthz").status_code == 200
            health_s.append(time.monotonic() - start)
            time.sleep(0.05)
        assert not any(f.done() for f in running)  # the slow work was still running while /healthz answered
        assert [f.result().status_code for f in running] == [201, 200, 200, 200, 200, 200, 200, 200, 200, 200]
    assert max(health_s) < 0.5, health_s  # 5x room over 0.1 s; a blocked loop would wait out a 1 s call


def test_ttl_reaper_frees_idle_sessions():
    # a TTL of 1 s: `busy`, reset every ~0.1 s, stays alive on a machine 5x slower (0.3 s was tight at load)
    with TestClient(create_app([SEARCH], session_ttl_s=1.0, reap_every_s=0.05)) as client:
        sid = create(client)["session_id"]
        busy = create(client)["session_id"]
        deadline = time.monotonic() + 30
        while client.get("/healthz").json()["sessions"] > 1 and time.monotonic() < deadline:
            client.post(f"/v1/sessions/{busy}/reset", json={})  # keeps `busy` alive
            time.sleep(0.05)
        assert client.post(f"/v1/sessions/{sid}/reset", json={}).json()["code"] == "session_not_found"
        assert client.post(f"/v1/sessions/{busy}/reset", json={}).status_code == 200
        assert 'agentgym_sessions_closed_total{reason="idle TTL expired"} 1.0' in client.get("/metrics").text


def test_shutdown_closes_every_env():
    app = create_app([SEARCH])
    with TestClient(app) as client:
        create(client)
        create(client)
        store = app.state.store
        envs = [s.env for s in store.sessions.values()]
    assert store.sessions == {} and all(env._task is not None for env in envs)


def test_metrics(client):
    create(client)
    text = client.get("/metrics").text
    assert 'agentgym_http_requests_total{route="/v1/sessions",status="201"} 1.0' in text
    assert 'agentgym_sessions{env_id="agentgym/SearchQA-v0"} 1.0' in text
    sid = create(client)["session_id"]
    client.post(f"/v1/sessions/{sid}/step", json={"action": "<search>x</search>"})
    client.post("/v1/sessions/nope/reset", json={})
    text = client.get("/metrics").text
    assert 'agentgym_http_requests_total{route="/v1/sessions/{session_id}/step",status="200"} 1.0' in text
    assert 'agentgym_http_requests_total{route="/v1/sessions/{session_id}/reset",status="404"} 1.0' in text


def test_committed_openapi_schema_is_in_sync():
    """Regenerate with: python scripts/export_openapi.py"""
    served = create_app([info.id for info in ENVS]).openapi()
    assert json.loads(OPENAPI_FILE.read_text()) == json.loads(json.dumps(served)), \
        "docs/openapi.json is stale: run python scripts/export_openapi.py"


@pytest.mark.parametrize("path, body", [("step", {}), ("step", {"action": "x", "extra": 1}),
                                        ("step", {"action": "x", "step_id": 0}), ("reset", {"seed": "one"}),
                                        ("reset", b"{not json")])
def test_hot_path_validation_errors(client, path, body):
    sid = create(client)["session_id"]
    kwargs = {"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes) \
        else {"json": body}
    response = client.post(f"/v1/sessions/{sid}/{path}", **kwargs)
    assert response.status_code == 422 and response.json()["code"] == "invalid_payload"
    assert response.json()["message"].startswith("Invalid request:")
