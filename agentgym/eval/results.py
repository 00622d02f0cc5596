"""The results file, the source of truth of a run: one fsynced JSON line per finished episode, keyed by what
determines the episode (env, split, index, seed, policy, model, sampling, env kwargs). A run that crashed is
rerun from it: every key already there is skipped. Also its Parquet export.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from agentgym.errors import DataError, DependencyNotInstalled
from agentgym.eval.episode import EpisodeResult

__all__ = ["ResultsFile", "export_parquet", "load_results"]

logger = logging.getLogger(__name__)


def _parse_lines(data: bytes, path: Path) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{number} is not a JSON line ({e}); remove or fix that line.") from None
    return records


def load_results(path: str | Path) -> list[dict[str, Any]]:
    """The records of a results file, in file order; a torn last line (a killed writer) is ignored."""
    path = Path(path)
    data = path.read_bytes()
    return _parse_lines(data[:data.rfind(b"\n") + 1], path)


class ResultsFile:
    """Appends one fsynced JSON line per episode; on open, cuts a torn last line and reads what is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab+") as f:
            f.seek(0)
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                logger.warning("%s: dropping a partial last line (%d bytes) left by an interrupted run",
                               path, len(data) - end)
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        # the latest line of a key wins: an errored episode that was retried is followed by its new result
        self.done: dict[str, dict[str, Any]] = {}
        for record in _parse_lines(data[:end], path):
            self.done[str(record.get("key", ""))] = record
        self._file = open(path, "ab")  # noqa: SIM115 - held for the run, closed by close()

    def append(self, result: EpisodeResult) -> None:
        self._file.write((json.dumps(result.as_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def export_parquet(jsonl_path: str | Path, parquet_path: str | Path) -> int:
    """Write a results file as Parquet with a flat schema (dicts and lists as JSON strings); returns the row count."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DependencyNotInstalled("pyarrow", "pip install pyarrow") from e
    records = load_results(jsonl_path)
    columns = list(dict.fromkeys(name for record in records for name in record))
    rows = [{name: json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (dict, list))
             else value for name, value in ((c, r.get(c)) for c in columns)} for r in records]
    table = pa.Table.from_pylist(rows) if rows else pa.table({})
    Path(parquet_path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, parquet_path)
    return len(rows)
