"""OpenEnv's own client (openenv-core, from PyPI) against a real ``agentgym serve``: episodes as in process."""

import asyncio
import base64
import json
import socket
import time

import gymnasium as gym
import httpx
import pytest

import agentgym  # noqa: F401 - registers the env ids
from helpers.gates import env_params, import_or_skip
from helpers.server_process import serving

openenv = import_or_skip("openenv", "dev")
websockets = import_or_skip("websockets", "dev")  # what OpenEnv's client speaks with; here for raw frames
GenericEnvClient = openenv.GenericEnvClient
connect = import_or_skip("websockets.sync.client", "dev").connect

SEARCH, MATH, SHOP = "agentgym/SearchQA-v0", "agentgym/MathTool-v0", "agentgym/WebShop-v0"
ENV_IDS = [SEARCH, MATH, SHOP]
BAD_ACTIONS = [{"message": "not an action"}, {"name": "search", "arguments": {"q": 1}}]


@pytest.fixture(scope="module")
def url():
    with serving(SEARCH, MATH, SHOP, "--max-sessions", "16", return_process=True) as (base, proc):
        yield base
    output = proc.stdout.read()  # clients that hang up, drop the socket or send bad frames are not server errors
    # (uvicorn logs "ASGI callable returned without completing handshake" after any refused handshake that sent
    # an HTTP denial response, as the unknown-env test does: its own quirk, not an exception)
    assert "Traceback" not in output and "Exception in ASGI application" not in output, output


def base_of(url: str, env_id: str) -> str:
    return f"{url}/openenv/{env_id}"


def wire(action):
    """An agentgym action as OpenEnv's action dict: text as {"message": ...}, a dict action as itself."""
    return {"message": action} if isinstance(action, str) else action


def result(observation, reward, terminated, truncated, info):
    """What the server answers for an in-process step."""
    return {"text": observation, "info": info, "terminated": terminated, "truncated": truncated}, reward, \
        terminated or truncated


def in_process(env_id: str, seed: int) -> tuple[list[tuple], list]:
    """The in-process episode (two agent mistakes, then the oracle to the end) and the actions it took."""
    env = gym.make(env_id, max_turns=12).unwrapped
    observation, info = env.reset(seed=seed)
    trajectory = [result(observation, None, False, False, info)]
    actions = [*BAD_ACTIONS]
    for action in BAD_ACTIONS:
        trajectory.append(result(*env.step(action if "name" in action else action["message"])))
    while not trajectory[-1][2]:
        action = wire(env.oracle_action())
        actions.append(action)
        trajectory.append(result(*env.step(action["message"] if "message" in action else action)))
    env.close()
    return json.loads(json.dumps(trajectory)), actions


def over_openenv(client, seed: int, actions: list) -> list[tuple]:
    """The same episode through OpenEnv's sync client."""
    first = client.reset(seed=seed, kwargs={"max_turns": 12})
    trajectory = [(first.observation, first.reward, first.done)]
    for action in actions:
        step = client.step(action)
        trajectory.append((step.observation, step.reward, step.done))
    return json.loads(json.dumps(trajectory))


def sessions(url: str, expected: int, timeout_s: float = 10.0) -> int:
    """The server's open sessions, once they are ``expected`` (a closed connection closes its session soon)."""
    deadline = time.monotonic() + timeout_s
    while True:
        count = httpx.get(f"{url}/healthz").json()["sessions"]
        if count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


@pytest.mark.parametrize("env_id", env_params(ENV_IDS))
def test_websocket_episode_is_the_in_process_episode(url, env_id):
    expected, actions = in_process(env_id, seed=3)
    with GenericEnvClient(base_url=base_of(url, env_id)).sync() as client:
        assert over_openenv(client, 3, actions) == [list(step) for step in expected]
        state = client.state()
        assert state["env_id"] == env_id and state["step_count"] == len(actions) and state["done"]
        assert state["task_id"] == expected[0][0]["info"]["task_id"]
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):  # the episode is over
            client.step({"message": "<answer>again</answer>"})
        again = client.reset(seed=3, kwargs={"max_turns": 12})  # a new episode on the same session
        assert again.observation == expected[0][0] and client.state()["step_count"] == 0
    assert expected[-1][1] == 1.0 and expected[-1][0]["info"]["verification"]["correct"]
    assert sessions(url, 0) == 0


def test_async_client_with_reset_options_and_episode_id(url):
    local = gym.make(SEARCH).unwrapped
    observation, info = local.reset(seed=5, options={"index": 2})

    async def episode() -> tuple:
        async with GenericEnvClient(base_url=base_of(url, SEARCH)) as client:
            first = await client.reset(seed=5, options={"index": 2}, episode_id="ep-1")
            assert (await client.state())["episode_id"] == "ep-1"
            steps = [(first.observation, first.reward, first.done)]
            while not steps[-1][2]:
                action = local.oracle_action()
                step = await client.step(wire(action))
                steps.append((step.observation, step.reward, step.done))
                local.step(action)
            return steps

    steps = asyncio.run(episode())
    assert steps[0] == ({"text": observation, "info": json.loads(json.dumps(info)), "terminated": False,
                         "truncated": False}, None, False)
    assert steps[-1][1] == 1.0 and len(steps) > 2


@pytest.mark.parametrize("env_id", env_params(ENV_IDS))
def test_http_reset_and_step_are_stateless_one_step_episodes(url, env_id):
    base = base_of(url, env_id)
    expected, actions = in_process(env_id, seed=4)
    reset = httpx.post(f"{base}/reset", json={"seed": 4, "kwargs": {"max_turns": 12}})
    assert reset.status_code == 200 and reset.json() == {"observation": expected[0][0], "reward": None, "done": False}
    assert httpx.post(f"{base}/reset").status_code == 200  # no body: a random task, as OpenEnv's reset
    # a step is a fresh env reset with the request's seed, then that one action
    first = httpx.post(f"{base}/step", json={"action": actions[0], "seed": 4, "kwargs": {"max_turns": 12}})
    assert first.status_code == 200 and first.json() == dict(zip(("observation", "reward", "done"), expected[1]))
    last = actions[-1]
    local = gym.make(env_id, max_turns=12).unwrapped
    local.reset(seed=4)
    one_step = result(*local.step(last["message"] if "message" in last else last))
    answered = httpx.post(f"{base}/step", json={"action": last, "seed": 4, "kwargs": {"max_turns": 12}}).json()
    assert answered == dict(zip(("observation", "reward", "done"), json.loads(json.dumps(one_step))))
    if env_id != SHOP:  # an answer ends these episodes in one step; a purchase needs the pages before it
        assert answered["reward"] == 1.0 and answered["done"]
    assert httpx.get(f"{base}/state").json() == {"episode_id": None, "step_count": 0, "env_id": env_id,
                                                 "task_id": None, "done": True}
    assert sessions(url, 0) == 0  # each request's env was closed after it


def test_schema_metadata_health_and_unknown_env(url):
    base = base_of(url, SEARCH)
    assert httpx.get(f"{base}/health").json() == {"status": "healthy"}
    metadata = httpx.get(f"{base}/metadata").json()
    assert metadata["name"] == SEARCH and "QA" in metadata["description"]
    schema = httpx.get(f"{base}/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    assert "message" in json.dumps(schema["action"]) and "answer" in json.dumps(schema["action"])
    assert set(schema["observation"]["properties"]) == {"text", "info", "terminated", "truncated"}
    assert {"episode_id", "step_count"} <= set(schema["state"]["properties"])
    missing = httpx.post(f"{url}/openenv/agentgym/SerchQA-v0/reset")
    assert missing.status_code == 404 and missing.json()["code"] == "env_not_found"
    assert "SearchQA" in missing.json()["message"]  # did you mean
    with pytest.raises(ConnectionError):  # a WebSocket to an env not served: the handshake is refused (404)
        GenericEnvClient(base_url=f"{url}/openenv/agentgym/SerchQA-v0").sync().reset()


def test_concurrent_websocket_sessions(url):
    seeds = [0, 1, 2, 3, 4, 5]
    expected = {seed: in_process(SEARCH, seed) for seed in seeds}

    async def episode(client, seed: int) -> list:
        first = await client.reset(seed=seed, kwargs={"max_turns": 12})
        steps = [[first.observation, first.reward, first.done]]
        for action in expected[seed][1]:
            step = await client.step(action)
            steps.append([step.observation, step.reward, step.done])
        return steps

    async def all_at_once() -> list:
        clients = [GenericEnvClient(base_url=base_of(url, SEARCH)) for _ in seeds]
        try:
            await asyncio.gather(*(c.reset(seed=0) for c in clients))
            open_sessions = httpx.get(f"{url}/healthz").json()["sessions"]
            return [open_sessions, *await asyncio.gather(*(episode(c, s) for c, s in zip(clients, seeds)))]
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    open_sessions, *trajectories = asyncio.run(all_at_once())
    assert open_sessions == len(seeds)  # one session per connection
    for seed, trajectory in zip(seeds, trajectories):
        assert trajectory == [list(step) for step in expected[seed][0]]
        assert trajectory[-1][1] == 1.0
    assert sessions(url, 0) == 0


def test_bad_frames_are_error_frames_and_the_session_lives_on(url):
    ws_url = base_of(url, SEARCH).replace("http://", "ws://") + "/ws"
    with connect(ws_url) as ws:
        def ask(frame) -> dict:
            ws.send(frame if isinstance(frame, str) else json.dumps(frame))
            return json.loads(ws.recv(timeout=30))

        assert ask({"type": "step", "data": {"message": "x"}})["data"]["code"] == "EXECUTION_ERROR"  # before reset
        assert ask({"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        for frame, code in [("{not json", "INVALID_JSON"), ([1, 2], "VALIDATION_ERROR"),
                            ({"type": "fly"}, "UNKNOWN_TYPE"), ({"type": "mcp", "data": {}}, "UNKNOWN_TYPE"),
                            ({"type": "step", "data": "text"}, "VALIDATION_ERROR"),
                            ({"type": "step", "data": {}, "extra": 1}, "VALIDATION_ERROR"),
                            ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
                            ({"type": "reset", "data": {"sed": 1}}, "VALIDATION_ERROR"),
                            ({"type": "reset", "data": {"kwargs": {"corpus": "/etc"}}}, "VALIDATION_ERROR")]:
            answer = ask(frame)
            assert answer["type"] == "error" and answer["data"]["code"] == code, (frame, answer)
            assert answer["data"]["message"]
        assert ask("x" * (1 << 20 | 1))["data"]["code"] == "VALIDATION_ERROR"  # past the server's body limit
        # an agent's mistake is an observation, as in process, not an error
        mistake = ask({"type": "step", "data": {"nme": "search"}})
        assert mistake["type"] == "observation" and mistake["data"]["observation"]["info"]["action_error"]
        # "text" is "message" too, and OpenEnv's action metadata is not part of the action
        searched = ask({"type": "step", "data": {"text": "<search>capital city</search>", "metadata": {"k": 1}}})
        assert searched["type"] == "observation" and searched["data"]["observation"]["info"]["action_error"] is None
        assert ask({"type": "state"})["data"]["step_count"] == 2
        answered = ask({"type": "step", "data": {"answer": "no idea"}})["data"]
        assert answered["done"] and answered["reward"] == 0.0
        assert sessions(url, 1) == 1
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(websockets.ConnectionClosed):
            ws.recv(timeout=10)
    assert sessions(url, 0) == 0


def test_a_dropped_connection_closes_its_session(url):
    with connect(base_of(url, SEARCH).replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        assert sessions(url, 1) == 1
        ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: the client is gone
        assert sessions(url, 0) == 0


def test_capacity_error_when_full_and_a_retry_after():
    with serving(SEARCH, "--max-sessions", "1") as url:
        first = GenericEnvClient(base_url=base_of(url, SEARCH)).sync()
        second = GenericEnvClient(base_url=base_of(url, SEARCH)).sync()
        with first, second:
            first.reset(seed=0)
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                second.reset(seed=0)
            first.close()
            assert sessions(url, 0) == 0
            assert second.reset(seed=0).observation["text"]  # the same connection, now there is room


def test_token_is_required_when_set():
    token = "s3cret-token"
    with serving(SEARCH, token=token) as url:
        base = base_of(url, SEARCH)
        assert httpx.get(f"{base}/health").status_code == 401
        assert httpx.post(f"{base}/reset", json={"seed": 0}).status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx.post(f"{base}/reset", json={"seed": 0}, headers=bearer).status_code == 200
        for wrong in (base, base.replace("http://", "http://agentgym:wrong@")):
            with pytest.raises(ConnectionError):  # the handshake is refused (401)
                GenericEnvClient(base_url=wrong).sync().reset()
        # OpenEnv's client sends the URL's user info as HTTP Basic: the token is the password
        with GenericEnvClient(base_url=base.replace("http://", f"http://agentgym:{token}@")).sync() as client:
            assert client.reset(seed=0).observation["text"]
        ws_url = base.replace("http://", "ws://") + "/ws"
        with connect(ws_url, additional_headers=bearer) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        basic = base64.b64encode(b"x:wrong").decode()
        with pytest.raises(websockets.InvalidStatus) as refused:
            connect(ws_url, additional_headers={"Authorization": f"Basic {basic}"})
        assert refused.value.response.status_code == 401


def test_an_idle_session_expires_and_a_reset_makes_a_new_one():
    with serving(SEARCH, "--session-ttl-s", "1") as url:
        with GenericEnvClient(base_url=base_of(url, SEARCH)).sync() as client:
            first = client.reset(seed=2)
            assert sessions(url, 0) == 0  # the idle TTL closed it; the connection stays
            with pytest.raises(RuntimeError, match="SESSION_ERROR"):
                client.step({"message": "<answer>x</answer>"})
            assert client.reset(seed=2).observation == first.observation
            assert client.step({"answer": "x"}).done


def test_a_websocket_outlives_the_request_timeout():
    with serving(SEARCH, "--request-timeout-s", "1", "--keep-alive-s", "1") as url:
        with GenericEnvClient(base_url=base_of(url, SEARCH)).sync() as client:
            client.reset(seed=0)
            time.sleep(2.5)
            assert client.step({"answer": "x"}).done
