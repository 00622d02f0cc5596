"""GRPO groups and their advantages, and the conformance test any group estimator can run.

A group is the rollouts of one task played with one seed, for one baseline. It is keyed by its group id, never by
its prompt text: two groups that share a prompt (the same task at two seeds) are two groups. A member that failed or
was cancelled (reward ``None``) is out of its group's baseline and gets advantage 0; a group with no scored member
trains nothing (the asynchronous learner drops it before it reaches the loss).

``check_group_estimator(estimator)`` runs the cases users of other trainers were bitten by (NeMo RL let a masked
sample vote in the baseline: rewards [1, 1, 0, 0] with the second masked gave [0.5, -0.5, -0.5] instead of
[0.667, -0.333, -0.333], and grouped by prompt tokens) against any ``estimator(rewards, group_ids) -> advantages``;
``group_advantages`` (what the trainer uses) passes it (``tests/trainer/test_groups.py``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["Estimator", "check_group", "check_group_estimator", "group_advantages", "has_signal"]

#: ``estimator(rewards, group_ids)``: one advantage per sample; ``None`` rewards are failed or cancelled samples
Estimator = Callable[[Sequence[float | None], Sequence[Hashable]], Sequence[float]]


def group_advantages(rewards: Sequence[float | None], group_ids: Sequence[Hashable],
                     scale: str = "group") -> list[float]:
    """Each sample's advantage: its reward minus the mean of its group's scored rewards, over the group's
    (``scale="group"``) or the batch's (``"batch"``) standard deviation (+1e-4), or unscaled (``"none"``). Groups
    are whatever samples share a group id, wherever they sit in the batch; a ``None`` reward (failed, cancelled)
    is out of the baseline and gets 0, as does every member of a group with no scored member."""
    if len(rewards) != len(group_ids):
        raise ValueError(f"{len(rewards)} rewards for {len(group_ids)} group ids.")
    members: dict[Hashable, list[float]] = {}
    for r, gid in zip(rewards, group_ids):
        if r is not None:
            members.setdefault(gid, []).append(float(r))
    scored = [float(r) for r in rewards if r is not None]
    batch_std = statistics.stdev(scored) if len(scored) > 1 else 0.0
    out: list[float] = []
    for r, gid in zip(rewards, group_ids):
        values = members.get(gid)
        if r is None or not values:
            out.append(0.0)
            continue
        a = float(r) - sum(values) / len(values)
        if scale == "none":
            out.append(a)
        else:
            spread = batch_std if scale == "batch" else (statistics.stdev(values) if len(values) > 1 else 0.0)
            out.append(a / (spread + 1e-4))
    return out


def has_signal(group: Sequence[Any]) -> bool:
    """Whether two scored episodes of a group got different rewards (failed ones are out of its baseline)."""
    return len({e.reward for e in group if not e.failed}) > 1


def check_group(episodes: Sequence[Any]) -> None:
    """Raise ``ValueError`` unless every member of a group played the same task with the same seed (its
    ``spec``)."""
    specs = {e.spec for e in episodes}
    if len(specs) != 1:
        raise ValueError(f"A GRPO group's members must share task and seed; this one mixes {sorted(map(str, specs))}.")


def check_group_estimator(estimator: Estimator, *, tolerance: float = 1e-3) -> None:
    """Raise ``AssertionError`` (saying which case) unless ``estimator`` keeps groups whole and honest:

    1. a failed member (``None``) never votes in the baseline and gets 0: [1, None, 0, 0] -> the scored members'
       advantages are proportional to [2/3, -1/3, -1/3];
    2. groups are keyed by id, not by position or content: members of two groups interleaved in the batch are
       scored within their own group;
    3. two groups of equal rewards each ([1, 1] and [0, 0], the same prompt at two seeds) have no signal: all 0;
    4. an all-failed group gives 0 to every member and moves no other group's baseline.
    Scaled estimators pass too: only the proportions of case 1 are checked.
    """
    def run(rewards: list[float | None], ids: list[Hashable]) -> list[float]:
        out = [float(a) for a in estimator(rewards, ids)]
        assert len(out) == len(rewards), f"the estimator gave {len(out)} advantages for {len(rewards)} samples"
        assert all(math.isfinite(a) for a in out), f"non-finite advantages {out}"
        return out

    a = run([1.0, None, 0.0, 0.0], ["g", "g", "g", "g"])
    assert abs(a[1]) <= tolerance, f"case 1: a failed member got advantage {a[1]}, not 0"
    assert a[0] > 0 > a[2], f"case 1: advantages {a} do not favour the scored success"
    assert abs(a[2] - a[3]) <= tolerance, f"case 1: equal rewards got different advantages {a}"
    ratio = a[0] / -a[2]
    assert abs(ratio - 2.0) <= 10 * tolerance, (
        f"case 1: advantages {a}: the failed member voted in the baseline (the scored members' advantages are "
        f"{ratio:.3f}:-1 apart, not 2:-1 as for rewards 1, 0, 0 around their mean 1/3)")
    b = run([1.0, 0.0, 0.0, 1.0, 1.0, 1.0], ["x", "y", "x", "y", "x", "y"])  # x: 1, 0, 1; y: 0, 1, 1
    x, y = b[0::2], b[1::2]
    assert abs(sum(x)) <= tolerance and abs(sum(y)) <= tolerance, (
        f"case 2: interleaved groups x {x} and y {y} are not each centred on their own mean: not grouped by id")
    assert abs(x[0] - x[2]) <= tolerance and x[0] > 0 > x[1] and abs(x[0] / x[1] + 0.5) <= 10 * tolerance, (
        f"case 2: group x (rewards 1, 0, 1) got {x}, not proportional to [1/3, -2/3, 1/3]")
    c = run([1.0, 1.0, 0.0, 0.0], ["seed-0", "seed-0", "seed-1", "seed-1"])
    assert all(abs(v) <= tolerance for v in c), f"case 3: two flat groups got advantages {c}: groups were merged"
    d = run([None, None, 1.0, 0.0], ["dead", "dead", "live", "live"])
    alone = run([1.0, 0.0], ["live", "live"])
    assert abs(d[0]) <= tolerance and abs(d[1]) <= tolerance, f"case 4: an all-failed group got {d[:2]}"
    assert all(abs(u - v) <= tolerance for u, v in zip(d[2:], alone)), (
        f"case 4: the all-failed group moved another group's advantages ({d[2:]} vs {alone} alone)")
