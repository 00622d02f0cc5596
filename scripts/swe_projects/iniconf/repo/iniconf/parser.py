"""Build a Config from INI text (``parse``) or from a file (``load``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from iniconf.config import Config
from iniconf.errors import ParseError
from iniconf.lexer import tokenize


def parse(text: str, *, defaults: Mapping[str, str] | None = None) -> Config:
    """Parse INI ``text``; ``defaults`` are options every section falls back to.

    Continuation lines are joined to the value above them with newlines.
    Duplicate sections and duplicate options are errors, never merged silently.
    """
    config = Config(defaults=defaults)
    section: str | None = None
    option = ""
    for line in tokenize(text):
        if line.kind == "section":
            if config.has_section(line.name):
                raise ParseError("duplicate section", line.lineno, f"[{line.name}]")
            config.add_section(line.name)
            section = line.name
        elif section is None:
            raise ParseError("option before the first section", line.lineno, line.name)
        elif line.kind == "option":
            if line.name in config.options(section, with_defaults=False):
                raise ParseError(f"duplicate option in section {section!r}", line.lineno, line.name)
            config.set(section, line.name, line.value)
            option = line.name
        else:
            config.set(section, option, config.get_raw(section, option) + "\n" + line.value)
    return config


def load(path: str | os.PathLike, *, defaults: Mapping[str, str] | None = None) -> Config:
    """Parse the UTF-8 file at ``path``."""
    with open(path, encoding="utf-8") as fh:
        return parse(fh.read(), defaults=defaults)
