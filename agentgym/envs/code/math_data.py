r"""MathTool tasks from GSM8K- and MATH-schema files or reasoning-gym, and the bundled dataset's paths.

The schema is detected per record (keys are matched case-insensitively, so
AIME-style ``Problem``/``Answer`` files load too) and both map to one gold:

    gold = {"answer": str}   # what verify_math compares with the model's final answer

- GSM8K: ``question`` + ``answer`` ending in ``#### <number>``; the gold is the
  text after the last ``####``, with thousands commas removed.
- MATH: ``problem`` + ``solution``; the gold is an explicit ``answer`` field
  when there is one (MATH-500, ``lighteval/MATH``, AIME), else the content of
  the solution's last ``\boxed{...}`` (braces nest). ``problem`` + ``answer``
  alone is enough.

``Task.prompt`` is the question or problem text. ``meta`` holds ``source``
("gsm8k", "math" or "reasoning_gym"), ``oracle_code`` (a record's ``code``: a
program that prints the answer, run by the oracle policy), and ``level``,
``type``, ``subject`` and ``topic`` when a record has them. Ids are a record's
``id``, ``unique_id`` or ``task_id``, else ``<split>_<n>`` numbered across the
split's files. Files are JSONL, JSONL.gz, JSON lists or Parquet; a directory is
read as the original MATH release (``<split>/<type>/<n>.json``, one problem a file).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym.core.task import Task, TaskList, read_records
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled
from agentgym.verifiers.math import extract_boxed

__all__ = ["BUNDLED_DIR", "REASONING_GYM_NUMERIC", "bundled_math_files", "find_math_files", "load_math_tasks",
           "reasoning_gym_tasks", "task_from_record"]

BUNDLED_DIR = Path(str(resources.files("agentgym") / "data" / "mathtool"))
_SUFFIXES = (".jsonl.gz", ".jsonl", ".parquet", ".json")
_SPLIT_SUFFIX = re.compile(r"^(?:.+[-_])?(train|test|validation|valid|val|dev)(?:-\d+-of-\d+)?$")
_ID_KEYS = ("id", "unique_id", "task_id")
_META_KEYS = ("level", "type", "subject", "topic")

# reasoning-gym datasets whose answer is one number (integer, decimal or a/b), checked on 3,000 samples each;
# the others answer with words, lists, expressions or LaTeX.
REASONING_GYM_NUMERIC = ("basic_arithmetic", "chain_sum", "count_bits", "count_primes", "decimal_chain_sum", "dice",
                         "gcd", "gsm_symbolic", "lcm", "leg_counting", "products", "simple_equations")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def bundled_math_files() -> dict[str, list[Path]]:
    """The bundled splits, each its GSM8K-schema file followed by its MATH-schema file."""
    return {split: [BUNDLED_DIR / f"gsm8k_{split}.jsonl", BUNDLED_DIR / f"math_{split}.jsonl"]
            for split in ("train", "test")}


def find_math_files(data_dir: str | Path) -> dict[str, list[Path]]:
    """Split files in a dataset dir, grouped by split.

    ``test.jsonl`` is split ``test``; ``gsm8k_train.jsonl``, ``math-test.parquet`` and
    Hugging Face shards such as ``train-00000-of-00001.parquet`` go to the split they
    name. A subdirectory named like a split (the original MATH release) is one source.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"Math data dir {str(data_dir)!r} does not exist or is not a directory.")
    found: dict[str, list[Path]] = {}
    for path in sorted(data_dir.iterdir()):
        if path.is_dir():
            if any(path.rglob("*.json")):
                match = _SPLIT_SUFFIX.match(path.name)
                found.setdefault(match.group(1) if match else path.name, []).append(path)
            continue
        suffix = next((s for s in _SUFFIXES if path.name.endswith(s)), None)
        if suffix is None:
            continue
        stem = path.name[: -len(suffix)]
        match = _SPLIT_SUFFIX.match(stem)
        found.setdefault(match.group(1) if match else stem, []).append(path)
    if not found:
        raise DataError(f"No math files in {data_dir}: expected e.g. train.jsonl / test.jsonl (or "
                        f"{', '.join(_SUFFIXES)}) in the GSM8K or MATH schema.")
    return found


def _field(record: Mapping[str, Any], key: str) -> Any:
    """``record[key]``, matching the key case-insensitively."""
    if key in record:
        return record[key]
    return next((v for k, v in record.items() if isinstance(k, str) and k.lower() == key), None)


def _text(value: Any) -> str | None:
    """A non-empty string (numbers become strings), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _gsm8k_gold(answer: str) -> str | None:
    if "####" not in answer:
        return None
    return answer.rsplit("####", 1)[1].strip().replace(",", "") or None


def task_from_record(record: Mapping[str, Any], *, split: str, index: int, source: str) -> Task:
    """A ``Task`` from one GSM8K- or MATH-schema record; ``source`` names it in errors."""
    question, problem = _text(_field(record, "question")), _text(_field(record, "problem"))
    answer, solution = _field(record, "answer"), _text(_field(record, "solution"))
    if question is not None and isinstance(answer, str) and problem is None:
        gold = _gsm8k_gold(answer)
        if gold is None:
            raise DataError(f"{source}: a GSM8K record's 'answer' must end with '#### <final answer>'.")
        prompt, kind = question, "gsm8k"
    elif problem is not None and (_text(answer) is not None or solution is not None):
        gold = _text(answer)
        if gold is None:
            gold = extract_boxed(solution)
            if not gold or not gold.strip():
                raise DataError(f"{source}: a MATH record needs an 'answer' field or a solution with a balanced "
                                "\\boxed{...} holding the final answer.")
            gold = gold.strip()
        prompt, kind = problem, "math"
    else:
        raise DataError(f"{source}: neither the GSM8K schema ('question' + 'answer' ending in '#### <answer>') "
                        f"nor the MATH schema ('problem' + 'solution' with \\boxed{{}}, or 'problem' + 'answer'); "
                        f"the record has keys {sorted(map(str, record))}.")
    ids = (_text(_field(record, key)) for key in _ID_KEYS)
    task_id = next((i for i in ids if i is not None), f"{split}_{index}")
    meta: dict[str, Any] = {"source": kind}
    code = _text(_field(record, "code"))
    if code is not None:
        meta["oracle_code"] = code
    meta.update({k: v for k in _META_KEYS if (v := _field(record, k)) is not None})
    return Task(id=task_id, prompt=prompt, gold={"answer": gold}, split=split, meta=meta)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of one file, or of the original MATH release's ``<type>/<n>.json`` tree."""
    if not path.is_dir():
        yield from read_records(path)
        return
    for file in sorted(path.rglob("*.json")):
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DataError(f"{file}: not valid JSON ({e.msg}).") from e
        if not isinstance(record, dict):
            raise DataError(f"{file}: a MATH problem file must hold one JSON object.")
        record.setdefault("unique_id", f"{path.name}/{file.relative_to(path).as_posix()}")
        yield record


def load_math_tasks(files: Mapping[str, str | Path | Sequence[str | Path]]) -> TaskList:
    """Tasks from one or more files per split, each record in the GSM8K or MATH schema.

    Errors name the file and the record's 1-based position. An id that repeats
    becomes ``"<split>/<id>"``, then ``"<split>/<file stem>/<id>"``.
    """
    tasks: list[Task] = []
    seen: set[str] = set()
    for split, paths in sorted(files.items()):
        index = 0
        for path in [paths] if isinstance(paths, (str, Path)) else list(paths):
            path = Path(path)
            for n, record in enumerate(_records(path), 1):
                if not isinstance(record, Mapping):
                    raise DataError(f"{path}: record {n} is not a JSON object.")
                task = task_from_record(record, split=split, index=index, source=f"{path}: record {n}")
                index += 1
                stem = path.name.split(".")[0]
                task_id = next((c for c in (task.id, f"{split}/{task.id}", f"{split}/{stem}/{task.id}")
                                if c not in seen), None)
                if task_id is None:
                    raise DataError(f"{path}: record {n} repeats the id {task.id!r} of an earlier record.")
                seen.add(task_id)
                tasks.append(dataclasses.replace(task, id=task_id))
    if not tasks:
        raise DataError(f"No math records found in {dict(files)}.")
    return TaskList(tasks)


def reasoning_gym_tasks(names: Sequence[str], size_per_split: int, seed: int,
                        configs: Mapping[str, Mapping[str, Any]] | None = None) -> TaskList:
    """Procedural single-number tasks from the reasoning-gym package, ``size_per_split`` per name and split.

    ``configs`` maps a name to its dataset's config fields (for example
    ``{"chain_sum": {"min_terms": 2, "max_terms": 2, "max_digits": 1}}`` for an easy split).

    Each name's dataset is generated once with ``size = 2 * size_per_split``: the first
    half is ``train``, the second ``test``, without questions that ``train`` already has
    (so ``test`` may come out a little short). Names must be in ``REASONING_GYM_NUMERIC``.
    """
    unknown = [n for n in names if n not in REASONING_GYM_NUMERIC]
    if unknown or not names:
        raise ConfigError(f"reasoning-gym datasets {unknown or list(names)} are not supported: pick from "
                          f"{', '.join(REASONING_GYM_NUMERIC)} (the ones whose answer is a single number).")
    if size_per_split < 1:
        raise ConfigError(f"size_per_split must be at least 1, got {size_per_split}.")
    try:
        import reasoning_gym
    except ImportError as e:
        raise DependencyNotInstalled("reasoning-gym", "pip install reasoning-gym") from e
    configs = dict(configs or {})
    stray = sorted(set(configs) - set(names))
    if stray:
        raise ConfigError(f"reasoning_gym_config names {stray}, which are not among the datasets {list(names)}.")
    tasks: list[Task] = []
    for name in dict.fromkeys(names):
        fields = dict(configs.get(name) or {})
        try:
            dataset = reasoning_gym.create_dataset(name, size=2 * size_per_split, seed=seed, **fields)
        except (TypeError, ValueError, AssertionError) as e:
            raise ConfigError(f"reasoning-gym {name!r} rejected the config {fields}: {e}") from e
        seen: set[str] = set()
        for i in range(2 * size_per_split):
            item = dataset[i]
            split = "train" if i < size_per_split else "test"
            question, answer = str(item["question"]).strip(), str(item["answer"]).strip()
            if question in seen:
                continue
            seen.add(question)
            if not _NUMBER.fullmatch(answer):
                raise DataError(f"reasoning-gym {name!r} item {i} answers {answer!r}, not a single number; "
                                "this reasoning-gym version is not supported.")
            tasks.append(Task(id=f"{name}/{split}_{i % size_per_split}", prompt=question, gold={"answer": answer},
                              split=split, meta={"source": "reasoning_gym", "dataset": name}))
    return TaskList(tasks)
