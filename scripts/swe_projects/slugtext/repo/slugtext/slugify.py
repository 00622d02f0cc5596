"""URL slugs: ``'Hello, World!'`` -> ``'hello-world'``."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Iterable

from slugtext.normalize import to_ascii

WORD_RE = re.compile(r"[^\W_]+")  # runs of letters and digits, in any script
APOSTROPHES = ("'", "’")


def slugify(text: str, *, separator: str = "-", max_length: int = 0, lowercase: bool = True,
            allow_unicode: bool = False, stopwords: Iterable[str] = ()) -> str:
    """The words of ``text`` joined by ``separator``.

    Accented letters are transliterated to ASCII unless ``allow_unicode``;
    apostrophes are dropped (``don't`` -> ``dont``); words in ``stopwords`` are
    left out, whatever their letter case; a ``max_length`` above 0 keeps as many
    whole words as fit (a first word that is too long is cut).

    >>> slugify("Crème Brûlée: a recipe!")
    'creme-brulee-a-recipe'
    """
    if not separator or WORD_RE.search(separator):
        raise ValueError(f"the separator must be non-empty punctuation, not {separator!r}")
    for mark in APOSTROPHES:
        text = text.replace(mark, "")
    text = unicodedata.normalize("NFKC", text) if allow_unicode else to_ascii(text)
    found = WORD_RE.findall(text)
    if stopwords:
        stop = {word.lower() for word in stopwords}
        found = [word for word in found if word.lower() not in stop]
    if lowercase:
        found = [word.lower() for word in found]
    if max_length > 0:
        found = _fit(found, separator, max_length)
    return separator.join(found)


def _fit(found: list[str], separator: str, max_length: int) -> list[str]:
    """The longest prefix of ``found`` whose slug is at most ``max_length`` characters long."""
    kept: list[str] = []
    length = 0
    for word in found:
        extra = len(word) + (len(separator) if kept else 0)
        if length + extra > max_length:
            break
        kept.append(word)
        length += extra
    if not kept and found:
        return [found[0][:max_length]]
    return kept


def unique_slug(text: str, taken: Container[str], *, separator: str = "-", max_length: int = 0, **options) -> str:
    """``slugify(text)``, with ``-2``, ``-3``, ... appended until the slug is not in ``taken``.

    The suffix counts towards ``max_length``; an empty slug becomes ``n-a``.
    """
    base = slugify(text, separator=separator, max_length=max_length, **options) or f"n{separator}a"
    slug, number = base, 1
    while slug in taken:
        number += 1
        suffix = f"{separator}{number}"
        stem = base[:max_length - len(suffix)].rstrip(separator) if max_length else base
        slug = stem + suffix
    return slug
