"""Envs that are not agentgym's: ``agentgym.register``, a package's ``agentgym.envs`` entry point, ``--import``.

Each path a built-in env works on works for them: ``gym.make``, ``agentgym list`` (with where each comes from),
``agentgym eval``, ``agentgym serve`` with ``--processes 2`` and ``RemoteEnv``, the MCP server; a plugin that
fails to import is listed with its error while every other env keeps working, and a duplicate id is refused
naming both sources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.byo import write_capitals
from helpers.gates import requires_server
from helpers.server_process import serving

import agentgym
from agentgym.core.plugins import import_envs
from agentgym.errors import ConfigError


def write_plugin(directory: Path, name: str, env_id: str) -> Path:
    return write_capitals(directory, name, env_id)


def fake_package(root: Path, dist: str, points: dict[str, str]) -> None:
    """A distribution on ``root`` (a path entry) that declares ``agentgym.envs`` entry points."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[agentgym.envs]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))


def run(code: str, root: Path, **env: str) -> subprocess.CompletedProcess:
    paths = [str(root), os.environ.get("PYTHONPATH", "")]
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **env})


def test_an_installed_packages_entry_point_registers_its_env_and_a_broken_one_is_listed_not_fatal(tmp_path):
    write_plugin(tmp_path, "good_envs", "byo/Good-v0")
    fake_package(tmp_path, "good-envs", {"good": "good_envs"})
    fake_package(tmp_path, "broken-envs", {"broken": "no_such_module_anywhere"})
    proc = run("import json, agentgym\nfrom agentgym.core.plugins import plugin_errors\n"
               "from agentgym.core.registry import env_info\n"
               "env = agentgym.make('byo/Good-v0'); env.reset(seed=0)\n"
               "print(json.dumps({'source': env_info('byo/Good-v0').source, 'ids': agentgym.env_ids(),\n"
               "                  'errors': plugin_errors(), 'reward': env.step(env.unwrapped.oracle_action())[1]}))",
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["source"] == "package good-envs (good = good_envs)" and out["reward"] == 1.0
    assert "agentgym/SearchQA-v0" in out["ids"] and "byo/Good-v0" in out["ids"]  # the broken one took none down
    (label, error), = out["errors"].items()
    assert "broken-envs" in label and "ModuleNotFoundError" in error
    listed = subprocess.run([sys.executable, "-m", "agentgym.cli", "list"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}, timeout=120)
    assert listed.returncode == 0 and "byo/Good-v0" in listed.stdout and "package good-envs" in listed.stdout
    assert "could not load the env plugin package broken-envs" in listed.stderr


def test_a_duplicate_id_is_refused_naming_both_sources(tmp_path):
    first, second = write_plugin(tmp_path, "first", "byo/Twice-v0"), write_plugin(tmp_path, "second", "byo/Twice-v0")
    import_envs([str(first)])
    with pytest.raises(ConfigError) as caught:
        import_envs([str(second)])
    assert f"file {first}" in str(caught.value) and f"file {second}" in str(caught.value)
    with pytest.raises(ConfigError, match="already registered by agentgym"):
        agentgym.register("agentgym/SearchQA-v0", agentgym.ToolEnv, tasks=[{"question": "q", "answer": "a"}])


def test_import_of_a_file_registers_it_and_passes_it_on_to_child_processes(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTGYM_IMPORT", raising=False)
    path = write_plugin(tmp_path, "capitals_file", "byo/FromFile-v0")
    import_envs([str(path)])
    assert agentgym.core.registry.env_info("byo/FromFile-v0").source == f"file {path}"
    assert os.environ["AGENTGYM_IMPORT"] == str(path)
    child = run("import agentgym; print('byo/FromFile-v0' in agentgym.env_ids())", tmp_path)
    assert child.stdout.strip() == "True", child.stderr
    with pytest.raises(ConfigError, match="no such file"):
        import_envs([str(tmp_path / "missing.py")])
    (tmp_path / "raises.py").write_text("raise RuntimeError('broken on purpose')\n")
    with pytest.raises(ConfigError, match="broken on purpose"):
        import_envs([str(tmp_path / "raises.py")])


def test_the_cli_commands_take_import(tmp_path):
    path = write_plugin(tmp_path, "capitals_cli", "byo/CliCapitals-v0")
    results = tmp_path / "results.jsonl"
    proc = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--import", str(path), "--env",
                           "byo/CliCapitals-v0", "--policy", "oracle", "--episodes", "2", "--results", str(results)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [json.loads(line)["reward"] for line in results.read_text().splitlines()] == [1.0, 1.0]
    missing = subprocess.run([sys.executable, "-m", "agentgym.cli", "list", "--import", "no_such_module_xyz"],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no_such_module_xyz" in missing.stderr and "Traceback" not in missing.stderr


@requires_server
def test_a_plugin_env_is_served_by_several_processes_and_played_remotely(tmp_path):
    path = write_plugin(tmp_path, "capitals_served", "byo/Served-v0")
    import_envs([str(path)])
    with serving("byo/Served-v0", "--import", str(path), "--processes", "2") as url:
        local, remote = agentgym.make("byo/Served-v0"), agentgym.make("byo/Served-v0", remote=url)
        for env in (local, remote):  # gym.make(remote=) keeps the registered tasks and tools here: the server has its own
            env.reset(options={"index": 0})
        assert remote.step("<capital_of>Peru</capital_of>")[0] == local.step("<capital_of>Peru</capital_of>")[0]
        assert remote.step("<answer>Lima</answer>")[1] == local.step("<answer>Lima</answer>")[1] == 1.0
        remote.close()


@requires_server
def test_a_plugin_env_is_served_over_mcp_with_its_tools(tmp_path):
    pytest.importorskip("mcp", reason="needs the mcp extra")
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agentgym.integrations.mcp import mcp_path

    path = write_plugin(tmp_path, "capitals_mcp", "byo/McpCapitals-v0")

    async def play(url: str) -> tuple[list[str], str, bool]:
        async with streamable_http_client(url + mcp_path("byo/McpCapitals-v0")) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert not (await session.call_tool("reset", {"seed": 0, "index": 0})).is_error
            looked = await session.call_tool("capital_of", {"country": "Peru"})
            answered = await session.call_tool("answer", {"answer": "Lima"})
            assert not answered.is_error, answered.content
            return names, looked.content[0].text, answered.structured_content["reward"] == 1.0

    with serving("byo/McpCapitals-v0", "--import", str(path), command_name="mcp") as url:
        names, looked, rewarded = anyio.run(play, url)
    assert names == ["reset", "capital_of", "answer"] and "Lima" in looked and rewarded


@requires_server
def test_a_plugin_env_answers_on_the_batch_and_agentgym_compatible_routes(tmp_path):
    from fastapi.testclient import TestClient

    from agentgym.server import create_app

    import_envs([str(write_plugin(tmp_path, "capitals_routes", "byo/RoutesCapitals-v0"))])
    with TestClient(create_app(["byo/RoutesCapitals-v0"])) as client:
        made = client.post("/v1/create", json={"sessions": [{"env_id": "byo/RoutesCapitals-v0", "seed": 0}] * 2})
        ids = [r["session_id"] for r in made.json()["results"]]
        assert made.status_code == 200 and all(ids)
        stepped = client.post("/v1/step", json={"steps": [{"session_id": i, "action": "<capital_of>Peru</capital_of>"}
                                                          for i in ids]}).json()["results"]
        assert all("Lima" in r["result"]["observation"] for r in stepped), stepped
        base = "/byo/RoutesCapitals-v0"  # AgentGym's env-server protocol
        session = client.post(f"{base}/create").json()["id"]
        assert client.post(f"{base}/reset", json={"id": session, "data_idx": 0}).status_code == 200
        step = client.post(f"{base}/step", json={"id": session, "action": "<capital_of>Kenya</capital_of>"})
        assert step.status_code == 200 and "Nairobi" in json.dumps(step.json())
