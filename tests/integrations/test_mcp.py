"""``agentgym mcp`` as a real process, driven by the MCP SDK's own client over streamable HTTP."""

import contextlib
import os
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
import pytest
from helpers.gates import env_params, import_or_skip, requires_envs
from helpers.server_process import free_port, serving

import agentgym  # noqa: F401 - registers the env ids
from agentgym.core.registry import create_env
from agentgym.integrations.mcp import MCP_INSTALL, create_mcp_app, mcp_path

import_or_skip("mcp", "mcp")
from mcp import Client, ClientSession  # after the skip
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

SEARCH, MATH, SHOP, CRASHY = "agentgym/SearchQA-v0", "agentgym/MathTool-v0", "agentgym/WebShop-v0", "test/Crashy-v0"
MAX_SESSIONS = 3


def mcp_serving(*args: str) -> Any:
    """``agentgym mcp *args`` on a free port, the crashy test env importable; yields (url, process)."""
    return serving(*args, return_process=True, preload="helpers.crashy_env", command_name="mcp")


def assert_clean_log(proc: subprocess.Popen) -> None:
    """No traceback in the server's output but those of the env failures it logged (the crashy env's)."""
    output = proc.stdout.read()
    assert output.count("Traceback") == output.count("env failure in MCP session"), output
    assert "Exception in ASGI application" not in output and "crashed" not in output, output


@pytest.fixture(scope="module")
def url():
    # the envs whose extras are here (their tests are skipped otherwise: env_params); in CI, every one
    served = [env_id for env_id in (SEARCH, MATH, SHOP) if not requires_envs([env_id]).mark.args[0]]
    with mcp_serving(*served, CRASHY, "--max-sessions", str(MAX_SESSIONS), "-k", "slow_s=0.5") as (base, proc):
        yield base
    assert_clean_log(proc)


def health(url: str, *, sessions: int | None = None, timeout_s: float = 10.0) -> dict:
    """/healthz, once it reports ``sessions`` open (an ended session frees its place at once, its env soon)."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = httpx.get(f"{url}/healthz").json()
        settled = sessions is None or (body["sessions"] == sessions and body["envs_open"] <= sessions)
        if settled or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


@contextlib.asynccontextmanager
async def connect(url: str, env_id: str, **transport):
    """An initialized ``ClientSession`` on ``env_id``'s endpoint; leaving it ends the MCP session (DELETE)."""
    async with streamable_http_client(url + mcp_path(env_id), **transport) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def as_call(env, text: str) -> tuple[str, dict]:
    """The oracle's text action as an MCP tool call: (tool name, arguments)."""
    parsed = env.action_format.parse(text, env.tools)
    if parsed.is_final:
        return "answer", {"answer": parsed.answer}
    [call] = parsed.tool_calls
    return call.name, dict(call.arguments)


def in_process(env_id: str, seed: int) -> tuple[list[tuple], list[tuple[str, dict]]]:
    """The oracle's episode in process, with the dict actions the MCP server sends: steps and the calls made."""
    env = create_env(env_id=env_id)
    observation, info = env.reset(seed=seed)
    steps, calls = [(observation, info["task_id"])], []
    done = False
    while not done:
        name, arguments = as_call(env, env.oracle_action())
        calls.append((name, arguments))
        observation, reward, terminated, truncated, info = env.step(
            {"answer": arguments["answer"]} if name == "answer" else {"name": name, "arguments": arguments})
        steps.append((observation, reward, terminated, truncated))
        done = terminated or truncated
    env.close()
    return steps, calls


async def play(session: ClientSession, seed: int, calls: list[tuple[str, dict]]) -> list[tuple]:
    """The same episode over MCP: reset, then each call; what the structured content says."""
    first = await session.call_tool("reset", {"seed": seed})
    assert not first.is_error and first.content[0].text == first.structured_content["observation"]
    steps = [(first.structured_content["observation"], first.structured_content["info"]["task_id"])]
    for name, arguments in calls:
        result = (await session.call_tool(name, arguments)).structured_content
        steps.append((result["observation"], result["reward"], result["terminated"], result["truncated"]))
    return steps


@pytest.mark.parametrize("env_id", env_params([SEARCH, MATH, SHOP]))
def test_the_oracle_plays_to_reward_1_as_in_process(url, env_id):
    expected, calls = in_process(env_id, seed=3)
    assert expected[-1][1] == 1.0 and len(calls) >= 2  # env tool calls, then the answer (or WebShop's purchase)

    async def episode() -> tuple[list, object]:
        async with connect(url, env_id) as session:
            steps = await play(session, 3, calls)
            return steps, await session.call_tool(*calls[0])

    steps, after_end = anyio.run(episode)
    assert steps == expected
    assert after_end.is_error and "episode is over" in after_end.content[0].text
    assert health(url, sessions=0)["envs_open"] == 0


@pytest.mark.parametrize("env_id", env_params([SEARCH, MATH, SHOP]))
def test_tools_list_is_reset_the_env_tools_and_answer(url, env_id):
    env = create_env(env_id=env_id)
    env.close()

    async def listed() -> tuple:
        async with connect(url, env_id) as session:
            return (await session.list_tools()).tools, session.initialize_result.instructions

    listed_tools, instructions = anyio.run(listed)
    tools = {t.name: t for t in listed_tools}
    has_answer = env.action_format.has_answer  # WebShop's episodes end by buying, not by an answer
    assert list(tools) == ["reset", *(s["function"]["name"] for s in env.tool_schemas())] + ["answer"] * has_answer
    for schema in env.tool_schemas():
        tool = tools[schema["function"]["name"]]
        # the env's schema, closed: the env refuses an argument its tool does not declare
        assert tool.input_schema == {**schema["function"]["parameters"], "additionalProperties": False}
        assert tool.description == schema["function"]["description"]
        assert {"observation", "reward", "terminated", "truncated"} <= set(tool.output_schema["properties"])
    if has_answer:
        assert tools["answer"].input_schema["required"] == ["answer"]
    assert set(tools["reset"].input_schema["properties"]) == {"seed", "task_id", "split", "index"}
    assert all(t.input_schema["additionalProperties"] is False for t in listed_tools)
    assert env_id in instructions and ("answer tool" in instructions) == has_answer


def test_concurrent_sessions_are_isolated(url):
    seeds = [0, 1]
    expected = {seed: in_process(SEARCH, seed) for seed in seeds}
    assert expected[0][0][0] != expected[1][0][0]  # two different tasks

    async def both() -> list:
        async with connect(url, SEARCH) as a, connect(url, SEARCH) as b:
            async with anyio.create_task_group() as group:
                results = {}

                async def one(session, seed):
                    results[seed] = await play(session, seed, expected[seed][1])

                group.start_soon(one, a, 0)
                group.start_soon(one, b, 1)
            opened = health(url)
            return [results, opened]

    results, opened = anyio.run(both)
    assert opened["sessions"] == 2 and opened["envs_open"] == 2  # one env per MCP session
    for seed in seeds:
        assert results[seed] == expected[seed][0] and results[seed][-1][1] == 1.0
    assert health(url, sessions=0)["envs_open"] == 0


def test_mistakes_and_calls_out_of_turn_are_tool_errors_and_the_episode_goes_on(url):
    async def errors() -> dict:
        out = {}
        async with connect(url, SEARCH) as session:
            out["before_reset"] = await session.call_tool("search", {"query": "x"})
            out["answer_before_reset"] = await session.call_tool("answer", {"answer": "x"})
            out["bad_seed"] = await session.call_tool("reset", {"seed": "three"})
            out["bad_option"] = await session.call_tool("reset", {"episode": 1})
            out["bad_task"] = await session.call_tool("reset", {"task_id": "no-such-task"})
            out["reset"] = await session.call_tool("reset", {"seed": 1, "index": 0})
            out["bad_argument"] = await session.call_tool("search", {"query": 3})  # the env's: an observation
            out["unknown_argument"] = await session.call_tool("search", {"q": "x"})
            out["bad_answer"] = await session.call_tool("answer", {"text": "x"})  # no action at all: no turn
            out["unknown_tool"] = await session.call_tool("python", {"code": "1"})
            out["search"] = await session.call_tool("search", {"query": "capital"})
        return out

    out = anyio.run(errors)
    text = {name: result.content[0].text for name, result in out.items()}
    assert all(out[name].is_error for name in out if name not in ("reset", "search")), text
    assert "call reset first" in text["before_reset"] and "call reset first" in text["answer_before_reset"]
    assert "'seed' must be an integer" in text["bad_seed"] and "not 'episode'" in text["bad_option"]
    assert "reset failed" in text["bad_task"] and "no-such-task" in text["bad_task"]
    assert "must be of type string" in text["bad_argument"]
    bad = out["bad_argument"].structured_content
    assert bad["info"]["action_error"] and bad["info"]["turn"] == 1 and not bad["terminated"]
    assert "missing required argument 'query'" in text["unknown_argument"]
    assert out["unknown_argument"].structured_content["info"]["turn"] == 2
    assert "one argument, 'answer'" in text["bad_answer"] and out["bad_answer"].structured_content is None
    assert "Unknown tool 'python'" in text["unknown_tool"]
    assert not out["search"].is_error and out["search"].structured_content["info"]["turn"] == 3  # it goes on
    assert "Doc 1" in out["search"].structured_content["observation"]
    # the tool's own output: the text protocol's wrapping (SearchQA's <information>...</information>) is not an
    # MCP client's to see; the structured observation keeps the env's text
    assert text["search"] == "\n\n".join(out["search"].structured_content["info"]["tool_outputs"])
    assert "<information>" in out["search"].structured_content["observation"] and "<information>" not in text["search"]


def schema_bounds(schema: dict) -> dict:
    """The bounds of a JSON schema's non-null branch: minimum, maximum, maxLength."""
    branch = next(b for b in schema.get("anyOf", [schema]) if b.get("type") != "null")
    return {k: branch[k] for k in ("minimum", "maximum", "maxLength") if k in branch}


def test_reset_has_the_http_protocols_bounds_and_every_tool_a_closed_schema(url):
    protocol = import_or_skip("agentgym.server.protocol", "server")

    async def listed() -> list:
        async with connect(url, SEARCH) as session:
            return (await session.list_tools()).tools

    tools = {t.name: t.input_schema for t in anyio.run(listed)}
    http_seed = protocol.CreateSessionRequest.model_json_schema()["properties"]["seed"]
    http_options = protocol.ResetOptions.model_json_schema()["properties"]
    reset = tools["reset"]["properties"]
    assert schema_bounds(reset["seed"]) == schema_bounds(http_seed) == {"minimum": 0, "maximum": 2**63 - 1}
    assert schema_bounds(reset["index"]) == schema_bounds(http_options["index"])
    assert schema_bounds(reset["split"]) == schema_bounds(http_options["split"])
    assert all(schema["additionalProperties"] is False for schema in tools.values()), tools


def test_a_bad_reset_is_an_error_that_changes_nothing():
    bad_resets = [{"seed": -1}, {"seed": 2**64}, {"seed": True}, {"seed": 1.5}, {"index": -1}, {"split": "x" * 201},
                  {"task_id": ["a"]}]

    with mcp_serving(SEARCH) as (url, proc):
        async def episode() -> tuple:
            async with connect(url, SEARCH) as session:
                await session.call_tool("reset", {"seed": 1, "index": 0})
                before = await session.call_tool("search", {"query": "capital"})
                refused = [await session.call_tool("reset", arguments) for arguments in bad_resets]
                during = health(url)
                after = await session.call_tool("search", {"query": "capital"})
                return before, refused, during, after

        before, refused, during, after = anyio.run(episode)
        log = proc.stdout.read()
    for arguments, result in zip(bad_resets, refused):
        assert result.is_error and result.structured_content is None, (arguments, result)
        name = next(iter(arguments))
        assert f"reset's {name!r} must be" in result.content[0].text, result.content[0].text
    assert "[0, 2**63)" in refused[0].content[0].text and "[0, 2**63)" in refused[1].content[0].text
    assert during["sessions"] == 1 and during["envs_open"] == 1  # the env was not closed
    # the episode went on: the same task, its second turn (a reset would have made it the first)
    assert not after.is_error and after.structured_content["info"]["turn"] == 2
    assert after.structured_content["observation"] == before.structured_content["observation"]
    assert "Traceback" not in log and "env failure" not in log, log  # nothing reached the env


def test_an_env_failure_is_a_tool_error_and_reset_recovers(url):
    async def crash() -> tuple:
        async with connect(url, CRASHY) as session:
            failed = await session.call_tool("reset", {"seed": 666})
            step = await session.call_tool("echo", {"text": "hi"})
            again = await session.call_tool("reset", {"seed": 1})
            echoed = await session.call_tool("echo", {"text": "hi"})
            return failed, step, again, echoed

    failed, step, again, echoed = anyio.run(crash)
    assert failed.is_error and "RuntimeError: boom on reset" in failed.content[0].text
    assert step.is_error and "call reset first" in step.content[0].text
    assert not again.is_error and again.structured_content["observation"].startswith("Say ok.")
    assert echoed.structured_content["observation"] == "\n\n<result>hi</result>\n\n"
    assert health(url, sessions=0)["envs_open"] == 0


def test_env_code_runs_off_the_event_loop(url):
    async def slow_and_fast() -> float:
        async with connect(url, CRASHY) as slow, connect(url, SEARCH) as fast:
            await fast.call_tool("reset", {"seed": 0})
            async with anyio.create_task_group() as group:
                group.start_soon(slow.call_tool, "reset", {"seed": 1})  # makes and resets the env: 2 x 0.5 s
                await anyio.sleep(0.1)
                start = time.monotonic()
                await fast.call_tool("search", {"query": "river"})
                return time.monotonic() - start

    assert anyio.run(slow_and_fast) < 0.6  # blocked, it would wait out the ~0.9 s left of the slow reset
    assert health(url, sessions=0)["envs_open"] == 0


def test_capacity_is_an_initialize_error_naming_the_limit_and_an_ended_session_frees_its_place(url):
    async def fill() -> tuple:
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(MAX_SESSIONS):
                await stack.enter_async_context(connect(url, SEARCH))
            read, write = await stack.enter_async_context(streamable_http_client(url + mcp_path(CRASHY)))
            refused_session = await stack.enter_async_context(ClientSession(read, write))
            with pytest.raises(MCPError) as refused:
                await refused_session.initialize()
            full = health(url)
        async with connect(url, SEARCH) as session:  # the others ended: there is room again
            reset = await session.call_tool("reset", {"seed": 0})
        return refused.value, full, reset

    refused, full, reset = anyio.run(fill)
    assert f"limit of {MAX_SESSIONS} MCP sessions" in refused.message and "--max-sessions" in refused.message
    assert full["sessions"] == MAX_SESSIONS
    assert not reset.is_error
    assert health(url, sessions=0)["envs_open"] == 0


def test_the_sdk_client_in_auto_mode_falls_back_to_a_session(url):
    async def auto() -> tuple:
        async with Client(url + mcp_path(SEARCH)) as client:  # probes server/discover first
            tools = [t.name for t in (await client.list_tools()).tools]
            return tools, await client.call_tool("reset", {"seed": 0})

    tools, reset = anyio.run(auto)
    assert tools == ["reset", "search", "answer"] and not reset.is_error
    assert health(url, sessions=0)["envs_open"] == 0


def test_an_idle_session_ends_and_its_env_is_closed_and_the_token_is_required():
    # 5 s: the reset and the /healthz after it fall within one TTL on a machine 5x slower
    with mcp_serving(SEARCH, "--session-ttl-s", "5", "--token", "s3cret") as (url, proc):
        unauthorized = httpx.post(url + mcp_path(SEARCH), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert unauthorized.status_code == 401 and "Bearer" in unauthorized.json()["error"]["message"]

        async def vanish() -> dict:
            headers = {"Authorization": "Bearer s3cret"}
            async with httpx.AsyncClient(headers=headers) as http, \
                    connect(url, SEARCH, http_client=http, terminate_on_close=False) as session:
                await session.call_tool("reset", {"seed": 0})
                return health(url)  # the client leaves without ending its session

        opened = anyio.run(vanish)
        assert opened["sessions"] == 1 and opened["envs_open"] == 1
        assert health(url, sessions=0, timeout_s=60)["envs_open"] == 0  # the idle timeout ended it
    assert_clean_log(proc)


def test_cli_help_and_its_mistakes_are_one_clear_line():
    from typer.testing import CliRunner

    from agentgym.cli import app

    result = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=100)
    assert result.exit_code == 0 and "<bool>" not in result.output and " ." not in result.output, result.output
    bad = subprocess.run([sys.executable, "-m", "agentgym.cli", "mcp", SEARCH, "-k", "topk=abc"], check=False,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr == "error: agentgym/SearchQA-v0: topk must be int, got 'abc' (str).\n"
    assert bad.stdout == ""


def test_cli_refuses_an_unknown_env_and_a_public_host_without_token():
    unknown = subprocess.run([sys.executable, "-m", "agentgym.cli", "mcp", "agentgym/SerchQA-v0"],
                             check=False, capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "SearchQA" in unknown.stderr  # did you mean
    public = subprocess.run([sys.executable, "-m", "agentgym.cli", "mcp", SEARCH, "--host", "0.0.0.0"],
                            check=False, capture_output=True, text=True, timeout=120, env={**os.environ, "AGENTGYM_TOKEN": ""})
    assert public.returncode == 2 and "without a token" in public.stderr


def test_a_missing_sdk_is_dependency_not_installed(monkeypatch):
    from agentgym.errors import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp now raises ImportError
    with pytest.raises(DependencyNotInstalled, match=MCP_INSTALL.replace("[", r"\[").replace("]", r"\]")):
        create_mcp_app([SEARCH])


def test_the_app_mounts_in_another_asgi_app_with_its_lifespan():
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    mcp_app = create_mcp_app([SEARCH], max_sessions=2)
    host = Starlette(routes=[Mount("/agents", app=mcp_app)],
                     lifespan=lambda host: mcp_app.router.lifespan_context(mcp_app))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)

        async def episode() -> object:
            async with connect(f"http://127.0.0.1:{port}/agents", SEARCH) as session:
                return await session.call_tool("reset", {"seed": 0})

        assert not anyio.run(episode).is_error
        assert health(f"http://127.0.0.1:{port}/agents", sessions=0)["envs_open"] == 0
    finally:
        server.should_exit = True
        thread.join(timeout=30)
