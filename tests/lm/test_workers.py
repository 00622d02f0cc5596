"""The rollout workers (``agentgym.lm.workers``): the one place a model's episodes are played, for eval, train and
train --agent alike; their env pool; the built-in model's worker and the agent's."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import torch
from helpers.scripted_generator import ScriptedGenerator

import agentgym
from agentgym.gateway.agents import AgentSpec, load_agent
from agentgym.gateway.engine import Engine
from agentgym.gateway.server import GatewayServer
from agentgym.gateway.service import Gateway
from agentgym.lm.rollout import ChatGlue, TaskSpec
from agentgym.lm.workers import AgentWorker, EnvPool, ModelWorker

PACKAGE = Path(agentgym.__file__).parent
#: the functions that play a model's episodes: called from the rollout workers' module only
DRIVERS = {"play_episodes", "run_agent"}


def _calls(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            if name in DRIVERS:
                names.add(name)
    return names


def test_only_the_rollout_workers_play_a_models_episodes():
    """eval (a local model, an agent), train (sync, async, Ray), train --agent and the SFT replay all play through
    ``agentgym.lm.workers``: no other module of the package calls the episode drivers."""
    callers = {str(p.relative_to(PACKAGE)): found for p in sorted(PACKAGE.rglob("*.py")) if (found := _calls(p))}
    assert callers == {"lm/workers.py": DRIVERS}


def test_the_check_finds_a_direct_call(tmp_path):
    """The scan above can fail: a module that calls a driver directly is found."""
    module = tmp_path / "m.py"
    module.write_text("from agentgym.lm.rollout import play_episodes\n\ndef f(a):\n    return play_episodes(*a)\n")
    assert _calls(module) == {"play_episodes"}


class _Env:
    def __init__(self, key, log):
        self.key, self.log, self.closed = key, log, False

    def close(self):
        self.closed = True
        self.log.append(self.key)
        if self.key == "broken":
            raise OSError("the sandbox is gone")


def test_the_env_pool_reuses_drops_and_closes(caplog):
    made, closed = [], []

    def make(key):
        made.append(key)
        return _Env(key, closed)

    pool = EnvPool(make)
    first = pool.take(["a", "a", "b"])
    assert made == ["a", "a", "b"] and first[0] is not first[1]
    again = pool.take(["a", "b", "b"])  # the k-th use of a key gets its k-th env; one more b is made
    assert again[0] is first[0] and again[1] is first[2] and made == ["a", "a", "b", "b"]
    pool.drop("a", first[0])  # after a failure: closed, and the next use makes a fresh one
    assert first[0].closed and pool.take(["a", "a"])[1] is not first[0] and made[-1] == "a"
    broken = pool.take(["broken"])[0]
    with caplog.at_level(logging.WARNING):
        pool.close()  # a failing close is logged, never raised, and the others still close
    assert broken.closed and all(env.closed for env in first) and pool.pools == {}
    assert "the sandbox is gone" in caplog.text


def test_the_model_worker_plays_at_its_thread_count_and_restores_the_callers(smollm2_tokenizer):
    """The trainer's synchronous loop plays at ``rollout_threads`` and trains at ``threads``: the worker sets its
    count for the play only."""
    seen = []

    class Counting(ScriptedGenerator):
        def generate(self, contexts, **kwargs):
            seen.append(torch.get_num_threads())
            return super().generate(contexts, **kwargs)

    env = agentgym.make("agentgym/MathTool-v0", action_format="tags")
    task = env.unwrapped.tasks.tasks("test")[0]
    glue = ChatGlue(smollm2_tokenizer, style="chat")
    worker = ModelWorker(glue, max_turn_tokens=32, max_completion_tokens=256, threads=2)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        [episode] = worker.play([env], [TaskSpec("agentgym/MathTool-v0", task_id=task.id)],
                                Counting(smollm2_tokenizer, [f"<answer>{task.gold['answer']}</answer>"]), seed=0)
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
        env.close()
    assert seen == [2] and after == 1
    assert episode.reward == 1.0 and episode.success and sum(episode.mask) == len(episode.model_turns[0])


def test_the_agent_worker_plays_token_episodes_and_retries_only_the_agents_failures(smollm2_tokenizer):
    """Each rollout an episode of the gateway's recorded tokens; an agent that failed is played again (``flaky``'s
    rollout 1), then its record is forgotten by the gateway."""
    generator = ScriptedGenerator(smollm2_tokenizer, ["thinking"] * 8)
    gateway = Gateway(model_name="scripted", engine=Engine(generator, gather_s=0.001))
    server = GatewayServer(gateway).start()
    envs = [agentgym.make("agentgym/MathTool-v0", action_format="dict") for _ in range(3)]
    try:
        ids = [t.id for t in envs[0].unwrapped.tasks.tasks("test")[:3]]
        specs = [TaskSpec("agentgym/MathTool-v0", task_id=i) for i in ids]
        spec = AgentSpec(target="helpers.train_agents:flaky")
        worker = AgentWorker(spec, load_agent(spec.target), gateway=gateway, base_url=server.url,
                             has_mcp=server.has_mcp)
        episodes = worker.play(envs, specs, seed=0, limit=512, env_kwargs={}, retries=1, tag="s0-")
        assert [e.retries for e in episodes] == [0, 1, 0]
        assert [e.reward for e in episodes] == [1.0, 0.0, 1.0]  # the even rollouts answer right
        assert [e.error for e in episodes] == [None, None, None]
        for episode in episodes:
            assert episode.calls == 1 and len(episode.rows) == 1
            assert episode.completion_ids and set(episode.mask) == {1}
            assert episode.prompt_ids == episode.rows[0].recorded[:len(episode.prompt_ids)]
        assert gateway.open_rollouts() == 0 and not gateway.rollouts  # closed and forgotten
    finally:
        for env in envs:
            env.close()
        server.stop()
        gateway.close()


def test_an_agent_failing_every_time_ends_as_a_failed_episode(smollm2_tokenizer):
    """Past its retries the agent's failure is its episode's error (never a reward-0 sample); the others play on."""
    generator = ScriptedGenerator(smollm2_tokenizer, ["thinking"] * 8)
    gateway = Gateway(model_name="scripted", engine=Engine(generator, gather_s=0.001))
    server = GatewayServer(gateway).start()
    envs = [agentgym.make("agentgym/MathTool-v0", action_format="dict") for _ in range(3)]
    try:
        ids = [t.id for t in envs[0].unwrapped.tasks.tasks("test")[:3]]
        spec = AgentSpec(target="helpers.train_agents:broken_for_one")
        worker = AgentWorker(spec, load_agent(spec.target), gateway=gateway, base_url=server.url,
                             has_mcp=server.has_mcp)
        episodes = worker.play(envs, [TaskSpec("agentgym/MathTool-v0", task_id=i) for i in ids], seed=0,
                               limit=512, env_kwargs={}, retries=1, tag="s0-")
        assert episodes[0].failed and "the agent's own bug" in episodes[0].error and episodes[0].retries == 1
        assert [e.failed for e in episodes] == [True, False, False]
        assert [e.reward for e in episodes[1:]] == [0.0, 1.0]  # rollout 1 answers wrong, rollout 2 right
    finally:
        for env in envs:
            env.close()
        server.stop()
        gateway.close()
