"""Identifier cases (camelCase, snake_case, kebab-case) and headline title case."""

from __future__ import annotations

import re

_CASE_BOUNDARY_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS_RE = re.compile(r"[\s_.\-]+")
SMALL_WORDS = frozenset({"a", "an", "and", "as", "at", "but", "by", "for", "in", "nor", "of", "on", "or", "the",
                         "to", "via"})


def split_identifier(name: str) -> list[str]:
    """The words of an identifier in any case.

    >>> split_identifier("parseHTTPResponse_v2")
    ['parse', 'HTTP', 'Response', 'v2']
    """
    found = []
    for chunk in _SEPARATORS_RE.split(name):
        found += [part for part in _CASE_BOUNDARY_RE.split(chunk) if part]
    return found


def to_snake(name: str) -> str:
    """``'parseHTTPResponse'`` -> ``'parse_http_response'``."""
    return "_".join(word.lower() for word in split_identifier(name))


def to_kebab(name: str) -> str:
    """``'parseHTTPResponse'`` -> ``'parse-http-response'``."""
    return "-".join(word.lower() for word in split_identifier(name))


def to_camel(name: str, *, upper_first: bool = False) -> str:
    """``'parse_http_response'`` -> ``'parseHttpResponse'`` (``'ParseHttpResponse'`` with ``upper_first``)."""
    parts = [word.lower() for word in split_identifier(name)]
    if not parts:
        return ""
    head = parts[0].capitalize() if upper_first else parts[0]
    return head + "".join(word.capitalize() for word in parts[1:])


def title_case(text: str) -> str:
    """Headline style: every word capitalised but short function words inside the title.

    Words that already contain a capital (``iPhone``, ``NASA``) are left alone.

    >>> title_case("the lord of the rings")
    'The Lord of the Rings'
    """
    parts = text.split()
    out = []
    for index, word in enumerate(parts):
        if any(char.isupper() for char in word):
            out.append(word)
        elif 0 < index < len(parts) - 1 and word in SMALL_WORDS:
            out.append(word)
        else:
            out.append(word[:1].upper() + word[1:])
    return " ".join(out)
