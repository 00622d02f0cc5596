"""Eval suites: named, versioned lists of (env id, split, episodes) that leaderboard rows are run on.

A suite's contents are frozen under its version: change an entry, bump the
version, so that results compare only within one ``name``/``version``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["SUITES", "Suite", "SuiteEntry", "get_suite"]


@dataclass(frozen=True)
class SuiteEntry:
    """Episodes of one env on one split; ``episodes=None`` means one per task of the whole split."""

    env_id: str
    split: str = "test"
    episodes: int | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.env_id.startswith("agentgym/") or "-v" not in self.env_id:
            raise ConfigError(f"Suite entries name agentgym ids like 'agentgym/SearchQA-v0', got {self.env_id!r}.")
        if not self.split:
            raise ConfigError(f"{self.env_id}: split must be a non-empty name such as 'test'.")
        if self.episodes is not None and self.episodes < 1:
            raise ConfigError(f"{self.env_id}: episodes must be >= 1, or None for the whole split; "
                              f"got {self.episodes}.")


@dataclass(frozen=True)
class Suite:
    """A named, versioned set of entries."""

    name: str
    version: str
    entries: tuple[SuiteEntry, ...]
    description: str = ""

    def __post_init__(self) -> None:
        if not self.entries:
            raise ConfigError(f"Suite {self.name!r} has no entries; give it at least one SuiteEntry.")
        pairs = [(e.env_id, e.split) for e in self.entries]
        repeated = sorted({p for p in pairs if pairs.count(p) > 1})
        if repeated:
            # episode keys are (env id, split, index): a repeated pair would give two episodes one key
            raise ConfigError(f"Suite {self.name!r} lists {repeated} more than once; merge those entries.")

    @property
    def env_ids(self) -> list[str]:
        return sorted({e.env_id for e in self.entries})


SUITES: dict[str, Suite] = {suite.name: suite for suite in (
    # Sized so that `agentgym eval` (SmolLM2-135M on 2 CPU cores, ~10 tokens/s) finishes in minutes.
    # Browser modes are left out: the main job runs on a machine without Chromium.
    Suite("core", "2", (
        SuiteEntry("agentgym/SearchQA-v0", "test", 5, {"max_turns": 3}),
        SuiteEntry("agentgym/MathTool-v0", "test", 5, {"max_turns": 3}),
        SuiteEntry("agentgym/PyCode-v0", "test", 5, {"max_turns": 3}),
        # a purchase takes 3 to 6 actions (search, open, options, buy): 3 turns cannot solve most goals
        SuiteEntry("agentgym/WebShop-v0", "test", 5, {"max_turns": 8}),
        SuiteEntry("agentgym/SWEBench-v0", "test", 5, {"max_turns": 3}),
    ), "A quick check: 5 test episodes of each env family (text modes), at most 3 turns each (WebShop 8)."),
    # Listed by hand, not read from the registry: a new env must change this list and bump the version,
    # or "full v3" would silently mean different things (tests/eval/test_runner.py checks coverage).
    Suite("full", "3", (
        SuiteEntry("agentgym/SearchQA-v0", "test"),
        SuiteEntry("agentgym/MathTool-v0", "test"),
        SuiteEntry("agentgym/PyCode-v0", "test"),
        SuiteEntry("agentgym/WebShop-v0", "test"),
        SuiteEntry("agentgym/WebShopBrowser-v0", "test"),
        SuiteEntry("agentgym/SWEBench-v0", "test"),
        # ALFWorld's held-out split: floor plans never used for training (42 generated games)
        SuiteEntry("agentgym/ALFWorld-v0", "valid_unseen"),
    ), "Every registered env, its whole test split, one episode per task."),
)}


def get_suite(name: str) -> Suite:
    """The suite called ``name``; an unknown name gets a did-you-mean error."""
    try:
        return SUITES[name]
    except KeyError:
        close = difflib.get_close_matches(name, SUITES, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"No eval suite named {name!r}.{hint} Suites: {', '.join(sorted(SUITES))}.") from None
