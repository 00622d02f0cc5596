"""The model gateway: token fidelity per agent framework, throughput against the built-in loop, overhead per call.

    OMP_NUM_THREADS=1 python benchmarks/bench_gateway.py [--part fidelity,throughput,overhead]
        [--frameworks openai_loop,openai_agents_mcp,smolagents_agent] [--rollouts 100] [--agents 30]
        [--env agentgym/MathTool-v0] [--json out.json]

- fidelity: each framework's agent (examples/agents/<name>.py) plays ``--rollouts`` episodes through the gateway
  (``eval --agent``'s harness). The generator is wrapped to log every row it produced; the share of recorded
  sampled tokens (loss mask 1 in the rollouts' samples) equal to the logged ids must be 100%. Also the share of
  calls (after each rollout's first) that extended their rollout rather than branched.
- throughput: the same work on both sides, ``--rounds`` interleaved (ABBA): ``--agents`` episodes of one model call
  each, greedy, 128 tokens at most; the built-in loop (``agentgym eval``'s batched runner, batch size ``--agents``)
  in the function-calling format against as many concurrent plain-client agents through the gateway. Each side's
  episodes, calls, prompt and generated tokens beside its time; the ratios' median and range (target: 0.8x).
- overhead: one call's latency through the gateway (HTTP, chat template, parsing, recording) against the
  generator alone on the same prompt ids and token limit (greedy): the difference per call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "agents"
TURN_TOKENS = 128


class LoggingGenerator:
    """The generator, with every row it produced logged: (context ids, generated ids)."""

    def __init__(self, inner):
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.log: dict[tuple[int, ...], list[list[int]]] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __setattr__(self, name, value):
        if name in ("temperature", "top_p") and "inner" in self.__dict__:
            setattr(self.inner, name, value)
        else:
            super().__setattr__(name, value)

    def generate(self, contexts, **kwargs):
        turns = self.inner.generate(contexts, **kwargs)
        for context, turn in zip(contexts, turns):
            self.log.setdefault(tuple(context), []).append(list(turn.ids))
        return turns


def _gateway(logging: bool):
    from agentgym.gateway.server import GatewayServer, load_gateway

    gateway = load_gateway("smollm2", dtype="float32", max_rows=64)
    if logging:
        gateway.engine.generator = LoggingGenerator(gateway.engine.generator)
    return gateway, GatewayServer(gateway).start()


def _plan(env_id: str, episodes: int):
    from agentgym.eval.plan import plan_episodes
    from agentgym.eval.suites import SuiteEntry

    return plan_episodes([SuiteEntry(env_id, episodes=episodes)], seed=0)


def _agent_run(gateway, server, target: str, plan, concurrency: int):
    from agentgym.eval.agent import AgentPolicy, AgentSpec
    from agentgym.eval.runner import run_plan

    policy = AgentPolicy(AgentSpec(target=target), gateway, base_url=server.url, timeout_s=1800,
                         concurrency=concurrency)
    policy.close = lambda: None
    return run_plan(plan, lambda: policy)


#: each framework's limits in the fidelity runs: a few turns of at most 64 tokens (what is measured is whether
#: recorded ids are the sampled ones, whatever the text), and a follow-up question after the first answer, so that
#: every rollout calls the model twice or more and extension is exercised whatever the model does with the tools
FOLLOW_UP = "Check your answer, then give it again."
LIMITS = {"openai_loop": {"max_turns": 4, "max_tokens": 64, "follow_up": FOLLOW_UP},
          "openai_agents_mcp": {"max_turns": 4, "max_tokens": 64, "follow_up": FOLLOW_UP},
          "smolagents_agent": {"max_steps": 3, "max_tokens": 64}}


def fidelity(frameworks: list[str], rollouts: int, env_id: str) -> dict:
    import tempfile

    gateway, server = _gateway(logging=True)
    log = gateway.engine.generator.log
    out = {}
    tmp = tempfile.TemporaryDirectory()
    try:
        for name in frameworks:
            before = set(gateway.rollouts)
            start = time.perf_counter()
            results = _agent_run(gateway, server, _bounded(Path(tmp.name), name, **LIMITS.get(name, {})),
                                 _plan(env_id, rollouts), concurrency=min(rollouts, 16))
            wall = time.perf_counter() - start
            matched = total = calls = extended = branches = multi = prefixes = prefix_errors = 0
            for rid in set(gateway.rollouts) - before:
                rollout = gateway.rollouts[rid]
                summary = rollout.summary()
                if summary["calls"] < 2:  # one call exercises no extension: not counted
                    continue
                multi += 1
                calls += summary["calls"] - 1
                extended += summary["extended"]
                branches += summary["branches"]
                for call in rollout.calls:  # an extended call's prompt starts with its parent's prompt + sampled ids
                    if call.parent is not None:
                        parent = rollout.calls[call.parent[0]]
                        head = [*parent.prompt_ids, *parent.choices[call.parent[1]].ids]
                        prefixes += 1
                        prefix_errors += call.prompt_ids[:len(head)] != head
                for sample in rollout.samples():
                    ids, mask = sample["token_ids"], sample["loss_mask"]
                    path = [rollout.calls[k] for k in sample["calls"]]
                    chosen = [nxt.parent[1] for nxt in path[1:]] + [sample["choice"]]
                    spans = 0
                    for call, c in zip(path, chosen):
                        lo, n = len(call.prompt_ids), len(call.choices[c].ids)
                        recorded = ids[lo:lo + n]
                        total += n
                        spans += n
                        if _chained(log, list(call.prompt_ids), recorded) and all(mask[lo:lo + n]):
                            matched += n
                    if sum(mask) != spans:  # a 1 outside the sampled spans would train on what was not sampled
                        raise AssertionError(f"rollout {rid}: loss mask 1 on {sum(mask)} ids, {spans} sampled")
            errors = sum(r.error is not None for r in results)
            out[name] = {"rollouts": len(results), "errors": errors, "wall_s": round(wall, 1),
                         "rollouts_of_2_or_more_calls": multi, "extended_calls_checked": prefixes,
                         "extended_prompts_not_parent_plus_sampled": prefix_errors,
                         "sampled_tokens": total, "fidelity": matched / total if total else None,
                         "later_calls": calls, "extended_share": extended / calls if calls else None,
                         "branches": branches, "mean_reward": statistics.fmean(r.reward for r in results)}
            print(f"fidelity {name}: {out[name]}", flush=True)
    finally:
        server.stop()
        gateway.close()
        tmp.cleanup()
    return out


def _chained(log: dict, context: list[int], recorded: list[int]) -> bool:
    """Whether ``recorded`` is what the generator produced from ``context``: one logged row, or (the gateway
    generates in chunks) logged rows each going on from the context plus the ids before it; the last may have been
    cut at a stop string."""
    if not recorded:
        return True
    for ids in log.get(tuple(context), []):
        if ids and len(recorded) <= len(ids) and recorded == ids[:len(recorded)]:
            return True
        if ids and recorded[:len(ids)] == ids and _chained(log, context + ids, recorded[len(ids):]):
            return True
    return False


def _bounded(tmp: Path, name: str, **limits) -> str:
    """``examples/agents/<name>.py``'s agent called with ``limits`` (its turn and token limits), as a target."""
    path = tmp / f"bounded_{name}.py"
    function = limits.pop("function", "agent")  # the example's function: its tool-use variant has a worked example
    path.write_text("from agentgym.eval.agent import load_agent\n"
                    f"_agent = load_agent({str(EXAMPLES / name) + '.py:' + function!r})\n"
                    f"def agent(task):\n    return _agent(task, **{limits!r})\n")
    return f"{path}:agent"


def throughput(agents: int, env_id: str, rounds: int) -> dict:
    """The same work on both sides: ``agents`` episodes of one model call each (``max_turns=1``), 128 tokens at most,
    greedy; the built-in loop in the function-calling format (hermes), the plain openai agent through the gateway
    with the env's tools. Rounds interleaved A B, B A, ...; each side's episodes, calls, prompt and generated tokens
    are printed beside its time."""
    import tempfile

    from agentgym.eval.plan import plan_episodes
    from agentgym.eval.runner import run_plan
    from agentgym.eval.suites import SuiteEntry
    from agentgym.policies import Sampling
    from agentgym.policies.hf import make_model_policy

    def plan(**kwargs):
        return plan_episodes([SuiteEntry(env_id, episodes=agents, env_kwargs={"max_turns": 1, **kwargs})], seed=0)

    policy = make_model_policy("smollm2", sampling=Sampling(temperature=0.0, max_tokens=TURN_TOKENS),
                               dtype="float32")
    policy.load()
    gateway, server = _gateway(logging=False)
    sides: dict[str, list[dict]] = {"built_in": [], "gateway": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            target = _bounded(Path(tmp), "openai_loop", max_turns=1, max_tokens=TURN_TOKENS)
            for r in range(rounds):
                for side in (("built_in", "gateway") if r % 2 == 0 else ("gateway", "built_in")):
                    start = time.perf_counter()
                    if side == "built_in":
                        results = run_plan(plan(action_format="hermes"), lambda: policy, batch_size=agents)
                        calls = sum(len([m for m in x.transcript if m["role"] == "assistant"]) for x in results)
                    else:
                        results = _agent_run(gateway, server, target, plan(), concurrency=agents)
                        calls = sum(x.agent["rollout"]["calls"] for x in results)
                    seconds = time.perf_counter() - start
                    sides[side].append({"round": r, "s": round(seconds, 2), "episodes": len(results), "calls": calls,
                                        "prompt_tokens": sum(x.prompt_tokens for x in results),
                                        "generated_tokens": sum(x.completion_tokens for x in results),
                                        "errors": sum(x.error is not None for x in results)})
                    print(f"round {r} {side}: {sides[side][-1]}", flush=True)
        stats = {**gateway.engine.stats, **getattr(gateway.engine.generator, "stats", {})}
    finally:
        server.stop()
        gateway.close()
    ratios = [b["s"] / g["s"] for b, g in zip(sides["built_in"], sides["gateway"])]
    token_ratios = [(g["generated_tokens"] / g["s"]) / (b["generated_tokens"] / b["s"])
                    for b, g in zip(sides["built_in"], sides["gateway"])]
    row = {"episodes": agents, "rounds": rounds, "order": "ABBA (A = built-in first in even rounds)", **sides,
           "episodes_per_s_ratio_median": round(statistics.median(ratios), 3),
           "episodes_per_s_ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
           "tokens_per_s_ratio_median": round(statistics.median(token_ratios), 3),
           "tokens_per_s_ratio_range": [round(min(token_ratios), 3), round(max(token_ratios), 3)],
           "gateway_batches": stats["batches"], "gateway_chunks": stats.get("chunks"), "gateway_rows": stats["rows"],
           "kv_reused_rows": stats.get("reused_rows"), "kv_fresh_rows": stats.get("fresh_rows")}
    print(f"throughput: gateway/built-in episodes/s median {row['episodes_per_s_ratio_median']} "
          f"{row['episodes_per_s_ratio_range']}, tokens/s median {row['tokens_per_s_ratio_median']} "
          f"{row['tokens_per_s_ratio_range']}", flush=True)
    return row


def overhead(calls: int) -> dict:
    from openai import OpenAI

    from agentgym.gateway.chat import render

    gateway, server = _gateway(logging=False)
    try:
        messages = [{"role": "user", "content": "Name three prime numbers."}]
        tokenizer = gateway.tokenizer
        ids = list(tokenizer(render(tokenizer, messages, []), add_special_tokens=False)["input_ids"])
        generator = gateway.engine.generator
        direct, through = [], []
        for k in range(calls + 1):
            start = time.perf_counter()
            generator.temperature = 0.0
            turn = generator.generate([ids], stops=[()], max_new_tokens=16, seed=k)[0]
            direct.append(time.perf_counter() - start)
            rollout = gateway.create_rollout()  # an agent's call: on its rollout, recorded
            client = OpenAI(base_url=f"{server.url}/rollouts/{rollout.id}/v1", api_key="unused")
            start = time.perf_counter()
            reply = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=16, temperature=0)
            through.append(time.perf_counter() - start)
            gateway.close_rollout(rollout.id, forget=True)
            assert reply.usage.completion_tokens == len(turn.ids)
    finally:
        server.stop()
        gateway.close()
    direct, through = direct[1:], through[1:]  # the first of each warms up
    row = {"calls": calls, "generator_ms": 1000 * statistics.median(direct),
           "gateway_ms": 1000 * statistics.median(through),
           "overhead_ms": 1000 * (statistics.median(through) - statistics.median(direct))}
    print(f"overhead: {row}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="fidelity,throughput,overhead")
    parser.add_argument("--frameworks", default="openai_loop,openai_agents_mcp,smolagents_agent")
    parser.add_argument("--rollouts", type=int, default=100)
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4, help="throughput rounds, interleaved (ABBA)")
    parser.add_argument("--env", default="agentgym/MathTool-v0")
    parser.add_argument("--json")
    args = parser.parse_args()
    parts = args.part.split(",")
    report: dict = {"cpu": _cpu()}
    if "overhead" in parts:
        report["overhead"] = overhead(args.calls)
    if "throughput" in parts:
        report["throughput"] = throughput(args.agents, args.env, args.rounds)
    if "fidelity" in parts:
        report["fidelity"] = fidelity([f for f in args.frameworks.split(",") if (EXAMPLES / f"{f}.py").exists()],
                                      args.rollouts, args.env)
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
