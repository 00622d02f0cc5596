"""SWE-bench task instances, read from the files users have: JSONL, Parquet, or a Hugging Face dataset dir.

SWE-bench's schema (SWE-bench, SWE-bench Lite / Verified, SWE-Gym): ``instance_id``,
``repo``, ``base_commit``, ``problem_statement``, ``patch``, ``test_patch``,
``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists, or lists as JSON text), ``version``,
``environment_setup_commit``, ``hints_text``, ``created_at``. A directory may be

- a Hub snapshot: ``data/<split>-00000-of-00001.parquet`` (or the files at its top level),
- a ``datasets`` ``save_to_disk`` directory: ``<split>/data-*.arrow`` (Arrow IPC streams),
  with ``dataset_dict.json``, or a single split's ``data-*.arrow`` + ``state.json``,
- one file per split: ``test.jsonl``, ``dev.parquet``, ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentgym.core.task import DATA_SUFFIXES, read_records
from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["REQUIRED_FIELDS", "load_instances", "normalize_instance"]

REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch",
                   "FAIL_TO_PASS", "PASS_TO_PASS")
_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)(?:[-_]\d{5}[-_]of[-_]\d{5})?$")


def _test_list(value: Any, *, field: str, instance_id: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as e:
            raise DataError(f"{instance_id}: {field} is text that is not a JSON list ({e.msg}).") from e
    if hasattr(value, "tolist"):  # numpy arrays from some Parquet readers
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise DataError(f"{instance_id}: {field} must be a list of test ids (or that list as JSON text).")
    return list(value)


def normalize_instance(record: Mapping[str, Any], *, source: str = "") -> dict[str, Any]:
    """``record`` with SWE-bench's required fields checked and the test lists as Python lists."""
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        where = f" in {source}" if source else ""
        raise DataError(f"SWE-bench instance {record.get('instance_id', '?')!r}{where} lacks {missing}; "
                        f"an instance needs {', '.join(REQUIRED_FIELDS)}.")
    instance = dict(record)
    instance_id = str(instance["instance_id"])
    instance["instance_id"] = instance_id
    for field in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        instance[field] = _test_list(instance[field], field=field, instance_id=instance_id)
    if not instance["FAIL_TO_PASS"]:
        raise DataError(f"{instance_id}: FAIL_TO_PASS is empty; an instance needs at least one failing test.")
    instance.setdefault("version", "")
    instance.setdefault("environment_setup_commit", instance["base_commit"])
    instance.setdefault("hints_text", "")
    return instance


def _arrow_records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow as pa
    except ImportError as e:
        raise DependencyNotInstalled("pyarrow (for Hugging Face dataset dirs)", "pip install pyarrow") from e
    with pa.memory_map(str(path)) as source:
        try:
            table = pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(source).read_all()
    yield from table.to_pylist()


def _split_of(path: Path) -> str:
    stem = path.name
    for suffix in (*DATA_SUFFIXES, ".arrow"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    match = _SHARD.match(stem)
    return match.group("split") if match else stem


def _files_by_split(root: Path) -> dict[str, list[Path]]:
    if root.is_file():
        return {"test": [root]}
    if (root / "dataset_dict.json").is_file():  # save_to_disk of a DatasetDict
        splits = json.loads((root / "dataset_dict.json").read_text())["splits"]
        return {s: sorted((root / s).glob("data-*.arrow")) for s in splits}
    if (root / "state.json").is_file():  # save_to_disk of one Dataset
        return {"test": sorted(root.glob("data-*.arrow"))}
    data = root / "data" if (root / "data").is_dir() else root
    found: dict[str, list[Path]] = {}
    for path in sorted(data.iterdir()):
        if path.is_file() and path.name.endswith((*DATA_SUFFIXES, ".arrow")) and not path.name.startswith("."):
            found.setdefault(_split_of(path), []).append(path)
    return found


def load_instances(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Instances by split from a file (split ``test``) or a dataset directory."""
    root = Path(path)
    if not root.exists():
        raise DataError(f"SWE-bench data {str(root)!r} does not exist.")
    by_split: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for split, files in sorted(_files_by_split(root).items()):
        for file in files:
            records = _arrow_records(file) if file.name.endswith(".arrow") else read_records(file)
            for record in records:
                instance = normalize_instance(record, source=str(file))
                if instance["instance_id"] in seen:
                    raise DataError(f"{file}: instance {instance['instance_id']!r} appears twice.")
                seen.add(instance["instance_id"])
                by_split.setdefault(split, []).append(instance)
    if not by_split:
        raise DataError(f"No SWE-bench instances in {root}: expected a .jsonl / .parquet file, a Hub snapshot "
                        "(data/test-*.parquet) or a datasets save_to_disk directory.")
    return by_split
