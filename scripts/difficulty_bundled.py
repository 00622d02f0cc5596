"""The difficulty cards that ship with agentgym (``agentgym/data/difficulty/``): for every bundled env, the first
``--tasks`` tasks of its evaluation split played by the oracle once and by a random policy and the default model
``--samples`` times each (the model at temperature 1, a seed a play), with the core suite's turn limits (the envs
not in core: WebShopBrowser 12, ALFWorld 10). The shipped cards: SearchQA 20 tasks x 4 plays; MathTool and PyCode
20 x 2; WebShop, WebShopBrowser, SWEBench and ALFWorld 10 x 1 (``--tasks 10 --samples 1``: the default model's
episodes there take minutes each on 2 cores). ``agentgym difficulty ENV --show`` prints a card; ``--difficulty`` in eval and
train selects tasks by it.

    OMP_NUM_THREADS=2 python scripts/difficulty_bundled.py                 # every bundled env
    python scripts/difficulty_bundled.py --env agentgym/MathTool-v0        # one (repeatable)
"""

from __future__ import annotations

import argparse
import time

#: the turn limits the cards are measured with (the core suite's, so a card says what `agentgym eval` plays)
KWARGS = {
    "agentgym/SearchQA-v0": {"max_turns": 3},
    "agentgym/MathTool-v0": {"max_turns": 3},
    "agentgym/PyCode-v0": {"max_turns": 3},
    "agentgym/WebShop-v0": {"max_turns": 6},
    "agentgym/WebShopBrowser-v0": {"max_turns": 12},  # the browser oracle takes 7 actions on goal-0011
    "agentgym/SWEBench-v0": {"max_turns": 3},
    "agentgym/ALFWorld-v0": {"max_turns": 10},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", help="An env id (repeatable) [default: every bundled env].")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import agentgym  # noqa: F401 - registers the envs
    from agentgym.eval.difficulty import BUNDLED, measure, render

    for env_id in args.env or list(KWARGS):
        start = time.monotonic()
        card = measure(env_id, tasks=args.tasks, samples=args.samples, seed=args.seed, env_kwargs=KWARGS[env_id],
                       on_play=lambda name, done, of: print(f"  {name}: {done}/{of}", flush=True))
        path, _ = card.write(BUNDLED)
        print(render(card), f"\n{path} in {time.monotonic() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
