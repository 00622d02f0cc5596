"""The environment families and the table of registered ids.

Entry points are strings so that ``import agentgym`` stays light: an env's
heavy dependencies load only when the env is made.
"""

from __future__ import annotations

from agentgym.core.registry import EnvInfo

__all__ = ["ENVS"]

ENVS: tuple[EnvInfo, ...] = (
    EnvInfo(
        id="agentgym/SearchQA-v0",
        entry_point="agentgym.envs.search:SearchQAEnv",
        description="Search-R1 style multi-hop QA: <search> a Wikipedia-style corpus, <answer>; exact-match reward.",
        client_kwargs=("action_format", "max_observation_chars", "max_turns", "reward_metric", "split", "topk"),
    ),
)
