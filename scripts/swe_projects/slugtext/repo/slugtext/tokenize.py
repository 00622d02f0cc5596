"""Tokens (words, numbers, symbols), sentences and n-grams."""

from __future__ import annotations

import re
from collections.abc import Sequence

TOKEN_RE = re.compile(r"""
    (?P<number>(?<![\w.])-?\d+(?:[.,]\d+)*)   # 42, -3.5, 1,000,000
  | (?P<word>[^\W_]+(?:['’][^\W_]+)*)         # words, with inner apostrophes: don't, l’homme
  | (?P<symbol>[^\w\s])                        # any other visible character, on its own
""", re.VERBOSE)
ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e", "no", "fig"})
_BOUNDARY_RE = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def tokenize(text: str, *, lowercase: bool = False) -> list[str]:
    """Words, numbers and single symbols of ``text``, in order; whitespace is dropped.

    >>> tokenize("Don't pay -3.50 for it!")
    ["Don't", 'pay', '-3.50', 'for', 'it', '!']
    """
    tokens = [match.group() for match in TOKEN_RE.finditer(text)]
    return [token.lower() for token in tokens] if lowercase else tokens


def words(text: str) -> list[str]:
    """The word and number tokens of ``text`` (no symbols)."""
    return [match.group() for match in TOKEN_RE.finditer(text) if match.lastgroup != "symbol"]


def sentences(text: str) -> list[str]:
    """``text`` split after ``.``, ``!`` or ``?`` when a capital letter or digit follows.

    A period after a known abbreviation (``Dr.``, ``e.g.``) does not end a sentence.
    """
    found, start = [], 0
    for match in _BOUNDARY_RE.finditer(text):
        before = text[start:match.start()].split()
        if match.group().startswith(".") and before and before[-1].lower().lstrip("(\"'") in ABBREVIATIONS:
            continue
        found.append(text[start:match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    return found + [tail] if tail else found


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens: ``ngrams(['a', 'b', 'c'], 2) == [('a', 'b'), ('b', 'c')]``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
