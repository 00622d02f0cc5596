"""Evaluation: policies, the episode runner and summaries."""

from agentgym.eval.policies import EmptyPolicy, OraclePolicy, Policy, RandomPolicy, make_policy
from agentgym.eval.runner import EpisodeResult, evaluate, run_episode, summarize

__all__ = ["EmptyPolicy", "EpisodeResult", "OraclePolicy", "Policy", "RandomPolicy", "evaluate",
           "make_policy", "run_episode", "summarize"]
