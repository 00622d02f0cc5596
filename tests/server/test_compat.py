"""The AgentGym-compatible routes: unguessable int ids, and the same session accounting as /v1."""

import pytest
from fastapi.testclient import TestClient

from agentgym.server import create_app

SEARCH = "agentgym/SearchQA-v0"
BASE = f"/{SEARCH}"


@pytest.fixture()
def client():
    with TestClient(create_app([SEARCH])) as c:
        yield c


def test_ids_are_random_63_bit_ints_no_other_client_can_guess(client):
    ids = [client.post(f"{BASE}/create").json()["id"] for _ in range(20)]
    assert all(type(i) is int and 1 <= i < 2**63 for i in ids) and len(set(ids)) == 20
    assert sorted(ids) != list(range(min(ids), min(ids) + 20))  # not a sequence
    assert sum(i >= 2**40 for i in ids) >= 18  # spread over the whole range (false for 20 random ids: ~1e-40)
    known = set(ids)
    guesses = [0, 1, 2, 19, 20, *(i + 1 for i in ids), *(i - 1 for i in ids)]
    for guess in (g for g in guesses if g not in known):
        stepped = client.post(f"{BASE}/step", json={"id": guess, "action": "<answer>x</answer>"})
        assert stepped.status_code == 404 and stepped.json()["code"] == "session_not_found"
        assert client.post(f"{BASE}/close", json={"id": guess}).status_code == 404
        assert client.get(f"{BASE}/observation", params={"id": guess}).status_code == 404
    for i in ids:  # every real session is untouched: its first step is still turn 1
        stepped = client.post(f"{BASE}/step", json={"id": i, "action": "<search>Lima</search>"})
        assert stepped.json()["info"]["turn"] == 1


def test_compat_sessions_count_in_the_gauge_and_healthz_like_v1_sessions(client):
    def gauge() -> str:
        line = next(l for l in client.get("/metrics").text.splitlines() if l.startswith("agentgym_sessions{"))
        return line.split()[-1]

    for _ in range(3):
        ids = [client.post(f"{BASE}/create").json()["id"] for _ in range(5)]
        sid = client.post("/v1/sessions", json={"env_id": SEARCH}).json()["session_id"]
        assert gauge() == "6.0" and client.get("/healthz").json()["sessions"] == 6
        for i in ids:
            assert client.post(f"{BASE}/close", json={"id": i}).json() == {"closed": True}
        client.delete(f"/v1/sessions/{sid}")
        assert gauge() == "0.0" and client.get("/healthz").json()["sessions"] == 0
