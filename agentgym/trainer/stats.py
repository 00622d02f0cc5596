"""What the rollouts of one optimizer step did: the rollout function fills it, the logging callback reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentgym.lm.rollout import Episode

__all__ = ["RolloutStats"]


@dataclass
class RolloutStats:
    """The step's episodes, the loss masks handed to TRL and the rollout time; the logging callback reads and
    clears it."""

    episodes: list[Episode] = field(default_factory=list)
    #: per episode, 1 where a completion token counts in the loss (the ``env_mask`` TRL got)
    loss_masks: list[list[int]] = field(default_factory=list)
    seconds: float = 0.0
    #: extra groups dynamic sampling played this step (their episodes are in ``episodes`` too)
    resampled_groups: int = 0
    #: counters of the step the trainer adds to its metrics as they are (train --agent's fidelity counts)
    extra: dict[str, float] = field(default_factory=dict)

    def clear(self) -> None:
        self.episodes.clear()
        self.loss_masks.clear()
        self.seconds = 0.0
        self.resampled_groups = 0
        self.extra.clear()

    def summary(self) -> dict[str, float | None]:
        """Means over the step's episodes; ``rollout_errors`` counts the failed ones (an env or grader raised),
        which ``env_reward`` leaves out as TRL's reward does (``None`` when every episode failed).

        ``tool_call_rate`` is the share of episodes with at least one tool call (``tool_calls``: calls per
        episode); ``masked_share`` the share of completion tokens left out of the loss (observations, chat glue
        and failed episodes; only failed episodes' with observation masking off).
        """
        eps = self.episodes
        if not eps:
            return {}
        n = len(eps)
        scored = [e.reward for e in eps if not e.failed]
        completion_tokens = sum(len(m) for m in self.loss_masks)
        return {"success": sum(e.success for e in eps) / n, "turns": sum(e.turns for e in eps) / n,
                "tool_calls": sum(e.tool_calls for e in eps) / n,
                "tool_call_rate": sum(e.tool_calls > 0 for e in eps) / n,
                "format_errors": sum(e.format_errors for e in eps) / n,
                "over_budget": sum(e.over_budget for e in eps) / n,
                "verifier_over_budget": sum(e.verifier_over_budget for e in eps) / n,
                "env_reward": sum(scored) / len(scored) if scored else None,
                "rollout_errors": float(n - len(scored)),
                "tokens_model": float(sum(e.tokens_model for e in eps)),
                "tokens_masked": float(sum(e.tokens_masked for e in eps)),
                "masked_share": (1.0 - sum(map(sum, self.loss_masks)) / completion_tokens
                                 if completion_tokens else None),
                "rollout_time_s": self.seconds, "resampled_groups": float(self.resampled_groups),
                **_agent_counts(eps), **self.extra}


def _agent_counts(episodes: list[Episode]) -> dict[str, float]:
    """``train --agent``'s counts (its episodes carry ``rows``): rollouts whose agent failed after its retries
    (left out, never reward 0) and the retries played, model calls, branched calls and their re-encoded tokens."""
    if not episodes or not all(hasattr(e, "rows") for e in episodes):
        return {}
    return {"agent_errors": float(sum(e.failed for e in episodes)),
            "agent_retries": float(sum(getattr(e, "retries", 0) for e in episodes)),
            "agent_calls": sum(getattr(e, "calls", 0) for e in episodes) / len(episodes),
            "branches": float(sum(getattr(e, "branches", 0) for e in episodes)),
            "reencoded_tokens": float(sum(getattr(e, "reencoded_tokens", 0) for e in episodes))}
