"""ALFWorld's reward: a won game scores 1, anything else 0; the text of an answer is never a game's end."""

from __future__ import annotations

import doctest
import json

import pytest

import agentgym.verifiers.alfworld
import agentgym.verifiers.outcome
import agentgym.verifiers.webshop
from agentgym.verifiers import GameEnd, Outcome, answer_text, verify_alfworld

GOLD = {"task_type": "pick_and_place_simple"}


def test_a_won_game_scores_one_with_its_details():
    score = verify_alfworld(GameEnd(won=True, moves=9), GOLD)
    assert score.reward == 1.0 and score.correct
    assert score.details == {"won": True, "moves": 9, "task_type": "pick_and_place_simple"}


def test_a_game_that_is_not_won_scores_zero():
    score = verify_alfworld(GameEnd(won=False, moves=50), GOLD)
    assert score.reward == 0.0 and not score.correct and score.details["moves"] == 50


@pytest.mark.parametrize("outcome", [None, "won", {"won": True}, GameEnd(won="yes")])  # type: ignore[arg-type]
def test_what_is_not_a_won_game_end_scores_zero(outcome):
    """Text or a record claiming a win is not the engine's verdict; a truthy non-bool is not a win either."""
    score = verify_alfworld(outcome, GOLD)
    assert score.reward == 0.0 and not score.correct and score.details["won"] is False


def test_a_game_end_is_an_outcome_with_a_wire_text():
    assert isinstance(GameEnd(won=True), Outcome)
    assert answer_text(GameEnd(won=True)) == "won" and answer_text(GameEnd(won=False)) == "lost"
    assert json.dumps(answer_text(GameEnd(won=True))) == '"won"'
    with pytest.raises(AttributeError):
        GameEnd(won=True).won = False  # frozen


@pytest.mark.parametrize("module", [agentgym.verifiers.alfworld, agentgym.verifiers.outcome,
                                    agentgym.verifiers.webshop])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
