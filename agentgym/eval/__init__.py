"""Evaluation: policies, the episode runner and summaries."""

from agentgym.policies import EmptyPolicy, OraclePolicy, Policy, RandomPolicy, make_policy
from agentgym.eval.episode import EpisodeResult, run_episode
from agentgym.eval.runner import evaluate
from agentgym.eval.stats import summarize

__all__ = ["EmptyPolicy", "EpisodeResult", "OraclePolicy", "Policy", "RandomPolicy", "evaluate",
           "make_policy", "run_episode", "summarize"]
