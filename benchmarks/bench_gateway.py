"""The model gateway: token fidelity per agent framework, throughput against the built-in loop, overhead per call.

    OMP_NUM_THREADS=1 python benchmarks/bench_gateway.py [--part fidelity,throughput,overhead]
        [--frameworks openai_loop,openai_agents_mcp,smolagents_agent] [--rollouts 100] [--agents 30]
        [--env agentgym/MathTool-v0] [--json out.json]

- fidelity: each framework's agent (examples/agents/<name>.py) plays ``--rollouts`` episodes through the gateway
  (``eval --agent``'s harness). The generator is wrapped to log every row it produced; the share of recorded
  sampled tokens (loss mask 1 in the rollouts' samples) equal to the logged ids must be 100%. Also the share of
  calls (after each rollout's first) that extended their rollout rather than branched.
- throughput: ``--agents`` concurrent plain-client agents on the env through the gateway, against the built-in
  loop (``agentgym eval``'s batched runner, batch size ``--agents``) on the same model, tasks, per-turn token limit
  and turn limit, in the same run: episodes/s and the ratio (target: at least 0.8x).
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
#: recorded ids are the sampled ones, whatever the text)
LIMITS = {"openai_loop": {"max_turns": 4, "max_tokens": 64}, "openai_agents_mcp": {"max_turns": 4, "max_tokens": 64},
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
            matched = total = calls = extended = branches = 0
            for rid in set(gateway.rollouts) - before:
                rollout = gateway.rollouts[rid]
                summary = rollout.summary()
                calls += max(0, summary["calls"] - 1)
                extended += summary["extended"]
                branches += summary["branches"]
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
                        if recorded in log.get(tuple(call.prompt_ids), []) and all(mask[lo:lo + n]):
                            matched += n
                    if sum(mask) != spans:  # a 1 outside the sampled spans would train on what was not sampled
                        raise AssertionError(f"rollout {rid}: loss mask 1 on {sum(mask)} ids, {spans} sampled")
            errors = sum(r.error is not None for r in results)
            out[name] = {"rollouts": len(results), "errors": errors, "wall_s": round(wall, 1),
                         "sampled_tokens": total, "fidelity": matched / total if total else None,
                         "later_calls": calls, "extended_share": extended / calls if calls else None,
                         "branches": branches, "mean_reward": statistics.fmean(r.reward for r in results)}
            print(f"fidelity {name}: {out[name]}", flush=True)
    finally:
        server.stop()
        gateway.close()
        tmp.cleanup()
    return out


def _bounded(tmp: Path, name: str, **limits) -> str:
    """``examples/agents/<name>.py``'s agent called with ``limits`` (its turn and token limits), as a target."""
    path = tmp / f"bounded_{name}.py"
    path.write_text("from agentgym.eval.agent import load_agent\n"
                    f"_agent = load_agent({str(EXAMPLES / name) + '.py:agent'!r})\n"
                    f"def agent(task):\n    return _agent(task, **{limits!r})\n")
    return f"{path}:agent"


def throughput(agents: int, env_id: str) -> dict:
    import tempfile

    from agentgym.core.registry import make
    from agentgym.eval.runner import run_plan
    from agentgym.policies import Sampling
    from agentgym.policies.hf import make_model_policy

    env = make(env_id)
    max_turns = env.unwrapped.max_turns
    env.close()
    plan = _plan(env_id, agents)
    policy = make_model_policy("smollm2", sampling=Sampling(temperature=0.0, max_tokens=TURN_TOKENS),
                               dtype="float32")
    policy.load()
    start = time.perf_counter()
    built_in = run_plan(plan, lambda: policy, batch_size=agents)
    built_in_s = time.perf_counter() - start
    gateway, server = _gateway(logging=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            target = _bounded(Path(tmp), "openai_loop", max_turns=max_turns, max_tokens=TURN_TOKENS)
            start = time.perf_counter()
            through = _agent_run(gateway, server, target, plan, concurrency=agents)
            gateway_s = time.perf_counter() - start
        stats = {**gateway.engine.stats, **getattr(gateway.engine.generator, "stats", {})}
    finally:
        server.stop()
        gateway.close()
    tokens = sum(r.completion_tokens for r in built_in), sum(r.completion_tokens for r in through)
    row = {"episodes": agents, "built_in_eps_per_s": agents / built_in_s, "gateway_eps_per_s": agents / gateway_s,
           "built_in_tokens_per_s": tokens[0] / built_in_s, "gateway_tokens_per_s": tokens[1] / gateway_s,
           "built_in_model_turns": sum(len([m for m in r.transcript if m["role"] == "assistant"]) for r in built_in),
           "gateway_model_calls": sum(r.agent["rollout"]["calls"] for r in through),
           "ratio": built_in_s / gateway_s, "built_in_s": round(built_in_s, 1), "gateway_s": round(gateway_s, 1),
           "gateway_batches": stats["batches"], "gateway_rows": stats["rows"],
           "kv_reused_rows": stats.get("reused_rows"), "kv_fresh_rows": stats.get("fresh_rows"),
           "errors": sum(r.error is not None for r in through) + sum(r.error is not None for r in built_in),
           "built_in_reward": statistics.fmean(r.reward for r in built_in),
           "gateway_reward": statistics.fmean(r.reward for r in through)}
    print(f"throughput: {row}", flush=True)
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
    parser.add_argument("--env", default="agentgym/MathTool-v0")
    parser.add_argument("--json")
    args = parser.parse_args()
    parts = args.part.split(",")
    report: dict = {"cpu": _cpu()}
    if "overhead" in parts:
        report["overhead"] = overhead(args.calls)
    if "throughput" in parts:
        report["throughput"] = throughput(args.agents, args.env)
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
