"""The bundled SWE-bench data: the script reproduces it, its schema, and gold patches that fix their bugs."""

import gzip
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentgym.envs.swe.repo import materialize

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "agentgym" / "data" / "swe"
SCRIPT = ROOT / "scripts" / "make_swe_data.py"
KEYS = ["FAIL_TO_PASS", "PASS_TO_PASS", "base_commit", "created_at", "environment_setup_commit", "hints_text",
        "instance_id", "patch", "problem_statement", "repo", "test_patch", "version"]
# One instance from each of three projects: two FAIL_TO_PASS tests, a missing return, a mutable default argument.
CHECKED = ("agentgym__iniconf-37", "agentgym__tinymoney-6", "agentgym__ttlcache-12")
GIT_DATE = "2024-01-01T00:00:00+00:00"
TEST_ID = re.compile(r"^tests/test_\w+\.py::test_\w+$")


def instances() -> list[dict]:
    lines = (DATA / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def repos() -> dict[str, dict[str, str]]:
    with gzip.open(DATA / "repos.json.gz", "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def diff_paths(diff: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", diff, flags=re.MULTILINE)


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1",
               GIT_AUTHOR_DATE=GIT_DATE, GIT_COMMITTER_DATE=GIT_DATE)
    proc = subprocess.run(["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def run_pytest(repo: Path) -> dict[str, str]:
    """Test id -> PASSED/FAILED/ERROR, read from the ``-rA`` summary lines as SWE-bench's log parser does."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    results = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("PASSED", "FAILED", "ERROR") and rest:
            results[rest.split(" - ", 1)[0]] = status
    return results


def test_generator_reproduces_the_bundled_files(tmp_path):
    """Regenerating with the default seed gives the committed bytes, whatever the hash seed."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--seed", "0", "--out", str(tmp_path), "--no-validate"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "123"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["instances"] == len(instances())
    for name in ("instances.jsonl", "repos.json.gz"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


def test_schema_and_counts():
    rows = instances()
    ids = [row["instance_id"] for row in rows]
    assert len(rows) >= 24 and len(set(ids)) == len(ids)
    per_project = Counter(row["repo"] for row in rows)
    assert len(per_project) >= 6 and min(per_project.values()) >= 4
    for row in rows:
        assert sorted(row) == KEYS and all(isinstance(value, str) for value in row.values())
        project = row["repo"].removeprefix("agentgym/")
        assert re.fullmatch(rf"agentgym__{project}-\d+", row["instance_id"])
        assert re.fullmatch(r"[0-9a-f]{40}", row["base_commit"]) and row["environment_setup_commit"] == row["base_commit"]
        assert re.fullmatch(r"\d+\.\d+", row["version"])
        assert re.fullmatch(r"2024-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["created_at"])
        title, blank, body = row["problem_statement"].partition("\n\n")
        assert title and blank and len(body) > 100 and "diff --git" not in row["problem_statement"]
        fail_to_pass, pass_to_pass = json.loads(row["FAIL_TO_PASS"]), json.loads(row["PASS_TO_PASS"])
        assert 1 <= len(fail_to_pass) <= 3 and len(pass_to_pass) >= 5
        assert not set(fail_to_pass) & set(pass_to_pass)
        assert all(TEST_ID.match(test) for test in fail_to_pass + pass_to_pass)
        patch_paths, test_paths = diff_paths(row["patch"]), diff_paths(row["test_patch"])
        assert row["patch"].startswith("diff --git a/") and row["test_patch"].startswith("diff --git a/")
        assert patch_paths and not any(path.startswith("tests/") for path in patch_paths)
        assert test_paths and all(path.startswith("tests/") for path in test_paths)
        assert {test.split("::")[0] for test in fail_to_pass} <= set(test_paths)
        # SWE-bench's convention: PASS_TO_PASS is the rest of the test files the test patch touches
        assert {test.split("::")[0] for test in pass_to_pass} <= set(test_paths)


def test_repositories_match_the_instances():
    rows, files_by_id = instances(), repos()
    assert sorted(files_by_id) == sorted(row["instance_id"] for row in rows)
    for row in rows:
        files = files_by_id[row["instance_id"]]
        project = row["repo"].removeprefix("agentgym/")
        assert f'version = "{row["version"]}"' in files["pyproject.toml"]
        assert {"README.md", f"{project}/__init__.py"} <= set(files)
        assert set(diff_paths(row["patch"])) <= set(files)
        existing_tests = {test.split("::")[0] for test in json.loads(row["PASS_TO_PASS"])}
        assert existing_tests <= set(files) | set(diff_paths(row["test_patch"]))


def test_data_card_lists_every_instance():
    card = (DATA / "README.md").read_text(encoding="utf-8")
    for row in instances():
        assert f"| `{row['instance_id']}` |" in card


@pytest.mark.parametrize("instance_id", CHECKED)
def test_gold_patch_fixes_the_failing_tests(tmp_path, instance_id):
    """Re-create base_commit from repos.json.gz, then FAIL_TO_PASS fails before the gold patch and passes after."""
    row = next(row for row in instances() if row["instance_id"] == instance_id)
    files = repos()[instance_id]
    repo = tmp_path / "repo"
    project = row["repo"].removeprefix("agentgym/")
    assert materialize(files, repo, f"{project} {row['version']}") == row["base_commit"]
    fail_to_pass, pass_to_pass = set(json.loads(row["FAIL_TO_PASS"])), set(json.loads(row["PASS_TO_PASS"]))
    git(repo, "apply", "-", stdin=row["test_patch"])
    before = run_pytest(repo)  # the whole suite: everything but FAIL_TO_PASS passes
    assert fail_to_pass | pass_to_pass <= set(before)
    assert {test for test, status in before.items() if status != "PASSED"} == fail_to_pass
    git(repo, "apply", "-", stdin=row["patch"])
    after = run_pytest(repo)
    assert set(after) == set(before) and set(after.values()) == {"PASSED"}
