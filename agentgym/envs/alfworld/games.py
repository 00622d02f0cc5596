"""ALFWorld game sets: the bundled generated set, the official json_2.1.1 files, and the writer between them.

A game is ALFWorld's ``game.tw-pddl`` dict (``pddl_domain``, ``grammar`` with the task
line, ``pddl_problem``, ``solvable``, ``walkthrough``) plus its ``traj_data`` fields.
The bundled set stores only what differs per game (the problem, task text, params,
walkthrough); the domain and grammar come from the installed alfworld package.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError

__all__ = ["BUNDLED_PATH", "DEFAULT_SIZES", "GameRecord", "build_game", "collect_official_games",
           "generate_games", "read_bundled", "write_bundled", "write_official_layout"]

BUNDLED_PATH = Path(__file__).resolve().parents[2] / "data" / "alfworld" / "games.jsonl.gz"
DEFAULT_SIZES = {"train": 240, "valid_seen": 42, "valid_unseen": 42}
OFFICIAL_SPLITS = {"train": "train", "valid_seen": "valid_seen", "valid_unseen": "valid_unseen"}
_MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class GameRecord:
    """One playable game: where it comes from and how to get its ``game.tw-pddl`` dict."""

    id: str
    split: str
    task_type: str
    task_desc: str = ""
    path: str | None = None  # official files: the game.tw-pddl path, read at first use
    record: dict[str, Any] | None = field(default=None, repr=False)  # bundled: the compact record

    def game_data(self) -> dict[str, Any]:
        """The ``game.tw-pddl`` dict of this game."""
        if self.record is not None:
            return expand_record(self.record)
        assert self.path is not None
        try:
            data = json.loads(Path(self.path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise DataError(f"Cannot read ALFWorld game file {self.path}: {e}") from e
        missing = {"pddl_domain", "grammar", "pddl_problem"} - set(data)
        if missing:
            raise DataError(f"{self.path} is not an ALFWorld game file: it lacks {sorted(missing)}.")
        if data.get("solvable") is False:
            raise DataError(f"{self.path} is marked unsolvable (solvable: false); ALFWorld skips such games.")
        return data


def expand_record(record: dict[str, Any]) -> dict[str, Any]:
    """A compact bundled record as the full ``game.tw-pddl`` dict (domain and grammar from alfworld)."""
    from agentgym.envs.alfworld.engine import shipped_logic_files

    domain, grammar = shipped_logic_files()
    return {"pddl_domain": domain, "grammar": grammar.replace("UNKNOWN GOAL", record["task_desc"].rstrip(".")),
            "pddl_problem": record["problem"], "solvable": True, "walkthrough": list(record["walkthrough"])}


def _seed(base_seed: int, split: str, index: int, attempt: int) -> int:
    digest = hashlib.sha256(f"alfworld/{base_seed}/{split}/{index}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def build_game(split: str, index: int, *, base_seed: int = 0) -> dict[str, Any]:
    """The compact record of game ``index`` of ``split``, checked solvable by the planner.

    Task types go round-robin over the six; a draw that cannot host its task, or that
    Fast Downward cannot solve in a win, is redrawn with the next attempt's seed.
    """
    from agentgym.envs.alfworld import gen
    from agentgym.envs.alfworld.engine import shipped_logic_files

    task_type = gen.TASK_TYPES[index % len(gen.TASK_TYPES)]
    domain, grammar = shipped_logic_files()
    player = _generator_player()
    for attempt in range(_MAX_ATTEMPTS):
        spec = gen.make_spec(_seed(base_seed, split, index, attempt), split, index, task_type)
        if spec is None:
            continue
        data = {"pddl_domain": domain, "grammar": grammar.replace("UNKNOWN GOAL", spec.task_desc.rstrip(".")),
                "pddl_problem": spec.problem}
        game = player.load(data)
        player.reset(game)
        if player.won:
            continue
        plan = player.plan()
        for command in plan:
            player.step(command)
        if plan and player.won:
            return {"id": spec.game_id, "split": split, "task_type": task_type, "task_desc": spec.task_desc,
                    "pddl_params": spec.pddl_params, "floor_plan": spec.plan, "meta": spec.meta,
                    "walkthrough": plan, "problem": spec.problem}
    raise DataError(f"No solvable {task_type} game for {split}/{index} in {_MAX_ATTEMPTS} draws.")


@cache
def _generator_player() -> Any:
    from agentgym.envs.alfworld.engine import GamePlayer

    return GamePlayer()


def _build_star(args: tuple[str, int, int]) -> dict[str, Any]:
    return build_game(args[0], args[1], base_seed=args[2])


def generate_games(sizes: dict[str, int] | None = None, *, base_seed: int = 0,
                   workers: int = 1) -> list[dict[str, Any]]:
    """Records for ``sizes`` games per split, in (split, index) order; same seed, same bytes."""
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    unknown = set(sizes) - set(DEFAULT_SIZES)
    if unknown:
        raise ConfigError(f"Unknown split(s) {sorted(unknown)}; use {sorted(DEFAULT_SIZES)}.")
    jobs = [(split, i, base_seed) for split in DEFAULT_SIZES if split in sizes for i in range(sizes[split])]
    if workers <= 1:
        return [_build_star(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:  # each worker has its own Fast Downward library
        return list(pool.map(_build_star, jobs, chunksize=4))


def record_bytes(record: dict[str, Any]) -> bytes:
    """The canonical JSON line of a record (sorted keys), as stored in the bundled file."""
    return (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def write_bundled(records: Sequence[dict[str, Any]], path: str | Path = BUNDLED_PATH) -> Path:
    """Write records as gzipped JSON lines with a fixed gzip header (mtime 0), so the file is reproducible."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        for record in records:
            fh.write(record_bytes(record))
    return path


def read_bundled(path: str | Path = BUNDLED_PATH) -> list[GameRecord]:
    """The bundled generated games."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"The bundled ALFWorld games are missing ({path}); regenerate them with "
                        "python scripts/make_alfworld_data.py, or pass data_dir= with ALFWorld's json_2.1.1.")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    return [GameRecord(id=r["id"], split=r["split"], task_type=r["task_type"], task_desc=r["task_desc"], record=r)
            for r in records]


def _official_root(data_dir: str | Path) -> Path:
    root = Path(os.path.expandvars(str(data_dir))).expanduser()
    if (root / "json_2.1.1").is_dir():
        root = root / "json_2.1.1"
    if not root.is_dir() or not any((root / s).is_dir() for s in OFFICIAL_SPLITS):
        raise DataError(f"{root} is not ALFWorld's data directory: expected json_2.1.1/ with train/, valid_seen/ "
                        "and valid_unseen/ (run alfworld-download once, then point ALFWORLD_DATA or data_dir at it).")
    return root


def collect_official_games(data_dir: str | Path, *, task_types: Sequence[str] | None = None) -> list[GameRecord]:
    """Games of ALFWorld's json_2.1.1 tree, as ``AlfredTWEnv.collect_game_files`` selects them.

    A trial directory counts when it has ``traj_data.json`` and ``game.tw-pddl`` and its path names neither
    'movable' nor 'Sliced'; the task type is the directory name's prefix. Game files are read at first use,
    so listing the 3,553 training games stays fast; an unsolvable one fails with a clear error when played.
    """
    from agentgym.envs.alfworld.gen import TASK_TYPES

    wanted = set(task_types or TASK_TYPES)
    root = _official_root(data_dir)
    games = []
    for split_dir, split in OFFICIAL_SPLITS.items():
        base = root / split_dir
        if not base.is_dir():
            continue
        for game_file in _walk_games(base):
            trial = game_file.parent
            rel = trial.relative_to(base).as_posix()
            if "movable" in rel or "Sliced" in rel:
                continue
            task_type = rel.split("/", 1)[0].split("-", 1)[0]
            if task_type not in wanted:
                continue
            games.append(GameRecord(id=f"{split}/{rel}", split=split, task_type=task_type, path=str(game_file)))
    if not games:
        raise DataError(f"No ALFWorld games (trial dirs with game.tw-pddl and traj_data.json) under {root}.")
    return games


def _walk_games(base: Path) -> Iterator[Path]:
    for dirpath, _, files in sorted(os.walk(base)):
        if "traj_data.json" in files and "game.tw-pddl" in files:
            yield Path(dirpath) / "game.tw-pddl"


def write_official_layout(records: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """Write records in ALFWorld's layout: ``json_2.1.1/<split>/<task dir>/trial_<n>/{game.tw-pddl,traj_data.json}``.

    What ``alfworld-download`` gives, so that ``AlfredTWEnv`` (and this env's ``data_dir``) can play them.
    """
    paths = []
    for record in records:
        params = record["pddl_params"]
        task_dir = "-".join([record["task_type"], params["object_target"], params["mrecep_target"],
                             params["parent_target"] or params["toggle_target"], str(record["floor_plan"])])
        trial = Path(out_dir) / "json_2.1.1" / record["split"] / task_dir / f"trial_{record['id'].rsplit('/', 1)[-1]}"
        trial.mkdir(parents=True, exist_ok=True)
        (trial / "game.tw-pddl").write_text(json.dumps(expand_record(record), indent=1))
        traj = {"task_id": record["id"], "task_type": record["task_type"], "pddl_params": params,
                "scene": {"floor_plan": f"FloorPlan{record['floor_plan']}", "scene_num": record["floor_plan"]},
                "turk_annotations": {"anns": [{"task_desc": record["task_desc"], "high_descs": [], "votes": []}]}}
        (trial / "traj_data.json").write_text(json.dumps(traj, indent=1))
        paths.append(trial / "game.tw-pddl")
    return paths
