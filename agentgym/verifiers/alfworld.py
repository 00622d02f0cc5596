"""ALFWorld's reward: 1 when the game ended with its goal holding, else 0 (Shridhar et al., ICLR 2021).

The game's engine decides whether the goal holds; this scores how the game ended,
``GameEnd``, which the env reads from the engine, never from the agent's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentgym.verifiers.outcome import Outcome
from agentgym.verifiers.score import Score

__all__ = ["GameEnd", "verify_alfworld"]


@dataclass(frozen=True)
class GameEnd(Outcome):
    """How a game ended: whether its goal held, after how many moves."""

    won: bool
    moves: int = 0

    def as_answer(self) -> str:
        return "won" if self.won else "lost"


def verify_alfworld(outcome: GameEnd | None, gold: Mapping[str, Any]) -> Score:
    """1 for a won game; ``gold`` is the task's (``task_type``). No game end (None) scores 0.

    >>> verify_alfworld(GameEnd(won=True, moves=7), {"task_type": "pick_and_place_simple"}).as_dict()
    {'reward': 1.0, 'correct': True, 'details': {'won': True, 'moves': 7, 'task_type': 'pick_and_place_simple'}}
    >>> verify_alfworld(None, {"task_type": "look_at_obj_in_light"}).reward
    0.0
    """
    end = outcome if isinstance(outcome, GameEnd) else GameEnd(won=False)
    won = end.won is True
    return Score(1.0 if won else 0.0, won, {"won": won, "moves": end.moves, "task_type": gold.get("task_type")})
