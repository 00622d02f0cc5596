"""Exceptions raised by semverkit."""


class InvalidVersion(ValueError):
    """The text is not a semantic version (https://semver.org)."""


class InvalidRange(ValueError):
    """The text is not a version range."""
