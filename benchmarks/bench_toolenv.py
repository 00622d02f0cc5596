"""What ``agentgym.ToolEnv`` costs over a hand-written ``AgentEnv`` of the same env, in steps per second.

    python benchmarks/bench_toolenv.py [--tasks 200] [--steps 20000] [--rounds 7] [--json out.json]

The same tasks, the same tool (a dictionary lookup, so the env's own work is what is timed) and the same
verifier (``verify_qa``, exact match), once from a plain function through ``ToolEnv`` and once as the
subclass one would write by hand (a ``Tool`` with a hand-written JSON schema, ``verify`` calling
``verify_qa``). Both run in the same process, in alternating rounds, timed on this process's CPU clock
(``time.process_time``: other jobs on shared cores do not count) with the verifier in process (its budget
off), so all of an episode's work is on that clock. The ratio is ToolEnv's time over the hand-written env's
(1.10: ToolEnv takes 10% longer), the median over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("AGENTGYM_VERIFIER_BUDGET_S", "off")  # verification in this process, on its CPU clock

from harness import Measurement, report

import agentgym
from agentgym.core import TaskList
from agentgym.verifiers import verify_qa

MAX_TURNS = 64


def make_rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "question": f"What is the code of item {i}?", "answer": f"code-{i * 7919 % 10007}"}
            for i in range(n)]


def tool_env(rows: list[dict[str, Any]]) -> agentgym.ToolEnv:
    codes = {f"item {i}": row["answer"] for i, row in enumerate(rows)}

    def lookup(key: str) -> str:
        """Look up an item's code.

        Args:
            key: The item, e.g. "item 3".
        """
        return codes.get(key, "unknown item")

    return agentgym.ToolEnv(tasks=rows, tools=[lookup], verifier="qa", max_turns=MAX_TURNS)


class HandWrittenEnv(agentgym.AgentEnv[str]):
    """The same env as ``tool_env``, written as a subclass."""

    def __init__(self, rows: list[dict[str, Any]], **base: Any) -> None:
        self.codes = {f"item {i}": row["answer"] for i, row in enumerate(rows)}
        tasks = TaskList(agentgym.Task(id=row["id"], prompt=row["question"], gold=row) for row in rows)
        super().__init__(tasks=tasks, **base)

    def make_tools(self) -> Sequence[agentgym.Tool]:
        parameters = {"type": "object", "properties": {"key": {"type": "string", "description": 'The item, e.g. "item 3".'}},
                      "required": ["key"], "additionalProperties": False}
        return [agentgym.Tool("lookup", "Look up an item's code.", parameters, self.lookup)]

    def lookup(self, key: str) -> str:
        return self.codes.get(key, "unknown item")

    def verify(self, outcome: str | None, task: agentgym.Task) -> agentgym.Score:
        return verify_qa(outcome, [task.gold["answer"]])

    def oracle_action(self) -> str:
        return self.action_format.render_answer(self.task.gold["answer"])


def tool_steps(env: agentgym.AgentEnv, n_tasks: int, steps: int) -> Any:
    """``steps`` tool-call steps, a reset every ``MAX_TURNS - 1`` of them (no verification)."""
    actions = [f"<lookup>item {i}</lookup>" for i in range(n_tasks)]

    def run() -> int:
        done = 0
        while done < steps:
            i = done // (MAX_TURNS - 1) % n_tasks
            env.reset(seed=0, options={"index": i})
            for _ in range(min(MAX_TURNS - 1, steps - done)):
                env.step(actions[i])
                done += 1
        return steps

    return run


def episodes(env: agentgym.AgentEnv, rows: list[dict[str, Any]]) -> Any:
    """Whole episodes: reset, a lookup, the answer (verified)."""
    calls = [(f"<lookup>item {i}</lookup>", f"<answer>{row['answer']}</answer>") for i, row in enumerate(rows)]

    def run() -> int:
        for i, (lookup, answer) in enumerate(calls):
            env.reset(seed=0, options={"index": i})
            env.step(lookup)
            if env.step(answer)[1] != 1.0:
                raise AssertionError("the episode should score 1")
        return len(calls)

    return run


def cpu_rate(run: Any) -> tuple[int, float]:
    """The operations of one call of ``run`` (after a warm-up call), and their rate per CPU second."""
    run()
    start = time.process_time()
    ops = run()
    return ops, ops / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--steps", type=int, default=20_000, help="tool steps per timed run")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds; the ratio is their median")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = make_rows(args.tasks)
    envs = {"hand-written AgentEnv": HandWrittenEnv(rows, max_turns=MAX_TURNS), "ToolEnv": tool_env(rows)}
    for env in envs.values():  # same observation for the same action, or the comparison is moot
        env.reset(seed=0, options={"index": 3})
    first = {name: env.step("<lookup>item 3</lookup>")[0] for name, env in envs.items()}
    if len(set(first.values())) != 1:
        raise AssertionError(f"the two envs differ: {first}")

    workloads = {"tool step (steps/s)": lambda env: tool_steps(env, args.tasks, args.steps),
                 "episode, reset+lookup+answer (/s)": lambda env: episodes(env, rows)}
    for workload, make in workloads.items():
        rates: dict[str, list[float]] = {name: [] for name in envs}
        ops = 0
        for round_ in range(args.rounds):
            for name in sorted(envs, reverse=bool(round_ % 2)):  # each goes first in every other round
                ops, rate = cpu_rate(make(envs[name]))
                rates[name].append(rate)
        table = [Measurement(f"{name}: {workload}", ops, statistics.median(r), max(r), len(r))
                 for name, r in rates.items()]
        report(table, baseline=table[0].name,
               json_path=f"{args.json}.{workload.split()[0]}.json" if args.json else None)
        ratios = [hand / tool for hand, tool in zip(rates["hand-written AgentEnv"], rates["ToolEnv"])]
        print(f"ToolEnv time / hand-written time, {workload}: median {statistics.median(ratios):.3f} "
              f"(rounds {min(ratios):.3f}-{max(ratios):.3f})\n")

if __name__ == "__main__":
    main()
