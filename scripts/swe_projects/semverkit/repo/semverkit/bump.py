"""The next version: bump a part, or step a pre-release."""

from __future__ import annotations

from semverkit.version import Version

PARTS = ("major", "minor", "patch", "prerelease")


def bump(version: Version | str, part: str, *, label: str = "rc") -> Version:
    """The version after ``version`` when ``part`` changes.

    Bumping a part resets the parts after it to zero, and build metadata is
    dropped. Bumping the patch of a pre-release gives its release
    (``1.2.3-rc.1`` -> ``1.2.3``). ``prerelease`` counts ``rc.0``, ``rc.1``, ...
    (``label`` names the first one).

    >>> str(bump("1.4.2", "minor"))
    '1.5.0'
    """
    current = Version.coerce(version)
    if part == "major":
        return Version(current.major + 1, 0, 0)
    if part == "minor":
        return Version(current.major, current.minor + 1, 0)
    if part == "patch":
        patch = current.patch if current.prerelease else current.patch + 1
        return Version(current.major, current.minor, patch)
    if part == "prerelease":
        return _next_prerelease(current, label)
    raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}")


def _next_prerelease(current: Version, label: str) -> Version:
    if not current.prerelease:
        return Version(current.major, current.minor, current.patch + 1, (label, "0"))
    identifiers = list(current.prerelease)
    if identifiers[-1].isdigit():
        identifiers[-1] = str(int(identifiers[-1]) + 1)
    else:
        identifiers.append("0")
    return Version(current.major, current.minor, current.patch, tuple(identifiers))
