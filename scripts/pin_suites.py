"""Pin each suite version's play digests (agentgym/eval/suite_pins.json): run after bumping a suite's version.

    python scripts/pin_suites.py            # adds the digests of versions not pinned yet; checks the others

A pinned version whose entries now play differently is refused: bump its version in agentgym/eval/suites.py
(results of two versions are never ranked together), then run this again.
"""

from __future__ import annotations

import json
import sys

from agentgym.eval.suitepins import PINS, load_pins, suite_digests
from agentgym.eval.suites import SUITES


def main() -> int:
    pins = load_pins()
    moved = []
    for suite in SUITES.values():
        current = suite_digests(suite)
        pinned = pins.setdefault(suite.name, {}).get(suite.version)
        if pinned is None:
            pins[suite.name][suite.version] = current
            print(f"pinned {suite.name} v{suite.version}: {len(current)} entries")
        elif pinned != current:
            moved += [f"{suite.name} v{suite.version} {label}" for label in sorted(set(pinned) | set(current))
                      if pinned.get(label) != current.get(label)]
    if moved:
        print("These entries play differently under a pinned version; bump the suite's version in "
              "agentgym/eval/suites.py first:\n  " + "\n  ".join(moved), file=sys.stderr)
        return 1
    PINS.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
