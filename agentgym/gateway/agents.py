"""Running the user's own agent on one episode: ``AgentTask`` (what an agent gets), ``AgentSpec`` and
``load_agent`` (which agent), and ``run_agent`` (reset the env, open a rollout on a gateway with the episode's tool
session, run the agent, end the episode with its answer). ``agentgym eval --agent`` (``agentgym.eval.agent``) and
``agentgym train --agent`` (``agentgym.trainer.agent``) both play every agent episode through ``run_agent``.

An agent is a Python function ``FILE.py:FUNCTION`` or ``module:FUNCTION`` taking one :class:`AgentTask` and
returning its final answer text, or None when it ended the episode through a tool; or a program (a command) that
reads the prompt on stdin, finds its endpoints in environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``AGENTGYM_MODEL``, ``AGENTGYM_TOOLS_URL``, ``AGENTGYM_MCP_URL``, ``AGENTGYM_TOOLS``) and prints its answer on stdout.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, describe
from agentgym.gateway.session import ToolSession

__all__ = ["AgentFailure", "AgentRun", "AgentSpec", "AgentTask", "load_agent", "run_agent"]


@dataclass
class AgentTask:
    """What an agent gets for one episode."""

    prompt: str
    base_url: str
    model: str
    tools: list[dict[str, Any]]
    call_tool: Callable[..., str]
    mcp_url: str | None
    api_key: str = "agentgym"
    #: where the task comes from (for logs; a scripted agent may replay the env's oracle from them)
    env_id: str = ""
    task_id: str = ""
    split: str = ""
    seed: int = 0
    rollout_id: str = ""
    env_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentSpec:
    """The user's agent: a function (``target`` ``FILE:FUNCTION`` or ``module:FUNCTION``) or a command."""

    target: str | None = None
    command: str | None = None

    def __post_init__(self) -> None:
        if (self.target is None) == (self.command is None):
            raise ConfigError("Give one agent: --agent FILE_OR_MODULE:FUNCTION or --agent-cmd \"CMD\".")
        if self.command is not None:
            command_argv(self.command)  # a command that cannot run fails now, not once per episode

    @property
    def label(self) -> str:
        return f"agent:{self.target}" if self.target else f"agent-cmd:{self.command}"

    @functools.cached_property
    def source_digest(self) -> str:
        """What the agent *is*: its file's (or module's) source; a command's text and the files it names."""
        h = hashlib.sha256()
        if self.target is not None:
            path = _agent_file(self.target)
            h.update(path.read_bytes() if path is not None else self.target.encode())
        else:
            h.update(self.command.encode())  # type: ignore[union-attr]
            for word in shlex.split(self.command or ""):
                if os.path.isfile(word):
                    h.update(Path(word).read_bytes())
        return h.hexdigest()[:16]


def _agent_file(target: str) -> Path | None:
    where = target.rsplit(":", 1)[0]
    if where.endswith(".py"):
        return Path(where).expanduser().resolve()
    spec = importlib.util.find_spec(where)
    return Path(spec.origin) if spec is not None and spec.origin else None


def load_agent(target: str) -> Callable[[AgentTask], Any]:
    """The function ``FILE.py:FUNCTION`` or ``module:FUNCTION`` names; a clear error for what is wrong."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(f"--agent {target!r}: write FILE.py:FUNCTION or module:FUNCTION.")
    if where.endswith(".py"):
        path = Path(where).expanduser()
        if not path.is_file():
            raise ConfigError(f"--agent {target!r}: no file {path}.")
        module_name = f"agentgym_agent_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except Exception as e:
            raise ConfigError(f"--agent {target!r}: importing {path} failed: {describe(e)}") from e
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise ConfigError(f"--agent {target!r}: cannot import {where!r}: {e}") from e
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ConfigError(f"--agent {target!r}: {where} has no function {name!r}.")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: it says what it takes when called
        return fn
    try:
        signature.bind(object())
    except TypeError:
        raise ConfigError(f"--agent {target!r}: {name}{signature} cannot be called with one argument, the task "
                          f"(agentgym.gateway.agents.AgentTask): define it as def {name}(task).") from None
    return fn


class AgentFailure(Exception):
    """The agent's own failure (it raised, timed out, returned no text, never called the model): its episode's
    error, never the env's."""


def _run_function(fn: Callable[[AgentTask], Any], task: AgentTask, timeout_s: float) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(task)
        except BaseException as e:  # noqa: BLE001 - the agent's failure is its episode's, recorded
            box["error"] = e

    thread = threading.Thread(target=target, name=f"agentgym-agent-{task.rollout_id}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise AgentFailure(f"AgentTimeout: the agent ran past its {timeout_s:g} s limit (--agent-timeout); its "
                           "rollout was closed")
    if "error" in box:
        raise AgentFailure(f"AgentError: {describe(box['error'])}")
    return box.get("value")


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_SHELL_WORDS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"})


def command_argv(command: str) -> tuple[dict[str, str], list[str]]:
    """``--agent-cmd``'s leading ``NAME=value`` words (set in the agent's environment, as a shell would) and the
    program's argv; a ``ConfigError`` for a command that cannot run. It runs without a shell."""
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"--agent-cmd {command!r}: {e}.") from e
    assigned: dict[str, str] = {}
    while words and _ASSIGNMENT.fullmatch(words[0]):
        name, value = words.pop(0).split("=", 1)
        assigned[name] = value
    if not words:
        raise ConfigError(f"--agent-cmd {command!r} names no program to run.")
    shell = sorted(set(words) & _SHELL_WORDS)
    if shell:
        raise ConfigError(f"--agent-cmd {command!r}: {' '.join(shell)} is shell syntax, and the command runs without "
                          "a shell; write it as sh -c '...' or put it in a script.")
    program = words[0]
    if shutil.which(program) is None and not (os.path.isfile(program) and os.access(program, os.X_OK)):
        raise ConfigError(f"--agent-cmd {command!r}: no program {program!r} on PATH or as an executable file.")
    return assigned, words


def _run_command(command: str, task: AgentTask, tools_url: str, timeout_s: float) -> str:
    assigned, argv = command_argv(command)
    env = {**os.environ, **assigned, "OPENAI_BASE_URL": task.base_url, "OPENAI_API_KEY": task.api_key,
           "AGENTGYM_MODEL": task.model, "AGENTGYM_TOOLS_URL": tools_url, "AGENTGYM_MCP_URL": task.mcp_url or "",
           "AGENTGYM_TOOLS": json.dumps(task.tools)}
    try:
        done = subprocess.run(argv, input=task.prompt, capture_output=True, text=True, env=env,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise AgentFailure(f"AgentTimeout: the agent command ran past its {timeout_s:g} s limit (--agent-timeout) "
                           "and was killed") from e
    except OSError as e:
        raise AgentFailure(f"AgentError: cannot run {command!r}: {e}") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1][:300]
        raise AgentFailure(f"AgentError: the agent command exited with {done.returncode}: {last}")
    return done.stdout.strip()


@dataclass
class AgentRun:
    """What one agent run left: the env's tool session, the gateway's record of its model calls, and its error."""

    session: ToolSession | None = None
    rollout: Any = None
    error: str | None = None
    #: the error came from the env or the harness (its env should be replaced), not from the agent
    env_failed: bool = False


def run_agent(env: Any, options: dict[str, Any], seed: int, *, spec: AgentSpec, fn: Callable[[AgentTask], Any] | None,
              gateway: Any, base_url: str, has_mcp: bool, rollout_id: str, env_id: str, env_kwargs: dict[str, Any],
              timeout_s: float = 600.0, require_model: bool = True, metadata: dict[str, Any] | None = None,
              warm: threading.Event | None = None) -> AgentRun:
    """Reset ``env`` (``options``: the task), open rollout ``rollout_id`` with its tool session, run the agent,
    end the episode with its answer. The eval and the trainer play every agent episode through here.

    ``warm`` is set once the agent's first model request reached the gateway (or the run ended)."""
    run = AgentRun()
    try:
        observation, info = env.reset(seed=seed, options=options)
        run.session = session = ToolSession(env, observation, info)
        run.rollout = rollout = gateway.create_rollout(rollout_id, session=session, metadata=metadata)
        if warm is not None and not warm.is_set():
            threading.Thread(target=lambda: (rollout.requested.wait(timeout_s), warm.set()), daemon=True).start()
        task = AgentTask(prompt=session.prompt, base_url=f"{base_url}/rollouts/{rollout_id}/v1",
                         model=gateway.model_name, tools=session.openai_tools(), call_tool=session.call_tool,
                         mcp_url=f"{base_url}/rollouts/{rollout_id}/mcp" if has_mcp else None, env_id=env_id,
                         task_id=str(info.get("task_id", "")), seed=seed, rollout_id=rollout_id,
                         split=str(info.get("split") or options.get("split") or ""), env_kwargs=dict(env_kwargs))
        if fn is not None:
            answer = _run_function(fn, task, timeout_s)
        else:
            answer = _run_command(spec.command, task,  # type: ignore[arg-type]
                                  f"{base_url}/rollouts/{rollout_id}/tools", timeout_s)
        if answer is not None and not isinstance(answer, str):
            raise AgentFailure(f"AgentError: the agent returned a {type(answer).__name__}; return the final answer "
                               "as text, or None when a tool call ended the episode")
        if require_model and not rollout.calls:
            raise AgentFailure("AgentError: the agent never called the model at its base_url, so the episode "
                                "measures no model")
        if not session.ended and answer is not None:
            session.answer(answer)
    except AgentFailure as e:
        run.error = str(e)
    except Exception as e:  # noqa: BLE001 - the env's or harness's failure: this episode's error
        run.error, run.env_failed = f"{type(e).__name__}: {e}", True
    else:
        if run.session.failure is not None:  # the env failed in a step whose exception the agent caught
            run.error, run.env_failed = run.session.failure, True
    finally:
        if run.rollout is not None and not run.rollout.closed:
            gateway.close_rollout(rollout_id)
        if warm is not None:
            warm.set()
    return run


