"""The Config object: named sections of string options, with typed getters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from iniconf.errors import ConfigError, MissingOptionError, MissingSectionError
from iniconf.interpolate import interpolate

T = TypeVar("T")
BOOLEAN_STATES = {"1": True, "yes": True, "true": True, "on": True,
                  "0": False, "no": False, "false": False, "off": False}
_MISSING: Any = object()


def to_bool(value: str) -> bool:
    """``yes``/``no``, ``true``/``false``, ``on``/``off`` or ``1``/``0``, in any letter case."""
    try:
        return BOOLEAN_STATES[value.lower()]
    except KeyError:
        raise ValueError(f"not a boolean: {value!r}") from None


def split_list(value: str, separator: str = ",") -> list[str]:
    """The items of a list value, split on ``separator`` and on newlines, stripped; empty items are dropped."""
    parts = value.replace("\n", separator).split(separator)
    return [part.strip() for part in parts if part.strip()]


class Config:
    """Sections of options. Section names are case-sensitive, option names are not.

    Values are stored as strings. ``get`` expands ``${...}`` references and the
    typed getters convert the expanded value; ``defaults`` are options that every
    section falls back to.
    """

    def __init__(self, defaults: Mapping[str, str] | None = None) -> None:
        self._sections: dict[str, dict[str, str]] = {}
        self._defaults = {key.lower(): value for key, value in (defaults or {}).items()}

    def sections(self) -> list[str]:
        """Section names, in the order they were added."""
        return list(self._sections)

    def has_section(self, section: str) -> bool:
        return section in self._sections

    def add_section(self, section: str) -> None:
        if section in self._sections:
            raise ConfigError(f"section {section!r} already exists")
        self._sections[section] = {}

    def options(self, section: str, *, with_defaults: bool = True) -> list[str]:
        """Option names of ``section``, followed by the defaults it does not override."""
        names = list(self._section(section))
        if with_defaults:
            names += [name for name in self._defaults if name not in names]
        return names

    def has_option(self, section: str, option: str) -> bool:
        return section in self._sections and option.lower() in self.options(section)

    def set(self, section: str, option: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"option values must be str, not {type(value).__name__}")
        self._section(section)[option.lower()] = value

    def get_raw(self, section: str, option: str) -> str:
        """The stored value, without interpolation."""
        options = self._section(section)
        key = option.lower()
        if key in options:
            return options[key]
        if key in self._defaults:
            return self._defaults[key]
        raise MissingOptionError(section, key)

    def get(self, section: str, option: str, default: Any = _MISSING) -> Any:
        """The interpolated value; ``default``, when given, if the option is missing."""
        try:
            raw = self.get_raw(section, option)
        except MissingOptionError:
            if default is _MISSING:
                raise
            return default
        return interpolate(self, section, raw)

    def getint(self, section: str, option: str, default: Any = _MISSING) -> int:
        return self._convert(section, option, default, int)

    def getfloat(self, section: str, option: str, default: Any = _MISSING) -> float:
        return self._convert(section, option, default, float)

    def getboolean(self, section: str, option: str, default: Any = _MISSING) -> bool:
        return self._convert(section, option, default, to_bool)

    def getlist(self, section: str, option: str, default: Any = _MISSING, *, separator: str = ",") -> list[str]:
        return self._convert(section, option, default, lambda value: split_list(value, separator))

    def items(self, section: str) -> dict[str, str]:
        """Every option of ``section`` (defaults included), interpolated."""
        return {name: self.get(section, name) for name in self.options(section)}

    def to_string(self) -> str:
        """INI text that ``parse`` reads back into the same sections (defaults are not written)."""
        chunks = []
        for section, options in self._sections.items():
            lines = [f"[{section}]"]
            lines += [f"{key} = {value}".replace("\n", "\n    ") for key, value in options.items()]
            chunks.append("\n".join(lines) + "\n")
        return "\n".join(chunks)

    def _section(self, section: str) -> dict[str, str]:
        try:
            return self._sections[section]
        except KeyError:
            raise MissingSectionError(section) from None

    def _convert(self, section: str, option: str, default: Any, convert: Callable[[str], T]) -> T:
        try:
            value = self.get(section, option)
        except MissingOptionError:
            if default is _MISSING:
                raise
            return default
        try:
            return convert(value)
        except ValueError as e:
            raise ConfigError(f"[{section}] {option}: {e}") from None
