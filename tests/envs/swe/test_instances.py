"""Loading SWE-bench instances from the files users have: JSONL, Parquet, Hub snapshots, save_to_disk dirs."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentgym.envs.swe.instances import load_instances, normalize_instance
from agentgym.errors import DataError


def instance(i: int, *, as_text: bool = True) -> dict:
    f2p, p2p = [f"tests/test_a.py::test_bug_{i}"], ["tests/test_a.py::test_ok", "tests/test_b.py::test_x[1-2]"]
    return {
        "instance_id": f"octo__widgets-{i}", "repo": "octo/widgets", "base_commit": f"{i:040x}",
        "problem_statement": f"Widget {i} breaks on empty input", "patch": "diff --git a/w.py b/w.py\n",
        "test_patch": "diff --git a/tests/test_a.py b/tests/test_a.py\n", "version": "1.0",
        "environment_setup_commit": f"{i:040x}", "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
        "FAIL_TO_PASS": json.dumps(f2p) if as_text else f2p, "PASS_TO_PASS": json.dumps(p2p) if as_text else p2p,
    }


def test_jsonl_file_is_the_test_split(tmp_path):
    path = tmp_path / "swe.jsonl"
    path.write_text("".join(json.dumps(instance(i)) + "\n" for i in range(3)))
    loaded = load_instances(path)
    assert list(loaded) == ["test"] and len(loaded["test"]) == 3
    first = loaded["test"][0]
    assert first["FAIL_TO_PASS"] == ["tests/test_a.py::test_bug_0"]
    assert first["PASS_TO_PASS"][1] == "tests/test_b.py::test_x[1-2]"


def test_hub_snapshot_parquet_shards(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.Table.from_pylist([instance(0), instance(1)]), data / "test-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([instance(2, as_text=False)]), data / "dev-00000-of-00001.parquet")
    loaded = load_instances(tmp_path)
    assert sorted(loaded) == ["dev", "test"]
    assert [i["instance_id"] for i in loaded["test"]] == ["octo__widgets-0", "octo__widgets-1"]
    assert loaded["dev"][0]["PASS_TO_PASS"] == ["tests/test_a.py::test_ok", "tests/test_b.py::test_x[1-2]"]


def _write_arrow_stream(path, rows):
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def test_save_to_disk_dataset_dict(tmp_path):
    (tmp_path / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    for split, rows in (("train", [instance(0), instance(1)]), ("test", [instance(2)])):
        (tmp_path / split).mkdir()
        _write_arrow_stream(tmp_path / split / "data-00000-of-00001.arrow", rows)
        (tmp_path / split / "state.json").write_text("{}")
    loaded = load_instances(tmp_path)
    assert {k: len(v) for k, v in loaded.items()} == {"test": 1, "train": 2}


def test_one_file_per_split(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps(instance(0)) + "\n")
    pq.write_table(pa.Table.from_pylist([instance(1)]), tmp_path / "test.parquet")
    assert {k: len(v) for k, v in load_instances(tmp_path).items()} == {"test": 1, "train": 1}


def test_bad_instances_say_what_is_wrong(tmp_path):
    with pytest.raises(DataError, match="lacks"):
        normalize_instance({"instance_id": "x"})
    with pytest.raises(DataError, match="not a JSON list"):
        normalize_instance({**instance(0), "FAIL_TO_PASS": "[oops"})
    with pytest.raises(DataError, match="at least one failing test"):
        normalize_instance({**instance(0), "FAIL_TO_PASS": "[]"})
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(instance(0)) + "\n" + json.dumps(instance(0)) + "\n")
    with pytest.raises(DataError, match="appears twice"):
        load_instances(path)
    with pytest.raises(DataError, match="does not exist"):
        load_instances(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="No SWE-bench instances"):
        load_instances(tmp_path / "empty")
