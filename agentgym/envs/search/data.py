"""SearchQA tasks from Search-R1 / FlashRAG QA files, and the bundled dataset's paths."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym.core.task import Task, TaskList, find_split_files, load_split_files
from agentgym.errors import DataError

__all__ = ["BUNDLED_DIR", "bundled_corpus", "bundled_qa_files", "find_qa_files", "load_qa_tasks", "task_from_record"]

BUNDLED_DIR = Path(str(resources.files("agentgym") / "data" / "searchqa"))


def bundled_corpus() -> Path:
    return BUNDLED_DIR / "corpus.jsonl.gz"


def bundled_qa_files() -> dict[str, Path]:
    return {"train": BUNDLED_DIR / "train.jsonl", "test": BUNDLED_DIR / "test.jsonl"}


def find_qa_files(data_dir: str | Path) -> dict[str, Path]:
    """Split files in a FlashRAG-style dataset dir: ``train``/``dev``/``test`` + a known suffix."""
    return find_split_files(data_dir, schema="Search-R1 / FlashRAG")


def _golden_answers(record: Mapping[str, Any]) -> list[str]:
    answers = record.get("golden_answers")
    if answers is None:  # Search-R1's processed parquet keeps them under reward_model too
        answers = ((record.get("reward_model") or {}).get("ground_truth") or {}).get("target")
    if isinstance(answers, str):
        answers = [answers]
    if answers is None or not hasattr(answers, "__iter__"):
        return []
    return [str(a) for a in answers if str(a).strip()]


def task_from_record(record: Mapping[str, Any], *, split: str, index: int, source: str) -> Task:
    """A ``Task`` from one QA record (``question`` + ``golden_answers``, optional ``id``/``metadata``)."""
    question = record.get("question")
    answers = _golden_answers(record)
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{source} record {index}: missing a non-empty 'question' field.")
    if not answers:
        raise DataError(f"{source} record {index}: missing 'golden_answers' (a string or a list of strings).")
    metadata = record.get("metadata") or {}
    task_id = str(record["id"]) if record.get("id") is not None else f"{split}_{index}"
    return Task(id=task_id, prompt=question.strip(), gold={"golden_answers": answers},
                split=split, meta=dict(metadata) if isinstance(metadata, Mapping) else {})


def load_qa_tasks(files: Mapping[str, str | Path]) -> TaskList:
    """Tasks from one file per split (``.jsonl``, ``.jsonl.gz``, ``.json``, ``.parquet``); an id repeated
    across splits becomes ``"<split>/<id>"``."""
    return load_split_files(files, task_from_record, what="QA")
