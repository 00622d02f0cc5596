"""QA verifiers: gold, near-miss, malformed and adversarial cases; doctests."""

import doctest

import pytest

import agentgym.verifiers.format
import agentgym.verifiers.qa
from agentgym.errors import ConfigError, VerifierError
from agentgym.verifiers import (
    cover_exact_match,
    exact_match,
    extract_answer,
    f1_score,
    get_verifier,
    normalize_answer,
    verify_qa,
)


@pytest.mark.parametrize("module", [agentgym.verifiers.qa, agentgym.verifiers.format])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("pred, golds", [
    ("Lima", ["Lima"]), ("the Lima", "Lima"), ("  LIMA. ", ["Lima"]), ("Ciudad de los Reyes", ["Lima", "Ciudad de los Reyes"]),
    ("United States", ["United States of America", "United States", "USA"]),
])
def test_gold_answers_score_one(pred, golds):
    score = verify_qa(pred, golds)
    assert score.reward == 1.0 and score.correct and score.details["f1"] == 1.0 and score.details["cover_em"] == 1.0


def test_near_miss():
    score = verify_qa("Paris, France", ["Paris"])
    assert score.reward == 0.0 and not score.correct
    assert score.details["cover_em"] == 1.0 and score.details["f1"] == pytest.approx(2 / 3)
    assert exact_match("Lim", "Lima") == 0.0 and f1_score("Lim", "Lima") == 0.0
    assert f1_score("Peruvian nuevo sol", ["sol"]) == pytest.approx(0.5)


@pytest.mark.parametrize("pred", [None, "", "   ", "\n"])
def test_empty_answer_scores_zero(pred):
    score = verify_qa(pred, ["Lima"])
    assert score.reward == 0.0 and not score.correct and score.details["reason"] == "empty answer"


def test_listing_candidates_is_not_rewarded():
    """Cover-EM would credit a shotgun answer; the default reward (EM) does not."""
    shotgun = "Paris or London or Berlin or Lima or Quito"
    assert cover_exact_match(shotgun, ["Lima"]) == 1.0
    assert verify_qa(shotgun, ["Lima"]).reward == 0.0
    assert verify_qa(shotgun, ["Lima"], metric="f1").reward < 0.5


def test_punctuation_only_gold_cannot_be_covered_by_anything():
    assert cover_exact_match("anything", ["!!!"]) == 0.0


def test_several_answer_tags_take_the_last():
    assert extract_answer("<answer>Quito</answer> wait <answer>Lima</answer>") == "Lima"
    assert extract_answer("<answer>\nLima\n</answer>") == "Lima"
    assert extract_answer("<answer>Lima") is None and extract_answer("Lima</answer>") is None
    assert extract_answer("<ANSWER>Lima</ANSWER>") is None  # tag names are case-sensitive, as Search-R1's


def test_unicode():
    assert normalize_answer("１２３") == "123" and exact_match("１２３", "123") == 1.0   # NFKC: full-width digits
    assert exact_match("ﬁnland", "Finland") == 1.0                                       # NFKC: ligature
    assert exact_match("São Tomé", "sao tome") == 0.0                                  # accents are kept (SQuAD)
    assert exact_match("São Tomé", ["São Tomé and Príncipe", "São Tomé"]) == 1.0
    assert exact_match("Zürich", "Zurich") == 0.0 and exact_match("ZÜRICH", "zürich") == 1.0


def test_number_formatting():
    assert exact_match("1,234,567", ["1234567"]) == 1.0        # punctuation removal joins the digits
    assert exact_match("3.0", "3") == 0.0                      # "30" != "3": list such variants as aliases
    assert exact_match("1 234 567", "1234567") == 0.0          # space-grouped digits are different tokens


def test_yes_no_needs_exact_match_for_f1():
    assert f1_score("yes it is", ["yes"]) == 0.0 and f1_score("yes", ["yes"]) == 1.0


@pytest.mark.parametrize("golds", [[], "", [" "], [3], None, 5])
def test_bad_gold_is_a_data_error(golds):
    with pytest.raises(VerifierError, match="golden_answers"):
        verify_qa("x", golds)


def test_metric_choice_and_unknown_metric():
    assert verify_qa("Lima, Peru", ["Lima"], metric="cover_em").reward == 1.0
    with pytest.raises(VerifierError, match="metric"):
        verify_qa("x", ["x"], metric="bleu")


def test_registry_by_name():
    assert get_verifier("qa_em")("the Lima", {"golden_answers": ["Lima"]}).correct
    assert get_verifier("tags_format")("<answer>x</answer>", {}).reward == 1.0
    with pytest.raises(ConfigError, match="Did you mean 'qa_em'"):
        get_verifier("qa_emm")
    with pytest.raises(VerifierError, match="golden_answers"):
        get_verifier("qa_f1")("x", {"answer": "x"})
