"""What one session of each env costs: memory, CPU per step, start time; and the Ray pool's overhead.

    python benchmarks/bench_scaling.py [--envs SearchQA,MathTool,...] [--episodes N] [--no-ray] [--json out.json]

The numbers behind docs/scaling.md. Each env family is measured in a fresh Python
process of its own (``--child``), so that one family's loaded data, sandboxes or
browser never count against another. In that process:

- first session: ``gym.make`` + ``reset`` + one oracle episode (loads the shared data:
  corpus, index, catalog, sandbox pool, verifier worker, Chromium), then the process
  tree's memory (the process and every descendant: sandboxes, Chromium, workers);
- extra sessions: N more, each ``gym.make`` + ``reset(seed=i)`` (timed: the session
  start cost) and its oracle episode played through (so each has made its sandbox
  calls, its grader checkout, its page), all kept open; then the tree's memory again.
  Per session = (after - before) / N. Reported as PSS (pages shared between
  processes, e.g. by a forked sandbox supervisor or Chromium's zygote, split between
  them: what the sessions really add) and RSS (each process counted whole), plus the
  growth of the machine's shared memory (``Shmem`` in /proc/meminfo: tmpfs files such
  as a sandbox's working copy, which no process's RSS shows; machine-wide, so noisy);
- CPU per step: ``--episodes`` oracle episodes (``oracle_action()`` until the episode
  ends) on the first session; the CPU seconds of the whole process tree (its own, its
  live descendants', and those of descendants that exited and were reaped), divided
  by the env steps taken (resets included in the cost, not in the count), and wall
  seconds per step. steps/s per core = 1 / CPU seconds per step;
- tool step: for SearchQA, MathTool and SWEBench, ``--probes`` steps that each make one
  typical mid-episode tool call (a search, a sympy program, a bash command), timed the
  same way: an oracle episode is short (SWEBench's is a patch and a grading), a
  model's makes many such calls before its one grading.

The Ray rows (``--child ray``) compare a ``RayEnv`` (``gym.make(id, remote="ray://local")``,
a Ray cluster started on this machine, one host actor per CPU) with the same env in
process: the median latency of reset + step over ``--round-trips`` pairs, their CPU
(the driver's tree, which holds the whole local Ray cluster), batch step over 256
sessions (``RayEnvPool.call_many``, the path ``agentgym serve --ray`` batches take)
against a loop over 256 envs in process, and the memory of a host actor with the
SearchQA data loaded against an idle one. Also the pool's own bookkeeping: the driver's
CPU to place one session on a made-up cluster of 10 and 100 nodes (no Ray). Ray is started with ``RAY_AUTH_MODE=disabled``
unless the environment sets it.

Docker (SWEBench's ``docker`` backend) is measured only where an engine answers
(``$DOCKER_HOST`` or /var/run/docker.sock); otherwise the table says so.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
RESULT = "BENCH-SCALING-RESULT "

# env id: (extra sessions, oracle episodes timed for CPU). The costly envs get fewer of both.
FAMILIES: dict[str, tuple[int, int]] = {
    "agentgym/SearchQA-v0": (8, 300),
    "agentgym/MathTool-v0": (8, 60),
    "agentgym/PyCode-v0": (8, 100),
    "agentgym/WebShop-v0": (8, 200),
    "agentgym/WebShopBrowser-v0": (3, 12),
    "agentgym/SWEBench-v0": (3, 20),
    "agentgym/ALFWorld-v0": (8, 40),
}
HOLDS = {  # what one open session holds besides its Python objects (from the envs' code)
    "agentgym/SearchQA-v0": "Python objects; the corpus and BM25 index are shared by the process",
    "agentgym/MathTool-v0": "Python objects; calls borrow the process's pool of warm sandboxes (one per CPU)",
    "agentgym/PyCode-v0": "Python objects; tests run on the process's pool of warm sandboxes",
    "agentgym/WebShop-v0": "Python objects; the catalog and its index are shared by the process",
    "agentgym/WebShopBrowser-v0": "a Chromium context + page (a renderer process); one browser per process",
    "agentgym/SWEBench-v0": "two sandboxes (working copy, grader checkout): supervisor processes + tmpfs",
    "agentgym/ALFWorld-v0": "Python objects: the game's PDDL state",
}
SEARCH = "<search>capital of Peru</search>"
# A typical mid-episode tool call per env (tool, arguments), timed on its own: an oracle episode is short
# (SWEBench's is a patch and a grading), a model's has many such calls before its one grading.
PROBES = {
    "agentgym/SearchQA-v0": ("search", {"query": "capital of Peru"}),
    "agentgym/MathTool-v0": (None, {"code": "import sympy\nx = sympy.symbols('x')\nprint(sympy.factor(x**2 - 1))"}),
    "agentgym/SWEBench-v0": ("bash", {"command": "git status --short && ls && grep -rn def . | head -20"}),
}


# ---- the process tree -------------------------------------------------------------------------------
try:
    import psutil
except ImportError:  # the /proc fallback below does the same on Linux
    psutil = None

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_pids(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and all its descendants."""
    root = os.getpid() if root is None else root
    if psutil is not None:
        try:
            proc = psutil.Process(root)
            return [root] + [c.pid for c in proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            parents.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def memory_mb(pids: list[int]) -> dict[str, float]:
    """RSS and PSS of ``pids`` together, in MB (a process that exited meanwhile counts 0)."""
    rss = pss = 0
    for pid in pids:
        if psutil is not None:
            try:
                proc = psutil.Process(pid)
                try:
                    info = proc.memory_full_info()
                except psutil.AccessDenied:  # smaps not readable (an undumpable process): charged its whole RSS
                    info = proc.memory_info()
                rss, pss = rss + info.rss, pss + getattr(info, "pss", info.rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
            continue
        try:
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
            try:
                lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
            except PermissionError:  # as above: its whole RSS
                lines = [f"Pss: {int(Path(f'/proc/{pid}/statm').read_text().split()[1]) * _PAGE // 1024} kB"]
            pss += sum(int(line.split()[1]) * 1024 for line in lines if line.startswith("Pss:"))
        except (OSError, ValueError):
            pass
    return {"rss_mb": rss / 2**20, "pss_mb": pss / 2**20, "processes": len(pids)}


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) of ``pids``, each with its reaped children's."""
    total = 0.0
    for pid in pids:
        if pid == os.getpid():  # this process's own clock is precise (the others' count in clock ticks)
            times = os.times()
            total += time.process_time() + times.children_user + times.children_system
            continue
        if psutil is not None:
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.NoSuchProcess:
                pass
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
    return total


def shmem_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) / 1024
    return 0.0


def settle() -> None:
    gc.collect()
    time.sleep(0.5)  # let helper processes (Chromium's renderers, sandboxes) finish what they were doing


# ---- one env family, in a process of its own --------------------------------------------------------
def play(env, seed: int) -> int:
    """One oracle episode from ``reset(seed=seed)``; the steps it took."""
    env.reset(seed=seed)
    oracle, steps = env.unwrapped.oracle_action, 0
    while True:
        _, _, terminated, truncated, _ = env.step(oracle())
        steps += 1
        if terminated or truncated:
            return steps


def tool_steps(env, tool: str | None, arguments: dict, n: int) -> dict:
    """CPU and wall seconds of ``n`` steps that each make one tool call (``tool``: None for the env's own)."""
    from agentgym.core.tools import ToolCall

    u = env.unwrapped
    env.reset(seed=0)
    action = u.action_format.render_call(ToolCall(tool or u.tool_name, arguments), u.tools)
    env.step(action)  # warm
    cpu0, wall0 = cpu_s(tree_pids()), time.perf_counter()
    for _ in range(n):
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated or info.get("action_error"):
            raise SystemExit(f"the {tool} probe did not make a tool call: {info.get('action_error')}")
    out = {"tool": tool or u.tool_name, "arguments": arguments, "steps": n,
           "cpu_s_per_step": (cpu_s(tree_pids()) - cpu0) / n, "wall_s_per_step": (time.perf_counter() - wall0) / n}
    env.close()
    return out


def measure_family(env_id: str, sessions: int, episodes: int, kwargs: dict, probes: int = 200) -> dict:
    import gymnasium as gym

    import agentgym  # noqa: F401 - registers the ids

    settle()
    bare = memory_mb(tree_pids())
    start = time.perf_counter()
    try:
        first = gym.make(env_id, **kwargs)
        first.reset(seed=0)
    except Exception as e:  # noqa: BLE001 - a family that cannot run here is reported, not fatal
        return {"env_id": env_id, "skipped": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"}
    first_start_s = time.perf_counter() - start
    play(first, 0)
    settle()
    shared, shm0 = memory_mb(tree_pids()), shmem_mb()

    envs, starts, steps_extra = [], [], 0
    for i in range(1, sessions + 1):
        start = time.perf_counter()
        env = gym.make(env_id, **kwargs)
        env.reset(seed=i)
        starts.append(time.perf_counter() - start)
        steps_extra += play(env, i)
        envs.append(env)
    settle()
    after, shm1 = memory_mb(tree_pids()), shmem_mb()

    cpu0, wall0, steps = cpu_s(tree_pids()), time.perf_counter(), 0
    for ep in range(episodes):
        steps += play(first, 1000 + ep)
    wall = time.perf_counter() - wall0
    cpu = cpu_s(tree_pids()) - cpu0
    probe = None
    if env_id in PROBES:
        probe = tool_steps(gym.make(env_id, **{**kwargs, "max_turns": 1_000_000}), *PROBES[env_id], probes)
    for env in envs + [first]:
        env.close()
    return {
        "env_id": env_id, "kwargs": kwargs, "sessions": sessions, "episodes": episodes, "steps": steps,
        "bare_interpreter": bare, "first_session": shared, "first_session_start_s": first_start_s,
        "with_sessions": after,
        "per_session_rss_mb": (after["rss_mb"] - shared["rss_mb"]) / sessions,
        "per_session_pss_mb": (after["pss_mb"] - shared["pss_mb"]) / sessions,
        "per_session_shmem_mb": (shm1 - shm0) / sessions,
        "per_session_processes": (after["processes"] - shared["processes"]) / sessions,
        "session_start_s": statistics.median(starts), "session_start_all_s": starts,
        "cpu_s_per_step": cpu / steps, "wall_s_per_step": wall / steps, "steps_per_episode": steps / episodes,
        "tool_step": probe, "holds": HOLDS.get(env_id, ""),
    }


# ---- the Ray pool, in a process of its own ----------------------------------------------------------
def measure_ray(round_trips: int, batch: int) -> dict:
    import gymnasium as gym

    import agentgym  # noqa: F401

    env_id, kwargs = "agentgym/SearchQA-v0", {"max_turns": 1_000_000}

    def pairs(env) -> tuple[list[float], float]:
        env.reset(seed=0)
        env.step(SEARCH)  # warm
        lat, cpu0, own0 = [], cpu_s(tree_pids()), time.process_time()
        for i in range(round_trips):
            start = time.perf_counter()
            env.reset(seed=i)
            env.step(SEARCH)
            lat.append(time.perf_counter() - start)
        return lat, cpu_s(tree_pids()) - cpu0, time.process_time() - own0

    def summary(lat: list[float], cpu: float, own: float) -> dict:
        return {"median_ms": statistics.median(lat) * 1e3, "p90_ms": statistics.quantiles(lat, n=10)[-1] * 1e3,
                "cpu_ms_per_round_trip": cpu / len(lat) * 1e3, "driver_cpu_ms_per_round_trip": own / len(lat) * 1e3}

    local = gym.make(env_id, **kwargs)
    local_rows = summary(*pairs(local))
    local_envs = [gym.make(env_id, **kwargs) for _ in range(batch)]
    for i, env in enumerate(local_envs):
        env.reset(seed=i)
    rounds = 20
    start = time.perf_counter()
    for _ in range(rounds):
        for env in local_envs:
            env.step(SEARCH)
    local_batch = batch * rounds / (time.perf_counter() - start)

    bare = memory_mb(tree_pids())
    start = time.perf_counter()
    remote = gym.make(env_id, remote="ray://local", **kwargs)
    pool_start_s = time.perf_counter() - start
    ray_rows = summary(*pairs(remote))
    pool = remote.unwrapped.pool
    host_pid = remote.unwrapped.host["pid"]
    pids = [h["pid"] for n in pool.describe()["nodes"] for h in n["hosts"]]
    idle = [p for p in pids if p != host_pid]
    settle()
    loaded_host = memory_mb(tree_pids(host_pid))
    idle_host = memory_mb(tree_pids(idle[0])) if idle else None
    driver_tree = memory_mb(tree_pids())

    start = time.perf_counter()
    remotes = [gym.make(env_id, remote="ray://local", **kwargs) for _ in range(batch)]
    open_s = time.perf_counter() - start
    sessions = [env.unwrapped.pool_session for env in remotes]
    for ok, value in pool.call_many([(s, "reset", (i, None)) for i, s in enumerate(sessions)]):
        assert ok, value
    calls = [(s, "step", (SEARCH,)) for s in sessions]
    pool.call_many(calls)  # warm
    start, own0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for ok, value in pool.call_many(calls):
            assert ok, value
    ray_batch = batch * rounds / (time.perf_counter() - start)
    ray_batch_driver_us = (time.process_time() - own0) / (batch * rounds) * 1e6
    settle()
    hosts_after = {p: memory_mb(tree_pids(p)) for p in pids}
    hosts_before = {host_pid: loaded_host, **({idle[0]: idle_host} if idle else {})}
    per_session = (sum(m["pss_mb"] for m in hosts_after.values())
                   - sum(m["pss_mb"] for p, m in hosts_before.items() if p in hosts_after)) / batch
    for env in remotes + [remote]:
        env.close()
    placement = {f"{nodes} nodes x 32 hosts, {short(e)}": placement_us(nodes, 32, e)
                 for nodes in (10, 100) for e in (env_id, "agentgym/SWEBench-v0")}
    return {
        "placement_us": placement,
        "env_id": env_id, "round_trips": round_trips, "in_process": local_rows, "ray": ray_rows,
        "pool_start_s": pool_start_s, "batch_sessions": batch, "batch_rounds": rounds,
        "batch_steps_per_s_in_process": local_batch, "batch_steps_per_s_ray": ray_batch,
        "batch_driver_cpu_us_per_step_ray": ray_batch_driver_us,
        "ray_sessions_opened_per_s": batch / open_s,
        "host_actors": len(pids), "host_with_searchqa": loaded_host, "idle_host": idle_host,
        "driver_before_ray": bare, "driver_tree_with_ray": driver_tree,
        "host_pss_mb_per_session": per_session,
    }


def placement_us(nodes: int, hosts: int, env_id: str, picks: int = 200) -> float:
    """Microseconds the pool's driver spends placing one new session (``RayEnvPool._pick``, under the pool's
    lock) when the cluster has ``nodes`` nodes of ``hosts`` hosts each: its bookkeeping alone, no Ray."""
    from collections import Counter

    from agentgym.cluster.pool import RayEnvPool, _Host, _Node

    pool = RayEnvPool.__new__(RayEnvPool)  # the bookkeeping without a cluster
    pool.node_env_limits, pool.env_ids, pool.hosts_per_node, pool._nodes = {}, [env_id], hosts, {}
    for n in range(nodes):
        node = _Node(f"node-{n}", f"10.0.{n // 250}.{n % 250}", float(hosts), 128 * 1024)
        node.hosts = [_Host(None, node, i, sessions=Counter({env_id: (7 * n + i) % 5})) for i in range(hosts)]
        pool._nodes[node.node_id] = node
    start = time.perf_counter()
    for _ in range(picks):
        pool._pick(env_id)
    return (time.perf_counter() - start) / picks * 1e6


# ---- docker -----------------------------------------------------------------------------------------
def docker_reachable() -> str | None:
    """None where a Docker engine answers, else why not."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        return "no engine (DOCKER_HOST unset, no /var/run/docker.sock)"
    try:
        import docker

        docker.from_env(timeout=5).ping()
    except Exception as e:  # noqa: BLE001
        return f"engine unreachable ({type(e).__name__})"
    return None


# ---- the parent -------------------------------------------------------------------------------------
def run_child(args: list[str], timeout_s: float) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env, check=False,
                              timeout=timeout_s, cwd=HERE.parent)
    except subprocess.TimeoutExpired:
        return {"skipped": f"did not finish in {timeout_s:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"skipped": f"exit {proc.returncode}: {tail[:200]}"}


def short(env_id: str) -> str:
    return env_id.removeprefix("agentgym/").removesuffix("-v0")


def mb(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"


def print_families(rows: list[dict]) -> None:
    print("| env | sessions | first session: tree PSS / RSS MB | per extra session: PSS / RSS MB | shmem MB "
          "| processes | session start ms | CPU ms/step | wall ms/step | steps/s per core | steps/episode "
          "| tool step: CPU / wall ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        name = short(r["env_id"]) + (f" ({r['kwargs']['backend']})" if r.get("kwargs", {}).get("backend") else "")
        if "skipped" in r:
            print(f"| {name} | skipped: {r['skipped']} ||||||||||")
            continue
        f, tool = r["first_session"], r.get("tool_step")
        probe = (f"{tool['cpu_s_per_step'] * 1e3:.2f} / {tool['wall_s_per_step'] * 1e3:.2f} ({tool['tool']})"
                 if tool else "-")
        print(f"| {name} | {r['sessions']} | {f['pss_mb']:.0f} / {f['rss_mb']:.0f} "
              f"| {mb(r['per_session_pss_mb'])} / {mb(r['per_session_rss_mb'])} | {mb(r['per_session_shmem_mb'])} "
              f"| {r['per_session_processes']:.1f} | {r['session_start_s'] * 1e3:.1f} "
              f"| {r['cpu_s_per_step'] * 1e3:.2f} | {r['wall_s_per_step'] * 1e3:.2f} "
              f"| {1 / max(r['cpu_s_per_step'], 1e-9):,.0f} | {r['steps_per_episode']:.1f} | {probe} |")
    bare = [r["bare_interpreter"]["pss_mb"] for r in rows if "bare_interpreter" in r]
    if bare:
        print(f"\n(a bare interpreter with agentgym imported: {statistics.median(bare):.0f} MB PSS, included in "
              "'first session'; session start = make + first reset of one more session after the first)")


def print_ray(r: dict) -> None:
    if "skipped" in r:
        print(f"\nRay pool: skipped: {r['skipped']}")
        return
    i, y = r["in_process"], r["ray"]
    print(f"\n| SearchQA reset+step ({r['round_trips']} pairs) | median ms | p90 ms | CPU ms a round trip: all "
          "| of it the driver's |")
    print("|---|---|---|---|---|")
    print(f"| in process | {i['median_ms']:.3f} | {i['p90_ms']:.3f} | {i['cpu_ms_per_round_trip']:.3f} "
          f"| {i['driver_cpu_ms_per_round_trip']:.3f} |")
    print(f"| RayEnv (ray://local, {r['host_actors']} host actors) | {y['median_ms']:.3f} | {y['p90_ms']:.3f} "
          f"| {y['cpu_ms_per_round_trip']:.3f} | {y['driver_cpu_ms_per_round_trip']:.3f} |")
    print(f"\n| batch step, {r['batch_sessions']} SearchQA sessions | env steps/s |")
    print("|---|---|")
    print(f"| in process, a loop over the envs | {r['batch_steps_per_s_in_process']:,.0f} |")
    print(f"| RayEnvPool.call_many (one actor call per host) | {r['batch_steps_per_s_ray']:,.0f} "
          f"(driver: {r['batch_driver_cpu_us_per_step_ray']:.0f} us of CPU a step) |")
    h, idle = r["host_with_searchqa"], r["idle_host"]
    print(f"\nRay: pool start (local cluster + hosts + first session) {r['pool_start_s']:.1f} s; "
          f"sessions opened one by one: {r['ray_sessions_opened_per_s']:.0f}/s")
    print(f"host actor with SearchQA loaded: {h['pss_mb']:.0f} MB PSS / {h['rss_mb']:.0f} MB RSS "
          f"({h['processes']} processes)" + (f"; idle host actor: {idle['pss_mb']:.0f} / {idle['rss_mb']:.0f} MB"
                                             if idle else ""))
    print("pool bookkeeping, placing one session (driver CPU, under the pool's lock): "
          + "; ".join(f"{k}: {v:,.0f} us" for k, v in r["placement_us"].items()))
    print(f"per SearchQA session on the hosts: {r['host_pss_mb_per_session'] * 1024:.0f} KB PSS; "
          f"the driver's tree (driver + local Ray cluster + hosts): {r['driver_tree_with_ray']['pss_mb']:.0f} MB "
          f"PSS against {r['driver_before_ray']['pss_mb']:.0f} MB before Ray")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default=",".join(short(e) for e in FAMILIES),
                        help="comma-separated families (SearchQA, ...) or env ids")
    parser.add_argument("--episodes", type=int, default=None, help="oracle episodes timed per env (default: per env)")
    parser.add_argument("--sessions", type=int, default=None, help="extra sessions per env (default: 8, 3 for costly)")
    parser.add_argument("--probes", type=int, default=200, help="tool steps timed on their own per env")
    parser.add_argument("--round-trips", type=int, default=500)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per child process")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--kwargs", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child == "ray":
        print(RESULT + json.dumps(measure_ray(args.round_trips, args.batch)), flush=True)
        return
    if args.child:
        result = measure_family(args.child, args.sessions, args.episodes, json.loads(args.kwargs), args.probes)
        print(RESULT + json.dumps(result), flush=True)
        os._exit(0)  # envs' helper threads (Chromium's loop) need not be waited for

    ids = {short(e).lower(): e for e in FAMILIES}
    chosen = [ids.get(e.strip().lower(), e.strip()) for e in args.envs.split(",") if e.strip()]
    plan = [(e, {}) for e in chosen]
    docker_why = None
    if "agentgym/SWEBench-v0" in chosen:
        docker_why = docker_reachable()
        if docker_why is None:
            plan.append(("agentgym/SWEBench-v0", {"backend": "docker"}))
    rows = []
    started = time.perf_counter()
    for env_id, kwargs in plan:
        sessions, episodes = FAMILIES.get(env_id, (8, 50))
        child = ["--child", env_id, "--sessions", str(args.sessions or sessions),
                 "--episodes", str(args.episodes or episodes), "--probes", str(args.probes),
                 "--kwargs", json.dumps(kwargs)]
        t = time.perf_counter()
        rows.append({"env_id": env_id, "kwargs": kwargs, **run_child(child, args.timeout)})
        print(f"# {short(env_id)}{' ' + json.dumps(kwargs) if kwargs else ''}: {time.perf_counter() - t:.0f} s",
              file=sys.stderr, flush=True)
    print(f"## Per env family (one process each; {os.cpu_count()} CPUs, OMP_NUM_THREADS=1)\n", flush=True)
    print_families(rows)
    if docker_why is not None:
        print(f"\nSWEBench docker backend: not measured here: {docker_why}.")
    ray = None
    if not args.no_ray:
        ray = run_child(["--child", "ray", "--round-trips", str(args.round_trips), "--batch", str(args.batch)],
                        args.timeout)
        print("\n## The Ray pool (SearchQA, a local Ray cluster on this machine)")
        print_ray(ray)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"families": rows, "ray": ray, "docker": docker_why or "measured",
                                               "cpus": os.cpu_count()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
