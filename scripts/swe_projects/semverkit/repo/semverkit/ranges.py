"""npm-style version ranges: ``>=1.2.0 <2``, ``^1.2.3``, ``~1.2``, ``1.x``, alternatives joined by ``||``."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass

from semverkit.errors import InvalidRange, InvalidVersion
from semverkit.version import Version

_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq}
_COMPARATOR_RE = re.compile(r"(<=|>=|<|>|=)?(.+)")
_PARTIAL_RE = re.compile(r"[vV]?(\d+)(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?")


@dataclass(frozen=True)
class Comparator:
    """``version`` with an operator: ``>=1.2.0``."""

    op: str
    version: Version

    def matches(self, version: Version) -> bool:
        return _OPERATORS[self.op](version, self.version)

    def __str__(self) -> str:
        return f"{self.op}{self.version}"


class Range:
    """Alternatives (``||``) of comparator sets; a version matches a set when it matches all of it.

    Pre-releases only match a set that has a comparator with a pre-release of the
    same ``MAJOR.MINOR.PATCH`` (npm's rule), unless ``include_prerelease`` is set.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.alternatives = [_parse_set(part, text) for part in text.split("||")]

    def matches(self, version: Version | str, *, include_prerelease: bool = False) -> bool:
        candidate = Version.coerce(version)
        for comparators in self.alternatives:
            if not all(comparator.matches(candidate) for comparator in comparators):
                continue
            if include_prerelease or not candidate.prerelease or any(
                    c.version.prerelease and c.version.release() == candidate.release() for c in comparators):
                return True
        return False

    def __contains__(self, version: Version | str) -> bool:
        return self.matches(version)

    def __repr__(self) -> str:
        return f"Range({self.text!r})"


def _parse_set(text: str, whole: str) -> list[Comparator]:
    comparators: list[Comparator] = []
    for token in text.split():
        try:
            comparators += _expand(token)
        except InvalidVersion as e:
            raise InvalidRange(f"bad range {whole!r}: {e}") from None
    return comparators


def _partial(text: str) -> tuple[int, int | None, int | None, tuple[str, ...]]:
    """``'1'`` -> (1, None, None, ()); ``'1.2.x'`` -> (1, 2, None, ()); a full version -> all four parts."""
    try:
        version = Version.parse(text)
    except InvalidVersion:
        match = _PARTIAL_RE.fullmatch(text)
        if match is None:
            raise InvalidVersion(f"not a version or partial version: {text!r}") from None
        major, minor, patch = (int(part) if part and part.isdigit() else None for part in match.groups())
        return major, minor, patch if minor is not None else None, ()
    return version.major, version.minor, version.patch, version.prerelease


def _expand(token: str) -> list[Comparator]:
    if token in ("*", "x", "X"):
        return []
    if token[0] == "^":
        return _caret(token[1:])
    if token[0] == "~":
        return _tilde(token[1:])
    op, rest = _COMPARATOR_RE.fullmatch(token).groups()
    major, minor, patch, prerelease = _partial(rest)
    if patch is not None:
        return [Comparator(op or "=", Version(major, minor, patch, prerelease))]
    low = Version(major, minor or 0, 0)
    high = Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)
    return {None: [Comparator(">=", low), Comparator("<", high)], "=": [Comparator(">=", low), Comparator("<", high)],
            ">": [Comparator(">=", high)], ">=": [Comparator(">=", low)],
            "<": [Comparator("<", low)], "<=": [Comparator("<", high)]}[op]


def _caret(text: str) -> list[Comparator]:
    """``^1.2.3`` := ``>=1.2.3 <2.0.0``, ``^0.2.3`` := ``>=0.2.3 <0.3.0``, ``^0.0.3`` := ``>=0.0.3 <0.0.4``.

    Changes that do not modify the left-most non-zero part are allowed.
    """
    major, minor, patch, prerelease = _partial(text)
    low = Version(major, minor or 0, patch or 0, prerelease)
    if major > 0 or minor is None:
        high = Version(major + 1, 0, 0)
    elif minor > 0 or patch is None:
        high = Version(0, minor + 1, 0)
    else:
        high = Version(0, 0, patch + 1)
    return [Comparator(">=", low), Comparator("<", high)]


def _tilde(text: str) -> list[Comparator]:
    """``~1.2.3`` := ``>=1.2.3 <1.3.0``, ``~1.2`` := ``>=1.2.0 <1.3.0``, ``~1`` := ``>=1.0.0 <2.0.0``."""
    major, minor, patch, prerelease = _partial(text)
    low = Version(major, minor or 0, patch or 0, prerelease)
    high = Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)
    return [Comparator(">=", low), Comparator("<", high)]


def satisfies(version: Version | str, range_text: str, *, include_prerelease: bool = False) -> bool:
    """Whether ``version`` is in the range ``range_text``."""
    return Range(range_text).matches(version, include_prerelease=include_prerelease)


def max_satisfying(versions: Iterable[Version | str], range_text: str, *,
                   include_prerelease: bool = False) -> Version | None:
    """The highest of ``versions`` in the range, or None when none of them is."""
    wanted = Range(range_text)
    matching = [v for v in map(Version.coerce, versions) if wanted.matches(v, include_prerelease=include_prerelease)]
    return max(matching) if matching else None


def min_satisfying(versions: Iterable[Version | str], range_text: str, *,
                   include_prerelease: bool = False) -> Version | None:
    """The lowest of ``versions`` in the range, or None when none of them is."""
    wanted = Range(range_text)
    matching = [v for v in map(Version.coerce, versions) if wanted.matches(v, include_prerelease=include_prerelease)]
    return min(matching) if matching else None
