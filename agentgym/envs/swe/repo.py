"""Bundled repositories: files to a git repository at a reproducible commit, on the host or in a sandbox.

The same files, commit message, identity and dates give the same commit hash on
every machine, so ``base_commit`` in the bundled instances is checkable.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

from agentgym.errors import DataError

__all__ = ["GIT_ENV", "commit_command", "commit_message", "materialize"]

GIT_DATE = "2024-01-01T00:00:00+00:00"
GIT_ENV = {
    "GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE,
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0", "HOME": "/tmp",
}
# identity, plus settings that keep a user's or the system's git configuration out of hashes and diffs
_IDENTITY = ("-c user.name=agentgym -c user.email=agentgym@example.invalid -c core.autocrlf=false "
             "-c core.safecrlf=false -c core.excludesFile=/dev/null -c core.attributesFile=/dev/null "
             "-c core.hooksPath=/dev/null -c commit.gpgsign=false")


def commit_message(instance: Mapping[str, str]) -> str:
    """The bundled repositories' commit message: ``"<project> <version>"`` (``repo`` is ``owner/project``)."""
    return f"{instance['repo'].split('/')[-1]} {instance.get('version', '')}".strip()


def commit_command(message: str) -> str:
    """Shell commands that turn the current directory into a repository with one commit; prints its hash."""
    return (f"git {_IDENTITY} init -q -b main && git {_IDENTITY} add -A && git {_IDENTITY} commit -q --no-verify "
            f"-m {shlex.quote(message)} && git rev-parse HEAD")


def materialize(files: Mapping[str, str], dest: str | Path, message: str) -> str:
    """Write ``files`` under ``dest`` (which must be empty or absent), commit them; the commit hash."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise DataError(f"{dest} is not empty; a repository is materialized into an empty directory.")
    for rel, content in sorted(files.items()):
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
        path.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(["bash", "-c", commit_command(message)], cwd=dest, env={**env, **GIT_ENV},
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise DataError(f"git could not commit the repository in {dest}: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]
