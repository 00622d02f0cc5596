"""``agentgym/SWEBench-v0``: fix a repository's issue with shell and file tools; graded by its own tests."""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentgym.core.env import AgentEnv
from agentgym.core.formats import ActionFormat, HermesFormat, get_format
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.swe.grading import grade_log, instance_image, run_tests
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


@functools.lru_cache(maxsize=4)
def _load(data: str, repos_file: str | None) -> tuple[TaskList, dict[str, dict[str, str]]]:
    root = Path(data)
    instances = load_instances(root / "instances.jsonl" if (root / "instances.jsonl").is_file() else root)
    repos_path = Path(repos_file) if repos_file else (root / "repos.json.gz" if root.is_dir() else None)
    repos = load_repos(repos_path) if repos_path is not None and repos_path.is_file() else {}
    tasks = [Task(id=inst["instance_id"], prompt=inst["problem_statement"], gold=inst, split=split,
                  meta={"repo": inst["repo"]})
             for split, items in instances.items() for inst in items]
    return TaskList(tasks), repos


class SWEBenchEnv(AgentEnv):
    """SWE-bench as an RL env: an issue, a repository in a sandbox, tools, and swebench grading.

    Tools (SWE-agent style): ``bash(command, timeout_s)``, ``view(path, start, end)``,
    ``edit(path, old, new)`` (exact, unique string replace), ``create(path, content)``,
    ``search(pattern, path)`` and ``submit()``. The working copy's diff against
    ``base_commit`` is the prediction, whether the agent submits, answers or runs out
    of turns (SWE-agent's auto-submit). Reward 1 iff every FAIL_TO_PASS test passes and
    every PASS_TO_PASS test still passes, graded by the ``swebench`` package on a fresh
    checkout with the test patch applied; ``info["verification"]`` lists each test.
    Backends: ``bwrap`` (default, a namespace sandbox, no engine) and ``docker``
    (``image=`` or ``$AGENTGYM_SANDBOX_IMAGE``, which needs git and pytest).

    Official SWE-bench instances (no bundled repository: ``repos=`` does not have
    them) run with ``backend="docker"`` in their own swebench image (the row's
    ``image``, else ``swebench/sweb.eval.x86_64.<id>``, which must be on the engine:
    nothing is pulled), on the repository at ``/testbed`` in its conda env; every
    episode and every grading starts a fresh container, and grading runs the row's
    own ``eval_script`` with its ``log_parser``, as the swebench harness does.
    """

    def __init__(self, *, data: str | Path | None = None, repos: str | Path | None = None, split: str = "test",
                 backend: Literal["bwrap", "docker"] = "bwrap", image: str | None = None, max_turns: int = 30,
                 timeout_s: float = 60.0, test_timeout_s: float = 300.0, action_format: str | ActionFormat = "hermes",
                 max_observation_chars: int = 10_000, render_mode: Literal["ansi", "human"] | None = None) -> None:
        if backend not in ("bwrap", "docker"):
            raise ConfigError(f"backend must be 'bwrap' or 'docker', got {backend!r}.")
        # grading needs swebench: fail here, not at the end of a first episode
        if importlib.util.find_spec("swebench") is None:
            raise DependencyNotInstalled("swebench (SWE-bench grading)", _INSTALL_SWE)
        if backend == "docker" and importlib.util.find_spec("docker") is None:
            raise DependencyNotInstalled("The Docker SDK", _INSTALL_SWE)
        if isinstance(action_format, str) and isinstance(get_format(action_format), HermesFormat):
            action_format = HermesFormat(plain_text_answers=False)  # no tool call: a format error, as in SWE-agent
        tasks, self.repos = _load(str(Path(data or bundled_data_dir()).resolve()),
                                  None if repos is None else str(repos))
        self.backend, self.image = backend, image
        self.timeout_s, self.test_timeout_s = timeout_s, test_timeout_s
        self._workspace: Workspace | None = None
        self._submitted = False
        super().__init__(tasks=tasks, action_format=action_format, split=split, max_turns=max_turns,
                         max_observation_chars=max_observation_chars, render_mode=render_mode)

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

    def _fresh(self, task: Task) -> Workspace:
        """A pristine working copy of ``task``'s repository at ``base_commit``."""
        gold = task.gold
        image = self._instance_image(task)
        if self._workspace is not None and (image is not None or self._workspace.in_image):
            self._workspace.close()  # an image's container is used once: a new one per episode and per grading
            self._workspace = None
        if image is None:
            files = self.repos[task.id]
            self.workspace.checkout(files, message=commit_message(gold), base_commit=gold["base_commit"])
        else:
            self._workspace = Workspace(backend="docker", image=image, timeout_s=self.timeout_s, repo_dir=TESTBED,
                                        activate=CONDA_ACTIVATE)
            self._workspace.attach(gold["base_commit"])
        return self.workspace

    def on_reset(self, task: Task) -> None:
        self._submitted = False
        self._fresh(task)

    def build_prompt(self, task: Task) -> str:
        prompt = _PROMPT.format(repo_dir=self.workspace.repo_dir, repo=task.gold["repo"],
                                commit=task.gold["base_commit"][:12],
                                issue=task.prompt.strip())
        return f"{prompt}\n{self.action_format.instructions(self.tools)}"

    def episode_outcome(self) -> str | None:
        return self.workspace.diff() if self._submitted else None

    def verify(self, answer: str | None, task: Task) -> Score:
        # The prediction is the working copy's diff, however the episode ended (answer text is not a patch).
        patch = answer if self._submitted and answer is not None else self.workspace.diff()
        score = self.grade(task, patch)
        return Score(score.reward, score.correct, {**score.details, "model_patch": patch})

    def grade(self, task: Task, patch: str | None) -> Score:
        """Grade ``patch`` for ``task`` on a fresh checkout (the episode's working copy is replaced)."""
        log = run_tests(self._fresh(task), task.gold, patch, timeout_s=self.test_timeout_s)
        return grade_log(task.gold, patch, log)

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
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None
        super().close()
