"""Eval suites: named, versioned lists of (env id, split, episodes) that leaderboard rows are run on.

A suite's contents are frozen under its version: change an entry, bump the
version, so that results compare only within one ``name``/``version``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.core.registry import VERIFIERS_PREFIX
from agentgym.errors import ConfigError

__all__ = ["SUITES", "Suite", "SuiteEntry", "get_suite"]

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")


@dataclass(frozen=True)
class SuiteEntry:
    """Episodes of one env on one split; ``episodes=None`` means one per task of the whole split.

    ``split=None`` means the env's own default evaluation split (e.g. ALFWorld's
    ``valid_unseen``). ``name`` tells two entries of one env apart (e.g. MathTool's
    bundled problems and its arithmetic rung): results are grouped by ``label``.
    """

    env_id: str
    split: str | None = None
    episodes: int | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    #: only the tasks of this level on the env's difficulty card (``easy``, ``medium``, ``hard`` or a pass-rate range
    #: ``LO-HI``; ``agentgym.eval.difficulty``), from ``difficulty_card`` (a card file or directory) or the bundled one
    difficulty: str | None = None
    difficulty_card: str | None = None

    def __post_init__(self) -> None:
        namespace, _, name = self.env_id.partition("/")
        verifiers = self.env_id.startswith(VERIFIERS_PREFIX) and self.env_id != VERIFIERS_PREFIX
        if not verifiers and (not namespace or "-v" not in name):  # agentgym's own, or a plugin's (byo/Capitals-v0)
            raise ConfigError(f"Suite entries name env ids like 'agentgym/SearchQA-v0' (or vf:TASKSET, a verifiers "
                              f"environment), got {self.env_id!r}.")
        if self.split is not None and not self.split:
            raise ConfigError(f"{self.env_id}: split must be a name such as 'test', or None for the env's default.")
        if self.episodes is not None and self.episodes < 1:
            raise ConfigError(f"{self.env_id}: episodes must be >= 1, or None for the whole split; "
                              f"got {self.episodes}.")
        if self.difficulty is not None:
            from agentgym.core.difficulty import parse_difficulty

            parse_difficulty(self.difficulty)  # a bad level is an error now, not when the plan is made
        elif self.difficulty_card is not None:
            raise ConfigError(f"{self.env_id}: a difficulty card is read only with a difficulty to select "
                              "(--difficulty).")
        if self.name is not None and not _NAME.fullmatch(self.name):
            raise ConfigError(f"{self.env_id}: entry name {self.name!r} must be a short lower-case word "
                              "(letters, digits, '-').")

    @property
    def label(self) -> str:
        """What results are grouped and shown by: the env id, plus ``[name]`` for a named entry."""
        return f"{self.env_id}[{self.name}]" if self.name else self.env_id


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
        labels = [e.label for e in self.entries]
        repeated = sorted({p for p in labels if labels.count(p) > 1})
        if repeated:
            # results are grouped by label: two entries of one env need a name each
            raise ConfigError(f"Suite {self.name!r} lists {repeated} more than once; merge those entries or "
                              "give each a name.")

    @property
    def env_ids(self) -> list[str]:
        return sorted({e.env_id for e in self.entries})


#: the training recipe's task (docs/training/mathtool-arithmetic.yaml): two-number sums a small model can learn
ARITHMETIC = {"reasoning_gym": ["chain_sum"],
              "reasoning_gym_config": {"chain_sum": {"min_terms": 2, "max_terms": 2, "max_digits": 2}},
              "action_format": "hermes", "max_turns": 2}

#: SearchQA's first rung: questions one search answers ("In which country is the city of Jeypore?")
SINGLE_HOP = {"question_types": ["single-hop"], "max_turns": 3}

SUITES: dict[str, Suite] = {suite.name: suite for suite in (
    # Sized so that `agentgym eval` (SmolLM2-135M, batched, 2 CPU cores) finishes in minutes, with 30
    # episodes an env: a 95% interval of about +-15 points instead of 5 episodes' 0-43%. Browser modes
    # and ALFWorld are left out (full has them): the main job must be quick.
    # v4: difficulty rungs beside the full tasks (SearchQA's single-hop questions), and rows named by model.
    Suite("core", "4", (
        SuiteEntry("agentgym/SearchQA-v0", "test", 30, {"max_turns": 3}),
        # the rung a search agent of 135M parameters can climb: one search, one answer (docs/training)
        SuiteEntry("agentgym/SearchQA-v0", "test", 30, SINGLE_HOP, name="single-hop"),
        SuiteEntry("agentgym/MathTool-v0", "test", 30, {"max_turns": 3}),
        # the rung small models can climb: the training recipe's arithmetic, its held-out split
        SuiteEntry("agentgym/MathTool-v0", "test", 30, ARITHMETIC, name="arithmetic"),
        SuiteEntry("agentgym/PyCode-v0", "test", 30, {"max_turns": 3}),
        # a purchase takes 3 to 6 actions (search, open, options, buy)
        SuiteEntry("agentgym/WebShop-v0", "test", 30, {"max_turns": 6}),
        SuiteEntry("agentgym/SWEBench-v0", "test", 30, {"max_turns": 3}),
    ), "A quick check of every text env family: 30 test episodes each, plus two rungs small models can "
       "climb (SearchQA's single-hop questions, MathTool's arithmetic); at most 3 turns (arithmetic 2, WebShop 6)."),
    # Listed by hand, not read from the registry: a new env must change this list and bump the version,
    # or "full v3" would silently mean different things (tests/eval/test_runner.py checks coverage).
    Suite("full", "5", (
        SuiteEntry("agentgym/SearchQA-v0", "test"),
        SuiteEntry("agentgym/SearchQA-v0", "test", env_kwargs={"question_types": ["single-hop"]}, name="single-hop"),
        SuiteEntry("agentgym/MathTool-v0", "test"),
        SuiteEntry("agentgym/MathTool-v0", "test", env_kwargs=ARITHMETIC, name="arithmetic"),
        SuiteEntry("agentgym/PyCode-v0", "test"),
        SuiteEntry("agentgym/PyCode-v0", "test", env_kwargs={"dataset": "humaneval"}, name="humaneval"),
        SuiteEntry("agentgym/WebShop-v0", "test"),
        SuiteEntry("agentgym/WebShopBrowser-v0", "test"),
        SuiteEntry("agentgym/SWEBench-v0", "test"),
        # ALFWorld's held-out split: floor plans never used for training (42 generated games)
        SuiteEntry("agentgym/ALFWorld-v0", "valid_unseen"),
        # the easiest of ALFWorld's six task types: find one object, put it in one place
        SuiteEntry("agentgym/ALFWorld-v0", "valid_unseen", env_kwargs={"task_types": ["pick_and_place_simple"]},
                   name="pick"),
    ), "Every registered env, its whole test split, one episode per task; PyCode also on OpenAI's HumanEval; "
       "rungs: SearchQA single-hop, MathTool arithmetic, ALFWorld pick-and-place."),
)}


def get_suite(name: str) -> Suite:
    """The suite called ``name``; an unknown name gets a did-you-mean error."""
    try:
        return SUITES[name]
    except KeyError:
        close = difflib.get_close_matches(name, SUITES, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"No eval suite named {name!r}.{hint} Suites: {', '.join(sorted(SUITES))}.") from None
