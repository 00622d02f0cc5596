"""``agentgym/SearchQA-v0``: the Search-R1 protocol over a local retrieval corpus, built on ``ToolEnv``."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentgym.core.env import EnvDefaults
from agentgym.core.formats import TagsFormat
from agentgym.core.shared import load_shared
from agentgym.core.task import Task, TaskList, TaskSource
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.search.data import bundled_corpus, bundled_qa_files, find_qa_files, load_qa_tasks
from agentgym.envs.search.retrieval import make_retriever
from agentgym.envs.toolenv import ToolEnv
from agentgym.errors import ConfigError
from agentgym.verifiers import Score, verify_qa
from agentgym.verifiers.budget import budget_seconds

__all__ = ["SearchQAEnv", "verify_answer"]

_TAGS_INSTRUCTIONS = (
    "Answer the question below. Think step by step inside <think> and </think> whenever you get "
    "new information. If you need knowledge you lack, search the corpus by writing "
    "<search> your query </search>; the top results come back between <information> and "
    "</information>. Search as often as you need. When you know the answer, write it inside "
    "<answer> and </answer> as a short phrase with no explanation, for example <answer> Lima </answer>."
)
# the no-search baseline (search=False): the same task and answer format, no tool
_NO_SEARCH_TAGS_INSTRUCTIONS = (
    "Answer the question below from what you know. Think step by step inside <think> and </think>. "
    "Write the answer inside <answer> and </answer> as a short phrase with no explanation, for example "
    "<answer> Lima </answer>."
)
_NO_SEARCH_INSTRUCTIONS = (
    "Answer the question below from what you know. Give the final answer as a short phrase with no explanation."
)
_TOOL_INSTRUCTIONS = (
    "Answer the question below. Think step by step inside <think> and </think> whenever you get "
    "new information. If you need knowledge you lack, call the search tool; it returns the top "
    "passages of a corpus. Search as often as you need. Give the final answer as a short phrase "
    "with no explanation."
)


def verify_answer(answer: str | None, gold: Mapping[str, Any], *, metric: Literal["em", "f1", "cover_em"] = "em",
                  budget_s: float | None = None) -> Score:
    """SearchQA's verifier: ``metric`` of ``answer`` against the task's ``golden_answers`` (the best of them).

    >>> verify_answer("the Peruvian sol", {"golden_answers": ["Peruvian sol", "sol"]}).reward
    1.0
    """
    return verify_qa(answer, gold["golden_answers"], metric=metric, budget_s=budget_s)


class SearchQAEnv(ToolEnv):
    """Search-R1 style QA: ``<search>q</search>`` returns top-k passages, ``<answer>`` ends.

    Reward is exact match (SQuAD normalisation, max over golden answers); F1 and
    cover-EM are in ``info["verification"]["details"]``. Defaults to the bundled
    dataset; pass ``data_dir`` (or ``qa_files``) and ``corpus`` for Search-R1 /
    FlashRAG data, ``retriever="pyserini"`` with ``index=`` for a Lucene index.
    ``search=False`` is Search-R1's no-search baseline: the same questions and
    answer format with no search tool (the oracle answers at once).
    """

    defaults = EnvDefaults(max_turns=6)

    def __init__(self, *, data_dir: str | Path | None = None, qa_files: Mapping[str, str | Path] | None = None,
                 corpus: str | Path | None = None, retriever: str = "bm25", index: str | Path | None = None,
                 topk: int = 3, reward_metric: Literal["em", "f1", "cover_em"] = "em",
                 cache_dir: str | Path | None = None, question_types: Sequence[str] | None = None,
                 verifier_budget_s: float | None = None, search: bool = True, **base: Any) -> None:
        budget_seconds(verifier_budget_s)  # a bad budget is an error here, not at the end of an episode
        self.verifier_budget_s = verifier_budget_s
        if data_dir is not None and qa_files is not None:
            raise ConfigError("Pass either data_dir or qa_files, not both.")
        if topk < 1:
            raise ConfigError(f"topk must be >= 1, got {topk}.")
        if reward_metric not in ("em", "f1", "cover_em"):
            raise ConfigError(f"reward_metric must be 'em', 'f1' or 'cover_em', got {reward_metric!r}.")
        files = qa_files or (find_qa_files(data_dir) if data_dir is not None else bundled_qa_files())
        if corpus is None and index is None:
            corpus = bundled_corpus()
        self.topk = topk
        self.reward_metric = reward_metric
        self.search_enabled = search
        # a server hosts many sessions of one corpus: they share its retriever and its (read-only) tasks
        self.retriever = load_shared(make_retriever, retriever, corpus=_str(corpus), index=_str(index),
                                     cache_dir=_str(cache_dir))
        tasks = load_shared(load_qa_tasks, files)
        if question_types is not None:
            tasks = _of_types(tasks, question_types)
        search = Tool(
            name="search",
            description="Search the knowledge corpus; returns the top passages with their titles.",
            parameters={"type": "object", "properties": {"query": {"type": "string",
                        "description": "What to search for."}}, "required": ["query"]},
            fn=self.search,
        )
        self.check_base_kwargs(base)
        # the split named: data without a test split is an error to fix, not ToolEnv's switch to its first split
        base.setdefault("split", self.defaults.split)
        super().__init__(tasks=tasks, tools=[search] if self.search_enabled else [], **base,
                         verifier=functools.partial(verify_answer, metric=reward_metric, budget_s=verifier_budget_s))

    def search(self, query: str) -> str:
        """The ``search`` tool: top-k passages as ``Doc i (Title: t) text`` lines."""
        passages = self.retriever.search(query, self.topk)
        if not passages:
            return "No results. Try a different query."
        return "".join(f"Doc {i} {p.render()}\n" for i, p in enumerate(passages, 1))

    def build_prompt(self, task: Task) -> str:
        if not self.search_enabled:
            if isinstance(self.action_format, TagsFormat):
                return f"{_NO_SEARCH_TAGS_INSTRUCTIONS}\nQuestion: {task.prompt}\n"
            return f"{_NO_SEARCH_INSTRUCTIONS}\n{self.action_format.instructions(self.tools)}\nQuestion: {task.prompt}\n"
        if isinstance(self.action_format, TagsFormat):
            return f"{_TAGS_INSTRUCTIONS}\nQuestion: {task.prompt}\n"
        return f"{_TOOL_INSTRUCTIONS}\n{self.action_format.instructions(self.tools)}\nQuestion: {task.prompt}\n"

    def result_tag(self, call: ToolCall) -> str:
        return "information"

    def oracle_action(self) -> str:
        """Search each supporting fact's query (or the question), then answer with the gold."""
        task = self.task
        queries = list(task.meta.get("oracle_queries") or [task.prompt]) if self.search_enabled else []
        if self.turn < len(queries) and self.turn < self.max_turns - 1:
            return self.action_format.render_call(ToolCall("search", {"query": queries[self.turn]}), self.tools)
        return self.action_format.render_answer(task.gold["golden_answers"][0])


def _str(path: Any) -> str | None:
    return None if path is None else str(path)


def _of_types(tasks: TaskSource, types: Sequence[str]) -> TaskList:
    """The tasks whose ``meta["type"]`` is one of ``types`` (the bundled data: single-hop, bridge, comparison)."""
    if isinstance(types, str):
        types = [types]
    wanted = set(types)
    kept = [t for split in tasks.splits() for t in tasks.tasks(split) if t.meta.get("type") in wanted]
    if not kept:
        known = sorted({str(t.meta.get("type")) for split in tasks.splits() for t in tasks.tasks(split)})
        raise ConfigError(f"No tasks of question_types {sorted(wanted)}; this data has types {known}.")
    return TaskList(kept)
