"""OpenEnv's own client (openenv-core, from PyPI) against a real ``agentgym serve``: episodes as in process.

Also OpenEnv's own validator (``openenv validate --url``) and its ``MCPToolClient``, unchanged.
"""

import asyncio
import base64
import json
import socket
import subprocess
import sys
import time

import gymnasium as gym
import httpx
import pytest

import agentgym  # noqa: F401 - registers the env ids
from helpers.gates import env_params, import_or_skip
from helpers.oracle import play_oracle_over_mcp
from helpers.server_process import serving

openenv = import_or_skip("openenv", "dev")
websockets = import_or_skip("websockets", "dev")  # what OpenEnv's client speaks with; here for raw frames
GenericEnvClient = openenv.GenericEnvClient
MCPToolClient = import_or_skip("openenv.core.mcp_client", "dev").MCPToolClient
CallToolAction = import_or_skip("openenv.core.env_server.mcp_types", "dev").CallToolAction
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


def first(observation, info) -> dict:
    """What the server answers for an in-process reset: the observation, and the prompt as OpenEnv metadata."""
    return {"text": observation, "info": json.loads(json.dumps(info)), "terminated": False, "truncated": False,
            "metadata": {"prompt": observation, "task_id": info["task_id"]}}


def in_process(env_id: str, seed: int) -> tuple[list[tuple], list]:
    """The in-process episode (two agent mistakes, then the oracle to the end) and the actions it took."""
    env = gym.make(env_id, max_turns=12).unwrapped
    observation, info = env.reset(seed=seed)
    trajectory = [(first(observation, info), None, False)]
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
    assert steps[0] == (first(observation, info), None, False)
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
    assert set(schema["observation"]["properties"]) == {"text", "info", "terminated", "truncated", "metadata"}
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
                            ({"type": "fly"}, "UNKNOWN_TYPE"),
                            ({"type": "step", "data": {"type": "call_tool", "tool_name": 3}}, "VALIDATION_ERROR"),
                            ({"type": "step", "data": {"type": "list_tools", "x": 1}}, "VALIDATION_ERROR"),
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
        # OpenEnv's validator (requests) and client send the URL's user info as HTTP Basic: the token is the password
        assert validate(base.replace("http://", f"http://agentgym:{token}@"))[0] == 0
        assert validate(base)[0] == 1
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
    # 5 s: the reset and step at the end must fall within one TTL, with room for a machine 5x slower
    with serving(SEARCH, "--session-ttl-s", "5") as url:
        with GenericEnvClient(base_url=base_of(url, SEARCH)).sync() as client:
            first = client.reset(seed=2)
            assert sessions(url, 0, timeout_s=60) == 0  # the idle TTL closed it; the connection stays
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


# ---- OpenEnv's validator, its MCP client and the /mcp endpoint ------------------------------------------------
def validate(base: str, *, in_process: bool = True) -> tuple[int, dict]:
    """``openenv validate --url base``: its exit code and JSON report. ``in_process``: the function the CLI calls
    (OpenEnv's ``validate_running_environment``, the exit code as the CLI makes it: 1 unless the report passed),
    since the CLI's own process takes 5-14 s to import; else OpenEnv's CLI in a process, as a user runs it."""
    if in_process:
        from openenv.cli._validation import validate_running_environment

        report = validate_running_environment(base, timeout_s=30)
        return (0 if report.get("passed", False) else 1), report
    done = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", "--url", base, "--timeout", "30"],
                          capture_output=True, text=True, timeout=180, check=False)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("env_id", env_params(ENV_IDS))
def test_openenv_validate_passes_every_criterion(url, env_id):
    code, report = validate(base_of(url, env_id), in_process=env_id != SEARCH)  # the CLI's process once
    criteria = {c["id"]: c["passed"] for c in report["criteria"]}
    assert code == 0 and report["passed"], report
    assert criteria == dict.fromkeys(["openapi_version_available", "health_endpoint", "metadata_endpoint",
                                      "schema_endpoint", "mcp_endpoint", "mode_endpoint_consistency"], True)
    assert report["mode"] == "simulation" and report["standard_profile"] == "openenv-http/1.x"
    assert sessions(url, 0) == 0


def test_per_env_openapi_is_the_openenv_routes_relative_to_the_base_url(url):
    document = httpx.get(f"{base_of(url, SEARCH)}/openapi.json").json()
    assert {"/reset", "/step", "/state", "/schema", "/metadata", "/health", "/mcp", "/openapi.json"} == set(
        document["paths"])
    assert document["servers"] == [{"url": f"/openenv/{SEARCH}"}] and SEARCH in document["info"]["title"]
    parameters = [p["name"] for item in document["paths"].values() for op in item.values()
                  for p in op.get("parameters", [])]
    assert "env_id" not in parameters  # the env is the base URL's, not a parameter
    assert "/openenv/{env_id}/mcp" in httpx.get(f"{url}/openapi.json").json()["paths"]  # and in the server's own
    assert httpx.get(f"{url}/openenv/agentgym/SerchQA-v0/openapi.json").status_code == 404


def oracle_calls(env_id: str, seed: int) -> tuple[str, list[tuple[str, dict, str, float]]]:
    """The oracle's episode in process as tool calls: the prompt, and per call (tool, arguments, observation,
    reward)."""
    env = gym.make(env_id).unwrapped
    prompt, _ = env.reset(seed=seed)
    calls, done = [], False
    while not done:
        parsed = env.action_format.parse(env.oracle_action(), env.tools)
        name, arguments = ("answer", {"answer": parsed.answer}) if parsed.is_final else (
            parsed.tool_calls[0].name, dict(parsed.tool_calls[0].arguments))
        observation, reward, terminated, truncated, _ = env.step(
            {"answer": parsed.answer} if parsed.is_final else {"name": name, "arguments": arguments})
        calls.append((name, arguments, observation, reward))
        done = terminated or truncated
    env.close()
    return prompt, calls


def test_mcp_tool_client_lists_the_tools_and_plays_to_reward_1(url):
    prompt, calls = oracle_calls(SEARCH, seed=3)

    async def episode() -> tuple:
        async with MCPToolClient(base_url=base_of(url, SEARCH)) as env:
            tools = await env.list_tools()  # before any reset, as OpenEnv allows
            reset = await env.reset(seed=3)
            with pytest.raises(RuntimeError, match="tool_not_found"):
                await env.call_tool("python", code="1")
            with pytest.raises(RuntimeError, match="invalid_args"):
                await env.call_tool("answer", text="Tokyo")
            played = [await env.call_tool(name, **arguments) for name, arguments, _, _ in calls[:-1]]
            name, arguments, _, _ = calls[-1]
            last = await env.step(CallToolAction(tool_name=name, arguments=arguments))
            return tools, reset, played, last, await env.state()

    tools, reset, played, last, state = asyncio.run(episode())
    assert [t.name for t in tools] == ["search", "answer"]
    assert all(t.input_schema["additionalProperties"] is False for t in tools)
    assert tools[0].input_schema["required"] == ["query"]
    assert reset.observation.metadata["prompt"] == prompt  # the task, where MCPToolClient shows it
    assert [(p["observation"], p["reward"], p["terminated"]) for p in played] == [
        (observation, reward, False) for _, _, observation, reward in calls[:-1]]
    assert last.reward == 1.0 and last.done and last.observation.result["data"]["terminated"]
    assert state.step_count == len(calls)  # the unknown tool and the malformed answer took no turn
    assert sessions(url, 0) == 0


def rpc(base: str, method: str, params: dict | None = None, request_id: int = 1) -> dict:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}
    response = httpx.post(f"{base}/mcp", json=body, timeout=60)
    assert response.status_code == 200  # JSON-RPC errors are in the body, as OpenEnv's /mcp answers them
    return response.json()


def test_mcp_endpoint_checks_inputs_as_reset_does_and_plays_a_session(url):
    base = base_of(url, MATH)
    tools = rpc(base, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["code", "answer"]
    assert all(t["inputSchema"]["additionalProperties"] is False for t in tools)
    for bad in ({"seed": -1}, {"seed": 2**64}, {"seed": True}, {"seed": 1, "sed": 2}, {"options": {"index": -1}},
                {"kwargs": {"corpus": "/etc"}}):
        error = rpc(base, "openenv/session/create", bad)["error"]
        assert error["code"] == -32602 and error["message"], (bad, error)
    assert sessions(url, 0) == 0  # a bad create made nothing
    local = gym.make(MATH).unwrapped
    prompt, _ = local.reset(seed=2)
    created = rpc(base, "openenv/session/create", {"seed": 2})["result"]
    assert created["observation"] == prompt and sessions(url, 1) == 1
    session_id = created["session_id"]
    assert rpc(base, "tools/call", {"name": "code", "arguments": {"code": "1"}})["error"]["code"] == -32602
    assert rpc(base, "tools/call", {"name": "nope", "session_id": session_id})["error"]["code"] == -32602
    mistake = rpc(base, "tools/call", {"name": "code", "arguments": {"cod": "1"}, "session_id": session_id})
    assert mistake["result"]["isError"] and mistake["result"]["structuredContent"]["info"]["turn"] == 1
    local.step({"name": "code", "arguments": {"cod": "1"}})
    answer = play_oracle_over_mcp(local, lambda name, arguments: rpc(
        base, "tools/call", {"name": name, "arguments": arguments, "session_id": session_id})["result"])
    assert answer["data"]["reward"] == 1.0 and "reward 1" in answer["content"][0]["text"]
    over = rpc(base, "tools/call", {"name": "answer", "arguments": {"answer": "2"}, "session_id": session_id})
    assert "openenv/session/create" in over["error"]["message"]
    other = rpc(base_of(url, SEARCH), "tools/call", {"name": "search", "arguments": {"query": "x"},
                                                     "session_id": session_id})
    assert "not agentgym/SearchQA-v0" in other["error"]["message"]  # a session plays its own env only
    assert rpc(base, "openenv/session/close", {"session_id": session_id})["result"]["closed"]
    assert rpc(base, "tools/fly")["error"]["code"] == -32601
    for body, code in [(b"{not json", -32700), (b"{}", -32600), (b"[1]", -32600),
                       (b'{"jsonrpc": "2.0", "method": "tools/list", "params": [1]}', -32602)]:
        assert httpx.post(f"{base}/mcp", content=body).json()["error"]["code"] == code, body
    assert sessions(url, 0) == 0


def test_mcp_frames_act_on_the_connections_session(url):
    with connect(base_of(url, SEARCH).replace("http://", "ws://") + "/ws") as ws:
        def ask(data: dict) -> dict:
            ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, **data}}))
            answer = json.loads(ws.recv(timeout=30))
            assert answer["type"] == "mcp" and answer["data"]["id"] in (7, None)
            return answer["data"]

        assert [t["name"] for t in ask({"method": "tools/list"})["result"]["tools"]] == ["search", "answer"]
        assert "reset frame" in ask({"method": "tools/call", "params": {"name": "search"}})["error"]["message"]
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        called = ask({"method": "tools/call", "params": {"name": "search", "arguments": {"query": "capital"}}})
        assert "Doc 1" in called["result"]["data"]["observation"]
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["data"]["step_count"] == 1
        assert ask({})["error"]["code"] == -32600
