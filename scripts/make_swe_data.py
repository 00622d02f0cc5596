"""Generate the bundled SWE-bench data: real bugs in six small Python projects kept under ``scripts/swe_projects``.

    python scripts/make_swe_data.py [--seed 0] [--out agentgym/data/swe] [--no-validate]

Each project (an INI parser, a money library, a semantic-version library, a
slug/tokenizer library, an LRU/TTL cache and a date-range library) is a folder of
``scripts/swe_projects`` (see ``load_project`` for its layout): the project itself,
correct, with its own pytest suite, and its bugs. Each ``Bug`` injects one genuine
defect into one copy of its project (only that one), and carries the issue a user
would file, the tests a maintainer would add, and which of them expose the bug.
An instance's repository is committed with git under a fixed identity and date
(``materialize``), so ``base_commit`` is a pure function of the files; ``patch``
(the fix) and ``test_patch`` are real ``git diff`` output against that commit.

Unless ``--no-validate``, every instance is checked with the host's pytest before
anything is written: the buggy base passes its own suite, base + test_patch fails
exactly FAIL_TO_PASS and passes PASS_TO_PASS, and base + both patches passes
everything. The seed only picks issue numbers, dates, hints and footers; the same
seed gives byte-identical files on every machine and under any ``PYTHONHASHSEED``.
Projects and script use the standard library only.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import gzip
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentgym.envs.swe.repo import materialize

OWNER = "agentgym"
GIT_DATE = "2024-01-01T00:00:00+00:00"
GIT_IDENTITY = ("-c", "user.name=agentgym", "-c", "user.email=agentgym@example.invalid")
# Settings that keep a user's or the system's git configuration out of hashes and diffs.
GIT_HYGIENE = ("-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.excludesFile=/dev/null",
               "-c", "core.attributesFile=/dev/null", "-c", "core.hooksPath=/dev/null",
               "-c", "commit.gpgsign=false", "-c", "core.abbrev=7", "-c", "diff.noprefix=false")
PYTEST = ("-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q")
PYTEST_TIMEOUT_S = 60
SUMMARY_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
MIN_INSTANCES = 24
MIN_PROJECTS = 6


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``path``; ``old == ""`` appends ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Bug:
    """One defect: how to inject it, the issue a user files, and the tests that expose it."""

    key: str  # stable name inside its project
    kind: str  # the kind of bug, for the data card
    inject: tuple[Edit, ...]  # correct source -> buggy source (old: correct text, new: buggy text)
    tests: tuple[Edit, ...]  # the test_patch, as edits of tests/ files
    fail_to_pass: tuple[str, ...]  # pytest node ids the test_patch adds (or changes) that the bug fails
    title: str
    body: str  # the issue text, markdown
    hint: str  # a maintainer's hint (the seed decides whether it is shown)


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    files: dict[str, str]
    bugs: tuple[Bug, ...]


# ====================================================================== projects: read from scripts/swe_projects
PROJECTS_DIR = Path(__file__).resolve().parent / "swe_projects"
# What running a project's tests in place leaves behind (its .gitignore says the same): never part of a project.
LEFT_BEHIND = ("__pycache__", ".pytest_cache", "*.egg-info", "build", "dist")
VERSION_RE = re.compile(r'^version = "([^"]+)"$', flags=re.MULTILINE)


def read_tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` by its POSIX path relative to ``root``, as UTF-8 text, but what LEFT_BEHIND names.

    Line ends read as ``\\n`` (what the files hold), so a checkout with CRLF line ends gives the same data."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not any(fnmatch.fnmatch(part, pattern) for part in rel.parts[:-1]
                                      for pattern in LEFT_BEHIND):
            files[rel.as_posix()] = path.read_text(encoding="utf-8")
    return files


def add_tests(path: str, code: str) -> Edit:
    """Append test functions to ``path`` (after two blank lines)."""
    return Edit(path, "", "\n\n" + code.strip("\n") + "\n")


def load_bug(folder: Path, entry: dict) -> Bug:
    """A bug from its ``bugs.json`` entry and its folder: ``issue.md`` (the issue's body) and ``tests/``."""
    files = read_tree(folder)
    body = files.pop("issue.md", None)
    if body is None or not all(path.startswith("tests/") for path in files):
        raise SystemExit(f"{folder}: a bug folder holds issue.md and the tests it adds under tests/, got {sorted(files)}")
    return Bug(key=entry["key"], kind=entry["kind"], inject=tuple(Edit(**edit) for edit in entry["inject"]),
               tests=tuple(add_tests(path, code) for path, code in files.items()),
               fail_to_pass=tuple(entry["fail_to_pass"]), title=entry["title"], body=body.strip("\n"),
               hint=entry["hint"])


def load_project(root: Path) -> Project:
    """One project folder: ``repo/`` (the project, correct, as every instance's repository has it but for the
    bug), ``bugs.json`` (each bug's key, kind, issue title, hint, the edits that inject it and its FAIL_TO_PASS
    tests) and ``bugs/<key>/`` (the issue's body in ``issue.md``, the tests it adds under ``tests/``, each file
    appended to the repository's file of the same path). The version is the one in ``repo/pyproject.toml``."""
    files = read_tree(root / "repo")
    version = VERSION_RE.search(files.get("pyproject.toml", ""))
    if version is None:
        raise SystemExit(f"{root}: repo/pyproject.toml has no 'version = \"...\"' line")
    entries = json.loads((root / "bugs.json").read_text(encoding="utf-8"))
    folders = {path.name for path in (root / "bugs").iterdir() if path.is_dir()}
    if folders != {entry["key"] for entry in entries}:
        raise SystemExit(f"{root}: bugs/ must hold one folder per bugs.json entry, named by its key")
    bugs = tuple(load_bug(root / "bugs" / entry["key"], entry) for entry in entries)
    return Project(root.name, version.group(1), files, bugs)


def load_projects(folder: Path = PROJECTS_DIR) -> list[Project]:
    return [load_project(path) for path in sorted(folder.iterdir()) if path.is_dir()]


# ====================================================================== git: deterministic commits and diffs
def git_env() -> dict[str, str]:
    """The environment for every git call: no inherited GIT_* variables, no user or system config, fixed dates."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1",
               GIT_AUTHOR_DATE=GIT_DATE, GIT_COMMITTER_DATE=GIT_DATE, LC_ALL="C")
    return env


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["git", *GIT_HYGIENE, *args], cwd=repo, env=git_env(), input=stdin, capture_output=True,
                          text=True, encoding="utf-8", check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def write_files(files: dict[str, str], dest: Path) -> None:
    for rel, text in sorted(files.items()):
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        path.chmod(0o644)


def diff_from_head(repo: Path, changed: dict[str, str]) -> str:
    """The ``git diff`` that turns HEAD into HEAD with ``changed`` written over it; the work tree is reset after."""
    write_files(changed, repo)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames", "--src-prefix=a/",
               "--dst-prefix=b/")
    git(repo, "reset", "-q", "--hard", "HEAD")
    return diff


def diff_paths(diff: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", diff, flags=re.MULTILINE)


# ====================================================================== instances
ENVIRONMENTS = ("Ubuntu 22.04", "macOS 14.2", "Windows 11", "Debian 12", "Fedora 39")
PYTHONS = ("3.11.4", "3.11.6", "3.11.7")
FOOTERS = (
    "**Environment:** {name} {version}, Python {python} on {os}",
    "Versions: `{name}=={version}`, CPython {python} ({os})",
    "Environment:\n- {name} {version}\n- Python {python}\n- {os}",
)
CLOSINGS = ("", "Thanks!", "Happy to open a PR if this is confirmed.", "Thanks for the library!",
            "I can work on a fix if you agree this is a bug.")


def apply_edits(files: dict[str, str], edits: tuple[Edit, ...]) -> dict[str, str]:
    """``files`` with ``edits`` applied; each ``old`` must occur exactly once in its file."""
    out = dict(files)
    for edit in edits:
        text = out.get(edit.path, "")
        if edit.old == "":
            out[edit.path] = text + edit.new
            continue
        count = text.count(edit.old)
        if count != 1:
            raise SystemExit(f"edit of {edit.path}: the text to replace occurs {count} times, not once: {edit.old!r}")
        out[edit.path] = text.replace(edit.old, edit.new)
    return out


def collect_test_ids(files: dict[str, str]) -> list[str]:
    """Node ids of the top-level ``test_*`` functions in ``tests/test_*.py``, without running anything."""
    ids = []
    for path, text in sorted(files.items()):
        if path.startswith("tests/") and Path(path).name.startswith("test_") and path.endswith(".py"):
            names = [node.name for node in ast.parse(text).body
                     if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
            if len(set(names)) != len(names):
                raise SystemExit(f"{path}: two test functions share a name")
            ids += [f"{path}::{name}" for name in names]
    return ids


def seed_of(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def plan(seed: int, projects: list[Project]) -> list[dict]:
    """Who gets which issue number, date, hint and footer: everything the seed decides."""
    rows = []
    for project in sorted(projects, key=lambda p: p.name):
        r = random.Random(seed_of(seed, project.name))
        bugs = sorted(project.bugs, key=lambda bug: bug.key)
        r.shuffle(bugs)
        number = r.randint(2, 9)
        when = datetime(2024, 1, 2, tzinfo=timezone.utc) + timedelta(days=r.randint(0, 20))
        for bug in bugs:
            number += r.randint(1, 12)
            when += timedelta(days=r.randint(1, 25), seconds=r.randint(0, 86399))
            footer = r.choice(FOOTERS).format(name=project.name, version=project.version, python=r.choice(PYTHONS),
                                              os=r.choice(ENVIRONMENTS))
            closing = r.choice(CLOSINGS)
            show_hint = r.random() < 0.5
            rows.append({"project": project, "bug": bug, "number": number,
                         "created_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "statement": "\n\n".join(filter(None, (bug.title, bug.body, footer, closing))) + "\n",
                         "hints_text": bug.hint if show_hint else ""})
    return rows


def build_instance(row: dict, workdir: Path) -> tuple[dict, dict[str, str]]:
    """One instance (SWE-bench's fields) and its repository at ``base_commit``."""
    project, bug = row["project"], row["bug"]
    base = apply_edits(project.files, bug.inject)
    repo = workdir / f"{project.name}-{row['number']}"
    commit = materialize(base, repo, f"{project.name} {project.version}")
    fixed = {edit.path: project.files[edit.path] for edit in bug.inject}
    with_tests = apply_edits(base, bug.tests)
    patch = diff_from_head(repo, fixed)
    test_patch = diff_from_head(repo, {path: with_tests[path] for path in sorted({e.path for e in bug.tests})})
    fail_to_pass = sorted(bug.fail_to_pass)
    # SWE-bench's convention: the harness runs the test files the test patch touches, and PASS_TO_PASS lists
    # the other tests of those files
    touched = {e.path for e in bug.tests}
    pass_to_pass = [test for test in collect_test_ids(with_tests)
                    if test not in fail_to_pass and test.split("::", 1)[0] in touched]
    instance = {
        "instance_id": f"{OWNER}__{project.name}-{row['number']}",
        "repo": f"{OWNER}/{project.name}",
        "base_commit": commit,
        "environment_setup_commit": commit,
        "version": project.version,
        "problem_statement": row["statement"],
        "hints_text": row["hints_text"],
        "created_at": row["created_at"],
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(fail_to_pass),
        "PASS_TO_PASS": json.dumps(pass_to_pass),
    }
    return instance, base


def build(seed: int, projects: list[Project]) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """Every instance, sorted by repository and number, and each one's repository files by instance id."""
    instances, repos = [], {}
    with tempfile.TemporaryDirectory(prefix="swe-build-") as tmp:
        for row in plan(seed, projects):
            instance, files = build_instance(row, Path(tmp))
            instances.append(instance)
            repos[instance["instance_id"]] = files
    instances.sort(key=lambda inst: (inst["repo"], int(inst["instance_id"].rsplit("-", 1)[1])))
    return instances, repos


# ====================================================================== checks
def added_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def check_static(instances: list[dict], repos: dict[str, dict[str, str]]) -> list[str]:
    """Schema-level checks that need no test run."""
    problems = []
    ids = [inst["instance_id"] for inst in instances]
    per_repo: dict[str, int] = {}
    for inst in instances:
        per_repo[inst["repo"]] = per_repo.get(inst["repo"], 0) + 1
    if len(set(ids)) != len(ids):
        problems.append("instance ids are not unique")
    if len(instances) < MIN_INSTANCES or len(per_repo) < MIN_PROJECTS or min(per_repo.values()) < 4:
        problems.append(f"need >= {MIN_INSTANCES} instances from >= {MIN_PROJECTS} projects, 4+ each: {per_repo}")
    if set(repos) != set(ids):
        problems.append("the repositories are not exactly one per instance")
    for inst in instances:
        iid = inst["instance_id"]
        fail_to_pass, pass_to_pass = json.loads(inst["FAIL_TO_PASS"]), json.loads(inst["PASS_TO_PASS"])
        if not 1 <= len(fail_to_pass) <= 3 or set(fail_to_pass) & set(pass_to_pass):
            problems.append(f"{iid}: needs 1-3 FAIL_TO_PASS tests, none also in PASS_TO_PASS")
        patch_paths, test_paths = diff_paths(inst["patch"]), diff_paths(inst["test_patch"])
        if not patch_paths or any(path.startswith("tests/") or "/test_" in path for path in patch_paths):
            problems.append(f"{iid}: the patch must change source files only: {patch_paths}")
        if not test_paths or not all(path.startswith("tests/") for path in test_paths):
            problems.append(f"{iid}: the test_patch must change tests/ only: {test_paths}")
        text = inst["problem_statement"] + inst["hints_text"]
        leaked = [line for line in added_lines(inst["patch"]) if len(line) >= 12 and line in text]
        if leaked:
            problems.append(f"{iid}: the issue text quotes the fix: {leaked}")
    return problems


def parse_summary(log: str) -> dict[str, str]:
    """Test id -> status from pytest's ``-rA`` short summary (``PASSED id``, ``FAILED id - message``)."""
    results = {}
    for line in log.splitlines():
        status, _, rest = line.partition(" ")
        if status in SUMMARY_STATUSES and rest:
            results[rest.split(" - ", 1)[0].strip()] = status
    return results


def run_pytest(repo: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    try:
        proc = subprocess.run([sys.executable, *PYTEST], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=PYTEST_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"<pytest timed out>": "ERROR"}
    return parse_summary(proc.stdout)


def expect(stage: str, results: dict[str, str], *, passing: set[str], failing: set[str],
           either: frozenset[str] = frozenset()) -> list[str]:
    problems = []
    if set(results) != passing | failing | either:
        extra, missing = sorted(set(results) - passing - failing - either), sorted(passing | failing - set(results))
        problems.append(f"{stage}: ran tests {extra} that were not expected, and not {missing}")
    wrong = sorted(t for t in passing if results.get(t) != "PASSED")
    wrong += sorted(t for t in failing if results.get(t) not in ("FAILED", "ERROR"))
    if wrong:
        problems.append(f"{stage}: unexpected outcome for {[(t, results.get(t)) for t in wrong]}")
    return problems


def apply_diff_to_files(files: dict[str, str], diff: str, repo: Path) -> dict[str, str]:
    """``files`` with the test files as ``repo`` now has them (``diff`` already applied there)."""
    return {**files, **{path: (repo / path).read_text(encoding="utf-8") for path in diff_paths(diff)}}


def git_apply(repo: Path, diff: str, *, check: bool = False) -> bool:
    try:
        git(repo, "apply", *(["--check"] if check else []), "-", stdin=diff)
    except RuntimeError:
        return False
    return True


def check_instance(job: tuple[dict, dict[str, str]]) -> list[str]:
    """Run one instance's suite at base, base + test_patch and base + test_patch + patch."""
    inst, files = job
    iid = inst["instance_id"]
    fail_to_pass, pass_to_pass = set(json.loads(inst["FAIL_TO_PASS"])), set(json.loads(inst["PASS_TO_PASS"]))
    with tempfile.TemporaryDirectory(prefix="swe-check-") as tmp:
        repo = Path(tmp) / "repo"
        if materialize(files, repo, f"{inst['repo'].split('/', 1)[1]} {inst['version']}") != inst["base_commit"]:
            return [f"{iid}: the repository does not re-create base_commit"]
        if not (git_apply(repo, inst["patch"], check=True) and git_apply(repo, inst["test_patch"], check=True)):
            return [f"{iid}: patch or test_patch does not apply at base_commit"]
        base_tests = set(collect_test_ids(files))
        problems = expect(f"{iid} at base", run_pytest(repo), passing=base_tests - fail_to_pass, failing=set(),
                          either=frozenset(base_tests & fail_to_pass))
        git_apply(repo, inst["test_patch"])
        # the whole suite runs here; PASS_TO_PASS is the part of it in the files the test patch touches
        others = set(collect_test_ids(apply_diff_to_files(files, inst["test_patch"], repo))) - fail_to_pass
        if not pass_to_pass <= others:
            problems.append(f"{iid}: PASS_TO_PASS names tests the suite does not have")
        problems += expect(f"{iid} with test_patch", run_pytest(repo), passing=others, failing=fail_to_pass)
        git_apply(repo, inst["patch"])
        problems += expect(f"{iid} with both patches", run_pytest(repo), passing=others | fail_to_pass,
                           failing=set())
    return problems


def validate(instances: list[dict], repos: dict[str, dict[str, str]]) -> float:
    """Run every instance's checks (two at a time); raise SystemExit listing every problem. Returns seconds."""
    start = time.perf_counter()
    jobs = [(inst, repos[inst["instance_id"]]) for inst in instances]
    with ProcessPoolExecutor(max_workers=2) as pool:
        problems = [problem for found in pool.map(check_instance, jobs) for problem in found]
    if problems:
        raise SystemExit("validation failed:\n" + "\n".join(problems))
    return time.perf_counter() - start


# ====================================================================== output
def write(out: Path, instances: list[dict], repos: dict[str, dict[str, str]]) -> dict[str, int]:
    """``instances.jsonl`` and ``repos.json.gz`` (gzip with no name and mtime 0, so the bytes are reproducible)."""
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(inst, sort_keys=True, ensure_ascii=False) + "\n" for inst in instances)
    (out / "instances.jsonl").write_bytes(lines.encode("utf-8"))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as fh:
        fh.write(json.dumps(repos, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    (out / "repos.json.gz").write_bytes(buffer.getvalue())
    return {name: (out / name).stat().st_size for name in ("instances.jsonl", "repos.json.gz")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/swe")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip running the test suites (the output is the same, only unchecked)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    instances, repos = build(args.seed, load_projects())
    problems = check_static(instances, repos)
    if problems:
        raise SystemExit("invalid instances:\n" + "\n".join(problems))
    build_s = time.perf_counter() - start
    validate_s = None if args.no_validate else validate(instances, repos)
    sizes = write(args.out, instances, repos)
    per_repo: dict[str, int] = {}
    for inst in instances:
        per_repo[inst["repo"]] = per_repo.get(inst["repo"], 0) + 1
    stats = {
        "instances": len(instances),
        "projects": len(per_repo),
        "per_project": per_repo,
        "fail_to_pass": sum(len(json.loads(inst["FAIL_TO_PASS"])) for inst in instances),
        "pass_to_pass": sum(len(json.loads(inst["PASS_TO_PASS"])) for inst in instances),
        "bytes": sizes,
        "build_s": round(build_s, 1),
        "validate_s": None if validate_s is None else round(validate_s, 1),
    }
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
