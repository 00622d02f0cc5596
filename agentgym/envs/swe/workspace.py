"""An episode's working copy inside a sandbox, and the SWE-agent style tools that act on it.

Two layouts. Bundled instances: the repository is written into the sandbox at
``/work/repo`` (bwrap: a private tmpfs; docker: the container's) and committed.
Official SWE-bench instances: the container is the instance's own swebench image,
whose repository sits at ``/testbed`` at ``base_commit`` with its conda env
``testbed`` installed; that path is handed to the sandbox's unprivileged call uid
and the env's activation is captured once, so every tool runs in it. Every tool
is one sandbox call: shell commands run with a timeout, and the file tools run a
small helper in the sandbox's Python with their arguments on stdin, so nothing the
agent writes runs on the host. The working copy's diff against ``base_commit`` is
the prediction.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from agentgym.envs.swe.repo import GIT_ENV, commit_command
from agentgym.errors import SandboxError, ToolError
from agentgym.sandbox import Limits, Sandbox, make_sandbox

__all__ = ["CONDA_ACTIVATE", "REPO_DIR", "TESTBED", "Workspace"]

REPO_DIR = "/work/repo"
TESTBED = "/testbed"  # where swebench instance images keep the repository
CONDA_ACTIVATE = "source /opt/miniconda3/bin/activate && conda activate testbed"
MAX_OUTPUT_CHARS = 10_000
# PATH stays the sandbox's own (it maps python to the sandbox's interpreter)
_ENV = {**GIT_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8"}
# in an instance image the image's own git and pytest settings apply (its eval script sets git config)
_IMAGE_ENV = {"GIT_TERMINAL_PROMPT": "0", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8"}
_NOT_INHERITED = {"PWD", "OLDPWD", "SHLVL", "_"}

# Runs inside the sandbox: the file tools. Arguments arrive as JSON on stdin; output is the observation.
_FILE_TOOLS = r'''
import json, os, re, sys
args = json.load(sys.stdin)
ROOT = args.pop("root")

def fail(message):
    print(message)
    sys.exit(3)

def resolve(path):
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(ROOT, path))
    if full != ROOT and not full.startswith(ROOT + os.sep):
        fail(f"{path!r} is outside the repository ({ROOT}); use a path inside it.")
    return full

def numbered(lines, first):
    return "".join(f"{first + i:6d}\t{line}" for i, line in enumerate(lines))

def view(path, start=None, end=None):
    full = resolve(path)
    if os.path.isdir(full):
        out = []
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            depth = dirpath[len(full):].count(os.sep)
            if depth >= 2:
                dirnames[:] = []
            for name in sorted(filenames):
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
        print("\n".join(out) or "(empty directory)")
        return
    if not os.path.isfile(full):
        fail(f"No such file or directory: {path!r}. Use view('.') to list the repository.")
    with open(full, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    first = max(1, int(start or 1))
    last = len(lines) if end in (None, -1) else min(len(lines), int(end))
    if first > max(1, len(lines)):
        fail(f"{path} has {len(lines)} lines; start={first} is past the end.")
    print(numbered(lines[first - 1:last], first), end="")

def edit(path, old, new):
    full = resolve(path)
    if not os.path.isfile(full):
        fail(f"No such file: {path!r}. Use create(path, content) for a new file.")
    with open(full, encoding="utf-8") as f:
        text = f.read()
    count = text.count(old) if old else 0
    if count == 0:
        fail(f"The old text was not found in {path}; view the file and copy the exact text, whitespace included.")
    if count > 1:
        fail(f"The old text appears {count} times in {path}; include more surrounding lines so it is unique.")
    text = text.replace(old, new, 1)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)
    at = text[: text.index(new) if new else 0].count("\n")
    lines = text.splitlines(keepends=True)
    lo = max(0, at - 4)
    print(f"Edited {path}. The changed region now reads:\n" + numbered(lines[lo:at + new.count("\n") + 5], lo + 1),
          end="")

def create(path, content):
    full = resolve(path)
    if os.path.exists(full):
        fail(f"{path} already exists; use edit(path, old, new) to change it.")
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(content)
    print(f"Created {path} ({content.count(chr(10)) + (not content.endswith(chr(10)) and bool(content))} lines).")

def search(pattern, path="."):
    full = resolve(path)
    try:
        regex = re.compile(pattern)
    except re.error as e:
        fail(f"Invalid regular expression {pattern!r}: {e}.")
    hits = []
    files = [full] if os.path.isfile(full) else [
        os.path.join(d, n) for d, ds, ns in os.walk(full) for n in sorted(ns)
        if not any(p.startswith(".") or p == "__pycache__" for p in os.path.relpath(d, ROOT).split(os.sep) if p != ".")]
    for name in sorted(files):
        try:
            with open(name, encoding="utf-8") as f:
                for no, line in enumerate(f, 1):
                    if regex.search(line):
                        hits.append(f"{os.path.relpath(name, ROOT)}:{no}: {line.rstrip()}")
        except (UnicodeDecodeError, OSError):
            continue
    if not hits:
        print(f"No matches for {pattern!r} in {path}.")
    else:
        more = f"\n[{len(hits) - 100} more matches not shown; narrow the pattern or the path]" if len(hits) > 100 else ""
        print("\n".join(hits[:100]) + more)

op = args.pop("op")
{"view": view, "edit": edit, "create": create, "search": search}[op](**args)
'''


class Workspace:
    """One repository in one sandbox: check out (or attach to an image's), act with tools, diff, run tests."""

    def __init__(self, *, backend: str = "bwrap", image: str | None = None, timeout_s: float = 60.0,
                 memory_mb: int = 2048, repo_dir: str = REPO_DIR, activate: str | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        """``repo_dir=TESTBED`` (docker only) works in the image's own repository; ``activate`` is a shell
        command whose environment every call then gets (``CONDA_ACTIVATE`` for swebench images); ``preload``:
        modules the sandbox's supervisor imports once, before any call (its Python calls start with them)."""
        kwargs: dict[str, Any] = {"limits": Limits(timeout_s=timeout_s, memory_mb=memory_mb, max_processes=128,
                                                   disk_mb=512, max_output_bytes=4_000_000),
                                  "isolation": "episode"}
        if image is not None:
            kwargs["image"] = image
        if preload:
            kwargs["preload"] = tuple(preload)
        self.in_image = repo_dir != REPO_DIR
        if self.in_image:
            if backend != "docker":
                raise SandboxError(f"A repository inside an image ({repo_dir}) needs backend='docker'.")
            kwargs["writable"] = (repo_dir,)
        self.backend = backend
        self.repo_dir = repo_dir
        self.timeout_s = timeout_s
        self.activate = activate
        self.sandbox: Sandbox = make_sandbox(backend, **kwargs)
        self.base_commit: str | None = None
        self._prelude: str | None = None
        self._env: dict[str, str] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The variables every call gets: git/pytest settings, plus the ``activate`` command's environment."""
        if self._env is None:
            env = dict(_IMAGE_ENV if self.in_image else _ENV)
            if self.activate:
                result = self.sandbox.run(cmd=["bash", "-c", f"{self.activate} >/dev/null 2>&1 && env -0"], env=env,
                                          timeout_s=60)
                if result.exit_code != 0:
                    raise SandboxError(f"`{self.activate}` failed in the image: {result.stderr.strip()[-300:]}")
                for item in result.stdout.split("\0"):
                    name, sep, value = item.partition("=")
                    if sep and name not in _NOT_INHERITED and not name.startswith("BASH_FUNC_"):
                        env[name] = value
            self._env = env
        return self._env

    @property
    def prelude(self) -> str:
        """Shell functions that make ``python``/``python3`` the sandbox's interpreter (the one with pytest).

        Empty in an image: its activated environment decides which Python runs."""
        if self._prelude is None:
            if self.in_image:
                self._prelude = ""
                return self._prelude
            result = self.sandbox.run("import sys; print(sys.executable)", env=self.env)
            if result.exit_code != 0:
                raise SandboxError(f"The sandbox has no Python: {result.stderr.strip()[-300:]}")
            python = shlex.quote(result.stdout.strip())
            self._prelude = (f'python() {{ {python} "$@"; }}; python3() {{ {python} "$@"; }}; '
                             "export -f python python3; ")
        return self._prelude

    def checkout(self, files: Mapping[str, str], *, message: str, base_commit: str | None = None) -> str:
        """Write a fresh repository at ``/work/repo`` and commit it; checks the hash when ``base_commit`` is known."""
        if self.in_image:
            raise SandboxError("checkout() writes a bundled repository; an image's workspace uses attach().")
        self.sandbox.reset()
        result = self.sandbox.run(cmd=["bash", "-c", f"cd repo && {commit_command(message)}"],
                                  files={f"repo/{k}": v for k, v in files.items()}, env=self.env, timeout_s=60)
        if result.exit_code != 0:
            raise SandboxError(f"Could not create the repository in the sandbox: {result.stderr.strip()[-500:]}")
        commit = result.stdout.strip().splitlines()[-1]
        if base_commit is not None and commit != base_commit:
            raise SandboxError(f"The repository materialized at commit {commit}, not base_commit {base_commit}: "
                               "the bundled files do not match the instance.")
        self.base_commit = commit
        return commit

    def attach(self, base_commit: str) -> str:
        """Use the image's repository, which must be at ``base_commit`` (as swebench builds instance images)."""
        code, out = self.shell("git rev-parse HEAD", limit=None)
        head = out.strip().splitlines()[-1] if out.strip() else ""
        if code != 0:
            raise SandboxError(f"{self.repo_dir} in the image is not a git repository: {out.strip()[-300:]}")
        if head != base_commit:
            raise SandboxError(f"{self.repo_dir} in the image is at {head}, not base_commit {base_commit}: "
                               "the image was built for another instance.")
        self.base_commit = head
        return head

    def shell(self, command: str, *, timeout_s: float | None = None, stdin: str | None = None,
              files: Mapping[str, str] | None = None, limit: int | None = MAX_OUTPUT_CHARS) -> tuple[int, str]:
        """Run ``command`` with bash in the repository; exit code and combined output (capped at ``limit``).

        ``files`` are written under ``/work`` first (relative paths)."""
        code, output, _ = self.shell_run(command, timeout_s=timeout_s, stdin=stdin, files=files, limit=limit)
        return code, output

    def shell_run(self, command: str, *, timeout_s: float | None = None, stdin: str | None = None,
                  files: Mapping[str, str] | None = None,
                  limit: int | None = MAX_OUTPUT_CHARS) -> tuple[int, str, bool]:
        """``shell``, and whether the sandbox killed the command at its time limit (its own report)."""
        result = self.sandbox.run(cmd=["bash", "-c", f"{self.prelude}cd {self.repo_dir} && {{ {command}\n}} 2>&1"],
                                  env=self.env, timeout_s=timeout_s or self.timeout_s, stdin=stdin, files=files)
        output = result.stdout + result.stderr
        if result.timed_out:
            output += f"\n[command timed out after {timeout_s or self.timeout_s:g} s and was killed]"
        if result.oom:
            output += "\n[command ran out of memory and was killed]"
        return result.exit_code, output if limit is None else _truncate(output, limit), bool(result.timed_out)

    def file_tool(self, op: str, **arguments: Any) -> str:
        result = self.sandbox.run(_FILE_TOOLS, stdin=json.dumps({"op": op, "root": self.repo_dir, **arguments}),
                                  env=self.env, timeout_s=30)
        if result.exit_code not in (0, 3):
            raise ToolError(f"{op} failed: {(result.stderr or result.stdout).strip()[-800:]}")
        return _truncate(result.stdout)

    def diff(self) -> str:
        """The working copy against ``base_commit``, new files included: the prediction."""
        code, out = self.shell(f"git add -A -N . && git -c core.quotepath=false diff --no-color {self.base_commit}",
                               limit=None)
        if code != 0:
            raise SandboxError(f"git diff failed: {out[-500:]}")
        return out if out.endswith("\n") or not out else out + "\n"

    def close(self) -> None:
        self.sandbox.close()


def _truncate(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return (f"{text[:half]}\n[... {len(text) - limit} characters cut from the middle; narrow the command or view "
            f"a line range ...]\n{text[-half:]}")
