"""Real eval results files for the SFT data and trainer tests: the oracle played by the eval's own runner."""

from __future__ import annotations

from pathlib import Path

from agentgym.eval.plan import plan_episodes
from agentgym.eval.results import load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry
from agentgym.policies import make_policy


def oracle_results(path: Path, env_id: str, *, episodes: int = 3, env_kwargs: dict | None = None) -> list[dict]:
    """Play ``episodes`` oracle episodes of ``env_id`` (train split) into the results file ``path``; its records."""
    plan = plan_episodes([SuiteEntry(env_id, split="train", episodes=episodes, env_kwargs=env_kwargs or {})], seed=0)
    run_plan(plan, lambda: make_policy("oracle", seed=0), results_path=path)
    return load_results(path)
