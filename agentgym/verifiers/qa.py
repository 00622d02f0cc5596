"""Question-answering verifiers: exact match, cover exact match and token F1.

Normalisation is SQuAD's (as Search-R1 and FlashRAG use it): lower-case, drop
punctuation, drop the articles a/an/the, collapse whitespace. On top of that,
text is NFKC-normalised first, so full-width digits and ligatures compare equal
to their plain forms. Accents are kept ("Zürich" != "Zurich"), as in SQuAD:
stripping them would merge distinct names; datasets list such variants as aliases.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from agentgym.errors import VerifierError
from agentgym.verifiers.budget import run_budgeted
from agentgym.verifiers.score import Score

__all__ = ["cover_exact_match", "exact_match", "extract_answer", "f1_score", "normalize_answer", "verify_qa"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_YES_NO = {"yes", "no", "noanswer"}
_MAX_ANSWER_CHARS = 100_000
_MAX_GOLDS = 1_000
_MAX_GOLD_CHARS = 10_000


def normalize_answer(text: str) -> str:
    """SQuAD answer normalisation, after Unicode NFKC.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    >>> normalize_answer("１,２３４")
    '1234'
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golden_answers: str | Sequence[str]) -> list[str]:
    if isinstance(golden_answers, str):
        golds = [golden_answers]
    elif isinstance(golden_answers, Sequence):
        golds = list(golden_answers)
    else:
        golds = []
    if not golds or not all(isinstance(g, str) and g.strip() for g in golds):
        raise VerifierError("golden_answers must be a non-empty string or a list of non-empty strings, "
                            f"got {repr(golden_answers)[:200]}; fix the task data.")
    return golds


def exact_match(prediction: str, golden_answers: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer.

    >>> exact_match("the Lima", ["Lima", "Ciudad de los Reyes"])
    1.0
    >>> exact_match("Lima, Peru", "Lima")
    0.0
    >>> exact_match("?!", "...")  # nothing is left of either: no match
    0.0
    """
    pred = normalize_answer(prediction)
    return float(bool(pred) and any(pred == normalize_answer(g) for g in _golds(golden_answers)))


def cover_exact_match(prediction: str, golden_answers: str | Sequence[str]) -> float:
    """1.0 if any normalised gold answer is a substring of the normalised prediction.

    Search-R1's "subem". Gameable by listing many candidates, which is why the
    env's reward is exact match and this is only reported.

    >>> cover_exact_match("Lima or Quito", ["Lima"])
    1.0
    """
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) and normalize_answer(g) in pred for g in _golds(golden_answers)))


def f1_score(prediction: str, golden_answers: str | Sequence[str]) -> float:
    """SQuAD token F1, max over gold answers; yes/no/noanswer golds need an exact match.

    >>> f1_score("Lima, Peru", "Lima")
    0.6666666666666666
    """
    pred_tokens = normalize_answer(prediction).split()
    best = 0.0
    for gold in _golds(golden_answers):
        gold_norm = normalize_answer(gold)
        if gold_norm in _YES_NO or " ".join(pred_tokens) in _YES_NO:
            best = max(best, float(gold_norm == " ".join(pred_tokens)))
            continue
        common = Counter(pred_tokens) & Counter(gold_norm.split())
        overlap = sum(common.values())
        if overlap:
            precision, recall = overlap / len(pred_tokens), overlap / len(gold_norm.split())
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def extract_answer(text: str, *, tag: str = "answer") -> str | None:
    """The body of the last complete ``<tag>...</tag>`` in ``text``, stripped, or None.

    The last one, as Search-R1's ``extract_solution`` takes it (it also skips a
    lone match because its prompt holds an example answer; ours does not).

    >>> extract_answer("<answer>Quito</answer> no, <answer> Lima </answer>")
    'Lima'
    >>> extract_answer("<answer>unclosed") is None
    True
    """
    matches = re.findall(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", text, re.DOTALL)
    return matches[-1].strip() if matches else None


def verify_qa(prediction: str | None, golden_answers: str | Sequence[str], *,
              metric: Literal["em", "f1", "cover_em"] = "em", budget_s: float | None = None) -> Score:
    """Score a final answer: reward is ``metric``, ``correct`` is exact match.

    Runs under a time budget (``budget_s``; see ``agentgym.verifiers.budget``).
    Answers over 100,000 characters are refused up front; more than 1,000 gold
    answers or one over 10,000 characters is a ``VerifierError``.

    >>> verify_qa("the Lima", ["Lima"]).reward
    1.0
    >>> verify_qa("Lima or Quito", ["Lima"]).as_dict()["details"]["cover_em"]
    1.0
    >>> verify_qa("Lima or Quito", ["Lima"]).reward
    0.0
    """
    golds = _golds(golden_answers)
    if len(golds) > _MAX_GOLDS or any(len(g) > _MAX_GOLD_CHARS for g in golds):
        raise VerifierError(f"at most {_MAX_GOLDS} gold answers of at most {_MAX_GOLD_CHARS} characters each; "
                            "fix the task data.")
    if metric not in ("em", "f1", "cover_em"):
        raise VerifierError(f"metric must be 'em', 'f1' or 'cover_em', got {metric!r}.")
    if prediction is not None and not isinstance(prediction, str):
        raise VerifierError(f"prediction must be a string or None, got {type(prediction).__name__}.")
    if prediction is not None and len(prediction) > _MAX_ANSWER_CHARS:
        return _empty(prediction[:200] + "...", f"answer longer than {_MAX_ANSWER_CHARS} characters")
    return run_budgeted(_verify_qa, prediction, golds, metric, budget_s=budget_s, verifier=f"qa_{metric}")


def _empty(prediction: str | None, reason: str) -> Score:
    return Score(0.0, False, {"em": 0.0, "f1": 0.0, "cover_em": 0.0, "prediction": prediction,
                              "normalized_prediction": "", "reason": reason})


def _verify_qa(prediction: str | None, golds: list[str], metric: str) -> Score:
    if prediction is None or not prediction.strip():
        return _empty(prediction, "empty answer")
    normalized = normalize_answer(prediction)
    if not normalized:
        return _empty(prediction, "nothing is left of the answer after normalisation")
    scores = {"em": exact_match(prediction, golds), "f1": f1_score(prediction, golds),
              "cover_em": cover_exact_match(prediction, golds)}
    details = {**scores, "prediction": prediction, "normalized_prediction": normalized}
    return Score(scores[metric], scores["em"] == 1.0, details)
