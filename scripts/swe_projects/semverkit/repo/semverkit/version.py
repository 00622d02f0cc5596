"""Semantic versions (semver.org 2.0.0): parsing, formatting and precedence."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from semverkit.errors import InvalidVersion

_NUMBER = r"0|[1-9]\d*"
_PRERELEASE_ID = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"  # no leading zeros in numeric identifiers
_BUILD_ID = r"[0-9A-Za-z-]+"
VERSION_RE = re.compile(
    rf"[vV]?(?P<major>{_NUMBER})\.(?P<minor>{_NUMBER})\.(?P<patch>{_NUMBER})"
    rf"(?:-(?P<prerelease>{_PRERELEASE_ID}(?:\.{_PRERELEASE_ID})*))?"
    rf"(?:\+(?P<build>{_BUILD_ID}(?:\.{_BUILD_ID})*))?"
)


def _identifier_key(identifier: str) -> tuple:
    """Numeric identifiers compare as numbers and sort before alphanumeric ones (semver 11.4)."""
    if identifier.isdigit():
        return (0, int(identifier))
    return (1, identifier)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A version ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``.

    Versions compare by semver precedence: build metadata is ignored, and a
    pre-release comes before its release (``1.0.0-rc.1 < 1.0.0``).
    """

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if min(self.major, self.minor, self.patch) < 0:
            raise InvalidVersion(f"version numbers must not be negative: {self.major}.{self.minor}.{self.patch}")

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse a version; a leading ``v`` is allowed.

        >>> Version.parse("v1.4.0-rc.1+build.7")
        Version(major=1, minor=4, patch=0, prerelease=('rc', '1'), build=('build', '7'))
        """
        match = VERSION_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise InvalidVersion(f"not a semantic version: {text!r}")
        prerelease, build = match.group("prerelease"), match.group("build")
        return cls(int(match.group("major")), int(match.group("minor")), int(match.group("patch")),
                   tuple(prerelease.split(".")) if prerelease else (), tuple(build.split(".")) if build else ())

    @classmethod
    def coerce(cls, value: Version | str) -> Version:
        """``value`` if it is a Version, else ``Version.parse(value)``."""
        return value if isinstance(value, Version) else cls.parse(value)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def release(self) -> Version:
        """The version without pre-release and build parts."""
        return Version(self.major, self.minor, self.patch)

    def _precedence(self) -> tuple:
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1,
                tuple(_identifier_key(identifier) for identifier in self.prerelease))

    def __eq__(self, other: object) -> bool:
        other = _comparable(other)
        if other is None:
            return NotImplemented
        return self._precedence() == other._precedence()

    def __lt__(self, other: object) -> bool:
        other = _comparable(other)
        if other is None:
            return NotImplemented
        return self._precedence() < other._precedence()

    def __hash__(self) -> int:
        return hash(self._precedence())

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _comparable(other: object) -> Version | None:
    """``other`` as a Version (strings are parsed), or None when it is not one."""
    if isinstance(other, str):
        try:
            return Version.parse(other)
        except InvalidVersion:
            return None
    return other if isinstance(other, Version) else None
