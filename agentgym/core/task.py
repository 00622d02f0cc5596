"""Tasks and where they come from: bundled data, user files, seeded generators."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["GeneratedTasks", "Task", "TaskList", "TaskSource", "find_split_files", "load_split_files",
           "read_records"]


@dataclass(frozen=True)
class Task:
    """One problem instance.

    ``gold`` is privileged: what the verifier (and the oracle) needs, never shown
    to the agent. ``meta`` is free-form and JSON-serialisable.
    """

    id: str
    prompt: str
    gold: dict[str, Any]
    split: str = "test"
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "prompt": self.prompt, "gold": self.gold,
                "split": self.split, "meta": self.meta}

    def rubric_view(self) -> dict[str, Any]:
        """What a rubric's parts get as ``task``: the gold, with the task's prompt (``task_prompt``) and id
        (``task_id``) beside it (a gold field of the same name wins), so a judge sees the task it judges."""
        return {"task_prompt": self.prompt, "task_id": self.id, **self.gold}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(id=str(data["id"]), prompt=str(data.get("prompt", "")),
                   gold=dict(data.get("gold", {})), split=str(data.get("split", "test")),
                   meta=dict(data.get("meta", {})))


class TaskSource(ABC):
    """A collection of tasks addressable by id, by split and index, or by seed."""

    @abstractmethod
    def splits(self) -> list[str]:
        """The split names, sorted."""

    @abstractmethod
    def tasks(self, split: str) -> Sequence[Task]:
        """The tasks of one split, in a fixed order."""

    def get(self, task_id: str) -> Task:
        for split in self.splits():
            for task in self.tasks(split):
                if task.id == task_id:
                    return task
        raise ConfigError(f"Unknown task_id {task_id!r}; "
                          f"pass an id from splits {self.splits()}.")

    def sample(self, split: str, rng: random.Random) -> Task:
        tasks = self.tasks(split)
        if not tasks:
            raise ConfigError(f"Split {split!r} has no tasks; available: {self.splits()}.")
        return tasks[rng.randrange(len(tasks))]


class TaskList(TaskSource):
    """Tasks held in memory, grouped by their ``split``."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._by_split: dict[str, list[Task]] = {}
        self._by_id: dict[str, Task] = {}
        for task in tasks:
            if task.id in self._by_id:
                raise DataError(f"Duplicate task id {task.id!r}; task ids must be unique.")
            self._by_split.setdefault(task.split, []).append(task)
            self._by_id[task.id] = task

    def splits(self) -> list[str]:
        return sorted(self._by_split)

    def tasks(self, split: str) -> Sequence[Task]:
        if split not in self._by_split:
            raise ConfigError(f"Unknown split {split!r}; available: {self.splits()}.")
        return self._by_split[split]

    def get(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise ConfigError(f"Unknown task_id {task_id!r}; "
                              f"this source has {len(self._by_id)} tasks in splits "
                              f"{self.splits()}.") from None

    def __len__(self) -> int:
        return len(self._by_id)


class GeneratedTasks(TaskSource):
    """Procedural tasks: ``make(seed) -> Task``. Same seed, same task, everywhere.

    ``sizes`` gives the number of tasks per split; task ``i`` of split ``s`` is
    generated from a seed derived from ``(base_seed, s, i)`` by string hashing
    that does not depend on ``PYTHONHASHSEED``.
    """

    def __init__(self, make: Callable[[int, str], Task], sizes: dict[str, int],
                 *, base_seed: int = 0) -> None:
        self._make = make
        self._sizes = dict(sizes)
        self._base_seed = base_seed

    def splits(self) -> list[str]:
        return sorted(self._sizes)

    def seed_for(self, split: str, index: int) -> int:
        digest = hashlib.sha256(f"{self._base_seed}/{split}/{index}".encode()).digest()
        return int.from_bytes(digest[:8], "little")

    def tasks(self, split: str) -> Sequence[Task]:
        if split not in self._sizes:
            raise ConfigError(f"Unknown split {split!r}; available: {self.splits()}.")
        return [self._make(self.seed_for(split, i), split) for i in range(self._sizes[split])]


DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet", ".json")


def find_split_files(data_dir: str | Path, *, schema: str) -> dict[str, Path]:
    """One data file per split in ``data_dir``: ``train.jsonl``, ``test.parquet``, ... keyed by split.

    ``schema`` names the expected record schema in the error for an empty directory.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"Data dir {str(data_dir)!r} does not exist or is not a directory.")
    found = {}
    for path in sorted(data_dir.iterdir()):
        for suffix in DATA_SUFFIXES:
            if path.name.endswith(suffix):
                found[path.name[: -len(suffix)]] = path
    if not found:
        raise DataError(f"No data files in {data_dir}: expected e.g. train.jsonl / test.jsonl "
                        f"(or {', '.join(DATA_SUFFIXES)}) in the {schema} schema.")
    return found


def load_split_files(files: Mapping[str, str | Path], to_task: Callable[..., Task], *, what: str) -> TaskList:
    """Tasks from one data file per split; ``to_task(record, split=, index=, source=)`` makes each.

    An id that repeats across splits (files numbered from 0 each) becomes ``"<split>/<id>"``.
    """
    tasks, seen = [], set()
    for split, path in sorted(files.items()):
        for i, record in enumerate(read_records(path)):
            task = to_task(record, split=split, index=i, source=str(path))
            if task.id in seen:
                task = dataclasses.replace(task, id=f"{split}/{task.id}")
            seen.add(task.id)
            tasks.append(task)
    if not tasks:
        raise DataError(f"No {what} records found in {dict(files)}.")
    return TaskList(tasks)


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield dict records from a ``.jsonl``, ``.jsonl.gz``, ``.json`` or ``.parquet`` file."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"Data file {str(path)!r} does not exist.")
    name = path.name.lower()
    if name.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise DependencyNotInstalled("pyarrow (for .parquet files)", "pip install pyarrow") from e
        table = pq.read_table(path)
        yield from table.to_pylist()
        return
    if name.endswith(".json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise DataError(f"{path}: a .json data file must hold a list of records.")
        yield from data
        return
    if not (name.endswith(".jsonl") or name.endswith(".jsonl.gz")):
        raise DataError(f"{path}: unsupported file type; use .jsonl, .jsonl.gz, .json or .parquet.")
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg}).") from e
            if not isinstance(record, dict):
                raise DataError(f"{path}:{lineno}: each line must be a JSON object.")
            yield record
