"""Question-answering verifiers: exact match, cover exact match and token F1.

Normalisation is SQuAD's (as Search-R1 and FlashRAG use it): lower-case, drop
punctuation, drop the articles a/an/the, collapse whitespace. On top of that,
text is NFKC-normalised first, so full-width digits and ligatures compare equal
to their plain forms. Accents are kept ("Zürich" != "Zurich"), as in SQuAD:
stripping them would merge distinct names; datasets list such variants as aliases.

``verify_qa`` scores in the calling process when the answer and the gold
answers are small (at most 8,000 characters each side once normalised, bounded
before normalising: ``_normalized_bound``): every step is then linear in those
lengths but cover-EM's substring tests, whose cost (at most the product of the
lengths) is bounded before they run. Larger inputs go to a verifier worker under
the time budget, as they always did; the verdict is the same either way (the same
``_scored`` runs in both places).
"""

from __future__ import annotations

import functools
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
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")  # faster than str.translate, same deletions
_YES_NO = {"yes", "no", "noanswer"}
_MAX_ANSWER_CHARS = 100_000
_MAX_GOLDS = 1_000
_MAX_GOLD_CHARS = 10_000
# In process within these (see _GoldSet and verify_qa): characters of normalised text at most, of the answer and of
# all gold answers (a bound: _normalized_bound), gold answers, and the character pairs cover-EM's substring tests
# may compare (~2.5 ns a pair at worst: about 1 ms at the bound).
_IN_PROCESS_CHARS = 8_000
_IN_PROCESS_GOLDS = 64
_IN_PROCESS_PAIRS = 500_000
# NFKC maps a character to at most 18 (U+FDFA), lower-casing one to at most 2 (U+0130).
_EXPANSION = 36
# Gold answers this short (a task's, all together) are checked and normalised once: task data, the same every
# episode (at most 1,024 tasks' and 2,048 answers' kept).
_CACHED_GOLD_CHARS = 256
_ARTICLE_WORDS = frozenset({"a", "an", "the"})
_METRICS = ("em", "f1", "cover_em")


def normalize_answer(text: str) -> str:
    """SQuAD answer normalisation, after Unicode NFKC.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    >>> normalize_answer("１,２３４")
    '1234'
    """
    if text.isascii() and text.isalnum():  # one plain word (the usual short answer): the steps below, shortened
        text = text.lower()
        return "" if text in _ARTICLE_WORDS else text
    text = unicodedata.normalize("NFKC", text).lower()
    text = _PUNCTUATION.sub("", text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golden_answers: str | Sequence[str]) -> list[str]:
    if isinstance(golden_answers, str):
        golds = [golden_answers]
    elif isinstance(golden_answers, (list, tuple, Sequence)):  # list and tuple first: the ABC's check is slow
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

    Scores in process when the answer and the gold answers are small (up to
    8,000 characters of ASCII each side, fewer of other text), else in a verifier
    worker under a time budget (``budget_s``; see ``agentgym.verifiers.budget``):
    the same verdict either way.
    Answers over 100,000 characters are refused up front; more than 1,000 gold
    answers or one over 10,000 characters is a ``VerifierError``.

    >>> verify_qa("the Lima", ["Lima"]).reward
    1.0
    >>> verify_qa("Lima or Quito", ["Lima"]).as_dict()["details"]["cover_em"]
    1.0
    >>> verify_qa("Lima or Quito", ["Lima"]).reward
    0.0
    """
    gold_set = _gold_set(golden_answers)
    if metric not in _METRICS:
        raise VerifierError(f"metric must be 'em', 'f1' or 'cover_em', got {metric!r}.")
    if prediction is not None and not isinstance(prediction, str):
        raise VerifierError(f"prediction must be a string or None, got {type(prediction).__name__}.")
    if prediction is not None and len(prediction) > _MAX_ANSWER_CHARS:
        return _empty(prediction[:200] + "...", f"answer longer than {_MAX_ANSWER_CHARS} characters")
    if prediction is None or not prediction.strip():
        return _empty(prediction, "empty answer")
    if gold_set.forms is not None and _normalized_bound(prediction) <= _IN_PROCESS_CHARS:
        normalized = normalize_answer(prediction)
        if len(normalized) * gold_set.chars <= _IN_PROCESS_PAIRS:  # what cover-EM's substring tests cost at most
            return _scored(prediction, normalized, gold_set.forms, metric)
    return run_budgeted(_verify_qa, prediction, gold_set.golds, metric, budget_s=budget_s, verifier=f"qa_{metric}")


def _empty(prediction: str | None, reason: str) -> Score:
    return Score(0.0, False, {"em": 0.0, "f1": 0.0, "cover_em": 0.0, "prediction": prediction,
                              "normalized_prediction": "", "reason": reason})


def _verify_qa(prediction: str | None, golds: list[str], metric: str) -> Score:
    """``verify_qa``'s verdict, as a verifier worker computes it (for inputs past the in-process bounds)."""
    if prediction is None or not prediction.strip():
        return _empty(prediction, "empty answer")
    return _scored(prediction, normalize_answer(prediction), [_gold_form(g) for g in golds], metric)


def _scored(prediction: str, normalized: str, golds: list[_GoldForm], metric: str) -> Score:
    """``exact_match``'s, ``f1_score``'s and ``cover_exact_match``'s values in one pass over normalised gold
    answers: the same comparisons, and F1's arithmetic in its order (the same floats). Linear in the lengths but
    for cover-EM's substring tests, which cost at most the product of the lengths."""
    if not normalized:
        return _empty(prediction, "nothing is left of the answer after normalisation")
    pred_tokens = normalized.split()
    pred_set = set(pred_tokens)
    pred_counts: Counter[str] | None = None  # counted when a gold answer shares a token
    pred_yes_no = normalized in _YES_NO
    em = cover_em = f1 = 0.0
    for gold in golds:
        text = gold.text
        if text == normalized:
            em = 1.0
        if text and text in normalized:
            cover_em = 1.0
        if pred_yes_no or text in _YES_NO:
            f1 = max(f1, float(text == normalized))
            continue
        if gold.counts.keys().isdisjoint(pred_set):  # no overlap: F1 0 (the usual wrong answer)
            continue
        if pred_counts is None:
            pred_counts = Counter(pred_tokens)
        # the size of Counter(pred) & Counter(gold), walking the gold's tokens: linear in the gold
        overlap = sum(min(count, pred_counts[token]) for token, count in gold.counts.items() if token in pred_counts)
        if overlap:
            precision, recall = overlap / len(pred_tokens), overlap / gold.tokens
            f1 = max(f1, 2 * precision * recall / (precision + recall))
    details = {"em": em, "f1": f1, "cover_em": cover_em, "prediction": prediction,
               "normalized_prediction": normalized}
    return Score(details[metric], em == 1.0, details)


class _GoldForm:
    """A gold answer normalised, with its token counts."""

    __slots__ = ("counts", "text", "tokens")

    def __init__(self, gold: str) -> None:
        self.text = normalize_answer(gold)
        split = self.text.split()
        self.counts, self.tokens = Counter(split), len(split)


_cached_gold_form = functools.lru_cache(maxsize=2048)(_GoldForm)


def _gold_form(gold: str) -> _GoldForm:
    return _cached_gold_form(gold) if len(gold) <= _CACHED_GOLD_CHARS else _GoldForm(gold)


class _GoldSet:
    """A task's gold answers, checked (``VerifierError`` for unusable ones); ``forms``: their normalised forms, or
    None where they are too large to score in process (normalising them could cost more than a worker)."""

    __slots__ = ("chars", "forms", "golds")

    def __init__(self, golden_answers: str | Sequence[str]) -> None:
        golds = _golds(golden_answers)
        if len(golds) > _MAX_GOLDS or max(map(len, golds)) > _MAX_GOLD_CHARS:
            raise VerifierError(f"at most {_MAX_GOLDS} gold answers of at most {_MAX_GOLD_CHARS} characters each; "
                                "fix the task data.")
        self.golds = golds
        small = len(golds) <= _IN_PROCESS_GOLDS and sum(map(_normalized_bound, golds)) <= _IN_PROCESS_CHARS
        self.forms = [_gold_form(g) for g in golds] if small else None
        self.chars = sum(len(form.text) for form in self.forms) if self.forms is not None else 0


_cached_gold_set = functools.lru_cache(maxsize=1024)(_GoldSet)


def _gold_set(golden_answers: str | Sequence[str]) -> _GoldSet:
    """``_GoldSet(golden_answers)``, kept for short lists of strings (a task's, the same every episode)."""
    if isinstance(golden_answers, (str, list, tuple)):
        try:
            key = (golden_answers,) if isinstance(golden_answers, str) else tuple(golden_answers)
            if sum(map(len, key)) <= _CACHED_GOLD_CHARS:
                return _cached_gold_set(key)
        except (TypeError, VerifierError):  # not strings, or unusable: said in the task's own terms below
            pass
    return _GoldSet(golden_answers)


def _normalized_bound(text: str) -> int:
    """An upper bound on the length of ``normalize_answer(text)`` and of each text it makes on the way."""
    return len(text) if text.isascii() else _EXPANSION * len(text)
