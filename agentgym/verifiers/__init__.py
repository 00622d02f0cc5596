"""Reward functions: pure, fast, no env state. Each returns a ``Score``.

Where a verifier lives (one rule):

- **A pure scoring function lives here**, in ``agentgym/verifiers/<name>.py``: a
  function of the prediction and the task's gold only, ``verify_<name>(prediction,
  gold, ...) -> Score``, with no env, no sandbox and no I/O, so it runs anywhere
  (in process, in ``/v1/verify``, in another framework's reward hook). QA, math,
  WebShop's purchase reward and ALFWorld's game end are of this kind; so is the
  typed outcome such a function takes (``Purchase``, ``GameEnd``: see ``outcome.py``).
- **A sandboxed grader lives next to its env**, in ``agentgym/envs/<family>/grader.py``:
  scoring that must run untrusted code, ``grade_<what>(runner, ...)``, where the
  first argument is the sandbox it runs in (a ``CodeRunner``, SWE-bench's fresh
  ``Workspace``), never the env. PyCode's hidden tests (``envs/code/grader.py``) and
  SWE-bench's FAIL_TO_PASS / PASS_TO_PASS (``envs/swe/grader.py``) are of this kind.
- An env's ``verify(outcome, task)`` only picks the function and its arguments:
  it holds no scoring logic of its own, and it leaves the episode's state as it was.

``VERIFIERS`` maps a name to a callable ``(prediction, gold) -> Score`` with one
signature for all, for callers that pick a verifier by name (the HTTP ``/v1/verify``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from agentgym.errors import ConfigError, VerifierError
from agentgym.verifiers.alfworld import GameEnd, verify_alfworld
from agentgym.verifiers.format import check_tags_format
from agentgym.verifiers.math import extract_boxed, verify_math
from agentgym.verifiers.outcome import Outcome, answer_text
from agentgym.verifiers.qa import (
    cover_exact_match,
    exact_match,
    extract_answer,
    f1_score,
    normalize_answer,
    verify_qa,
)
from agentgym.verifiers.score import Score
from agentgym.verifiers.webshop import Purchase, verify_purchase, verify_webshop

__all__ = [
    "VERIFIERS",
    "GameEnd",
    "Outcome",
    "Purchase",
    "Score",
    "answer_text",
    "check_tags_format",
    "cover_exact_match",
    "exact_match",
    "extract_answer",
    "extract_boxed",
    "f1_score",
    "get_verifier",
    "normalize_answer",
    "verify_alfworld",
    "verify_math",
    "verify_purchase",
    "verify_qa",
    "verify_webshop",
]


def _qa(metric: str) -> Callable[[str | None, Mapping[str, Any]], Score]:
    def verify(prediction: str | None, gold: Mapping[str, Any]) -> Score:
        if "golden_answers" not in gold:
            raise VerifierError("QA verifiers need the task's gold answers: task = {'golden_answers': ['Lima']}; "
                                f"got task keys {sorted(map(str, gold))}.")
        return verify_qa(prediction, gold["golden_answers"], metric=metric)  # type: ignore[arg-type]

    return verify


def _math(prediction: str | None, gold: Mapping[str, Any]) -> Score:
    if "answer" not in gold:
        raise VerifierError("The math verifier needs the task's gold answer: task = {'answer': '12'}; got task keys "
                            f"{sorted(map(str, gold))}.")
    return verify_math(prediction, gold["answer"])


VERIFIERS: dict[str, Callable[[str | None, Mapping[str, Any]], Score]] = {
    "math": _math,
    "qa_cover_em": _qa("cover_em"),
    "qa_em": _qa("em"),
    "qa_f1": _qa("f1"),
    "tags_format": lambda prediction, gold: check_tags_format(prediction or "", turn=bool(gold.get("turn"))),
    "webshop": verify_webshop,
}


def get_verifier(name: str) -> Callable[[str | None, Mapping[str, Any]], Score]:
    """A verifier by name; unknown names get a did-you-mean."""
    if name not in VERIFIERS:
        close = difflib.get_close_matches(name, VERIFIERS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"Unknown verifier {name!r}.{hint} Available: {', '.join(sorted(VERIFIERS))}.")
    return VERIFIERS[name]
