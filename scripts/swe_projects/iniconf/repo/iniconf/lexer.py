"""Split INI text into classified lines: section headers, options and continuations."""

from __future__ import annotations

import re
from dataclasses import dataclass

from iniconf.errors import ParseError

SECTION_RE = re.compile(r"^\[(?P<name>[^\[\]]+)\]$")
OPTION_RE = re.compile(r"^(?P<key>[^=:\s][^=:]*?)\s*[=:]\s*(?P<value>.*)$")
COMMENT_PREFIXES = ("#", ";")


@dataclass(frozen=True)
class Line:
    """One meaningful line of an INI file."""

    kind: str  # "section", "option" or "continuation"
    lineno: int  # 1-based
    name: str = ""  # section name, or option name (lower-cased)
    value: str = ""


def strip_inline_comment(value: str) -> str:
    """Drop a trailing ``; comment`` or ``# comment``, and surrounding whitespace.

    A marker starts a comment only after whitespace, so ``a;b``, ``#ff0000`` and
    URLs with fragments are values, not comments.
    """
    for index, char in enumerate(value):
        if char in COMMENT_PREFIXES and index > 0 and value[index - 1].isspace():
            return value[:index].strip()
    return value.strip()


def tokenize(text: str) -> list[Line]:
    """The meaningful lines of ``text``; blank lines and comment lines are skipped.

    An indented line continues the value of the option above it.
    """
    lines: list[Line] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith(COMMENT_PREFIXES):
            continue
        if raw[0].isspace():
            if not lines or lines[-1].kind == "section":
                raise ParseError("continuation line without an option above it", lineno, raw)
            lines.append(Line("continuation", lineno, value=strip_inline_comment(stripped)))
            continue
        match = SECTION_RE.match(stripped)
        if match:
            lines.append(Line("section", lineno, name=match.group("name").strip()))
            continue
        match = OPTION_RE.match(stripped)
        if match is None:
            raise ParseError("expected '[section]' or 'key = value'", lineno, raw)
        key = match.group("key").strip().lower()
        lines.append(Line("option", lineno, name=key, value=strip_inline_comment(match.group("value"))))
    return lines
