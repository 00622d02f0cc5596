"""Typed episode outcomes: how an episode ended, in the form its verifier scores.

An env hands ``verify`` what the episode ended with. Where episodes end with an
answer (SearchQA, MathTool, PyCode) that is the answer's text, a ``str``. Where
they end with an action in the world it is a small frozen dataclass of this
kind: WebShop's ``Purchase`` (``verifiers/webshop.py``), ALFWorld's ``GameEnd``
(``verifiers/alfworld.py``), SWE-bench's ``Patch`` (``envs/swe/grader.py``).
On the wire (``info["answer"]``, the HTTP protocol, ``/v1/verify``) an outcome
travels as its text, ``as_answer()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Outcome", "answer_text"]


class Outcome(ABC):
    """How an episode ended by an action in the world; subclasses are frozen dataclasses."""

    @abstractmethod
    def as_answer(self) -> str:
        """The outcome as text: ``info["answer"]``, and what the by-name verifier reads back over HTTP."""


def answer_text(outcome: Outcome | str | None) -> Any:
    """The JSON-serialisable form of an outcome: an ``Outcome``'s text, anything else (an answer) unchanged.

    >>> answer_text("Lima"), answer_text(None)
    ('Lima', None)
    """
    return outcome.as_answer() if isinstance(outcome, Outcome) else outcome
