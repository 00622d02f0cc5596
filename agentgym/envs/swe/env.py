"""``agentgym/SWEBench-v0``: fix a repository's issue with shell and file tools; graded by its own tests."""

from __future__ import annotations

import gzip
import importlib.util
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.formats import ActionFormat, HermesFormat
from agentgym.core.shared import load_shared
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.swe.grader import GradingInputs, Patch, grade_patch, instance_image
from agentgym.envs.swe.instances import load_instances
from agentgym.envs.swe.repo import commit_message
from agentgym.envs.swe.workspace import CONDA_ACTIVATE, TESTBED, Workspace
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled
from agentgym.verifiers.score import Score

__all__ = ["SWEBenchEnv", "bundled_data_dir", "load_repos"]

_INSTALL_SWE = "pip install 'agentgym-suite[swe]'"

_PROMPT = (
    "You are a software engineer working in the repository at {repo_dir} ({repo}, commit {commit}). "
    "Resolve the issue below by editing the repository's source code so that the issue is fixed; the "
    "repository's hidden tests decide. Explore with the tools (bash, view, search), change files with edit "
    "or create, run the tests with bash (python -m pytest), and call submit when you are done: your "
    "changes to the repository are the submission.\n\n<issue>\n{issue}\n</issue>\n"
)


def bundled_data_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "swe"


def load_repos(path: str | Path) -> dict[str, dict[str, str]]:
    """``repos.json.gz``: instance id -> {path: content} of the repository at ``base_commit``."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            repos = json.load(f)
    except (OSError, json.JSONDecodeError, EOFError) as e:
        raise DataError(f"Cannot read repositories file {path}: {e}") from e
    if not isinstance(repos, dict):
        raise DataError(f"{path} must map instance ids to {{path: content}}.")
    return repos


def _load(data_dir: str, repos_file: str | None) -> tuple[TaskList, dict[str, dict[str, str]]]:
    """The instances as tasks, and the bundled repositories by instance id (read-only, shared by every env)."""
    root = Path(data_dir)
    instances = load_instances(root / "instances.jsonl" if (root / "instances.jsonl").is_file() else root)
    repos_path = Path(repos_file) if repos_file else (root / "repos.json.gz" if root.is_dir() else None)
    repos = load_repos(repos_path) if repos_path is not None and repos_path.is_file() else {}
    tasks = [Task(id=inst["instance_id"], prompt=inst["problem_statement"], gold=inst, split=split,
                  meta={"repo": inst["repo"]})
             for split, items in instances.items() for inst in items]
    return TaskList(tasks), repos


class SWEBenchEnv(AgentEnv[Patch]):
    """SWE-bench as an RL env: an issue, a repository in a sandbox, tools, and swebench grading.

    Tools (SWE-agent style): ``bash(command, timeout_s)``, ``view(path, start, end)``,
    ``edit(path, old, new)`` (exact, unique string replace), ``create(path, content)``,
    ``search(pattern, path)`` and ``submit()``. The working copy's diff against
    ``base_commit`` is the prediction, whether the agent submits, answers or runs out
    of turns (SWE-agent's auto-submit). Reward 1 iff every FAIL_TO_PASS test passes and
    every PASS_TO_PASS test still passes, graded by the ``swebench`` package on a fresh
    checkout with the test patch applied, in a sandbox of the grader's own: the
    episode's working copy stays as the agent left it. ``info["verification"]`` lists
    each test. ``data_dir`` is a SWE-bench dataset directory or file (``data=`` is its
    old name, accepted with a ``DeprecationWarning`` until the next release).
    Backends: ``bwrap`` (default, a namespace sandbox, no engine) and ``docker``
    (``image=`` or ``$AGENTGYM_SANDBOX_IMAGE``, which needs git and pytest).

    Official SWE-bench instances (no bundled repository: ``repos=`` does not have
    them) run with ``backend="docker"`` in their own swebench image (the row's
    ``image``, else ``swebench/sweb.eval.x86_64.<id>``, which must be on the engine:
    nothing is pulled), on the repository at ``/testbed`` in its conda env; every
    episode and every grading starts a fresh container, and grading runs the row's
    own ``eval_script`` with its ``log_parser``, as the swebench harness does.
    """

    defaults = EnvDefaults(action_format="hermes", max_turns=30, max_observation_chars=10_000)

    def __init__(self, *, data_dir: str | Path | None = None, repos: str | Path | None = None,
                 backend: Literal["bwrap", "docker"] = "bwrap", image: str | None = None, timeout_s: float = 60.0,
                 test_timeout_s: float = 300.0, data: str | Path | None = None,
                 grading: Literal["auto", "in-process"] = "auto", **base: Any) -> None:
        if data is not None:
            if data_dir is not None:
                raise ConfigError("Pass data_dir only: data is its old name.")
            warnings.warn("SWEBenchEnv's data= is now data_dir=, as in every env; data= works until the next "
                          "release.", DeprecationWarning, stacklevel=2)
            data_dir = data
        if backend not in ("bwrap", "docker"):
            raise ConfigError(f"backend must be 'bwrap' or 'docker', got {backend!r}.")
        if grading not in ("auto", "in-process"):
            raise ConfigError(f"grading must be 'auto' (isolated where the instance's tests allow it) or "
                              f"'in-process' (SWE-bench's log grading), got {grading!r}.")
        # grading needs swebench: fail here, not at the end of a first episode
        if importlib.util.find_spec("swebench") is None:
            raise DependencyNotInstalled("swebench (SWE-bench grading)", _INSTALL_SWE)
        if backend == "docker" and importlib.util.find_spec("docker") is None:
            raise DependencyNotInstalled("The Docker SDK", _INSTALL_SWE)
        tasks, self.repos = load_shared(_load, str(Path(data_dir or bundled_data_dir()).resolve()),
                                        None if repos is None else str(repos))
        self.backend, self.image = backend, image
        self.timeout_s, self.test_timeout_s = timeout_s, test_timeout_s
        #: "auto": the isolated harness wherever the instance's tests allow it; "in-process": always swebench's log
        self.grading = grading
        self._workspace: Workspace | None = None  # the episode's working copy
        self._grader: Workspace | None = None  # the grader's own checkout
        self._grading_inputs = GradingInputs()  # what gradings read from git per instance, reused
        self._submitted = False
        super().__init__(tasks=tasks, **base)

    def make_action_format(self, spec: str | ActionFormat) -> ActionFormat:
        action_format = super().make_action_format(spec)
        if isinstance(spec, str) and isinstance(action_format, HermesFormat):
            return HermesFormat(plain_text_answers=False)  # no tool call: a format error, as in SWE-agent
        return action_format

    # ---- tools ---------------------------------------------------------------
    def make_tools(self) -> Sequence[Tool]:
        def obj(required: list[str], **props: tuple[str, str]) -> dict[str, Any]:
            return {"type": "object", "required": required,
                    "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()}}

        return [
            Tool("bash", "Run a bash command in the repository's root directory; output is truncated when long.",
                 obj(["command"], command=("string", "The command."),
                     timeout_s=("number", "Seconds before it is killed (default 60).")), fn=self._bash),
            Tool("view", "Show a file with line numbers (optionally lines start..end), or list a directory.",
                 obj(["path"], path=("string", "A path relative to the repository root."),
                     start=("integer", "First line (1-based)."), end=("integer", "Last line (inclusive).")),
                 fn=lambda path, start=None, end=None: self.workspace.file_tool("view", path=path, start=start,
                                                                               end=end)),
            Tool("edit", "Replace the exact text `old` (which must occur exactly once) with `new` in a file.",
                 obj(["path", "old", "new"], path=("string", "The file."), old=("string", "Text to replace."),
                     new=("string", "Replacement text.")),
                 fn=lambda path, old, new: self.workspace.file_tool("edit", path=path, old=old, new=new)),
            Tool("create", "Create a new file with the given content.",
                 obj(["path", "content"], path=("string", "The new file."), content=("string", "Its content.")),
                 fn=lambda path, content: self.workspace.file_tool("create", path=path, content=content)),
            Tool("search", "Search files for a regular expression; prints path:line: text.",
                 obj(["pattern"], pattern=("string", "A Python regular expression."),
                     path=("string", "A file or directory (default: the whole repository).")),
                 fn=lambda pattern, path=".": self.workspace.file_tool("search", pattern=pattern, path=path)),
            Tool("submit", "Submit the repository's current changes as the fix; ends the episode.",
                 {"type": "object", "properties": {}}, fn=self._submit),
        ]

    def _bash(self, command: str, timeout_s: float | None = None) -> str:
        limit = min(float(timeout_s or self.timeout_s), 600.0)
        code, output = self.workspace.shell(command, timeout_s=limit)
        return f"{output}\n[exit code {code}]" if output else f"[exit code {code}]"

    def _submit(self) -> str:
        self._submitted = True
        return "Submitted."

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            self._workspace = Workspace(backend=self.backend, image=self.image, timeout_s=self.timeout_s)
        return self._workspace

    # ---- episode -------------------------------------------------------------
    def _instance_image(self, task: Task) -> str | None:
        """The swebench image an instance runs in, or None for one whose repository is bundled."""
        if task.id in self.repos:
            return None
        image = instance_image(task.gold)
        if self.backend != "docker":
            raise ConfigError(f"No bundled repository for {task.id!r}. Pass repos= (instance id -> files at "
                              "base_commit, like the bundled repos.json.gz), or, for an official SWE-bench instance, "
                              f"use backend='docker' with its swebench image ({image}) on the engine.")
        if not task.gold.get("eval_script"):
            raise DataError(f"{task.id} runs in its swebench image but has no eval_script: use a SWE-bench 5.x "
                            "dataset, whose rows carry image, eval_script, log_parser and eval_type.")
        return image

    def _checkout(self, task: Task, workspace: Workspace | None, *, preload: tuple[str, ...] = ()) -> Workspace:
        """``workspace`` (or a new one, its sandbox importing ``preload`` once) holding a pristine working copy of
        ``task``'s repository at ``base_commit``; closed if that fails."""
        gold = task.gold
        try:
            image = self._instance_image(task)
            if workspace is not None and (image is not None or workspace.in_image):
                workspace.close()  # an image's container is used once: a new one each time
                workspace = None
            if image is None:
                workspace = workspace or Workspace(backend=self.backend, image=self.image, timeout_s=self.timeout_s,
                                                   preload=preload)
                workspace.checkout(self.repos[task.id], message=commit_message(gold), base_commit=gold["base_commit"])
            else:
                workspace = Workspace(backend="docker", image=image, timeout_s=self.timeout_s, repo_dir=TESTBED,
                                      activate=CONDA_ACTIVATE)
                workspace.attach(gold["base_commit"])
        except BaseException:
            if workspace is not None:
                workspace.close()
            raise
        return workspace

    def on_reset(self, task: Task) -> None:
        self._submitted = False
        workspace, self._workspace = self._workspace, None  # none left behind, closed, if the checkout fails
        self._workspace = self._checkout(task, workspace)

    def build_prompt(self, task: Task) -> str:
        prompt = _PROMPT.format(repo_dir=self.workspace.repo_dir, repo=task.gold["repo"],
                                commit=task.gold["base_commit"][:12],
                                issue=task.prompt.strip())
        return f"{prompt}\n{self.action_format.instructions(self.tools)}"

    def episode_outcome(self) -> Patch | None:
        """The working copy's diff, once the agent called ``submit``."""
        return Patch(self.workspace.diff()) if self._submitted else None

    def default_outcome(self) -> Patch:
        """Out of turns, or an answer: the working copy is submitted as it is (SWE-agent's auto-submit); the
        text of an answer is not a patch."""
        return Patch(self.workspace.diff())

    def verify(self, outcome: Patch | None, task: Task) -> Score:
        patch = outcome if outcome is not None else Patch("")
        score = self.grade(task, patch)
        return Score(score.reward, score.correct, {**score.details, "model_patch": patch.diff})

    def grade(self, task: Task, patch: Patch | str | None) -> Score:
        """Grade ``patch`` for ``task`` on a fresh checkout of the grader's own: the episode's working copy is
        left as it is."""
        workspace, self._grader = self._grader, None
        # the isolated harness imports pytest on every grading (most of its cost): the grader's sandbox imports it
        # once, and each grading's harness starts with it (the interpreter's own, as it would import)
        preload = ("pytest",) if self.grading == "auto" else ()
        workspace = self._grader = self._checkout(task, workspace, preload=preload)
        try:
            return grade_patch(workspace, task.gold, patch, timeout_s=self.test_timeout_s,
                               isolated=self.grading == "auto", inputs=self._grading_inputs)
        finally:
            if workspace.in_image:  # an image's container is used once
                workspace.close()
                self._grader = None

    def oracle_action(self) -> str | Mapping[str, Any]:
        """Apply the gold patch with git (while the working copy is unchanged), then submit."""
        unchanged, _ = self.workspace.shell("git diff --quiet HEAD")
        if unchanged == 0:
            patch = self.task.gold["patch"]
            call = ToolCall("bash", {"command": f"git apply -v <<'EOF_GOLD_PATCH'\n{patch}EOF_GOLD_PATCH"})
        else:
            call = ToolCall("submit", {})
        return self.action_format.render_call(call, self.tools)

    def close(self) -> None:
        for workspace in (self._workspace, self._grader):
            if workspace is not None:
                workspace.close()
        self._workspace = self._grader = None
        super().close()
