"""The Search-R1 recipe's held-out table (docs/training/README.md): exact match with its 95% interval, the share
of episodes that search, exact match by question type, the episodes in which the model wrote retrieved text itself
(the failure the masking ablation looks for: an ``<information>`` block, a passage header, or 8 words in a row of a
retrieved passage it was shown, in one of its own turns), and the pairing against the first results file.

    python scripts/search_r1_table.py base=runs/search-r1/eval-base.jsonl sft=runs/search-r1/eval-sft.jsonl ...

``--tasks=A:B`` keeps the episodes of the split's tasks A to B-1 (in the split's order, the order ``agentgym eval
--episodes`` takes them in): the checkpoint selection reads questions 200-399 of the test split
(``--tasks=200:400``), which the reported table (the first 200) never includes.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from agentgym.envs.search.data import bundled_qa_files
from agentgym.eval.results import load_results
from agentgym.eval.stats import wilson_ci

COPIED_WORDS = 8


def writes_passages(transcript: list[dict]) -> bool:
    """Whether a model turn of the episode holds retrieved text: the tags or header the search tool writes, or
    ``COPIED_WORDS`` words in a row of a passage it was shown (inside ``<information>``) before that turn."""
    seen: set[tuple[str, ...]] = set()
    task_read = False
    for message in transcript:
        role, text = message.get("role"), str(message.get("content") or "")
        words = text.split()
        windows = {tuple(words[i:i + COPIED_WORDS]) for i in range(len(words) - COPIED_WORDS + 1)}
        if role == "assistant":
            if "<information>" in text or "(Title:" in text or windows & seen:
                return True
        elif role == "user" and not task_read:  # the task itself is not an observation
            task_read = True
        elif role != "system":  # an observation: its retrieved passages (not, say, a format error's text)
            for passage in re.findall(r"<information>(.*?)(?:</information>|$)", text, re.DOTALL):
                words = passage.split()
                seen |= {tuple(words[i:i + COPIED_WORDS]) for i in range(len(words) - COPIED_WORDS + 1)}
    return False


def split_positions(split: str) -> dict[str, int]:
    """Each SearchQA task id of ``split`` -> its position in the split."""
    import agentgym

    env = agentgym.make("agentgym/SearchQA-v0")
    try:
        return {task.id: i for i, task in enumerate(env.unwrapped.tasks.tasks(split))}
    finally:
        env.close()


def main(argv: list[str]) -> None:
    span = None
    if argv and argv[0].startswith("--tasks="):
        first_task, _, end = argv.pop(0).removeprefix("--tasks=").partition(":")
        if not (first_task.isdigit() and end.isdigit()):
            raise SystemExit("usage: --tasks=A:B (the split's tasks A to B-1), e.g. --tasks=200:400")
        span = range(int(first_task), int(end))
    if not argv or any("=" not in a for a in argv):
        raise SystemExit("usage: search_r1_table.py [--tasks=A:B] NAME=RESULTS.jsonl ... (the first is the one "
                         "others pair with)")
    types = {}
    for path in bundled_qa_files().values():
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            types[row["id"]] = row["metadata"]["type"]
    runs = {name: {r["task_id"]: r for r in load_results(Path(path))}
            for name, path in (a.split("=", 1) for a in argv)}
    if span is not None:
        splits = {r.get("split", "test") for rows in runs.values() for r in rows.values()}
        positions = {task: i for split in splits for task, i in split_positions(split).items()}
        runs = {name: {t: r for t, r in rows.items() if positions.get(t, -1) in span} for name, rows in runs.items()}
    first = next(iter(runs.values()))
    print("| run | exact match [95% CI] | episodes that search | single-hop | bridge | comparison "
          "| writes retrieved text | paired vs first |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        n, em = len(rows), sum(bool(r["correct"]) for r in rows.values())
        low, high = wilson_ci(em, n)
        searched = sum(r["tool_calls"] > 0 for r in rows.values())
        right, total = Counter(), Counter()
        for task, r in rows.items():
            total[types.get(task, "?")] += 1
            right[types.get(task, "?")] += bool(r["correct"])
        gained = sum(1 for t, r in rows.items() if r["correct"] and not first.get(t, {}).get("correct"))
        lost = sum(1 for t, r in rows.items() if not r["correct"] and first.get(t, {}).get("correct"))
        cells = [f"{right[k]}/{total[k]}" for k in ("single-hop", "bridge", "comparison")]
        cells.append(f"{sum(writes_passages(r.get('transcript') or []) for r in rows.values())}/{n}")
        print(f"| {name} | {em}/{n} = {em / n:.1%} [{low:.2f}, {high:.2f}] | {searched}/{n} | {' | '.join(cells)} "
              f"| +{gained} / -{lost} |")


if __name__ == "__main__":
    main(sys.argv[1:])
