"""Exceptions raised by iniconf; every one derives from ConfigError."""


class ConfigError(Exception):
    """Base class of every iniconf error."""


class ParseError(ConfigError):
    """The text is not valid INI.

    ``lineno`` is the 1-based number of the offending line and ``line`` its text.
    """

    def __init__(self, message: str, lineno: int, line: str) -> None:
        super().__init__(f"line {lineno}: {message}: {line!r}")
        self.lineno = lineno
        self.line = line


class MissingSectionError(ConfigError):
    """A section that does not exist was asked for."""

    def __init__(self, section: str) -> None:
        super().__init__(f"no section {section!r}")
        self.section = section


class MissingOptionError(ConfigError):
    """An option that does not exist, and has no default, was asked for."""

    def __init__(self, section: str, option: str) -> None:
        super().__init__(f"no option {option!r} in section {section!r}")
        self.section = section
        self.option = option


class InterpolationError(ConfigError):
    """A ``${...}`` reference cannot be resolved, or references go round in a cycle."""
