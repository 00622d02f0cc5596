"""ORS's routes on a real ``agentgym serve``, over plain HTTP (the SDK's own client drives them in
tests/integrations/test_ors.py): what a wrong request is told, SSE chunking and a call resumed by its task id."""

from __future__ import annotations

import httpx
import pytest
from helpers.gates import requires_code, requires_server
from helpers.server_process import serving

from agentgym.server.ors import _chunks, ors_names

pytestmark = [requires_server]

MATH, SEARCH = "agentgym/MathTool-v0", "agentgym/SearchQA-v0"


def test_names_are_the_ids_last_part_unless_two_share_it():
    assert ors_names([MATH, SEARCH]) == {"mathtool-v0": MATH, "searchqa-v0": SEARCH}
    assert ors_names(["a/Foo-v0", "b/Foo-v0", MATH]) == {"a--foo-v0": "a/Foo-v0", "b--foo-v0": "b/Foo-v0",
                                                           "mathtool-v0": MATH}


@pytest.mark.parametrize("text", ["x" * 10_000, ("a " * 3000) + ("b  " * 2000), "short", ""])
def test_sse_chunks_rejoin_and_none_starts_with_a_space(text):
    pieces = _chunks(text)
    assert "".join(pieces) == text and all(len(p) <= 4096 for p in pieces)
    assert not any(p[:1].isspace() for p in pieces[1:])


def _events(response: httpx.Response) -> list[tuple[str, str]]:
    events, name = [], None
    for line in response.text.splitlines():
        if line.startswith("event:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and name:
            events.append((name, line.split(":", 1)[1][1:]))
            name = None
    return events


@requires_code
def test_wrong_requests_say_what_was_wrong_and_a_call_can_be_resumed():
    with serving(SEARCH, MATH) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.get("/list_environments").json() == ["mathtool-v0", "searchqa-v0"]
        assert [t["name"] for t in http.get("/tools").json()["tools"]] == ["search", "answer"]  # first named
        missing = http.post("/create", json={"split": "train", "index": 0})
        assert missing.status_code == 400 and "X-Session-ID" in missing.json()["message"]
        bad_split = http.post("/create", json={"split": "dev", "index": 0}, headers={"X-Session-ID": "s1"})
        assert bad_split.status_code == 400 and "['test', 'train']" in bad_split.json()["message"]
        unknown = http.get("/nosuch-v0/tools")
        assert unknown.status_code == 404 and "mathtool-v0" in unknown.json()["message"]
        both = http.post("/create", json={"split": "train", "index": 0, "task_spec": {"task_id": "train_0"}},
                         headers={"X-Session-ID": "s1"})
        assert both.status_code == 422
        assert http.post("/ping", headers={"X-Session-ID": "s1"}).status_code == 404  # never made

        sid = _events(http.post("/create_session"))[0][1]
        made = http.post("/create", json={"env_name": "mathtool-v0", "task_spec": {"task_id": "gsm8k-train-00002"}},
                         headers={"X-Session-ID": sid})
        assert made.json() == {"sid": sid}
        again = http.post("/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": sid})
        assert again.status_code == 400 and "exists" in again.json()["message"]
        assert http.post("/ping", headers={"X-Session-ID": sid}).json() == {"status": "ok"}
        call = http.post("/mathtool-v0/call", json={"name": "python", "input": {"code": "print('y' * 9000)"}},
                         headers={"X-Session-ID": sid})
        events = _events(call)
        assert [e for e, _ in events] == ["task_id", "chunk", "chunk", "end"]  # 9,000 characters in 4 KiB pieces
        answer = "".join(data for _, data in events[1:])
        resumed = _events(http.post("/call", json={"name": "python", "input": {}, "task_id": events[0][1]},
                                    headers={"X-Session-ID": sid}))
        assert "".join(data for _, data in resumed[1:]) == answer  # the same call's answer, not a second step
        assert '"turn":1' in answer
        gone = _events(http.post("/call", json={"name": "python", "input": {}, "task_id": "nope"},
                                 headers={"X-Session-ID": sid}))
        assert gone[0][0] == "error" and "unknown task_id" in gone[0][1]
        assert http.post("/delete", headers={"X-Session-ID": sid}).json() == {"sid": sid}
        after = http.post("/call", json={"name": "python", "input": {"code": "print(1)"}},
                          headers={"X-Session-ID": sid})
        assert after.status_code == 404 and "POST /create" in after.json()["message"]


@requires_code
def test_ors_sessions_are_played_from_any_process():
    """``--processes 2``: a session id from /create_session names its process; its requests are served there
    whichever process the kernel gives their (new) connections to, and each call is one step of its episode."""
    with serving(MATH, "--processes", "2") as url:
        made: dict[int, list[str]] = {0: [], 1: []}
        for _ in range(60):  # until each process gave two ids (new connections land where the kernel puts them)
            with httpx.Client(base_url=url, timeout=120) as http:
                sid = _events(http.post("/create_session"))[0][1]
            index = int(sid.split(".")[0])
            if len(made[index]) < 2:
                made[index].append(sid)
            if min(map(len, made.values())) == 2:
                break
        assert min(map(len, made.values())) == 2, made
        for index, sids in made.items():
            for k, sid in enumerate(sids):
                headers = {"X-Session-ID": sid}
                assert httpx.post(f"{url}/create", json={"split": "train", "index": k}, headers=headers,
                                  timeout=120).json() == {"sid": sid}
                for turn in (1, 2, 3):  # each request on a new connection
                    answer = "".join(data for _, data in _events(httpx.post(
                        f"{url}/call", json={"name": "python", "input": {"code": f"print({turn})"}},
                        headers=headers, timeout=120))[1:])
                    assert f'"turn":{turn}' in answer and f'"text":"{turn}' in answer
                assert httpx.post(f"{url}/ping", headers=headers).json() == {"status": "ok"}
                assert httpx.post(f"{url}/delete", headers=headers).json() == {"sid": sid}
        health = httpx.get(f"{url}/healthz").json()
        assert health["sessions"] == 0 and len(health["processes"]) == 2


@requires_code
def test_concurrent_answers_score_one_step_and_the_rest_are_refused():
    """A policy that fires its answer many times at once, hoping for several rewards: the session's calls run one at
    a time, the first ends the episode and every other is ``episode_finished`` (no step, no reward)."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    import gymnasium as gym

    with serving(MATH) as url:
        sid = "racer-1"
        made = httpx.post(f"{url}/create", json={"task_spec": {"task_id": "gsm8k-train-00001"}},
                          headers={"X-Session-ID": sid}, timeout=120)
        assert made.status_code == 200, made.text
        twin = gym.make(MATH, action_format="dict")
        twin.reset(options={"task_id": "gsm8k-train-00001"})
        move = json.loads(twin.unwrapped.oracle_action())
        while "answer" not in move:
            twin.step(json.dumps(move))
            move = json.loads(twin.unwrapped.oracle_action())
        gold = move["answer"]

        def answer(_: int) -> dict:
            events = _events(httpx.post(f"{url}/call", json={"name": "answer", "input": {"answer": gold}},
                                        headers={"X-Session-ID": sid}, timeout=120))
            return json.loads("".join(data for _, data in events[1:]))

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(answer, range(8)))
        scored = [r for r in results if r["ok"]]
        assert len(scored) == 1 and scored[0]["output"]["reward"] == 1.0 and scored[0]["output"]["finished"]
        assert scored[0]["output"]["metadata"]["turn"] == 1
        assert sorted(r.get("reason") for r in results if not r["ok"]) == ["episode_finished"] * 7


def test_a_call_the_env_fails_is_the_sse_error_event_and_ends_the_session():
    """A step that raises on the server (an env bug) answers the SSE ``error`` event, a whole stream the SDK reads
    as a failed tool (it marks the session dead), not a cut connection; the session is over."""
    with serving("test/Crashy-v0", preload="helpers.crashy_env") as url, httpx.Client(base_url=url, timeout=60) as http:
        sid = _events(http.post("/create_session"))[0][1]
        made = http.post("/create", json={"split": "test", "index": 0}, headers={"X-Session-ID": sid})
        assert made.status_code == 200, made.text
        ok = _events(http.post("/call", json={"name": "echo", "input": {"text": "hi"}}, headers={"X-Session-ID": sid}))
        assert [name for name, _ in ok] == ["task_id", "end"] and '"ok":true' in ok[1][1]
        events = _events(http.post("/call", json={"name": "echo", "input": {"text": "crash"}},
                                   headers={"X-Session-ID": sid}))
        assert [name for name, _ in events] == ["task_id", "error"] and "boom" in events[1][1]
        gone = http.post("/ping", headers={"X-Session-ID": sid})
        assert gone.status_code == 410 and "over" in gone.json()["message"]
