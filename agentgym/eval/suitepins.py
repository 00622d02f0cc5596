"""A suite's version is bumped whenever its episodes would change: each suite version pins a digest of what each of
its entries plays, and a test fails when the digest moves under the same version.

An entry's *play digest* covers what decides its episodes apart from the policy: the entry's env id, kwargs,
split and episode count; every task it plays (id, prompt, gold, meta, in order); the tools the agent gets (their
schemas) and the action format's instructions; and the first observations a reset gives on its first tasks (the
prompt as the model reads it). It leaves out the env's code as such: a refactor that plays the same episodes does
not move it (the eval's resume key, ``agentgym.eval.envdigest``, does cover the code: a rerun never reuses a
changed env's episodes either way). A change it cannot see: a verifier that scores the same answers differently
(the verifier tests pin those scores).

``agentgym/eval/suite_pins.json`` holds ``{suite: {version: {entry label: digest}}}``;
``python scripts/pin_suites.py`` adds the current versions' digests after a bump, and refuses to move a pinned
one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agentgym.eval.suites import Suite, SuiteEntry

__all__ = ["PINS", "load_pins", "play_digest", "suite_digests"]

PINS = Path(__file__).with_name("suite_pins.json")
#: resets whose observation is hashed, per entry: the prompt template and the first tasks as the model reads them
RESETS = 3
#: envs whose first observation is rendered by a dependency's engine (Playwright's accessibility snapshot): a new
#: version of it would move the digest with nothing of ours changed; their tasks, tools and format are pinned
RENDERED_ELSEWHERE = frozenset({"agentgym/WebShopBrowser-v0"})


def play_digest(entry: SuiteEntry) -> str:
    """The digest of what ``entry`` plays; 16 hex digits (makes the env: its extras must be installed)."""
    from agentgym.core.registry import make

    env = make(entry.env_id, **dict(entry.env_kwargs))
    try:
        inner = env.unwrapped
        split = entry.split or inner.split
        tasks = list(inner.tasks.tasks(split))
        played = tasks if entry.episodes is None else tasks[: entry.episodes]
        h = hashlib.sha256()
        h.update(json.dumps([entry.env_id, dict(entry.env_kwargs), split, entry.episodes, len(played)],
                            sort_keys=True, default=str).encode())
        for task in played:
            h.update(json.dumps(task.as_dict(), sort_keys=True, default=str).encode())
        h.update(json.dumps(sorted((name, tool.schema()) for name, tool in inner.tools.items()), default=str,
                            sort_keys=True).encode())
        h.update(inner.action_format.instructions(inner.tools).encode())
        for index in range(0 if entry.env_id in RENDERED_ELSEWHERE else min(RESETS, len(played))):
            observation, _ = env.reset(seed=0, options={"split": split, "index": index})
            h.update(observation.encode())
        return h.hexdigest()[:16]
    finally:
        env.close()


def suite_digests(suite: Suite) -> dict[str, str]:
    """Each entry's play digest, by label."""
    return {entry.label: play_digest(entry) for entry in suite.entries}


def load_pins(path: Path = PINS) -> dict[str, dict[str, dict[str, str]]]:
    data: Any = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return data
