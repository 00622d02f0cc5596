"""Rollouts' MCP endpoints (``RolloutMcp``) in a Starlette app on a real uvicorn, driven by the MCP SDK's client."""

import contextlib
import threading
import time

import anyio
import httpx
import pytest
from helpers.gates import import_or_skip
from helpers.server_process import free_port

import agentgym
from agentgym.gateway.session import ToolSession

import_or_skip("mcp", "mcp")
from mcp import Client, ClientSession  # after the skip
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from agentgym.gateway.mcp import MCP_PATH, RolloutMcp

SEARCH = "agentgym/SearchQA-v0"
ROLLOUTS: dict[str, ToolSession] = {}  # what the app's lookup sees; each test sets its own


@pytest.fixture(scope="module")
def base():
    """The app on a free port in a thread of this process: a real socket, the real routes and lifespan."""
    import uvicorn

    mcp = RolloutMcp(ROLLOUTS.get)
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=mcp.routes, lifespan=lambda app: mcp.lifespan()),
                                           port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{server.config.port}"
    server.should_exit = True
    thread.join(timeout=30)
    assert not thread.is_alive()


def rollout(index: int) -> ToolSession:
    env = agentgym.make(SEARCH, action_format="dict")
    observation, info = env.reset(seed=0, options={"index": index})
    return ToolSession(env, observation, info)


def gold(session: ToolSession) -> str:
    return session.env.unwrapped.task.gold["golden_answers"][0]


@pytest.fixture
def rollouts():
    """Two rollouts on different tasks, "a" and "b"."""
    ROLLOUTS.clear()
    ROLLOUTS.update(a=rollout(0), b=rollout(1))
    assert gold(ROLLOUTS["a"]) != gold(ROLLOUTS["b"])
    yield ROLLOUTS
    for session in ROLLOUTS.values():
        session.env.close()
    ROLLOUTS.clear()


def endpoint(base: str, rollout_id: str) -> str:
    return base + MCP_PATH.format(rollout_id=rollout_id)


@contextlib.asynccontextmanager
async def connect(base: str, rollout_id: str):
    """An initialized ``ClientSession`` on the rollout's endpoint."""
    async with streamable_http_client(endpoint(base, rollout_id)) as (read, write), \
            ClientSession(read, write) as client:
        await client.initialize()
        yield client


def calls(base: str, rollout_id: str, *steps: tuple[str, dict]) -> list:
    """The ``tools/call`` results of ``steps``, in one client session."""
    async def run() -> list:
        async with connect(base, rollout_id) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]

    return anyio.run(run)


def test_tools_list_is_the_sessions_tools_and_no_reset(base, rollouts):
    async def listed() -> list:
        async with connect(base, "a") as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listed)
    expected = rollouts["a"].mcp_tools()
    assert [t.name for t in tools] == [t.name for t in expected] == ["search", "answer"]
    assert [t.input_schema for t in tools] == [t.input_schema for t in expected]
    assert [t.description for t in tools] == [t.description for t in expected]
    assert all("reward" in t.output_schema["properties"] for t in tools)
    assert rollouts["a"].steps == []  # listing is no step


def test_search_is_a_step_of_that_rollout(base, rollouts):
    [result] = calls(base, "a", ("search", {"query": "Jeypore"}))
    assert not result.is_error
    assert result.content[0].text == result.structured_content["observation"] and "Doc 1" in result.content[0].text
    assert result.structured_content["reward"] == 0.0 and not result.structured_content["terminated"]
    [step] = rollouts["a"].steps
    assert step.name == "search" and step.arguments == {"query": "Jeypore"} and step.observation.startswith("Doc 1")
    assert rollouts["b"].steps == [] and not rollouts["a"].ended


def test_the_gold_answer_ends_the_episode_and_a_call_after_the_end_changes_nothing(base, rollouts):
    session = rollouts["a"]
    answered, after = calls(base, "a", ("answer", {"answer": gold(session)}), ("search", {"query": "Jeypore"}))
    assert not answered.is_error and answered.structured_content["reward"] == 1.0
    assert answered.structured_content["terminated"] and "reward 1" in answered.content[0].text
    assert session.ended and session.reward == 1.0 and len(session.steps) == 1
    assert after.is_error and "episode is over" in after.content[0].text and after.structured_content is None
    assert len(session.steps) == 1 and session.reward == 1.0


def test_a_wrong_answer_scores_0(base, rollouts):
    [answered] = calls(base, "a", ("answer", {"answer": "Atlantis"}))
    assert not answered.is_error and answered.structured_content["reward"] == 0.0
    assert rollouts["a"].ended and rollouts["a"].reward == 0.0


def test_an_unknown_tool_or_a_malformed_answer_is_an_error_and_no_step(base, rollouts):
    unknown, malformed, reset = calls(base, "a", ("python", {"code": "1"}), ("answer", {"text": "India"}),
                                      ("reset", {}))
    assert unknown.is_error and "Unknown tool 'python'" in unknown.content[0].text
    assert malformed.is_error and "answer takes one argument" in malformed.content[0].text
    assert reset.is_error and "Unknown tool 'reset'" in reset.content[0].text  # the harness resets, not the agent
    assert rollouts["a"].steps == [] and not rollouts["a"].ended


def test_an_agents_mistake_with_a_tool_is_an_observation_and_a_step(base, rollouts):
    [mistake] = calls(base, "a", ("search", {"q": "Jeypore"}))
    assert mistake.is_error and "missing required argument 'query'" in mistake.content[0].text
    assert mistake.structured_content["info"]["action_error"]
    [step] = rollouts["a"].steps
    assert step.error and not rollouts["a"].ended


def test_two_rollouts_at_once_stay_separate(base, rollouts):
    results = {}

    async def both() -> None:
        async def play(rollout_id: str, answer: str) -> None:
            async with connect(base, rollout_id) as client:
                searched = await client.call_tool("search", {"query": rollout_id})
                results[rollout_id] = (searched, await client.call_tool("answer", {"answer": answer}))

        async with anyio.create_task_group() as group:
            group.start_soon(play, "a", gold(rollouts["a"]))
            group.start_soon(play, "b", gold(rollouts["a"]))  # a's answer is wrong for b

    anyio.run(both)
    assert results["a"][1].structured_content["reward"] == 1.0 and results["b"][1].structured_content["reward"] == 0.0
    for rollout_id, session in rollouts.items():
        assert [s.name for s in session.steps] == ["search", "answer"] and session.ended
        assert session.steps[0].arguments == {"query": rollout_id}
    assert rollouts["a"].reward == 1.0 and rollouts["b"].reward == 0.0


def test_a_step_runs_off_the_event_loop(base, rollouts, monkeypatch):
    release, step = threading.Event(), rollouts["a"].env.step

    def slow_step(action):
        assert release.wait(timeout=20), "b's call was not served while a's step ran"
        return step(action)

    monkeypatch.setattr(rollouts["a"].env, "step", slow_step)
    done = []

    async def both() -> None:
        async def one(rollout_id: str) -> None:
            async with connect(base, rollout_id) as client:
                await client.call_tool("search", {"query": rollout_id})
                done.append(rollout_id)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            await anyio.sleep(0.2)  # a's step has begun
            await one("b")
            release.set()

    anyio.run(both)
    assert done == ["b", "a"] and len(rollouts["a"].steps) == len(rollouts["b"].steps) == 1


def test_the_sdk_client_in_auto_mode_reaches_the_rollout(base, rollouts):
    async def auto() -> tuple:
        async with Client(endpoint(base, "b")) as client:  # probes server/discover first
            return [t.name for t in (await client.list_tools()).tools], await client.call_tool("search", {"query": "x"})

    names, searched = anyio.run(auto)
    assert names == ["search", "answer"] and not searched.is_error
    assert len(rollouts["b"].steps) == 1 and rollouts["a"].steps == []


def test_an_unknown_rollout_is_a_404_before_any_mcp(base, rollouts):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for method in ("POST", "GET", "DELETE"):
        answer = httpx.request(method, endpoint(base, "nope"), json=initialize, headers=headers)
        assert answer.status_code == 404, method
        error = answer.json()["error"]
        assert error["type"] == "not_found" and error["message"].startswith("No rollout 'nope'")
    ended = rollouts.pop("b")  # lookup no longer knows it: the rollout is over
    assert httpx.post(endpoint(base, "b"), json=initialize, headers=headers).status_code == 404
    assert ended.steps == [] and rollouts["a"].steps == []


def test_get_and_delete_are_405_and_another_host_is_refused(base, rollouts):
    for method in ("GET", "DELETE"):
        answer = httpx.request(method, endpoint(base, "a"), headers={"Accept": "text/event-stream"})
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
        assert answer.json()["error"]["type"] == "method_not_allowed"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}}
    rebound = httpx.post(endpoint(base, "a"), json=call, headers={
        "Host": "evil.example", "Accept": "application/json, text/event-stream"})
    assert rebound.status_code in (403, 421) and rollouts["a"].steps == []  # the SDK's DNS-rebinding protection


def test_threads_must_be_at_least_1():
    from agentgym.errors import ConfigError

    with pytest.raises(ConfigError, match="threads must be >= 1, got 0"):
        RolloutMcp(ROLLOUTS.get, threads=0)
