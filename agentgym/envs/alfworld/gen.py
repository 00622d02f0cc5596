"""Seeded ALFWorld game generator: ALFRED floor plans and placement rules to PDDL problems.

Every scene comes from the layouts shipped in ``alfworld/gen/layouts`` (receptacle
ids and interaction poses, the object types of each floor plan); what may go where
from ``alfworld.gen.constants.VAL_RECEPTACLE_OBJECTS``; object affordances from
``VAL_ACTION_OBJECTS``; goals and task texts from ``alfworld.gen.goal_library``.
A ``GameSpec`` is a pure function of its seed (``random.Random`` only, sorted
iteration everywhere), so the same seed gives the same problem text on every
machine. Solvability is checked by the caller with the planner (``games.build_game``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["GAME_SPLITS", "ROOM_PLANS", "TASK_TYPES", "GameSpec", "floor_plans", "make_spec", "mangle"]

TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place")
ROOM_PLANS = {"kitchen": range(1, 31), "livingroom": range(201, 231), "bedroom": range(301, 331),
              "bathroom": range(401, 431)}
# ALFRED's scene split: floor plans 1-6 of each room type are held out (alfworld.gen.constants.TEST_SCENE_NUMBERS)
GAME_SPLITS = ("train", "valid_seen", "valid_unseen")
_ROOMS_FOR_TASK = {  # alfworld.gen.constants.GOALS_VALID, keyed by our room names
    "pick_and_place_simple": ("kitchen", "livingroom", "bedroom", "bathroom"),
    "pick_two_obj_and_place": ("kitchen", "livingroom", "bedroom", "bathroom"),
    "look_at_obj_in_light": ("livingroom", "bedroom"),
    "pick_clean_then_place_in_recep": ("kitchen", "bathroom"),
    "pick_heat_then_place_in_recep": ("kitchen",),
    "pick_cool_then_place_in_recep": ("kitchen",),
}
_AFFORDANCE = {"pick_clean_then_place_in_recep": "Cleanable", "pick_heat_then_place_in_recep": "Heatable",
               "pick_cool_then_place_in_recep": "Coolable"}
_APPLIANCE = {"pick_clean_then_place_in_recep": "SinkBasin", "pick_heat_then_place_in_recep": "Microwave",
              "pick_cool_then_place_in_recep": "Fridge"}
_LAMPS = ("DeskLamp", "FloorLamp")
_LAMP_HOLDERS = ("Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand", "Ottoman")
# types the domain's actions name as constants: always declared
_FIXED_RTYPES = ("FridgeType", "MicrowaveType", "SinkBasinType")
_FIXED_OTYPES = ("ButterKnifeType", "KnifeType")
_MAX_DISTRACTOR_TYPES = 10  # keeps problems near ALFWorld's size (about 20-40 objects)
_SYNTH_COUNT = {"StoveBurner": 2}


def mangle(name: str) -> str:
    """An ALFRED id as a PDDL name (``alfworld.gen`` ``PlannedGameState.fix_pddl_str_chars``)."""
    for old, new in (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        name = name.replace(old, new)
    return name


@cache
def _constants() -> Any:
    from alfworld.gen import constants

    return constants


@cache
def _goals() -> dict[str, Any]:
    import alfworld.gen.goal_library as glib

    return glib.gdict


def _layouts_dir() -> Path:
    import alfworld.gen

    return Path(alfworld.gen.__file__).parent / "layouts"


def floor_plans(split: str) -> list[int]:
    """Floor plans of a split: ALFRED's train scenes for train/valid_seen, its held-out scenes for valid_unseen."""
    constants = _constants()
    held_out = set(constants.TEST_SCENE_NUMBERS)
    plans = [n for r in ROOM_PLANS.values() for n in r]
    return [n for n in plans if (n in held_out) == (split == "valid_unseen")]


def room_of(plan: int) -> str:
    return next(room for room, plans in ROOM_PLANS.items() if plan in plans)


@dataclass(frozen=True)
class Scene:
    """A floor plan's receptacles (id -> type, pose) and object types, from the shipped layouts."""

    plan: int
    receptacles: dict[str, tuple[str, tuple[int, int, int, int]]]
    object_types: tuple[str, ...]
    points: tuple[tuple[float, float], ...]


@cache
def load_scene(plan: int) -> Scene:
    """Receptacles with poses from ``FloorPlanN-openable.json``; one synthesised instance (seeded by the
    plan number, on a reachable point of ``FloorPlanN-layout.npy``) for receptacle types the scene lists
    without a pose (garbage cans, stove burners, towel holders...)."""
    import numpy as np

    constants = _constants()
    base = _layouts_dir() / f"FloorPlan{plan}"
    posed = json.loads(Path(f"{base}-openable.json").read_text())
    kinds = json.loads(Path(f"{base}-objects.json").read_text())
    points = tuple((float(x), float(z)) for x, z in np.load(f"{base}-layout.npy").tolist())
    receptacles: dict[str, tuple[str, tuple[int, int, int, int]]] = {}
    for rid, (x, z, rot, horizon) in sorted(posed.items()):
        rtype = rid.split("|")[-1] if rid.count("|") == 4 else rid.split("|")[0]
        if rtype not in constants.RECEPTACLES or rtype in constants.MOVABLE_RECEPTACLES_SET:
            continue
        receptacles[rid] = (rtype, _loc(x, z, rot, horizon))
    have = {t for t, _ in receptacles.values()}
    rng = random.Random(f"scene/{plan}")
    for rtype in sorted(set(kinds)):
        if rtype in have or rtype not in constants.RECEPTACLES or rtype in constants.MOVABLE_RECEPTACLES_SET:
            continue
        if rtype not in constants.VAL_RECEPTACLE_OBJECTS:
            continue
        for _ in range(_SYNTH_COUNT.get(rtype, 1)):
            x, z = rng.choice(points)
            rid = f"{rtype}|{x:+06.2f}|{rng.uniform(0.0, 1.5):+06.2f}|{z:+06.2f}"
            receptacles[rid] = (rtype, _loc(x, z, rng.choice((0, 90, 180, 270)), 30))
    return Scene(plan, receptacles, tuple(sorted(set(kinds))), points)


def _loc(x: float, z: float, rot: float, horizon: float) -> tuple[int, int, int, int]:
    # ALFRED's 'loc|%d|%d|%d|%d': grid steps of 0.25 m, rotation in quarter turns, camera horizon in degrees
    return round(x / 0.25), round(z / 0.25), round(rot / 90) % 4, round(horizon)


def _loc_name(loc: tuple[int, int, int, int]) -> str:
    return "loc|{}|{}|{}|{}".format(*loc)


@dataclass(frozen=True)
class GameSpec:
    """One generated game: the ALFWorld ``traj_data`` fields, the task text and the PDDL problem."""

    game_id: str
    split: str
    task_type: str
    plan: int
    pddl_params: dict[str, Any]
    task_desc: str
    problem: str
    meta: dict[str, Any] = field(default_factory=dict)


def _pickupable_types(scene: Scene) -> list[str]:
    constants = _constants()
    holdable = set().union(*constants.VAL_RECEPTACLE_OBJECTS.values())
    return [t for t in scene.object_types if t in holdable and t in constants.OBJECTS
            and (t not in constants.RECEPTACLES or t in constants.MOVABLE_RECEPTACLES_SET)]


def _holders(scene: Scene, otype: str) -> list[str]:
    vr = _constants().VAL_RECEPTACLE_OBJECTS
    return sorted(rid for rid, (rtype, _) in scene.receptacles.items() if otype in vr.get(rtype, ()))


def _choose_goal(rng: random.Random, task_type: str, scene: Scene) -> dict[str, str] | None:
    constants = _constants()
    present_rtypes = sorted({t for t, _ in scene.receptacles.values()})
    candidates = []
    for otype in _pickupable_types(scene):
        if task_type in _AFFORDANCE and otype not in constants.VAL_ACTION_OBJECTS[_AFFORDANCE[task_type]]:
            continue
        if task_type in _APPLIANCE and _APPLIANCE[task_type] not in present_rtypes:
            continue
        if task_type == "look_at_obj_in_light":
            lamps = [t for t in _LAMPS if t in scene.object_types]
            if lamps and _holders(scene, otype):
                candidates.append((otype, "", rng.choice(lamps)))
            continue
        for rtype in present_rtypes:
            if rtype == _APPLIANCE.get(task_type) or otype not in constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ()):
                continue
            # the object must start somewhere that is not the goal receptacle type
            if any(scene.receptacles[r][0] != rtype for r in _holders(scene, otype)):
                candidates.append((otype, rtype, ""))
    if not candidates:
        return None
    otype, rtype, toggle = rng.choice(candidates)
    return {"object_target": otype, "parent_target": rtype, "toggle_target": toggle,
            "mrecep_target": "", "object_sliced": False}


def make_spec(seed: int, split: str, index: int, task_type: str) -> GameSpec | None:
    """The game for ``seed`` (None when the drawn floor plan cannot host ``task_type``; draw again)."""
    rng = random.Random(seed)
    plans = [p for p in floor_plans(split) if room_of(p) in _ROOMS_FOR_TASK[task_type]]
    plan = rng.choice(plans)
    scene = load_scene(plan)
    params = _choose_goal(rng, task_type, scene)
    if params is None:
        return None
    placements = _place_objects(rng, scene, params, task_type)
    if placements is None:
        return None
    template = rng.choice(_goals()[task_type]["templates"])
    task_desc = template.format(obj=params["object_target"].lower(), recep=params["parent_target"].lower(),
                                toggle=params["toggle_target"].lower(), mrecep="") + "."
    game_id = f"{split}/{task_type}-{params['object_target']}-{params['parent_target'] or params['toggle_target']}" \
              f"-{plan}/{index:04d}"
    start = _start_location(rng, scene)
    problem = _problem(game_id, scene, placements, params, task_type, start)
    return GameSpec(game_id=game_id, split=split, task_type=task_type, plan=plan, pddl_params=params,
                    task_desc=task_desc, problem=problem,
                    meta={"room": room_of(plan), "seed": seed, "n_objects": len(placements)})


def _place_objects(rng: random.Random, scene: Scene, params: dict[str, Any],
                   task_type: str) -> list[tuple[str, str, str]] | None:
    """(object id, object type, receptacle id) for the target, a lamp if needed, and distractors."""
    constants = _constants()
    target, parent = params["object_target"], params["parent_target"]
    others = [t for t in _pickupable_types(scene) if t != target]
    distractors = sorted(rng.sample(others, min(len(others), _MAX_DISTRACTOR_TYPES)))
    counts = {target: rng.randint(2 if task_type == "pick_two_obj_and_place" else 1, 3)}
    for otype in distractors:
        counts[otype] = rng.randint(1, 2)
    placements = []
    for otype in sorted(counts):
        holders = _holders(scene, otype)
        if otype == target:  # never already in the goal's receptacle type: the goal must not hold at start
            holders = [r for r in holders if scene.receptacles[r][0] != parent]
        if not holders:
            if otype == target:
                return None
            continue
        for _ in range(counts[otype]):
            placements.append((otype, rng.choice(holders)))
    if task_type == "look_at_obj_in_light":
        lamp = params["toggle_target"]
        holders = sorted(r for r, (t, _) in scene.receptacles.items() if t in _LAMP_HOLDERS)
        if not holders:
            return None
        placements.append((lamp, rng.choice(holders)))
    out, used = [], set()
    for otype, rid in placements:
        rx, ry, rz = _coords(rid, scene)
        while True:  # object ids are ALFRED-style 'Type|x|y|z' near their receptacle
            oid = f"{otype}|{rx + rng.uniform(-0.4, 0.4):+06.2f}|{ry + rng.uniform(0.0, 0.3):+06.2f}|" \
                  f"{rz + rng.uniform(-0.4, 0.4):+06.2f}"
            if oid not in used and "|-00.00|" not in oid:
                break
        used.add(oid)
        out.append((oid, otype, rid))
    del constants
    return sorted(out)


def _coords(rid: str, scene: Scene) -> tuple[float, float, float]:
    parts = rid.split("|")
    return float(parts[1]), float(parts[2]), float(parts[3])


def _start_location(rng: random.Random, scene: Scene) -> tuple[int, int, int, int]:
    taken = {loc for _, loc in scene.receptacles.values()}
    while True:
        x, z = rng.choice(scene.points)
        loc = _loc(x, z, rng.choice((0, 90, 180, 270)), 30)
        if loc not in taken:
            return loc


def _problem(game_id: str, scene: Scene, placements: list[tuple[str, str, str]], params: dict[str, Any],
             task_type: str, start: tuple[int, int, int, int]) -> str:
    constants = _constants()
    actions = constants.VAL_ACTION_OBJECTS
    rec = scene.receptacles
    locs = sorted({_loc_name(loc) for _, loc in rec.values()} | {_loc_name(start)})
    rtypes = sorted({f"{t}Type" for t, _ in rec.values()} | set(_FIXED_RTYPES))
    otypes = sorted({f"{t}Type" for _, t, _ in placements} | set(_FIXED_OTYPES) | {f"{params['object_target']}Type"})
    objects = ["agent1 - agent"]
    objects += [f"{mangle(o)} - object" for o, _, _ in placements]
    objects += [f"{mangle(r)} - receptacle" for r in sorted(rec)]
    objects += [f"{mangle(loc)} - location" for loc in locs]
    objects += [f"{t} - otype" for t in otypes] + [f"{t} - rtype" for t in rtypes]
    init = [f"(atLocation agent1 {mangle(_loc_name(start))})"]
    for rid in sorted(rec):
        rtype, loc = rec[rid]
        init.append(f"(receptacleType {mangle(rid)} {rtype}Type)")
        init.append(f"(receptacleAtLocation {mangle(rid)} {mangle(_loc_name(loc))})")
        if rtype in constants.OPENABLE_CLASS_SET:
            init.append(f"(openable {mangle(rid)})")
    for oid, otype, rid in placements:
        o = mangle(oid)
        init.append(f"(objectType {o} {otype}Type)")
        init.append(f"(inReceptacle {o} {mangle(rid)})")
        init.append(f"(objectAtLocation {o} {mangle(_loc_name(rec[rid][1]))})")
        if otype in _LAMPS:
            init.append(f"(toggleable {o})")
            continue
        init.append(f"(pickupable {o})")
        for flag, kind in (("cleanable", "Cleanable"), ("heatable", "Heatable"), ("coolable", "Coolable"),
                           ("sliceable", "Sliceable")):
            if otype in actions[kind]:
                init.append(f"({flag} {o})")
        if otype in constants.MOVABLE_RECEPTACLES_SET:
            init.append(f"(isReceptacleObject {o})")
    present = {t for _, t, _ in placements}
    for rtype in sorted({t for t, _ in rec.values()}):
        for otype in sorted(present & set(constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ()))):
            init.append(f"(canContain {rtype}Type {otype}Type)")
    goal = _goals()[task_type]["pddl"].format(obj=params["object_target"], recep=params["parent_target"],
                                              toggle=params["toggle_target"], mrecep="").replace("#", "-")
    body = "\n        ".join(objects)
    facts = "\n        ".join(init)
    goal = "\n".join(line.removeprefix("    ") for line in goal.strip("\n").splitlines())
    return (f"(define (problem plan_{mangle(game_id.replace('/', '|'))})\n    (:domain alfred)\n    (:objects\n"
            f"        {body}\n    )\n    (:init\n        {facts}\n    )\n{goal}\n")
