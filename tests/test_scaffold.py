"""``agentgym init``: the package it writes installs (into a venv layered on this Python, nothing downloaded), its
own tests pass, and every command finds its env through the entry point alone: list, eval, serve (RemoteEnv
and OpenEnv's routes), train. A single ``.py`` file does the same through ``--import``."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers.byo import write_capitals
from helpers.gates import requires_server, requires_smollm2, requires_train

import agentgym
from agentgym.testing import serving

NAME, ENV_ID = "stockroom", "stockroom/Stockroom-v0"
# time from `agentgym init` to the new package's tests passing, venv and install included (the goal: < 2 minutes)
GREEN_WITHIN_S = 120.0


def agentgym_cli(*args: str, python: str = sys.executable, cwd: Path | None = None,
                 timeout_s: float = 300) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}
    return subprocess.run([python, "-m", "agentgym.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env=environment, timeout=timeout_s, check=False)


def test_init_writes_the_package_and_prints_the_next_three_commands(tmp_path):
    done = agentgym_cli("init", NAME, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote ./{NAME}: the env {ENV_ID} (module {NAME}). Next:", f"  pip install -e './{NAME}[test]'",
        f"  python -m pytest -q ./{NAME}", f"  agentgym eval --env {ENV_ID} --policy oracle"]
    files = sorted(str(p.relative_to(tmp_path / NAME)) for p in (tmp_path / NAME).rglob("*") if p.is_file())
    assert files == ["README.md", "pyproject.toml", f"src/{NAME}/__init__.py", f"src/{NAME}/data/test.jsonl",
                     f"src/{NAME}/data/train.jsonl", f"src/{NAME}/env.py", "tests/test_env.py"]
    pyproject = (tmp_path / NAME / "pyproject.toml").read_text()
    assert '[project.entry-points."agentgym.envs"]\nstockroom = "stockroom"' in pyproject
    assert 'dependencies = ["agentgym-suite"]' in pyproject
    readme = (tmp_path / NAME / "README.md").read_text()
    assert all(f"agentgym {command} " in readme for command in ("eval", "serve", "train"))
    # --dir, and a directory that exists but is empty
    (tmp_path / "empty").mkdir()
    done = agentgym_cli("init", "my-env", "--dir", str(tmp_path / "empty"))
    assert done.returncode == 0, done.stderr
    assert "the env my-env/MyEnv-v0 (module my_env)" in done.stdout
    assert (tmp_path / "empty" / "src" / "my_env" / "env.py").is_file()


@pytest.mark.parametrize(("name", "error"), [
    ("9lives", "'9lives' is not a package name; use letters and digits, words joined by - or _"),
    ("my env", "'my env' is not a package name"),
    ("a--b", "'a--b' is not a package name"),
    ("json", "would make a module named 'json', which is taken"),
    ("taken", "taken already exists and is not an empty directory; pass another NAME or --dir."),
])
def test_init_refuses_a_bad_name_and_a_directory_with_files_in_one_line(tmp_path, name, error):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    done = agentgym_cli("init", name, cwd=tmp_path)
    assert done.returncode == 2 and error in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # nothing written


@dataclass(frozen=True)
class Installed:
    """The package ``agentgym init`` wrote, installed in a venv of its own; how long until its tests passed."""

    root: Path
    python: str
    tests: subprocess.CompletedProcess
    seconds_to_green: float


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """``agentgym init``, a venv on top of this Python (agentgym and its dependencies are this Python's),
    ``pip install -e`` the package with nothing downloaded, then its own pytest."""
    work = tmp_path_factory.mktemp("init")
    start = time.monotonic()
    assert agentgym_cli("init", NAME, cwd=work).returncode == 0
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True, timeout=120)
    python = str(work / "venv" / "bin" / "python")
    own_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    # this Python's site-packages after the venv's own (as .ci/run layers verl's venv): --system-site-packages
    # would give the base interpreter's, not those of a venv this Python may itself be
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in site.getsitepackages())
    (Path(own_site) / "agentgym-base.pth").write_text(lines)
    # this Python's pip, run by the venv's Python, installs into the venv
    pip = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                          "-e", str(work / NAME)], capture_output=True, text=True, timeout=300, check=False)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    tests = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(work / NAME)],
                           capture_output=True, text=True, timeout=300, cwd=work,
                           env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False)
    return Installed(root=work, python=python, tests=tests, seconds_to_green=time.monotonic() - start)


def rows(installed: Installed, split: str) -> dict[str, dict]:
    """The package's rows of ``split``, by id."""
    path = installed.root / NAME / "src" / NAME / "data" / f"{split}.jsonl"
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}


def evaluate(installed: Installed, policy: str, *extra: str) -> dict:
    out = installed.root / f"{policy}.json"
    done = agentgym_cli("eval", "--env", ENV_ID, "--policy", policy, "--episodes", "6", "--summary-json", str(out),
                        "--results", str(installed.root / f"{policy}.jsonl"), *extra, python=installed.python,
                        cwd=installed.root)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())[ENV_ID]


@pytest.mark.slow
def test_the_new_packages_own_tests_pass_right_after_install(installed):
    assert installed.tests.returncode == 0, installed.tests.stdout + installed.tests.stderr
    assert "8 passed" in installed.tests.stdout  # check_env on both splits, attacks, probes, verifier, tool, server, doctest
    assert installed.seconds_to_green < GREEN_WITHIN_S


@pytest.mark.slow
def test_list_and_eval_find_it_through_the_entry_point_alone(installed):
    listed = agentgym_cli("list", python=installed.python)
    assert listed.returncode == 0 and "could not load" not in listed.stderr, listed.stderr
    line, = [line for line in listed.stdout.splitlines() if ENV_ID in line]
    assert f"package {NAME} ({NAME} = {NAME})" in line
    with pytest.raises(agentgym.errors.EnvNotFound):  # this Python does not have it: the venv's entry point does
        agentgym.make(ENV_ID)
    oracle = evaluate(installed, "oracle")  # --episodes 6 over the scaffold's 2 tasks: each played once
    assert (oracle["episodes"], oracle["tasks"]) == (2, 2) and oracle["mean_reward"] == 1.0
    assert oracle["success_rate"] == 1.0
    assert evaluate(installed, "random")["episodes"] == 2


@requires_server
@pytest.mark.slow
def test_serve_plays_it_through_remote_env_and_openenv_routes(installed):
    test_rows = rows(installed, "test")
    with serving(ENV_ID, command=[installed.python, "-m", "agentgym.cli"]) as (url, _):
        env = agentgym.RemoteEnv(ENV_ID, url)
        try:
            for seed in (0, 1):
                _, info = env.reset(seed=seed)
                row = test_rows[info["task_id"]]
                observation, reward, terminated, _, info = env.step(
                    {"name": "stock_level", "arguments": {"item": row["item"]}})
                assert observation.count(f"{row['item']}: {row['answer']} units in stock") == 1
                assert reward == 0.0 and not terminated and info["tool_calls"][0]["name"] == "stock_level"
                assert env.step(f"<answer>{row['answer']}</answer>")[1:3] == (1.0, True)
            env.reset(seed=0)
            assert env.step("<answer>1 or 7 or 33</answer>")[1:3] == (0.0, True)
        finally:
            env.close()
        base = f"{url}/openenv/{ENV_ID}"
        assert httpx.get(f"{base}/health").json() == {"status": "healthy"}
        assert httpx.get(f"{base}/metadata").json()["name"] == ENV_ID
        first = httpx.post(f"{base}/reset", json={"seed": 0}).json()
        task = test_rows[first["observation"]["info"]["task_id"]]
        assert first["done"] is False and task["question"] in first["observation"]["text"]
        step = httpx.post(f"{base}/step", json={"action": {"message": f"<answer>{task['answer']}</answer>"},
                                                "seed": 0}).json()
        assert step["reward"] == 1.0 and step["done"] is True


@requires_train
@requires_smollm2
@pytest.mark.slow
def test_train_runs_a_grpo_step_on_it(installed):
    from helpers.trainer_fixtures import tiny_model
    from transformers import AutoTokenizer

    from agentgym.lm.local import resolve_model

    # a tiny random model with SmolLM2's tokenizer: one step in seconds on a CPU
    model_dir = installed.root / "tiny-model"
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2"), local_files_only=True)
    tiny_model(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    run = installed.root / "run"
    done = agentgym_cli("train", "--env", ENV_ID, "--model", str(model_dir), "--steps", "1", "--group-size", "2",
                        "--groups-per-step", "1", "--max-turns", "2", "--max-turn-tokens", "8",
                        "--max-completion-tokens", "64", "--output-dir", str(run), python=installed.python)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "step    1/1" in done.stdout and (run / "final" / "model.safetensors").is_file()
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1] and metrics[0]["turns"] >= 1


@requires_server
@pytest.mark.slow
def test_a_single_file_through_import_evaluates_and_serves(tmp_path):
    path = write_capitals(tmp_path, "capitals", "byo/FileCapitals-v0")
    out = tmp_path / "summary.json"
    done = agentgym_cli("eval", "--import", str(path), "--env", "byo/FileCapitals-v0", "--policy", "oracle",
                        "--episodes", "4", "--summary-json", str(out), "--results", str(tmp_path / "r.jsonl"))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["byo/FileCapitals-v0"]["mean_reward"] == 1.0
    with serving("byo/FileCapitals-v0", "--import", str(path)) as (url, _):
        env = agentgym.RemoteEnv("byo/FileCapitals-v0", url)
        try:
            observation, _ = env.reset(seed=0)
            answer = "Lima" if "Peru" in observation else "Nairobi"
            assert env.step(f"<answer>{answer}</answer>")[1:3] == (1.0, True)
        finally:
            env.close()
        reset = httpx.post(f"{url}/openenv/byo/FileCapitals-v0/reset", json={"seed": 0}).json()
        assert reset["observation"]["text"] == observation


@requires_server
@requires_smollm2
@pytest.mark.slow
def test_an_env_only_the_server_has_is_made_and_evaluated_without_its_file(tmp_path):
    """The user served a single-file env and evaluated it from another machine: gym.make(id, remote=) and
    eval --remote needed the file imported on the client too. Now agentgym.make(id, remote=URL) gives a RemoteEnv,
    and eval --remote plans with what the server says (split, task count, env digest); --policy oracle, which
    reads the env's own code, says so in one line."""
    path = write_capitals(tmp_path, "capitals", "byo/ServerOnlyCapitals-v0")
    with serving("byo/ServerOnlyCapitals-v0", "--import", str(path)) as (url, _):
        env = agentgym.make("byo/ServerOnlyCapitals-v0", remote=url)  # never imported in this process
        try:
            observation, _ = env.reset(seed=0, options={"split": "test", "index": 0})
            assert env.step({"answer": "Lima" if "Peru" in observation else "Nairobi"})[1:3] == (1.0, True)
        finally:
            env.close()
        described = httpx.post(f"{url}/v1/envs/describe", json={"env_id": "byo/ServerOnlyCapitals-v0"}).json()
        assert described["tasks"] == 2 and described["split"] in described["splits"] and described["env_digest"]
        bad = httpx.post(f"{url}/v1/envs/describe", json={"env_id": "byo/ServerOnlyCapitals-v0", "split": "nope"})
        assert bad.status_code == 422 and "no split 'nope'" in bad.json()["message"]
        assert httpx.post(f"{url}/v1/envs/describe", json={"env_id": "byo/Nope-v0"}).status_code == 404
        common = ["eval", "--remote", url, "--env", "byo/ServerOnlyCapitals-v0", "--episodes", "2",
                  "--max-tokens", "8"]
        done = agentgym_cli(*common, "--results", str(tmp_path / "r.jsonl"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and [r["error"] for r in rows] == [None, None] and len({r["task_id"] for r in rows}) == 2
        done = agentgym_cli(*common, "--policy", "oracle", cwd=tmp_path)
        assert done.returncode == 2 and "only the server's here" in done.stderr and "Traceback" not in done.stderr


def test_a_fixed_verifier_rescores_a_stored_run_without_replaying_it(tmp_path):
    """The user fixed their verifier and could not re-score the run without playing it again: eval --rescore
    scores the stored answers with the current verifier, writes a new file beside the old, and says what moved;
    an env whose verdict needs the final state (WebShop's purchase) says it cannot."""
    path = write_capitals(tmp_path, "capitals", "byo/RescoredCapitals-v0")
    run = ["eval", "--import", str(path), "--env", "byo/RescoredCapitals-v0", "--policy", "oracle",
           "--episodes", "2", "--results", str(tmp_path / "r.jsonl")]
    assert agentgym_cli(*run, cwd=tmp_path).returncode == 0
    before = (tmp_path / "r.jsonl").read_text()
    assert [json.loads(line)["answer"] for line in before.splitlines()] == ["Lima", "Nairobi"]
    path.write_text(path.read_text().replace('verifier="qa"', 'verifier=lambda answer, task: answer == "Lima"'))
    done = agentgym_cli("eval", "--import", str(path), "--env", "byo/RescoredCapitals-v0", "--rescore",
                        str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "2 episodes re-scored, 1 changed (mean reward 1.000 -> 0.500, success 1.000 -> 0.500)" in said
    assert (tmp_path / "r.jsonl").read_text() == before  # never overwritten
    rows = [json.loads(line) for line in (tmp_path / "r.rescored.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 0.0] and rows[1]["rescored"]["reward"] == 1.0
    shop = ["eval", "--env", "agentgym/WebShop-v0", "--policy", "oracle", "--episodes", "1", "--results",
            str(tmp_path / "w.jsonl")]
    assert agentgym_cli(*shop, cwd=tmp_path).returncode == 0
    done = agentgym_cli("eval", "--env", "agentgym/WebShop-v0", "--rescore", str(tmp_path / "w.jsonl"), cwd=tmp_path)
    assert done.returncode == 0 and "agentgym/WebShop-v0: not re-scored: its verdict needs the episode's final state" \
        in " ".join(done.stderr.split())
    assert "0 episodes re-scored, 0 changed" in " ".join(done.stdout.split())


def test_more_episodes_than_tasks_plays_each_task_once_and_the_intervals_count_tasks(tmp_path):
    """A user's env of 2 tasks and --episodes 30: repeats were silent and counted as 30 independent episodes
    ("1.00 [0.89, 1.00]"); now each task plays once, the run says so, and n and the interval are over 2 tasks.
    With --samples 4 the 8 episodes are still 2 tasks' evidence, and the leaderboard says so."""
    path = write_capitals(tmp_path, "capitals", "byo/FewCapitals-v0")
    out = tmp_path / "summary.json"
    done = agentgym_cli("eval", "--import", str(path), "--env", "byo/FewCapitals-v0", "--policy", "oracle",
                        "--episodes", "30", "--summary-json", str(out), "--results", str(tmp_path / "r.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "--episodes 30, but the split has 2 tasks: playing each once" in " ".join(done.stdout.split())
    summary = json.loads(out.read_text())["byo/FewCapitals-v0"]
    assert (summary["episodes"], summary["tasks"], summary["success_rate"]) == (2, 2, 1.0)
    assert summary["success_rate_ci_low"] < 0.35  # Wilson over 2, not over 30 (0.89)
    board = tmp_path / "board"
    done = agentgym_cli("eval", "--import", str(path), "--env", "byo/FewCapitals-v0", "--policy", "oracle",
                        "--samples", "4", "--summary-json", str(out), "--results", str(tmp_path / "s.jsonl"),
                        "--submit", "--leaderboard-dir", str(board))
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())["byo/FewCapitals-v0"]
    assert (summary["episodes"], summary["tasks"]) == (8, 2)
    assert summary["success_rate"] == 1.0 and summary["success_rate_ci_low"] < 0.35  # Wilson over 2 tasks, not 8
    record = json.loads(next((board / "runs").rglob("*.json")).read_text())
    assert record["envs"]["byo/FewCapitals-v0"]["tasks"] == 2
    assert agentgym_cli("leaderboard", "build", "--dir", str(board)).returncode == 0
    assert "8 (2 tasks)" in (board / "README.md").read_text()


def test_a_changed_env_never_reuses_stored_episodes_and_says_so(tmp_path):
    """The user edited the verifier of their env and reran the same command: the old scores were reused (and
    adding episodes mixed old and new verifiers in one mean). Now the env's code, tasks and kwargs are part of each
    episode's key: the rerun plays afresh, says so, and its scores are the new verifier's."""
    path = write_capitals(tmp_path, "capitals", "byo/EditedCapitals-v0")
    path.write_text(path.read_text().replace('verifier="qa"', "verifier=lambda answer, task: answer == task['answer']"))
    results = tmp_path / "r.jsonl"
    command = ["eval", "--import", str(path), "--env", "byo/EditedCapitals-v0", "--policy", "oracle",
               "--results", str(results)]
    done = agentgym_cli(*command)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["reward"] for line in results.read_text().splitlines()] == [1.0, 1.0]
    done = agentgym_cli(*command)  # unchanged: everything is stored, nothing is played
    assert done.returncode == 0 and len(results.read_text().splitlines()) == 2
    path.write_text(path.read_text().replace("answer == task['answer']", "answer == task['answer'] * 2"))
    done = agentgym_cli(*command)
    assert done.returncode == 0, done.stderr
    assert "2 stored episodes of byo/EditedCapitals-v0 were played on another version of the env" in " ".join(
        done.stdout.split())
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 1.0, 0.0, 0.0]  # the new verifier scored the rerun
    path.write_text(path.read_text().replace('"answer": "Lima"', '"answer": "Lima, Peru"'))  # the data changed
    done = agentgym_cli(*command)
    assert done.returncode == 0 and "were played on another version of the env" in " ".join(done.stdout.split())
    assert len(results.read_text().splitlines()) == 6


@requires_server
def test_a_broken_task_list_makes_healthz_degraded_with_the_reason(tmp_path):
    """`agentgym serve` started and /healthz said "ok" while every session of the user's env failed (a task list
    its prompt cannot be built from). Now the server probes each env at start: the broken one is listed with why,
    the healthy one served beside it is not, and a failed session keeps it listed."""
    path = write_capitals(tmp_path, "capitals", "byo/GoodCapitals-v0")
    with path.open("a") as f:  # the same env again, its prompt naming a column no task has
        f.write('agentgym.register("byo/BrokenCapitals-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], '
                'verifier="qa", prompt_template="{question} {typo}")\n')
    with serving("byo/BrokenCapitals-v0", "byo/GoodCapitals-v0", "--import", str(path)) as (url, _):
        deadline = time.monotonic() + 60
        while (health := httpx.get(f"{url}/healthz").json())["status"] == "ok" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert health["status"] == "degraded"
        assert list(health["envs_failing"]) == ["byo/BrokenCapitals-v0"]
        assert "typo" in health["envs_failing"]["byo/BrokenCapitals-v0"]
        good = httpx.post(f"{url}/v1/sessions", json={"env_id": "byo/GoodCapitals-v0", "seed": 0})
        broken = httpx.post(f"{url}/v1/sessions", json={"env_id": "byo/BrokenCapitals-v0", "seed": 0})
        assert good.status_code == 201 and broken.status_code >= 400 and "typo" in broken.text
        assert list(httpx.get(f"{url}/healthz").json()["envs_failing"]) == ["byo/BrokenCapitals-v0"]


def test_a_bug_in_the_users_env_is_recorded_with_its_line(tmp_path):
    """A NameError in an --import file was recorded as "NameError: name 'x' is not defined", with no way to find
    it; the episode's error now names the file and line."""
    path = write_capitals(tmp_path, "buggy", "byo/BuggyCapitals-v0")
    path.write_text(path.read_text().replace('verifier="qa"', "verifier=lambda answer, task: undefined_table[answer]"))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "undefined_table" in text)
    results = tmp_path / "r.jsonl"
    done = agentgym_cli("eval", "--import", str(path), "--env", "byo/BuggyCapitals-v0", "--policy", "oracle",
                        "--results", str(results))
    assert done.returncode == 1  # errored episodes: the run is incomplete
    errors = [json.loads(text)["error"] for text in results.read_text().splitlines()]
    assert errors == [f"NameError: name 'undefined_table' is not defined (buggy.py:{line})"] * 2


def test_doctor_makes_and_resets_the_users_envs(tmp_path):
    """`agentgym doctor` had no --import and passed an env with broken data; now it makes and resets the user's envs
    and names what failed."""
    path = write_capitals(tmp_path, "capitals", "byo/DoctorGood-v0")
    with path.open("a") as f:
        f.write('agentgym.register("byo/DoctorBroken-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], '
                'verifier="qa", prompt_template="{question} {typo}")\n')
    done = agentgym_cli("doctor", "--import", str(path), "--strict")
    lines = done.stdout.splitlines()
    good = next(line for line in lines if "byo/DoctorGood-v0" in line)
    broken = next(line for line in lines if "byo/DoctorBroken-v0" in line)
    assert good.split()[0] == "ok" and "made and reset" in good
    assert broken.split()[0] == "missing" and "make and reset failed" in broken and "typo" in broken
    assert done.returncode == 1


@requires_server
def test_v1_verify_calls_the_users_env_verifier(tmp_path):
    """`/v1/verify` served built-in verifiers by name only; `env:<env id>` is now the served env's own verifier on
    one of its tasks, as its episodes are scored."""
    path = write_capitals(tmp_path, "capitals", "byo/VerifiedCapitals-v0")
    path.write_text(path.read_text().replace('verifier="qa"', "verifier=lambda answer, task: answer == task['answer']"))
    with serving("byo/VerifiedCapitals-v0", "--import", str(path)) as (url, _):
        created = httpx.post(f"{url}/v1/sessions", json={"env_id": "byo/VerifiedCapitals-v0", "seed": 0}).json()
        task_id = created["info"]["task_id"]
        gold = "Lima" if "Peru" in created["observation"] else "Nairobi"

        def verify(prediction, task):
            return httpx.post(f"{url}/v1/verify", json={"verifier": "env:byo/VerifiedCapitals-v0",
                                                         "prediction": prediction, "task": task})

        assert verify(gold, {"task_id": task_id}).json()["reward"] == 1.0
        assert verify(gold.lower(), {"task_id": task_id}).json()["reward"] == 0.0  # the user's exact match
        assert verify(gold, {"answer": gold}).status_code == 422
        wrong = httpx.post(f"{url}/v1/verify", json={"verifier": "env:byo/Other-v0", "prediction": "x",
                                                      "task": {"task_id": task_id}})
        assert wrong.status_code == 422 and "does not serve" in wrong.json()["message"]
