"""Env sessions on a real two-node Ray cluster (``ray start --head`` plus a second node, started here): spread over
both nodes, per-node limits, one node's hosts killed mid-run losing only their sessions; the same through
``agentgym serve --ray`` for a RemoteEnv client (the conformance checks), ``agentgym eval --remote ray://`` and a
training step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import httpx
import pytest
from helpers.conformance import conformance
from helpers.gates import requires_ray, requires_server, requires_smollm2, requires_train
from helpers.ray_cluster import RAY_ENV, two_node_cluster
from helpers.server_process import serving

import agentgym
from agentgym.client import RemoteEnv
from agentgym.core.registry import env_info
from agentgym.errors import CapacityReached, ConfigError, RemoteEnvError, ResetNeeded, SessionLost

pytestmark = [requires_ray, pytest.mark.slow]

SEARCH = "agentgym/SearchQA-v0"
ENTRY = env_info(SEARCH).entry_point


@pytest.fixture(scope="module")
def cluster():
    saved = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)  # this process's drivers, and the servers it starts, join without a token
    try:
        with two_node_cluster(cpus_per_node=1) as started:
            yield started
            from agentgym.cluster.pool import shutdown_pools

            shutdown_pools()  # gym.make(remote="ray://...")'s pool, which joined the cluster from this process
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _new_pool(cluster):
    from agentgym.cluster import RayEnvPool

    return RayEnvPool(cluster.address, hosts_per_node=1, node_env_limits={SEARCH: 2})


@pytest.fixture(scope="module")
def shared_pool(cluster):
    # a pool's hosts take seconds of CPU to start (a Ray worker each, agentgym's import, its verifier worker): the
    # tests that leave them as they found them share one pool
    pool = _new_pool(cluster)
    yield pool
    from agentgym.cluster.pool import shutdown_pools

    # first gym.make(remote="ray://...")'s pool, on the Ray this pool started in this process: once that is shut
    # down, a call of an actor would start a new local Ray (auto-init)
    shutdown_pools()
    pool.shutdown()


@pytest.fixture
def pool(shared_pool):
    """The module's pool, as a new one would be: every host alive, no session open (each test closes its own)."""
    assert _untouched(shared_pool.describe())
    yield shared_pool
    assert _untouched(shared_pool.describe()), "a test left sessions open or hosts lost on the shared pool"


@pytest.fixture
def own_pool(cluster):
    """A pool of the test's own, for a test that kills its hosts."""
    pool = _new_pool(cluster)
    yield pool
    pool.shutdown()


def _untouched(described):
    return not described["degraded"] and all(n["alive"] and n["sessions"] == 0 and
                                             not any("lost" in h for h in n["hosts"]) for n in described["nodes"])


def _node_names(cluster, envs):
    by_id = {node_id: name for name, node_id in cluster.nodes.items()}
    return [by_id[env.host["node_id"]] for env in envs]


def _play_to_the_end(env, seed):
    """The oracle's episode on ``env`` (reset already done at ``seed``), from a local twin stepped in lockstep."""
    twin = agentgym.make(SEARCH).unwrapped
    twin.reset(seed=seed)
    while True:
        action = twin.oracle_action()
        twin.step(action)
        step = env.step(action)
        if step[2] or step[3]:
            return step


def test_sessions_spread_over_both_nodes_and_play_as_in_process(cluster, pool):
    from agentgym.cluster import RayEnv

    envs = [RayEnv(pool, SEARCH, entry_point=ENTRY) for _ in range(4)]
    try:
        assert sorted(_node_names(cluster, envs)) == ["head", "head", "second", "second"]
        local = gym.make(SEARCH)
        for seed, env in enumerate(envs):
            assert env.reset(seed=seed) == local.reset(seed=seed)
            step = _play_to_the_end(env, seed)
            assert step[1] == 1.0 and step[4]["verification"]["correct"]
        with pytest.raises(ResetNeeded):  # the env's own exception, raised here as in process
            envs[0].step("<answer>again</answer>")
        described = pool.describe()
        assert not described["degraded"]
        host = envs[0].pool_session.host  # one CPU per node, one host: the host's sandbox pool gets 1
        assert pool._ray.get(host.actor.describe.remote())["sandbox_pool_size"] == "1"
        deadline = time.monotonic() + 60  # the verifier worker started with the host (pre-warmed), not on demand
        while pool._ray.get(host.actor.describe.remote())["verifier_workers"]["idle"] < 1:
            assert time.monotonic() < deadline, "the host's verifier worker never started"
            time.sleep(0.1)
        assert {n["node_id"]: n["sessions"] for n in described["nodes"]} == {i: 2 for i in cluster.nodes.values()}
    finally:
        for env in envs:
            env.close()


def test_per_node_limits_hold_and_a_closed_session_frees_its_slot(cluster, pool):
    from agentgym.cluster import RayEnv

    envs = [RayEnv(pool, SEARCH, entry_point=ENTRY) for _ in range(4)]  # the limit is 2 per node
    try:
        with pytest.raises(CapacityReached, match=r"limit of 2 agentgym/SearchQA-v0 sessions \(2 nodes.*"
                                                  r"--node-env-limit"):
            RayEnv(pool, SEARCH, entry_point=ENTRY)
        on_second = next(e for e in envs if _node_names(cluster, [e]) == ["second"])
        on_second.close()
        again = RayEnv(pool, SEARCH, entry_point=ENTRY)
        envs.append(again)
        assert _node_names(cluster, [again]) == ["second"]
        math = RayEnv(pool, "agentgym/MathTool-v0", entry_point=env_info("agentgym/MathTool-v0").entry_point)  # another env has no limit of its own
        envs.append(math)
    finally:
        for env in envs:
            env.close()


def test_bad_kwargs_and_addresses_are_the_errors_make_gives(cluster, pool):
    from agentgym.cluster import RayEnv, RayEnvPool

    with pytest.raises(ConfigError, match="topk"):
        RayEnv(pool, SEARCH, {"topk": "3"}, entry_point=ENTRY)
    assert pool.describe()["nodes"][0]["sessions"] == 0  # the failed make freed its slot
    with pytest.raises(ConfigError, match="ray://HOST:PORT"):
        gym.make(SEARCH, remote="ray://")
    with pytest.raises(ConfigError, match="integer >= 1"):
        RayEnvPool(cluster.address, node_env_limits={SEARCH: 0})


def _kill_hosts_on(pool, node_id):
    """SIGKILL every env host of the pool on one node: what a crash or the OOM killer does."""
    [node] = [n for n in pool.describe()["nodes"] if n["node_id"] == node_id]
    pids = [h["pid"] for h in node["hosts"] if "lost" not in h]
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return pids


def test_killing_one_nodes_hosts_mid_run_loses_only_their_sessions(cluster, own_pool):
    from agentgym.cluster import RayEnv

    pool = own_pool  # not the shared one: its hosts get killed
    envs = [RayEnv(pool, SEARCH, entry_point=ENTRY) for _ in range(4)]
    try:
        names = _node_names(cluster, envs)
        for seed, env in enumerate(envs):  # every episode under way
            env.reset(seed=seed)
            env.step("<search>capital</search>")
        pids = _kill_hosts_on(pool, cluster.nodes["second"])
        for seed, (env, name) in enumerate(zip(envs, names)):
            if name == "head":  # the others go on to the end
                step = _play_to_the_end(env, seed)
                assert step[1] == 1.0
                continue
            with pytest.raises(SessionLost) as lost:
                env.step("<answer>x</answer>")
            message = str(lost.value)
            assert f"pid {pids[0]}" in message and cluster.nodes["second"][:12] in message
            assert "the session is lost, the others go on. Reset" in message
        assert pool.describe()["degraded"]
        # a lost session's env resets into a new session; the pool replaces the dead host on its live node
        lost_env = envs[names.index("second")]
        lost_env.reset(seed=1)
        assert _play_to_the_end(lost_env, 1)[1] == 1.0
        pool.refresh()
        [second] = [n for n in pool.describe()["nodes"] if n["node_id"] == cluster.nodes["second"]]
        assert [h["pid"] for h in second["hosts"] if "lost" in h] == pids
        assert any("lost" not in h and h["pid"] not in pids for h in second["hosts"])
        assert not pool.describe()["degraded"]
    finally:
        for env in envs:
            env.close()


@requires_server
def test_agentgym_serve_on_ray_passes_the_conformance_checks_and_survives_a_node(cluster):
    ids = [SEARCH, "agentgym/MathTool-v0", "agentgym/WebShop-v0"]
    with serving(*ids, "--ray", cluster.address, "--ray-hosts-per-node", "1",
                 "--node-env-limit", f"{SEARCH}=2") as url:
        health = httpx.get(f"{url}/healthz").json()
        assert health["status"] == "ok" and len(health["ray"]["nodes"]) == 2
        for env_id in ids:  # the RemoteEnv client sees what it sees from a single-process server
            local = gym.make(env_id, max_turns=12)
            remote = gym.make(env_id, remote=url, max_turns=12)
            assert isinstance(remote.unwrapped, RemoteEnv)
            try:
                assert conformance(local, env_id, seed=7) == conformance(remote, env_id, seed=7)
            finally:
                remote.close()
                local.close()
        clients = [RemoteEnv(SEARCH, url) for _ in range(4)]
        for seed, client in enumerate(clients):
            client.reset(seed=seed)
        refused = httpx.post(f"{url}/v1/sessions", json={"env_id": SEARCH})
        assert refused.status_code == 429 and "--node-env-limit" in refused.json()["message"]  # 2 per node
        nodes = {n["node_id"]: n for n in httpx.get(f"{url}/healthz").json()["ray"]["nodes"]}
        victim = cluster.nodes["second"]
        for host in nodes[victim]["hosts"]:
            os.kill(host["pid"], signal.SIGKILL)
        outcomes = []
        for seed, client in enumerate(clients):
            try:
                outcomes.append(_play_to_the_end(client, seed)[1])
            except RemoteEnvError as e:
                assert e.status_code == 410 and e.code == "session_lost" and "died" in str(e)
                outcomes.append("lost")
        assert sorted(outcomes, key=str) == [1.0, 1.0, "lost", "lost"]  # two sessions per node
        health = httpx.get(f"{url}/healthz").json()
        assert health["status"] == "degraded"
        lost = clients[outcomes.index("lost")]
        lost.reset(seed=2)  # a new session, as after a lost server process
        assert lost.step("<answer>x</answer>")[2]
        for client in clients:
            client.close()
        assert httpx.get(f"{url}/healthz").json()["sessions"] == 0


def test_eval_on_the_pool_gives_the_local_runs_episodes(cluster, tmp_path):
    """``agentgym eval --remote ray://ADDRESS`` gives the episodes a local run gives."""
    env = {**os.environ, **RAY_ENV}
    runs = {}
    try:
        # the two runs are independent: at once, each one's start (imports, the Ray pool's hosts) overlaps the
        # other's; their output goes to files, as a pipe nobody drains while the other is waited for could fill
        for where, extra in (("local", []), ("ray", ["--remote", f"ray://{cluster.address}"])):
            with open(tmp_path / f"{where}.log", "w") as log:
                runs[where] = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "eval", "--env", SEARCH,
                                                "--policy", "oracle", "--episodes", "3", "--results",
                                                str(tmp_path / f"{where}.jsonl"), *extra], env=env, stdout=log,
                                               stderr=subprocess.STDOUT, text=True)
        results = {}
        for where, proc in runs.items():
            assert proc.wait(timeout=300) == 0, (tmp_path / f"{where}.log").read_text()
            results[where] = [json.loads(line) for line in (tmp_path / f"{where}.jsonl").read_text().splitlines()]
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    keep = ("task_id", "reward", "correct", "turns", "transcript")
    assert [{k: r[k] for k in keep} for r in results["ray"]] == [{k: r[k] for k in keep} for r in results["local"]]
    assert all(r["reward"] == 1.0 for r in results["ray"])


@requires_train
@requires_smollm2
def test_a_training_step_on_the_pool(cluster, tmp_path, smollm2_tokenizer):
    from helpers.trainer_fixtures import tiny_model

    from agentgym.trainer.grpo import TrainConfig, build_trainer

    config = TrainConfig(env=[SEARCH], remote=f"ray://{cluster.address}", tasks=4,
                         output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=1, max_turns=2,
                         max_turn_tokens=8, max_completion_tokens=300, save_steps=100)
    started = time.monotonic()
    trainer, rollouts = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=3),
                                      tokenizer=smollm2_tokenizer)
    trainer.train()
    rollouts.close()
    [row] = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert row["step"] == 1 and row["turns"] == 2.0 and row["tokens_masked"] > 0
    assert time.monotonic() - started < 300


@requires_server
def test_batches_on_ray_run_one_actor_call_per_host_and_fail_per_item(cluster):
    with serving(SEARCH, "--ray", cluster.address, "--ray-hosts-per-node", "1") as url:
        seeds = list(range(6))
        made = httpx.post(f"{url}/v1/create", json={"sessions": [{"env_id": SEARCH, "seed": s} for s in seeds]})
        ids = [r["session_id"] for r in made.json()["results"]]
        hosts = {n["node_id"]: n for n in httpx.get(f"{url}/healthz").json()["ray"]["nodes"]}
        assert sorted(n["sessions"] for n in hosts.values()) == [3, 3]
        locals_ = [gym.make(SEARCH) for _ in seeds]
        for seed, env in zip(seeds, locals_):
            env.reset(seed=seed)
        actions = [f"<search>capital {i}</search>" for i in seeds]
        body = {"steps": [{"session_id": sid, "action": a, "step_id": 1} for sid, a in zip(ids, actions)]}
        stepped = httpx.post(f"{url}/v1/step", json=body).json()["results"]
        expected = [env.step(a) for env, a in zip(locals_, actions)]
        assert [(r["result"]["observation"], r["result"]["reward"]) for r in stepped] == [(e[0], e[1]) for e in
                                                                                          expected]
        again = httpx.post(f"{url}/v1/step", json=body).json()["results"]  # a retried step_id: the record
        assert again == stepped
        resets = httpx.post(f"{url}/v1/reset", json={"resets": [{"session_id": sid, "seed": 9} for sid in ids]})
        assert len({r["result"]["observation"] for r in resets.json()["results"]}) == 1
        for host in hosts[cluster.nodes["second"]]["hosts"]:
            os.kill(host["pid"], signal.SIGKILL)
        body = {"steps": [{"session_id": sid, "action": "<search>x</search>"} for sid in ids]}
        results = httpx.post(f"{url}/v1/step", json=body).json()["results"]
        codes = sorted(r["error"]["code"] if "error" in r else "ok" for r in results)
        assert codes == ["ok"] * 3 + ["session_lost"] * 3
        lost = [sid for sid, r in zip(ids, results) if "error" in r]
        answer = httpx.post(f"{url}/v1/sessions/{lost[0]}/step", json={"action": "x"})
        assert answer.status_code == 410 and answer.json()["code"] == "session_lost"


@requires_server
def test_slow_steps_of_many_sessions_run_at_once_and_an_env_error_ends_only_its_session(cluster):
    """The server's threads only wait on the hosts (256 of them with --ray): 16 sessions' 2-second steps overlap.

    The bound is a ratio to the serial time (16 x 2 s = 32 s), not to one step: at once they take 3.3 s on two cores
    and took 5 s on a loaded CI machine (2 s of sleep, the rest overhead), so half the serial time leaves room for
    overhead five times that, and still fails a server that runs the steps one or two at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with serving("test/Crashy-v0", "--ray", cluster.address, preload="helpers.crashy_env") as url:
        slow_s, count = 2.0, 16
        body = {"sessions": [{"env_id": "test/Crashy-v0", "kwargs": {"slow_s": slow_s}} for _ in range(count)]}
        made = httpx.post(f"{url}/v1/create", json=body, timeout=120).json()["results"]
        ids = [r["session_id"] for r in made]
        assert len(ids) == count

        def slow(sid):
            return httpx.post(f"{url}/v1/sessions/{sid}/step", json={"action": "slow"}, timeout=60).status_code

        started = time.monotonic()
        with ThreadPoolExecutor(count) as pool:
            assert list(pool.map(slow, ids)) == [200] * count
        elapsed, serial = time.monotonic() - started, count * slow_s
        assert elapsed < 0.5 * serial, f"{count} steps of {slow_s} s took {elapsed:.1f} s: they did not overlap"
        crashed = httpx.post(f"{url}/v1/sessions/{ids[0]}/step", json={"action": "crash"})
        assert crashed.status_code == 500 and "RuntimeError: boom" in crashed.json()["message"]
        assert httpx.post(f"{url}/v1/sessions/{ids[0]}/step", json={"action": "x"}).status_code == 404
        assert httpx.post(f"{url}/v1/sessions/{ids[1]}/step", json={"action": "<answer>ok</answer>"}).json()[
            "reward"] == 1.0


PLUGIN = '''import agentgym


def capital_of(country: str) -> str:
    """Look up the capital city of a country."""
    return {"Peru": "Lima", "Kenya": "Nairobi"}.get(country, "unknown country")


agentgym.register("byo/RayCapitals-v0", agentgym.ToolEnv, verifier="qa", tools=[capital_of],
                  tasks=[{"question": "What is the capital of Peru?", "answer": "Lima"},
                         {"question": "What is the capital of Kenya?", "answer": "Nairobi"}])
'''


def test_a_plugin_env_from_a_file_plays_on_the_hosts_of_both_nodes(cluster, tmp_path):
    """``agentgym serve --ray --import FILE``: the hosts import the file too (AGENTGYM_IMPORT) and play its env."""
    path = tmp_path / "ray_capitals.py"
    path.write_text(PLUGIN)
    with serving("byo/RayCapitals-v0", "--import", str(path), "--ray", cluster.address,
                 "--ray-hosts-per-node", "1") as url:
        clients = [RemoteEnv("byo/RayCapitals-v0", url) for _ in range(4)]
        try:
            for client in clients:
                client.reset(options={"index": 0})
                assert "Lima" in client.step("<capital_of>Peru</capital_of>")[0]
                assert client.step("<answer>Lima</answer>")[1] == 1.0
            nodes = httpx.get(f"{url}/healthz").json()["ray"]["nodes"]
            assert len(nodes) == 2 and all(node["sessions"] >= 1 for node in nodes), nodes  # both nodes played it
        finally:
            for client in clients:
                client.close()


def test_async_rollout_workers_on_both_nodes_and_a_killed_one_loses_only_its_batch(cluster, tmp_path,
                                                                                  smollm2_tokenizer):
    """`--rollout-workers 2 --ray ADDRESS`: a rollout actor on each node plays the groups while the learner trains;
    one is killed (SIGKILL) with a batch in flight: that batch is counted lost and played again by the other, no
    group is trained twice, and the learner finishes its steps."""
    import helpers.slow_toy_env  # noqa: F401 - registers the env here; the actors import it on their nodes
    from helpers.slow_toy_env import SLOW_ID
    from helpers.trainer_fixtures import tiny_model
    from transformers import TrainerCallback

    from agentgym.lm.rollout import TaskSpec
    from agentgym.trainer.grpo import TrainConfig, build_trainer

    config = TrainConfig(env=[SLOW_ID], imports=["helpers.slow_toy_env"], env_kwargs={"delay": 0.3},
                         output_dir=str(tmp_path / "run"), group_size=2, groups_per_step=2, steps=4,
                         max_turn_tokens=6, max_completion_tokens=200, learning_rate=1e-2, save_steps=100,
                         max_staleness=1, rollout_workers=2, ray=cluster.address)
    specs = [TaskSpec(SLOW_ID, task_id=f"toy-{i}") for i in range(8)]
    trainer, rollouts = build_trainer(config, model=tiny_model(smollm2_tokenizer, seed=21),
                                      tokenizer=smollm2_tokenizer, specs=specs)
    killed = {}

    class KillOne(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step != 1:
                return
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                busy = [w for w in rollouts.pipeline.workers if w.busy is not None]
                if busy:
                    killed.update(first=busy[0].busy, where=busy[0].where)
                    os.kill(busy[0].pid, signal.SIGKILL)
                    return
                time.sleep(0.01)

    trainer.add_callback(KillOne())
    try:
        trainer.train()
    finally:
        rollouts.close()
    assert trainer.state.global_step == 4
    assert killed, "no worker had a batch in flight to kill"
    summary = json.loads((tmp_path / "run" / "pipeline.json").read_text())
    assert {w.split("node ")[1].rstrip(")") for w in summary["rollout_workers"]} == set(cluster.nodes.values())
    assert summary["rollout_workers_lost"] == 1 and summary["rollouts_lost"] == 4  # its batch: 2 groups x 2
    trained = summary["trained_groups"]
    assert len(trained) == len(set(trained)) == 8  # 4 steps x 2 groups, none twice
    assert {killed["first"], killed["first"] + 1} <= set(trained), (killed, summary)  # played again, then trained
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sum(r["rollout_workers_lost"] for r in rows) == 1
