"""Generate the bundled SWE-bench data: real bugs in six small Python projects that this script writes.

    python scripts/make_swe_data.py [--seed 0] [--out agentgym/data/swe] [--no-validate]

Each project below (an INI parser, a money library, a semantic-version library, a
slug/tokenizer library, an LRU/TTL cache and a date-range library) is written out
in full, correct, with its own pytest suite. Each ``Bug`` injects one genuine
defect into one copy of its project (only that one), and carries the issue a user
would file, the tests a maintainer would add, and which of them expose the bug.
An instance's repository is committed with git under a fixed identity and date
(``materialize``), so ``base_commit`` is a pure function of the files; ``patch``
(the fix) and ``test_patch`` are real ``git diff`` output against that commit.

Unless ``--no-validate``, every instance is checked with the host's pytest before
anything is written: the buggy base passes its own suite, base + test_patch fails
exactly FAIL_TO_PASS and passes PASS_TO_PASS, and base + both patches passes
everything. The seed only picks issue numbers, dates, hints and footers; the same
seed gives byte-identical files on every machine and under any ``PYTHONHASHSEED``.
Projects and script use the standard library only.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentgym.envs.swe.repo import materialize

OWNER = "agentgym"
GIT_DATE = "2024-01-01T00:00:00+00:00"
GIT_IDENTITY = ("-c", "user.name=agentgym", "-c", "user.email=agentgym@example.invalid")
# Settings that keep a user's or the system's git configuration out of hashes and diffs.
GIT_HYGIENE = ("-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.excludesFile=/dev/null",
               "-c", "core.attributesFile=/dev/null", "-c", "core.hooksPath=/dev/null",
               "-c", "commit.gpgsign=false", "-c", "core.abbrev=7", "-c", "diff.noprefix=false")
PYTEST = ("-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q")
PYTEST_TIMEOUT_S = 60
SUMMARY_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
MIN_INSTANCES = 24
MIN_PROJECTS = 6


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``path``; ``old == ""`` appends ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Bug:
    """One defect: how to inject it, the issue a user files, and the tests that expose it."""

    key: str  # stable name inside its project
    kind: str  # the kind of bug, for the data card
    inject: tuple[Edit, ...]  # correct source -> buggy source (old: correct text, new: buggy text)
    tests: tuple[Edit, ...]  # the test_patch, as edits of tests/ files
    fail_to_pass: tuple[str, ...]  # pytest node ids the test_patch adds (or changes) that the bug fails
    title: str
    body: str  # the issue text, markdown
    hint: str  # a maintainer's hint (the seed decides whether it is shown)


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    files: dict[str, str]
    bugs: tuple[Bug, ...]


def sources(files: dict[str, str]) -> dict[str, str]:
    """File texts written flush left after an opening ``'''`` line: drop that first newline."""
    return {path: text.lstrip("\n") for path, text in files.items()}


def issue(text: str) -> str:
    return text.strip("\n")


def add_tests(path: str, code: str) -> Edit:
    """Append test functions to ``path`` (after two blank lines)."""
    return Edit(path, "", "\n\n" + code.strip("\n") + "\n")


def scaffold(name: str, version: str, summary: str, readme: str) -> dict[str, str]:
    """The files every project has besides its package and tests."""
    pyproject = (f'[project]\nname = "{name}"\nversion = "{version}"\ndescription = "{summary}"\n'
                 'requires-python = ">=3.10"\ndependencies = []\n\n'
                 '[project.optional-dependencies]\ntest = ["pytest>=7"]\n\n'
                 '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
                 '[tool.setuptools]\npackages = ["' + name + '"]\n\n'
                 '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n')
    return {
        "pyproject.toml": pyproject,
        "README.md": readme.strip("\n") + "\n",
        ".gitignore": "__pycache__/\n*.egg-info/\n.pytest_cache/\nbuild/\ndist/\n",
    }


PROJECTS: list[Project] = []


# ====================================================================== iniconf: an INI configuration parser
INICONF_FILES = sources({
    "iniconf/__init__.py": r'''
"""iniconf: read INI configuration files, with typed getters and ``${...}`` interpolation."""

from iniconf.config import Config
from iniconf.errors import ConfigError, InterpolationError, MissingOptionError, MissingSectionError, ParseError
from iniconf.parser import load, parse

__all__ = ["Config", "ConfigError", "InterpolationError", "MissingOptionError", "MissingSectionError",
           "ParseError", "load", "parse"]
__version__ = "1.3"
''',
    "iniconf/errors.py": r'''
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
''',
    "iniconf/lexer.py": r'''
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
''',
    "iniconf/interpolate.py": r'''
"""Expand ``${option}`` and ``${section:option}`` references in option values."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from iniconf.errors import ConfigError, InterpolationError

if TYPE_CHECKING:
    from iniconf.config import Config

REFERENCE_RE = re.compile(r"\$(?:\{(?P<target>[^{}]*)\}|\$)")
MAX_DEPTH = 10


def interpolate(config: Config, section: str, value: str, depth: int = 0) -> str:
    """``value`` with every reference replaced by the (expanded) value it names.

    ``${name}`` is looked up in ``section`` and then in the defaults,
    ``${other:name}`` in section ``other``; ``$$`` is a literal ``$``. A reference
    that cannot be resolved raises InterpolationError, whatever the reason.
    """
    if depth > MAX_DEPTH:
        raise InterpolationError(f"[{section}]: references nested deeper than {MAX_DEPTH} levels (a cycle?)")

    def expand(match: re.Match) -> str:
        target = match.group("target")
        if target is None:
            return "$"
        ref_section, _, option = target.rpartition(":")
        ref_section = ref_section or section
        try:
            raw = config.get_raw(ref_section, option)
        except ConfigError as e:
            raise InterpolationError(f"[{section}]: bad reference ${{{target}}}: {e}") from None
        return interpolate(config, ref_section, raw, depth + 1)

    return REFERENCE_RE.sub(expand, value)
''',
    "iniconf/config.py": r'''
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
''',
    "iniconf/parser.py": r'''
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
''',
    "tests/test_lexer.py": r'''
import pytest

from iniconf.errors import ParseError
from iniconf.lexer import strip_inline_comment, tokenize


def test_sections_and_options():
    lines = tokenize("[server]\nhost = example.org\nport: 8080\n")
    assert [(line.kind, line.name, line.value) for line in lines] == [
        ("section", "server", ""), ("option", "host", "example.org"), ("option", "port", "8080")]


def test_comments_and_blank_lines_are_skipped():
    lines = tokenize("# top\n\n; another comment\n[a]\n  # indented comment\nx = 1\n")
    assert [line.kind for line in lines] == ["section", "option"]


def test_option_names_are_lowercased():
    section, option = tokenize("[Main]\nName = Value\n")
    assert (section.name, option.name, option.value) == ("Main", "name", "Value")


def test_inline_comment_after_whitespace():
    assert strip_inline_comment("8080  ; the port") == "8080"
    assert strip_inline_comment("on # enabled") == "on"


def test_comment_marker_inside_a_value_is_kept():
    assert strip_inline_comment("a;b") == "a;b"
    assert strip_inline_comment("https://example.org/docs#top") == "https://example.org/docs#top"


def test_continuation_lines():
    lines = tokenize("[a]\nitems = one\n  two\n\tthree\n")
    assert [(line.kind, line.value) for line in lines[1:]] == [
        ("option", "one"), ("continuation", "two"), ("continuation", "three")]


def test_garbage_line_raises():
    with pytest.raises(ParseError, match="expected"):
        tokenize("[a]\nthis is not an option\n")


def test_continuation_without_an_option_raises():
    with pytest.raises(ParseError, match="continuation"):
        tokenize("[a]\n  dangling\n")
''',
    "tests/test_config.py": r'''
import pytest

from iniconf import Config, ConfigError, MissingOptionError, MissingSectionError, parse

SAMPLE = """
[server]
host = example.org
port = 8080
debug = off
timeout = 2.5

[paths]
root = /srv/app
logs = ${root}/logs
cache = ${server:host}-cache
"""


def test_sections_keep_file_order():
    assert parse(SAMPLE).sections() == ["server", "paths"]


def test_get_returns_strings():
    assert parse(SAMPLE).get("server", "port") == "8080"


def test_option_names_are_case_insensitive():
    assert parse(SAMPLE).get("server", "HOST") == "example.org"


def test_getint_and_getfloat():
    config = parse(SAMPLE)
    assert config.getint("server", "port") == 8080
    assert config.getfloat("server", "timeout") == 2.5


def test_getboolean():
    config = parse("[flags]\na = yes\nb = off\nc = 1\nd = false\n")
    assert [config.getboolean("flags", key) for key in "abcd"] == [True, False, True, False]


def test_getboolean_rejects_other_words():
    with pytest.raises(ConfigError, match="not a boolean"):
        parse("[flags]\na = maybe\n").getboolean("flags", "a")


def test_bad_integer_is_a_config_error():
    with pytest.raises(ConfigError, match="port"):
        parse("[server]\nport = eighty\n").getint("server", "port")


def test_missing_option_and_defaults():
    config = parse(SAMPLE)
    with pytest.raises(MissingOptionError):
        config.get("server", "user")
    assert config.get("server", "user", default="nobody") == "nobody"
    assert config.getint("server", "workers", default=4) == 4


def test_missing_section():
    with pytest.raises(MissingSectionError):
        parse(SAMPLE).get("database", "url")


def test_defaults_apply_to_every_section():
    config = parse("[a]\nx = 1\n[b]\nlevel = debug\n", defaults={"Level": "info"})
    assert config.get("a", "level") == "info"
    assert config.get("b", "level") == "debug"
    assert config.options("a") == ["x", "level"]


def test_getlist():
    config = parse("[a]\nnames = alpha, beta ,gamma\nports = 80;443\n")
    assert config.getlist("a", "names") == ["alpha", "beta", "gamma"]
    assert config.getlist("a", "ports", separator=";") == ["80", "443"]


def test_set_requires_strings():
    config = Config()
    config.add_section("a")
    with pytest.raises(TypeError):
        config.set("a", "x", 1)


def test_items_are_interpolated():
    assert parse(SAMPLE).items("paths") == {
        "root": "/srv/app", "logs": "/srv/app/logs", "cache": "example.org-cache"}


def test_round_trip_through_to_string():
    config = parse(SAMPLE + "[notes]\ntext = first\n  second\n")
    again = parse(config.to_string())
    assert again.to_string() == config.to_string()
    assert again.get("notes", "text") == "first\nsecond"
''',
    "tests/test_interpolate.py": r'''
import pytest

from iniconf import InterpolationError, parse


def test_reference_in_the_same_section():
    config = parse("[paths]\nroot = /srv\nlogs = ${root}/logs\n")
    assert config.get("paths", "logs") == "/srv/logs"


def test_reference_to_another_section():
    config = parse("[server]\nhost = example.org\n[client]\nurl = https://${server:host}/\n")
    assert config.get("client", "url") == "https://example.org/"


def test_dollar_escape():
    assert parse("[shop]\nprice = $$5\n").get("shop", "price") == "$5"


def test_nested_references():
    config = parse("[a]\nx = 1\ny = ${x}${x}\nz = ${y}-${y}\n")
    assert config.get("a", "z") == "11-11"


def test_reference_to_a_default():
    config = parse("[a]\npath = ${home}/bin\n", defaults={"home": "/home/me"})
    assert config.get("a", "path") == "/home/me/bin"


def test_missing_option_reference():
    with pytest.raises(InterpolationError, match="bad reference"):
        parse("[a]\nx = ${nope}\n").get("a", "x")


def test_cycle_is_reported():
    with pytest.raises(InterpolationError, match="deeper"):
        parse("[a]\nx = ${y}\ny = ${x}\n").get("a", "x")


def test_get_raw_skips_interpolation():
    assert parse("[a]\nroot = /srv\nlogs = ${root}/logs\n").get_raw("a", "logs") == "${root}/logs"
''',
    "tests/test_parser.py": r'''
import pytest

from iniconf import ParseError, load, parse


def test_duplicate_section_raises():
    with pytest.raises(ParseError, match="duplicate section"):
        parse("[a]\nx = 1\n[a]\ny = 2\n")


def test_duplicate_option_raises():
    with pytest.raises(ParseError, match="duplicate option"):
        parse("[a]\nx = 1\nX = 2\n")


def test_option_before_any_section_raises():
    with pytest.raises(ParseError, match="before the first section"):
        parse("x = 1\n[a]\n")


def test_multiline_value():
    config = parse("[a]\ntext = first\n  second\n  third\nafter = yes\n")
    assert config.get("a", "text") == "first\nsecond\nthird"
    assert config.get("a", "after") == "yes"


def test_empty_text_gives_an_empty_config():
    assert parse("").sections() == []
    assert parse("# only a comment\n").sections() == []


def test_load_reads_a_file(tmp_path):
    path = tmp_path / "app.ini"
    path.write_text("[app]\nname = démo\n", encoding="utf-8")
    assert load(path).get("app", "name") == "démo"
''',
    **scaffold("iniconf", "1.3", "A small INI configuration parser", r'''
# iniconf

A small INI configuration parser: sections, `key = value` options (or `key: value`),
indented continuation lines, `;` and `#` comments, typed getters and `${...}`
interpolation.

```python
from iniconf import parse

config = parse("""
[server]
host = example.org
port = 8080
debug = off

[client]
url = https://${server:host}:${server:port}/
""")
config.getint("server", "port")       # 8080
config.getboolean("server", "debug")  # False
config.get("client", "url")           # 'https://example.org:8080/'
```

Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("iniconf", "1.3", INICONF_FILES, (
    Bug(
        key="boolean_case",
        kind="edge case: letter case of boolean words",
        inject=(Edit("iniconf/config.py", "return BOOLEAN_STATES[value.lower()]", "return BOOLEAN_STATES[value]"),),
        tests=(add_tests("tests/test_config.py", r'''
def test_getboolean_ignores_letter_case():
    config = parse("[flags]\na = True\nb = NO\nc = On\nd = FALSE\n")
    assert [config.getboolean("flags", key) for key in "abcd"] == [True, False, True, False]
'''),),
        fail_to_pass=("tests/test_config.py::test_getboolean_ignores_letter_case",),
        title="getboolean() rejects `True` and `YES`",
        body=issue(r'''
Our config files are edited by hand and people write booleans the way they like,
e.g. `True` or `YES`. iniconf refuses those:

```python
from iniconf import parse

config = parse("[features]\nbeta = True\n")
config.getboolean("features", "beta")
```

```
Traceback (most recent call last):
  ...
iniconf.errors.ConfigError: [features] beta: not a boolean: 'True'
```

Lower-case `true` works. The README says booleans may be written in any letter case,
so I expected `True`, `TRUE` and `yes`/`Yes`/`YES` (and the same for the false words)
to be accepted.
'''),
        hint="The words are matched against a table of lower-case spellings.",
    ),
    Bug(
        key="hash_value",
        kind="edge case: value starting with a comment marker",
        inject=(Edit("iniconf/lexer.py", "if char in COMMENT_PREFIXES and index > 0 and value[index - 1].isspace():",
                     "if char in COMMENT_PREFIXES and (index == 0 or value[index - 1].isspace()):"),),
        tests=(add_tests("tests/test_config.py", r'''
def test_values_starting_with_a_comment_marker():
    config = parse("[theme]\naccent = #ff8800\nmuted = #999 ; grey\nsep = ;\n")
    assert config.get("theme", "accent") == "#ff8800"
    assert config.get("theme", "muted") == "#999"
    assert config.get("theme", "sep") == ";"
'''),),
        fail_to_pass=("tests/test_config.py::test_values_starting_with_a_comment_marker",),
        title="Hex colour values are read as empty strings",
        body=issue(r'''
I keep theme colours in an INI file:

```ini
[theme]
accent = #ff8800
```

```python
from iniconf import load

load("theme.ini").get("theme", "accent")
# ''
```

I get an empty string instead of `'#ff8800'`. A `#` in the middle of a value is
fine (`https://example.org/docs#top` comes back whole), and the README says a
comment marker only starts a comment after whitespace, so I expected the value to
be kept. A value that is just `;` is also read as empty.
'''),
        hint="Look at how inline comments are recognised when the marker is the first character of the value.",
    ),
    Bug(
        key="error_lineno",
        kind="off-by-one: 0-based line numbers in errors",
        inject=(Edit("iniconf/lexer.py", "for lineno, raw in enumerate(text.splitlines(), start=1):",
                     "for lineno, raw in enumerate(text.splitlines()):"),),
        tests=(add_tests("tests/test_lexer.py", r'''
def test_parse_error_reports_the_1_based_line_number():
    with pytest.raises(ParseError) as info:
        tokenize("[a]\nx = 1\noops\n")
    assert info.value.lineno == 3
    assert str(info.value).startswith("line 3: ")
'''),),
        fail_to_pass=("tests/test_lexer.py::test_parse_error_reports_the_1_based_line_number",),
        title="ParseError points at the line before the broken one",
        body=issue(r'''
When a config file has a syntax error, the line number in the message is one less
than the line that is actually wrong, which sent me looking at the wrong line of a
200-line file.

```python
from iniconf import parse

parse("[app]\nname = demo\nthis line is broken\n")
```

```
iniconf.errors.ParseError: line 2: expected '[section]' or 'key = value': 'this line is broken'
```

The broken line is line 3 (`ParseError.lineno` is documented as 1-based), but the
error says line 2 and `err.lineno == 2`.
'''),
        hint="Line numbers are meant to be 1-based everywhere; see where they are counted.",
    ),
    Bug(
        key="missing_section_reference",
        kind="wrong exception type",
        inject=(Edit("iniconf/interpolate.py", "from iniconf.errors import ConfigError, InterpolationError",
                     "from iniconf.errors import InterpolationError, MissingOptionError"),
                Edit("iniconf/interpolate.py", "        except ConfigError as e:",
                     "        except MissingOptionError as e:")),
        tests=(add_tests("tests/test_interpolate.py", r'''
def test_reference_to_a_missing_section():
    config = parse("[a]\nx = ${nowhere:y}\n")
    with pytest.raises(InterpolationError, match="nowhere"):
        config.get("a", "x")
'''),),
        fail_to_pass=("tests/test_interpolate.py::test_reference_to_a_missing_section",),
        title="Reference to a missing section raises MissingSectionError instead of InterpolationError",
        body=issue(r'''
We wrap config access in `except InterpolationError` to report broken references to
our users. A typo in the *section* part of a reference escapes that handler:

```python
from iniconf import InterpolationError, parse

config = parse("[db]\nhost = localhost\n[app]\ndsn = postgres://${bd:host}/app\n")
try:
    config.get("app", "dsn")
except InterpolationError as e:
    print("bad reference:", e)
```

```
Traceback (most recent call last):
  ...
iniconf.errors.MissingSectionError: no section 'bd'
```

The section I asked for (`app`) exists, so `MissingSectionError` is misleading. A
typo in the option part (`${db:hots}`) does give an `InterpolationError`, as the
docs promise for any unresolvable reference.
'''),
        hint="Only one kind of lookup failure is converted when a reference is expanded.",
    ),
    Bug(
        key="getlist_blanks",
        kind="empty input: blank list items kept",
        inject=(Edit("iniconf/config.py", "return [part.strip() for part in parts if part.strip()]",
                     "return [part.strip() for part in parts]"),),
        tests=(add_tests("tests/test_config.py", r'''
def test_getlist_of_an_empty_value():
    assert parse("[a]\nnames =\n").getlist("a", "names") == []


def test_getlist_over_several_lines():
    config = parse("[a]\nnames =\n  alpha,\n  beta,\n")
    assert config.getlist("a", "names") == ["alpha", "beta"]
'''),),
        fail_to_pass=("tests/test_config.py::test_getlist_of_an_empty_value",
                      "tests/test_config.py::test_getlist_over_several_lines"),
        title="getlist() returns [''] for an empty value and keeps blank items",
        body=issue(r'''
An option that is present but empty should be an empty list:

```python
from iniconf import parse

config = parse("[mail]\nrecipients =\n")
config.getlist("mail", "recipients")
```

Expected `[]`, got `['']`, so we end up sending mail to the empty address.

The same happens with the multi-line style that our ops team prefers:

```ini
[mail]
recipients =
    alice@example.org,
    bob@example.org,
```

gives `['', 'alice@example.org', '', 'bob@example.org', '']` instead of the two
addresses.
'''),
        hint="Splitting is fine; empty items are supposed to be dropped afterwards.",
    ),
)))


# ====================================================================== tinymoney: exact money amounts
TINYMONEY_FILES = sources({
    "tinymoney/__init__.py": r'''
"""tinymoney: exact money amounts in ISO 4217 currencies, allocation and formatting."""

from tinymoney.allocate import allocate, split_evenly
from tinymoney.currency import CURRENCIES, Currency, get_currency
from tinymoney.errors import CurrencyMismatchError, MoneyError, UnknownCurrencyError
from tinymoney.exchange import ExchangeRates
from tinymoney.formatting import format_money, parse_money
from tinymoney.money import Money

__all__ = ["CURRENCIES", "Currency", "CurrencyMismatchError", "ExchangeRates", "Money", "MoneyError",
           "UnknownCurrencyError", "allocate", "format_money", "get_currency", "parse_money", "split_evenly"]
__version__ = "0.9"
''',
    "tinymoney/errors.py": r'''
"""Exceptions raised by tinymoney."""


class MoneyError(Exception):
    """Base class of every tinymoney error."""


class UnknownCurrencyError(MoneyError, ValueError):
    """The currency code is not one tinymoney knows."""


class CurrencyMismatchError(MoneyError, ValueError):
    """Two amounts in different currencies were combined or compared."""
''',
    "tinymoney/currency.py": r'''
"""ISO 4217 currencies and their minor units."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tinymoney.errors import UnknownCurrencyError


@dataclass(frozen=True)
class Currency:
    """A currency: its code, how many digits its minor unit has, and its symbol."""

    code: str
    exponent: int  # digits after the decimal point: 2 for USD (cents), 0 for JPY, 3 for KWD (fils)
    symbol: str
    name: str

    @property
    def quantum(self) -> Decimal:
        """The smallest amount, e.g. ``Decimal('0.01')`` for a currency with cents."""
        return Decimal(1).scaleb(-self.exponent)


CURRENCIES = {currency.code: currency for currency in (
    Currency("CHF", 2, "CHF", "Swiss franc"),
    Currency("EUR", 2, "€", "Euro"),
    Currency("GBP", 2, "£", "Pound sterling"),
    Currency("JPY", 0, "¥", "Japanese yen"),
    Currency("KWD", 3, "KD", "Kuwaiti dinar"),
    Currency("USD", 2, "$", "US dollar"),
)}


def get_currency(code: str | Currency) -> Currency:
    """The Currency for an ISO code (any letter case); a Currency is returned as is."""
    if isinstance(code, Currency):
        return code
    try:
        return CURRENCIES[code.upper()]
    except (KeyError, AttributeError):
        raise UnknownCurrencyError(f"unknown currency {code!r}; known: {', '.join(CURRENCIES)}") from None
''',
    "tinymoney/money.py": r'''
"""Money: an exact Decimal amount in one currency."""

from __future__ import annotations

import functools
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from tinymoney.currency import Currency, get_currency
from tinymoney.errors import CurrencyMismatchError


@functools.total_ordering
class Money:
    """An amount of one currency, kept exact (``Decimal``) until it is rounded.

    >>> Money("19.99", "EUR") + Money("0.01", "EUR")
    Money('20.00', 'EUR')
    """

    __slots__ = ("amount", "currency")

    def __init__(self, amount: str | int | Decimal, currency: str | Currency = "USD") -> None:
        if isinstance(amount, float):
            raise TypeError("Money amounts must be str, int or Decimal: floats are inexact")
        try:
            self.amount = Decimal(amount)
        except (InvalidOperation, TypeError, ValueError):
            raise ValueError(f"not an amount: {amount!r}") from None
        if not self.amount.is_finite():
            raise ValueError(f"not a finite amount: {amount!r}")
        self.currency = get_currency(currency)

    @classmethod
    def from_minor(cls, units: int, currency: str | Currency = "USD") -> Money:
        """An amount given in minor units: ``Money.from_minor(1999)`` is $19.99."""
        cur = get_currency(currency)
        return cls(Decimal(units).scaleb(-cur.exponent), cur)

    def to_minor(self) -> int:
        """The rounded amount in minor units: cents for USD, yen for JPY, fils for KWD."""
        return int(self.rounded().amount.scaleb(self.currency.exponent))

    def rounded(self, rounding: str = ROUND_HALF_UP) -> Money:
        """Rounded to the currency's minor unit; ties go away from zero unless ``rounding`` says otherwise."""
        return Money(self.amount.quantize(self.currency.quantum, rounding=rounding), self.currency)

    def _check_currency(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatchError(f"cannot combine {self.currency.code} with {other.currency.code}")

    def __add__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return Money(self.amount + other.amount, self.currency)

    def __radd__(self, other: object) -> Money:
        """Lets ``sum()``, which starts from the integer 0, add up Money values."""
        if isinstance(other, int) and other == 0:
            return Money(self.amount, self.currency)
        return self.__add__(other)

    def __sub__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: object) -> Money:
        if isinstance(factor, float):
            raise TypeError("multiply Money by an int or a Decimal, not a float")
        if not isinstance(factor, (int, Decimal)):
            return NotImplemented
        return Money(self.amount * factor, self.currency)

    __rmul__ = __mul__

    def __neg__(self) -> Money:
        return Money(-self.amount, self.currency)

    def __abs__(self) -> Money:
        return Money(abs(self.amount), self.currency)

    def __bool__(self) -> bool:
        return bool(self.amount)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        return self.currency == other.currency and self.amount == other.amount

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._check_currency(other)
        return self.amount < other.amount

    def __hash__(self) -> int:
        return hash((self.amount, self.currency.code))

    def __repr__(self) -> str:
        return f"Money({str(self.amount)!r}, {self.currency.code!r})"

    def __str__(self) -> str:
        return f"{self.amount} {self.currency.code}"
''',
    "tinymoney/allocate.py": r'''
"""Split an amount into parts that add up to it exactly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from tinymoney.money import Money


def allocate(money: Money, ratios: Sequence[int | Decimal]) -> list[Money]:
    """Parts of ``money`` proportional to ``ratios`` that add up to it exactly (after rounding).

    The amount is split in minor units. Each part first gets the whole units of its
    share; the units left over go, one each, to the parts with the largest
    remainders (the earlier part on a tie).

    >>> [str(part.amount) for part in allocate(Money("0.05"), [1, 1, 1])]
    ['0.02', '0.02', '0.01']
    """
    if not ratios:
        raise ValueError("allocate() needs at least one ratio")
    weights = [Fraction(ratio) for ratio in ratios]
    if any(weight < 0 for weight in weights):
        raise ValueError("ratios must not be negative")
    total = sum(weights)
    if total == 0:
        raise ValueError("at least one ratio must be positive")
    units = money.to_minor()
    sign = -1 if units < 0 else 1
    exact = [abs(units) * weight / total for weight in weights]
    parts = [math.floor(share) for share in exact]
    leftover = abs(units) - sum(parts)
    order = sorted(range(len(parts)), key=lambda i: (-(exact[i] - parts[i]), i))
    for rank in range(leftover):
        parts[order[rank]] += 1
    return [Money.from_minor(sign * part, money.currency) for part in parts]


def split_evenly(money: Money, n: int) -> list[Money]:
    """``money`` split into ``n`` parts that differ by at most one minor unit."""
    if n < 1:
        raise ValueError(f"cannot split into {n} parts")
    return allocate(money, [1] * n)
''',
    "tinymoney/exchange.py": r'''
"""Currency conversion with rates quoted against one base currency."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from tinymoney.currency import Currency, get_currency
from tinymoney.errors import UnknownCurrencyError
from tinymoney.money import Money


class ExchangeRates:
    """A rate table: one unit of ``base`` buys ``rates[code]`` units of ``code``.

    Conversions between two other currencies go through the base (cross rates).

    >>> rates = ExchangeRates("USD", {"EUR": "0.92", "JPY": "150"})
    >>> rates.convert(Money("10.00", "EUR"), "JPY")
    Money('1630', 'JPY')
    """

    def __init__(self, base: str | Currency, rates: Mapping[str, str | int | Decimal]) -> None:
        self.base = get_currency(base)
        self._rates = {self.base.code: Decimal(1)}
        for code, rate in rates.items():
            if isinstance(rate, float):
                raise TypeError(f"give the rate for {code} as a str or Decimal, not a float")
            value = Decimal(rate)
            if not value > 0:
                raise ValueError(f"the rate for {code} must be positive, not {rate}")
            self._rates[get_currency(code).code] = value

    def rate(self, source: str | Currency, target: str | Currency) -> Decimal:
        """How many units of ``target`` one unit of ``source`` buys."""
        return self._rate_of(target) / self._rate_of(source)

    def convert(self, money: Money, target: str | Currency, *, rounded: bool = True) -> Money:
        """``money`` in ``target``, rounded to its minor unit unless ``rounded=False``."""
        converted = Money(money.amount * self.rate(money.currency, target), target)
        return converted.rounded() if rounded else converted

    def _rate_of(self, currency: str | Currency) -> Decimal:
        code = get_currency(currency).code
        try:
            return self._rates[code]
        except KeyError:
            raise UnknownCurrencyError(f"no exchange rate for {code} (base {self.base.code})") from None
''',
    "tinymoney/formatting.py": r'''
"""Amounts as people write them: '$1,234.50', '-€0.99', '¥1,500', 'CHF 12.00', and back."""

from __future__ import annotations

import re
from decimal import Decimal

from tinymoney.currency import CURRENCIES, get_currency
from tinymoney.errors import CurrencyMismatchError
from tinymoney.money import Money

_AMOUNT_RE = re.compile(r"\d+(?:\.\d+)?")


def group_digits(digits: str, separator: str = ",") -> str:
    """``'1234567'`` -> ``'1,234,567'``."""
    groups = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    groups.insert(0, digits)
    return separator.join(groups)


def format_money(money: Money, *, symbol: bool = True, grouping: bool = True, decimal_point: str = ".",
                 thousands_sep: str = ",") -> str:
    """The amount rounded to its minor unit, with the currency symbol in front.

    A one-character symbol is written right before the digits (``$5.00``), a longer
    one with a space (``CHF 5.00``); a negative amount starts with a minus sign.
    """
    value = money.rounded().amount
    text = f"{abs(value):.{money.currency.exponent}f}"
    whole, _, fraction = text.partition(".")
    if grouping:
        whole = group_digits(whole, thousands_sep)
    body = whole + (decimal_point + fraction if fraction else "")
    sign = "-" if value < 0 else ""
    if not symbol:
        return sign + body
    mark = money.currency.symbol
    return f"{sign}{mark}{body}" if len(mark) == 1 else f"{sign}{mark} {body}"


def parse_money(text: str, currency: str | None = None) -> Money:
    """Read an amount written by ``format_money`` (default separators), or as ``'12.50 EUR'``.

    ``currency`` is used when the text names none, and must agree when it does.
    """
    rest = text.strip()
    negative = rest.startswith("-")
    rest = rest.lstrip("-").strip()
    code = None
    for cur in sorted(CURRENCIES.values(), key=lambda c: (-len(c.symbol), c.code)):
        if rest.startswith(cur.symbol):
            code, rest = cur.code, rest[len(cur.symbol):].strip()
            break
    else:
        head, _, tail = rest.rpartition(" ")
        if head and tail.isalpha():
            code, rest = get_currency(tail).code, head.strip()
    if currency is not None:
        wanted = get_currency(currency).code
        if code is not None and code != wanted:
            raise CurrencyMismatchError(f"{text!r} is in {code}, not {wanted}")
        code = wanted
    if code is None:
        raise ValueError(f"no currency in {text!r}; pass currency=...")
    digits = rest.replace(",", "")
    if not _AMOUNT_RE.fullmatch(digits):
        raise ValueError(f"not an amount: {text!r}")
    amount = Decimal(digits)
    return Money(-amount if negative else amount, code)
''',
    "tests/test_currency.py": r'''
from decimal import Decimal

import pytest

from tinymoney import CURRENCIES, UnknownCurrencyError, get_currency


def test_lookup_ignores_letter_case():
    assert get_currency("eur") is CURRENCIES["EUR"]


def test_unknown_code_raises():
    with pytest.raises(UnknownCurrencyError, match="XYZ"):
        get_currency("XYZ")


def test_quantum_follows_the_exponent():
    assert get_currency("USD").quantum == Decimal("0.01")
    assert get_currency("JPY").quantum == Decimal("1")
    assert get_currency("KWD").quantum == Decimal("0.001")


def test_a_currency_passes_through():
    usd = CURRENCIES["USD"]
    assert get_currency(usd) is usd
''',
    "tests/test_money.py": r'''
from decimal import ROUND_DOWN, Decimal

import pytest

from tinymoney import CurrencyMismatchError, Money


def test_amounts_are_exact():
    assert Money("0.1") + Money("0.2") == Money("0.3")


def test_float_amounts_are_rejected():
    with pytest.raises(TypeError, match="float"):
        Money(0.1)


def test_bad_amounts_are_rejected():
    for bad in ("abc", "", "NaN"):
        with pytest.raises(ValueError):
            Money(bad)


def test_currencies_do_not_mix():
    with pytest.raises(CurrencyMismatchError):
        Money("1", "USD") + Money("1", "EUR")


def test_repr():
    assert repr(Money("19.99", "EUR") + Money("0.01", "EUR")) == "Money('20.00', 'EUR')"


def test_multiplication():
    assert Money("2.50") * 3 == Money("7.50")
    assert 3 * Money("2.50") == Money("7.50")
    assert Money("10") * Decimal("0.15") == Money("1.50")


def test_multiplying_money_by_money_is_an_error():
    with pytest.raises(TypeError):
        Money("2") * Money("3")
    with pytest.raises(TypeError, match="float"):
        Money("2") * 1.5


def test_rounding_to_the_minor_unit():
    assert Money("2.344").rounded() == Money("2.34")
    assert Money("2.346").rounded().amount == Decimal("2.35")
    assert Money("1499.4", "JPY").rounded() == Money("1499", "JPY")


def test_explicit_rounding_mode():
    assert Money("0.129").rounded(ROUND_DOWN) == Money("0.12")


def test_minor_units_of_dollars():
    assert Money.from_minor(1999) == Money("19.99")
    assert Money("19.99").to_minor() == 1999
    assert Money("-0.07").to_minor() == -7


def test_from_minor_uses_the_currency():
    assert Money.from_minor(500, "JPY") == Money("500", "JPY")
    assert Money.from_minor(1234, "KWD") == Money("1.234", "KWD")


def test_ordering():
    assert Money("1") < Money("2") <= Money("2")
    assert max(Money("3"), Money("10"), Money("7")) == Money("10")


def test_comparing_across_currencies_raises():
    with pytest.raises(CurrencyMismatchError):
        sorted([Money("1", "USD"), Money("2", "GBP")])
    assert Money("1", "USD") != Money("1", "GBP")


def test_negation_and_abs():
    assert -Money("2.50") == Money("-2.50")
    assert abs(Money("-2.50")) == Money("2.50")
    assert not Money("0.00")


def test_equal_amounts_hash_alike():
    assert hash(Money("1.0")) == hash(Money("1.00"))
    assert len({Money("1.0"), Money("1.00"), Money("1", "EUR")}) == 2


def test_sum_with_a_money_start():
    assert sum([Money("1.25"), Money("2.50")], Money("0")) == Money("3.75")
''',
    "tests/test_allocate.py": r'''
from decimal import Decimal

import pytest

from tinymoney import Money, allocate, split_evenly


def test_even_split():
    assert allocate(Money("100.00"), [1, 1]) == [Money("50"), Money("50")]


def test_proportional_split():
    assert allocate(Money("100.00"), [70, 20, 10]) == [Money("70"), Money("20"), Money("10")]


def test_decimal_ratios():
    assert allocate(Money("10.00"), [Decimal("0.25"), Decimal("0.75")]) == [Money("2.50"), Money("7.50")]


def test_negative_amounts():
    assert allocate(Money("-10.00"), [1, 4]) == [Money("-2"), Money("-8")]


def test_zero_ratio_gets_nothing():
    assert allocate(Money("8.00"), [1, 0, 1]) == [Money("4"), Money("0"), Money("4")]


def test_bad_ratios_raise():
    with pytest.raises(ValueError, match="at least one ratio"):
        allocate(Money("1"), [])
    with pytest.raises(ValueError, match="negative"):
        allocate(Money("1"), [1, -1])
    with pytest.raises(ValueError, match="positive"):
        allocate(Money("1"), [0, 0])


def test_split_evenly():
    assert split_evenly(Money("9.00"), 3) == [Money("3")] * 3


def test_split_evenly_needs_a_positive_count():
    with pytest.raises(ValueError):
        split_evenly(Money("9.00"), 0)
''',
    "tests/test_exchange.py": r'''
from decimal import Decimal

import pytest

from tinymoney import ExchangeRates, Money, UnknownCurrencyError

RATES = ExchangeRates("USD", {"EUR": "0.92", "JPY": "150", "GBP": Decimal("0.8")})


def test_direct_and_cross_rates():
    assert RATES.rate("USD", "EUR") == Decimal("0.92")
    assert RATES.rate("GBP", "JPY") == Decimal("187.5")
    assert RATES.rate("EUR", "EUR") == 1


def test_convert_rounds_to_the_target_currency():
    assert RATES.convert(Money("10.00", "EUR"), "JPY") == Money("1630", "JPY")
    assert RATES.convert(Money("3", "USD"), "GBP") == Money("2.40", "GBP")
    assert RATES.convert(Money("1", "EUR"), "USD", rounded=False).amount > Decimal("1.0869")


def test_bad_rates():
    with pytest.raises(UnknownCurrencyError, match="CHF"):
        RATES.convert(Money("1", "CHF"), "USD")
    with pytest.raises(ValueError, match="positive"):
        ExchangeRates("USD", {"EUR": "0"})
    with pytest.raises(TypeError):
        ExchangeRates("USD", {"EUR": 0.92})
''',
    "tests/test_formatting.py": r'''
import pytest

from tinymoney import CurrencyMismatchError, Money, format_money, parse_money


def test_dollars():
    assert format_money(Money("1234.5")) == "$1,234.50"
    assert format_money(Money("1234567.891")) == "$1,234,567.89"
    assert format_money(Money("0.99")) == "$0.99"


def test_yen_has_no_decimals():
    assert format_money(Money("1500", "JPY")) == "¥1,500"


def test_long_symbols_get_a_space():
    assert format_money(Money("12", "CHF")) == "CHF 12.00"


def test_custom_separators():
    text = format_money(Money("1234.5", "EUR"), decimal_point=",", thousands_sep=".")
    assert text == "€1.234,50"


def test_without_symbol_or_grouping():
    assert format_money(Money("1234.5"), symbol=False, grouping=False) == "1234.50"


def test_parse_money():
    assert parse_money("$1,234.50") == Money("1234.50")
    assert parse_money("12.00 EUR") == Money("12", "EUR")
    assert parse_money("-€3.20") == Money("-3.20", "EUR")
    assert parse_money("42", currency="gbp") == Money("42", "GBP")


def test_parse_money_errors():
    with pytest.raises(ValueError, match="no currency"):
        parse_money("12.50")
    with pytest.raises(ValueError, match="not an amount"):
        parse_money("$12.5.0")
    with pytest.raises(CurrencyMismatchError):
        parse_money("$5", currency="EUR")


def test_round_trip():
    for money in (Money("1234.5"), Money("1500", "JPY"), Money("12", "CHF"), Money("0.99", "GBP")):
        assert parse_money(format_money(money)) == money
''',
    **scaffold("tinymoney", "0.9", "Exact money amounts, allocation and formatting", r'''
# tinymoney

Exact money amounts (`decimal.Decimal`) in ISO 4217 currencies: arithmetic that
refuses to mix currencies, rounding to the minor unit, allocation that never loses
a cent, and formatting.

```python
from tinymoney import Money, allocate, format_money

price = Money("19.99", "EUR")
format_money(price * 3)            # '€59.97'
allocate(Money("100.00"), [1, 1, 1])
# [Money('33.34', 'USD'), Money('33.33', 'USD'), Money('33.33', 'USD')]
```

Rounding is half away from zero (`ROUND_HALF_UP`) unless you pass another mode.
Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("tinymoney", "0.9", TINYMONEY_FILES, (
    Bug(
        key="rounding_mode",
        kind="wrong rounding mode (half-even instead of half-up)",
        inject=(Edit("tinymoney/money.py", "from decimal import ROUND_HALF_UP, Decimal, InvalidOperation",
                     "from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation"),
                Edit("tinymoney/money.py", "def rounded(self, rounding: str = ROUND_HALF_UP) -> Money:",
                     "def rounded(self, rounding: str = ROUND_HALF_EVEN) -> Money:")),
        tests=(add_tests("tests/test_money.py", r'''
def test_ties_round_away_from_zero():
    assert Money("0.125").rounded() == Money("0.13")
    assert Money("-0.125").rounded() == Money("-0.13")
    assert Money("2.5", "JPY").rounded() == Money("3", "JPY")
'''),),
        fail_to_pass=("tests/test_money.py::test_ties_round_away_from_zero",),
        title="Money.rounded() rounds 0.125 down to 0.12",
        body=issue(r'''
Invoices computed with tinymoney are off by a cent compared with our accounting
system whenever a line ends in exactly half a cent:

```python
>>> from tinymoney import Money
>>> Money("0.125").rounded()
Money('0.12', 'USD')
>>> Money("0.135").rounded()
Money('0.14', 'USD')
```

That looks like banker's rounding (ties to even). Both the README and the docstring
of `rounded()` say ties go away from zero, so I expected `Money('0.13', 'USD')`.
The same happens for yen: `Money("2.5", "JPY").rounded()` gives 2, not 3.
`format_money` and `to_minor()` are affected too, since they round the same way.
'''),
        hint="Check the default rounding mode.",
    ),
    Bug(
        key="minor_units",
        kind="logic error: minor units assume two decimals",
        inject=(Edit("tinymoney/money.py", "return int(self.rounded().amount.scaleb(self.currency.exponent))",
                     "return int(self.rounded().amount * 100)"),),
        tests=(add_tests("tests/test_money.py", r'''
def test_to_minor_uses_the_currency_exponent():
    assert Money("500", "JPY").to_minor() == 500
    assert Money("1.234", "KWD").to_minor() == 1234
'''), add_tests("tests/test_allocate.py", r'''
def test_allocate_yen():
    assert allocate(Money("1000", "JPY"), [1, 1, 1]) == [Money("334", "JPY"), Money("333", "JPY"),
                                                        Money("333", "JPY")]
''')),
        fail_to_pass=("tests/test_allocate.py::test_allocate_yen",
                      "tests/test_money.py::test_to_minor_uses_the_currency_exponent"),
        title="to_minor() is wrong for JPY and KWD (and allocate() multiplies yen by 100)",
        body=issue(r'''
```python
>>> from tinymoney import Money, allocate
>>> Money("500", "JPY").to_minor()
50000
>>> Money("1.234", "KWD").to_minor()
123
```

The yen has no minor unit, so 500 JPY is 500 minor units; the Kuwaiti dinar has
1000 fils, so 1.234 KWD is 1234. `from_minor()` already gets this right
(`Money.from_minor(500, "JPY")` is 500 yen), so the two are not inverses.

This also breaks allocation:

```python
>>> allocate(Money("1000", "JPY"), [1, 1])
[Money('50000', 'JPY'), Money('50000', 'JPY')]
```
'''),
        hint="The number of minor digits is a property of the currency.",
    ),
    Bug(
        key="allocate_leftover",
        kind="off-by-one: one leftover unit is lost",
        inject=(Edit("tinymoney/allocate.py", "for rank in range(leftover):", "for rank in range(1, leftover):"),),
        tests=(add_tests("tests/test_allocate.py", r'''
def test_leftover_cents_are_handed_out():
    assert allocate(Money("0.05"), [1, 1, 1]) == [Money("0.02"), Money("0.02"), Money("0.01")]


def test_parts_add_up_to_the_total():
    for amount in ("100.00", "0.01", "-7.00", "10.01"):
        parts = allocate(Money(amount), [1, 1, 1])
        assert sum(parts, Money("0")) == Money(amount)
'''),),
        fail_to_pass=("tests/test_allocate.py::test_leftover_cents_are_handed_out",
                      "tests/test_allocate.py::test_parts_add_up_to_the_total"),
        title="allocate() loses a cent when the amount does not split evenly",
        body=issue(r'''
The docs promise that the parts always add up to the original amount, but:

```python
>>> from tinymoney import Money, allocate
>>> parts = allocate(Money("100.00"), [1, 1, 1])
>>> parts
[Money('33.34', 'USD'), Money('33.33', 'USD'), Money('33.33', 'USD')]
```

is what I expected; instead I get three times `33.33`, which sums to 99.99. With
`allocate(Money("0.05"), [1, 1, 1])` I get `0.01, 0.02, 0.01` (4 cents) instead
of `0.02, 0.02, 0.01`. Even splits such as `[1, 1]` of 100.00 are fine, so it
seems to happen only when there is something left over after the whole cents
are shared out.
'''),
        hint="Count how many leftover units are actually distributed.",
    ),
    Bug(
        key="negative_format",
        kind="negative numbers: sign after the symbol",
        inject=(Edit("tinymoney/formatting.py",
                     'return f"{sign}{mark}{body}" if len(mark) == 1 else f"{sign}{mark} {body}"',
                     'return f"{mark}{sign}{body}" if len(mark) == 1 else f"{mark} {sign}{body}"'),),
        tests=(add_tests("tests/test_formatting.py", r'''
def test_negative_amounts_start_with_the_sign():
    assert format_money(Money("-1234.5")) == "-$1,234.50"
    assert format_money(Money("-12", "CHF")) == "-CHF 12.00"
    assert parse_money(format_money(Money("-0.99", "EUR"))) == Money("-0.99", "EUR")
'''),),
        fail_to_pass=("tests/test_formatting.py::test_negative_amounts_start_with_the_sign",),
        title="format_money() writes refunds as `$-5.00`",
        body=issue(r'''
Negative amounts are formatted with the minus sign between the symbol and the
digits:

```python
>>> from tinymoney import Money, format_money
>>> format_money(Money("-1234.5"))
'$-1,234.50'
>>> format_money(Money("-12", "CHF"))
'CHF -12.00'
```

The docstring says a negative amount starts with a minus sign, i.e. `-$1,234.50`
and `-CHF 12.00`. Besides looking odd on our refund receipts, `parse_money()`
cannot read these strings back, so `parse_money(format_money(m))` fails for any
negative `m`.
'''),
        hint="",
    ),
    Bug(
        key="sum_radd",
        kind="missing return",
        inject=(Edit("tinymoney/money.py",
                     "            return Money(self.amount, self.currency)\n        return self.__add__",
                     "            Money(self.amount, self.currency)\n        return self.__add__"),),
        tests=(add_tests("tests/test_money.py", r'''
def test_builtin_sum_without_a_start_value():
    assert sum([Money("1.10"), Money("2.20")]) == Money("3.30")
    assert sum([Money("5", "EUR")]) == Money("5", "EUR")
'''),),
        fail_to_pass=("tests/test_money.py::test_builtin_sum_without_a_start_value",),
        title="sum() of Money values raises TypeError",
        body=issue(r'''
Adding up a list of prices with the builtin `sum()` fails:

```python
>>> from tinymoney import Money
>>> sum([Money("1.10"), Money("2.20")])
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
TypeError: unsupported operand type(s) for +: 'int' and 'Money'
```

Passing a start value (`sum(items, Money("0"))`) works, but that forces callers to
know the currency up front. Expected `Money('3.30', 'USD')`.
'''),
        hint="The zero case is special-cased already, but look at what that branch gives back.",
    ),
)))


# ====================================================================== semverkit: semantic versions and ranges
SEMVERKIT_FILES = sources({
    "semverkit/__init__.py": r'''
"""semverkit: parse, compare and bump semantic versions, and match them against npm-style ranges."""

from semverkit.bump import bump
from semverkit.errors import InvalidRange, InvalidVersion
from semverkit.ranges import Range, max_satisfying, min_satisfying, satisfies
from semverkit.version import Version

__all__ = ["InvalidRange", "InvalidVersion", "Range", "Version", "bump", "max_satisfying", "min_satisfying",
           "satisfies"]
__version__ = "2.1"
''',
    "semverkit/errors.py": r'''
"""Exceptions raised by semverkit."""


class InvalidVersion(ValueError):
    """The text is not a semantic version (https://semver.org)."""


class InvalidRange(ValueError):
    """The text is not a version range."""
''',
    "semverkit/version.py": r'''
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
''',
    "semverkit/bump.py": r'''
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
''',
    "semverkit/ranges.py": r'''
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
''',
    "tests/test_version.py": r'''
import pytest

from semverkit import InvalidVersion, Version


def test_parse_core():
    assert Version.parse("1.2.3") == Version(1, 2, 3)
    assert Version.parse(" v10.20.30 ") == Version(10, 20, 30)


def test_parse_prerelease_and_build():
    version = Version.parse("1.0.0-alpha.1+001")
    assert version.prerelease == ("alpha", "1")
    assert version.build == ("001",)
    assert version.is_prerelease


def test_invalid_versions():
    for text in ("1.2", "1.2.3.4", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "a.b.c", ""):
        with pytest.raises(InvalidVersion):
            Version.parse(text)


def test_str_round_trip():
    for text in ("1.2.3", "1.0.0-rc.1", "2.0.0+build.5", "1.0.0-alpha+sha.1", "0.0.1-x-y-z.9"):
        assert str(Version.parse(text)) == text


def test_release_outranks_its_prereleases():
    assert Version.parse("1.0.0-rc.1") < Version.parse("1.0.0")
    assert Version.parse("1.0.0") < Version.parse("1.0.1-alpha")


def test_precedence_of_prereleases():
    chain = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-rc.1",
             "1.0.0"]
    versions = [Version.parse(text) for text in chain]
    assert versions == sorted(reversed(versions))


def test_build_metadata_is_ignored_for_precedence():
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
    assert hash(Version.parse("1.0.0+a")) == hash(Version.parse("1.0.0"))


def test_numbers_compare_numerically():
    assert Version.parse("1.10.0") > Version.parse("1.9.0")
    assert Version.parse("2.0.0") > Version.parse("1.99.99")


def test_comparison_with_strings():
    assert Version(1, 2, 3) == "1.2.3"
    assert Version(1, 2, 3) < "1.2.4"


def test_negative_numbers_are_rejected():
    with pytest.raises(InvalidVersion):
        Version(1, -1, 0)
''',
    "tests/test_bump.py": r'''
import pytest

from semverkit import bump


def test_bump_major():
    assert str(bump("1.4.2", "major")) == "2.0.0"


def test_bump_minor():
    assert str(bump("1.4.0", "minor")) == "1.5.0"


def test_bump_patch():
    assert str(bump("1.4.2", "patch")) == "1.4.3"


def test_bump_patch_of_a_prerelease_releases_it():
    assert str(bump("1.4.2-rc.1", "patch")) == "1.4.2"


def test_bump_prerelease():
    assert str(bump("1.4.2", "prerelease")) == "1.4.3-rc.0"
    assert str(bump("1.4.2-rc.0", "prerelease")) == "1.4.2-rc.1"
    assert str(bump("1.0.0-beta", "prerelease")) == "1.0.0-beta.0"
    assert str(bump("1.4.2", "prerelease", label="alpha")) == "1.4.3-alpha.0"


def test_bump_drops_build_metadata():
    assert str(bump("1.4.2+exp.7", "patch")) == "1.4.3"


def test_unknown_part():
    with pytest.raises(ValueError, match="part must be one of"):
        bump("1.0.0", "micro")
''',
    "tests/test_ranges.py": r'''
import pytest

from semverkit import InvalidRange, Range, Version, max_satisfying, min_satisfying, satisfies


def test_comparators():
    assert satisfies("1.5.0", ">=1.2.0 <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0 <2.0.0")
    assert satisfies("1.2.0", "=1.2.0") and satisfies("1.2.0", "1.2.0")


def test_caret():
    assert satisfies("1.9.9", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
    assert not satisfies("1.2.2", "^1.2.3")
    assert satisfies("0.2.9", "^0.2.3")
    assert not satisfies("0.3.0", "^0.2.3")


def test_tilde():
    assert satisfies("1.2.9", "~1.2.3")
    assert not satisfies("1.3.0", "~1.2.3")
    assert satisfies("1.9.0", "~1")


def test_x_ranges():
    assert satisfies("1.2.7", "1.2.x")
    assert not satisfies("1.3.0", "1.2.x")
    assert satisfies("1.99.0", "1")
    assert satisfies("42.0.0", "*")


def test_partial_comparators():
    assert satisfies("1.2.9", "<1.3") and not satisfies("1.3.0", "<1.3")
    assert satisfies("1.3.0", ">1.2") and not satisfies("1.2.9", ">1.2")
    assert satisfies("1.2.9", "<=1.2") and not satisfies("1.3.0", "<=1.2")


def test_alternatives():
    assert satisfies("3.1.0", "^1.0.0 || ^3.0.0")
    assert not satisfies("2.0.0", "^1.0.0 || ^3.0.0")


def test_prereleases_are_excluded_by_default():
    assert not satisfies("2.0.0-rc.1", ">=1.0.0")
    assert satisfies("2.0.0-rc.1", ">=1.0.0", include_prerelease=True)
    assert satisfies("1.2.3-rc.2", ">=1.2.3-rc.1")


def test_range_membership():
    assert "1.4.0" in Range("~1.4")
    assert Version(1, 5, 0) not in Range("~1.4")


def test_max_and_min_satisfying():
    versions = ["1.2.0", "1.4.1", "2.0.0", "1.3.5"]
    assert max_satisfying(versions, "^1.0") == Version(1, 4, 1)
    assert min_satisfying(versions, "^1.3") == Version(1, 3, 5)
    assert min_satisfying(versions, "^3.0") is None


def test_invalid_range():
    with pytest.raises(InvalidRange):
        satisfies("1.0.0", ">=banana")
''',
    **scaffold("semverkit", "2.1", "Semantic versions and npm-style ranges", r'''
# semverkit

Parse, compare and bump [semantic versions](https://semver.org), and match them
against npm-style ranges.

```python
from semverkit import Version, bump, max_satisfying, satisfies

Version.parse("1.0.0-rc.2") < Version.parse("1.0.0")      # True
str(bump("1.4.2", "minor"))                                # '1.5.0'
satisfies("1.9.0", "^1.2.3")                               # True
max_satisfying(["1.2.0", "1.4.1", "2.0.0"], "~1.4")        # Version(1, 4, 1)
```

Ranges support `<`, `<=`, `>`, `>=`, `=`, `^`, `~`, x-ranges (`1.2.x`, `1`, `*`)
and `||`. Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("semverkit", "2.1", SEMVERKIT_FILES, (
    Bug(
        key="build_hyphen",
        kind="parsing edge case: hyphen in build metadata",
        inject=(Edit("semverkit/version.py", '_BUILD_ID = r"[0-9A-Za-z-]+"', '_BUILD_ID = r"[0-9A-Za-z]+"'),),
        tests=(add_tests("tests/test_version.py", r'''
def test_build_metadata_may_contain_hyphens():
    assert Version.parse("1.0.0+21AF26D3----117B344092BD").build == ("21AF26D3----117B344092BD",)
    assert str(Version.parse("1.0.0-beta+exp.sha-5114f85")) == "1.0.0-beta+exp.sha-5114f85"
'''),),
        fail_to_pass=("tests/test_version.py::test_build_metadata_may_contain_hyphens",),
        title="Valid versions with a hyphen in the build metadata are rejected",
        body=issue(r'''
Our CI stamps builds with the branch name, e.g. `2.3.0+feature-login.41`, and
semverkit refuses it:

```python
>>> from semverkit import Version
>>> Version.parse("2.3.0+feature-login.41")
Traceback (most recent call last):
  ...
semverkit.errors.InvalidVersion: not a semantic version: '2.3.0+feature-login.41'
```

The spec (item 10) allows hyphens in build identifiers, and even lists
`1.0.0+21AF26D3----117B344092BD` and `1.0.0-beta+exp.sha.5114f85` among its
examples. Hyphens in the pre-release part are accepted (`0.0.1-x-y-z.9` parses).
'''),
        hint="Compare the characters we accept in build identifiers with the grammar in the spec.",
    ),
    Bug(
        key="numeric_prerelease",
        kind="logic error: numeric identifiers compared as text",
        inject=(Edit("semverkit/version.py", "        return (0, int(identifier))", "        return (0, identifier)"),),
        tests=(add_tests("tests/test_version.py", r'''
def test_numeric_prerelease_identifiers_compare_as_numbers():
    assert Version.parse("1.0.0-rc.10") > Version.parse("1.0.0-rc.9")
    chain = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
             "1.0.0-rc.1", "1.0.0"]
    versions = [Version.parse(text) for text in chain]
    assert versions == sorted(reversed(versions))
'''),),
        fail_to_pass=("tests/test_version.py::test_numeric_prerelease_identifiers_compare_as_numbers",),
        title="1.0.0-rc.10 sorts before 1.0.0-rc.9",
        body=issue(r'''
Our release tool picks the newest release candidate with `max()`, and after our
tenth candidate it went back to an old one:

```python
>>> from semverkit import Version
>>> Version.parse("1.0.0-rc.10") > Version.parse("1.0.0-rc.9")
False
>>> max(Version.parse(v) for v in ["1.0.0-rc.9", "1.0.0-rc.10"])
Version(major=1, minor=0, patch=0, prerelease=('rc', '9'), build=())
```

According to semver 11.4.1, identifiers consisting of only digits are compared
numerically, so `rc.10` is newer than `rc.9`. The example chain in the spec
(`... < 1.0.0-beta.2 < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0`) is not sorted
correctly either.
'''),
        hint="Pre-release identifiers go through a sort key; check what it does with digit-only ones.",
    ),
    Bug(
        key="bump_minor",
        kind="logic error: bump does not reset the patch number",
        inject=(Edit("semverkit/bump.py", "return Version(current.major, current.minor + 1, 0)",
                     "return Version(current.major, current.minor + 1, current.patch)"),),
        tests=(add_tests("tests/test_bump.py", r'''
def test_bump_minor_resets_the_patch():
    assert str(bump("1.4.2", "minor")) == "1.5.0"
    assert str(bump("0.9.17-rc.3+build.1", "minor")) == "0.10.0"
'''),),
        fail_to_pass=("tests/test_bump.py::test_bump_minor_resets_the_patch",),
        title="bump(..., 'minor') keeps the old patch number",
        body=issue(r'''
```python
>>> from semverkit import bump
>>> str(bump("1.4.2", "minor"))
'1.5.2'
```

Expected `'1.5.0'`; that is even the example in the docstring of `bump`. When the
patch is already 0 it looks right, which is probably why we only noticed after
releasing `3.2.1` as the next minor version after `3.1.1`.
'''),
        hint="Bumping a part should reset every part after it.",
    ),
    Bug(
        key="caret_zero",
        kind="boundary: caret range with 0.0.x",
        inject=(Edit("semverkit/ranges.py",
                     "    elif minor > 0 or patch is None:\n        high = Version(0, minor + 1, 0)\n"
                     "    else:\n        high = Version(0, 0, patch + 1)\n",
                     "    else:\n        high = Version(0, minor + 1, 0)\n"),),
        tests=(add_tests("tests/test_ranges.py", r'''
def test_caret_with_zero_major_and_minor():
    assert satisfies("0.0.3", "^0.0.3")
    assert not satisfies("0.0.4", "^0.0.3")
    assert not satisfies("0.1.0", "^0.0.3")
    assert satisfies("0.0.9", "^0.0")
'''),),
        fail_to_pass=("tests/test_ranges.py::test_caret_with_zero_major_and_minor",),
        title="^0.0.3 matches 0.0.4",
        body=issue(r'''
For `0.0.x` versions every release may break the API, and npm's caret rule
reflects that: `^0.0.3` means `>=0.0.3 <0.0.4`. semverkit lets newer patch
releases through:

```python
>>> from semverkit import satisfies
>>> satisfies("0.0.4", "^0.0.3")
True
>>> satisfies("0.0.9", "^0.0.3")
True
```

Both should be `False`. `^0.2.3` is handled correctly (it stops before `0.3.0`).
'''),
        hint="npm's caret rule has three cases, depending on which part is the left-most non-zero one.",
    ),
    Bug(
        key="max_satisfying_empty",
        kind="empty input: no matching version",
        inject=(Edit("semverkit/ranges.py",
                     "    return max(matching) if matching else None",
                     "    return max(matching)"),),
        tests=(add_tests("tests/test_ranges.py", r'''
def test_max_satisfying_without_a_match():
    assert max_satisfying(["1.0.0", "1.1.0"], "^2.0.0") is None
    assert max_satisfying([], "*") is None
'''),),
        fail_to_pass=("tests/test_ranges.py::test_max_satisfying_without_a_match",),
        title="max_satisfying() crashes when nothing matches",
        body=issue(r'''
```python
>>> from semverkit import max_satisfying
>>> max_satisfying(["1.0.0", "1.1.0"], "^2.0.0")
Traceback (most recent call last):
  ...
ValueError: max() arg is an empty sequence
```

The docstring says it returns `None` when none of the versions is in the range, and
`min_satisfying()` does return `None` in the same situation. Same for an empty list
of versions.
'''),
        hint="min_satisfying() handles this case; max_satisfying() should do the same.",
    ),
)))


# ====================================================================== slugtext: slugs, tokens and shortening
SLUGTEXT_FILES = sources({
    "slugtext/__init__.py": r'''
"""slugtext: URL slugs, word/number/sentence tokens and text shortening."""

from slugtext.case import split_identifier, title_case, to_camel, to_kebab, to_snake
from slugtext.normalize import collapse_whitespace, strip_accents, to_ascii
from slugtext.shorten import excerpt, truncate, wrap
from slugtext.slugify import slugify, unique_slug
from slugtext.tokenize import ngrams, sentences, tokenize, words

__all__ = ["collapse_whitespace", "excerpt", "ngrams", "sentences", "slugify", "split_identifier", "strip_accents",
           "title_case", "to_ascii", "to_camel", "to_kebab", "to_snake", "tokenize", "truncate", "unique_slug",
           "words", "wrap"]
__version__ = "0.4"
''',
    "slugtext/normalize.py": r'''
"""Unicode clean-up shared by the slug and token functions."""

import unicodedata

# Letters that Unicode decomposition does not turn into an ASCII base letter.
TRANSLITERATIONS = {"ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
                    "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th"}


def strip_accents(text: str) -> str:
    """``text`` without combining marks: ``'Crème Brûlée'`` -> ``'Creme Brulee'``."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def to_ascii(text: str) -> str:
    """Best-effort ASCII: a few letters transliterated, accents stripped, anything else dropped."""
    text = "".join(TRANSLITERATIONS.get(char, char) for char in text)
    return strip_accents(text).encode("ascii", "ignore").decode("ascii")


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (newlines and tabs included) as one space, none at the ends."""
    return " ".join(text.split())
''',
    "slugtext/case.py": r'''
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
''',
    "slugtext/slugify.py": r'''
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
''',
    "slugtext/tokenize.py": r'''
"""Tokens (words, numbers, symbols), sentences and n-grams."""

from __future__ import annotations

import re
from collections.abc import Sequence

TOKEN_RE = re.compile(r"""
    (?P<number>(?<![\w.])-?\d+(?:[.,]\d+)*)   # 42, -3.5, 1,000,000
  | (?P<word>[^\W_]+(?:['’][^\W_]+)*)         # words, with inner apostrophes: don't, l’homme
  | (?P<symbol>[^\w\s])                        # any other visible character, on its own
""", re.VERBOSE)
ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e", "no", "fig"})
_BOUNDARY_RE = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def tokenize(text: str, *, lowercase: bool = False) -> list[str]:
    """Words, numbers and single symbols of ``text``, in order; whitespace is dropped.

    >>> tokenize("Don't pay -3.50 for it!")
    ["Don't", 'pay', '-3.50', 'for', 'it', '!']
    """
    tokens = [match.group() for match in TOKEN_RE.finditer(text)]
    return [token.lower() for token in tokens] if lowercase else tokens


def words(text: str) -> list[str]:
    """The word and number tokens of ``text`` (no symbols)."""
    return [match.group() for match in TOKEN_RE.finditer(text) if match.lastgroup != "symbol"]


def sentences(text: str) -> list[str]:
    """``text`` split after ``.``, ``!`` or ``?`` when a capital letter or digit follows.

    A period after a known abbreviation (``Dr.``, ``e.g.``) does not end a sentence.
    """
    found, start = [], 0
    for match in _BOUNDARY_RE.finditer(text):
        before = text[start:match.start()].split()
        if match.group().startswith(".") and before and before[-1].lower().lstrip("(\"'") in ABBREVIATIONS:
            continue
        found.append(text[start:match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    return found + [tail] if tail else found


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens: ``ngrams(['a', 'b', 'c'], 2) == [('a', 'b'), ('b', 'c')]``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
''',
    "slugtext/shorten.py": r'''
"""Shorten text to a width, or wrap it into lines, at word boundaries."""

from __future__ import annotations

from slugtext.normalize import collapse_whitespace


def truncate(text: str, width: int, *, placeholder: str = "…") -> str:
    """``text``, whitespace collapsed, cut to at most ``width`` characters, placeholder included.

    The cut falls between words when it can; a first word longer than the room
    left is cut inside.

    >>> truncate("The quick brown fox", 12)
    'The quick…'
    """
    if width < len(placeholder):
        raise ValueError(f"width {width} is too small for the placeholder {placeholder!r}")
    text = collapse_whitespace(text)
    if len(text) <= width:
        return text
    room = width - len(placeholder)
    cut = text[:room + 1]  # one character more shows whether the cut falls on a space
    cut = cut[:cut.rindex(" ")] if " " in cut else cut[:room]
    return cut.rstrip(" ,;:") + placeholder


def excerpt(text: str, query: str, width: int = 60, *, placeholder: str = "…") -> str:
    """About ``width`` characters of ``text`` around the first match of ``query`` (any letter case).

    The cuts fall between words, and a placeholder marks each side that was cut.
    Without a match, the beginning of the text, as ``truncate`` gives it.
    """
    text = collapse_whitespace(text)
    index = text.lower().find(query.lower()) if query else -1
    if index < 0 or len(text) <= width:
        return truncate(text, width, placeholder=placeholder)
    end = min(len(text), max(index - (width - len(query)) // 2, 0) + width)
    start = max(0, end - width)
    if start > 0:
        space = text.find(" ", start, index)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", index + len(query), end)
        end = space if space != -1 else end
    return (placeholder if start > 0 else "") + text[start:end] + (placeholder if end < len(text) else "")


def wrap(text: str, width: int) -> list[str]:
    """Greedy line wrapping of ``text``'s words; a word longer than ``width`` gets a line of its own."""
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    lines: list[str] = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines
''',
    "tests/test_normalize.py": r'''
from slugtext import collapse_whitespace, strip_accents, to_ascii


def test_strip_accents():
    assert strip_accents("Crème Brûlée à la française") == "Creme Brulee a la francaise"


def test_to_ascii_transliterates():
    assert to_ascii("Straße in Øresund, Łódź") == "Strasse in Oresund, Lodz"


def test_to_ascii_drops_what_it_cannot_spell():
    assert to_ascii("price: 5€") == "price: 5"


def test_collapse_whitespace():
    assert collapse_whitespace("  a\tb\n\n c  ") == "a b c"
''',
    "tests/test_slugify.py": r'''
import pytest

from slugtext import slugify, unique_slug


def test_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_accents_are_transliterated():
    assert slugify("Crème Brûlée: a recipe!") == "creme-brulee-a-recipe"
    assert slugify("Straße") == "strasse"


def test_apostrophes_are_dropped():
    assert slugify("Don't Stop Me Now") == "dont-stop-me-now"
    assert slugify("l’amour") == "lamour"


def test_custom_separator():
    assert slugify("Hello World", separator="_") == "hello_world"


def test_bad_separator():
    with pytest.raises(ValueError):
        slugify("Hello World", separator="x")


def test_keep_case():
    assert slugify("Hello World", lowercase=False) == "Hello-World"


def test_stopwords():
    assert slugify("a tale of two cities", stopwords=["a", "of"]) == "tale-two-cities"


def test_max_length_cuts_between_words():
    assert slugify("the quick brown fox", max_length=12) == "the-quick"


def test_max_length_cuts_a_long_first_word():
    assert slugify("supercalifragilistic", max_length=5) == "super"


def test_punctuation_and_underscores_separate_words():
    assert slugify("__init__ & main()") == "init-main"
    assert slugify("Python 3.11 released") == "python-3-11-released"


def test_nothing_left():
    assert slugify("") == ""
    assert slugify("!!! ???") == ""


def test_allow_unicode_with_ascii_text():
    assert slugify("Hello World", allow_unicode=True) == "hello-world"


def test_unique_slug():
    taken = {"hello-world", "hello-world-2"}
    assert unique_slug("Hello World", taken) == "hello-world-3"
    assert unique_slug("Something else", taken) == "something-else"
    assert unique_slug("!!!", set()) == "n-a"
    assert unique_slug("abcdef", {"abcdef"}, max_length=6) == "abcd-2"
''',
    "tests/test_case.py": r'''
from slugtext import split_identifier, title_case, to_camel, to_kebab, to_snake


def test_split_identifier():
    assert split_identifier("parseHTTPResponse_v2") == ["parse", "HTTP", "Response", "v2"]
    assert split_identifier("  kebab-case.and snake_case ") == ["kebab", "case", "and", "snake", "case"]


def test_snake_and_kebab():
    assert to_snake("parseHTTPResponse") == "parse_http_response"
    assert to_kebab("XMLHttpRequest") == "xml-http-request"


def test_camel():
    assert to_camel("parse_http_response") == "parseHttpResponse"
    assert to_camel("parse-http-response", upper_first=True) == "ParseHttpResponse"
    assert to_camel("") == ""


def test_title_case():
    assert title_case("the lord of the rings") == "The Lord of the Rings"
    assert title_case("what the iPhone is for") == "What the iPhone Is For"
''',
    "tests/test_tokenize.py": r'''
import pytest

from slugtext import ngrams, sentences, tokenize, words


def test_words_and_punctuation():
    assert tokenize("Hello, world!") == ["Hello", ",", "world", "!"]


def test_apostrophes_inside_words():
    assert tokenize("don't l’homme 'quoted'") == ["don't", "l’homme", "'", "quoted", "'"]


def test_integers_and_negative_numbers():
    assert tokenize("I have 3 cats and -2 dogs") == ["I", "have", "3", "cats", "and", "-2", "dogs"]


def test_minus_between_numbers_is_a_symbol():
    assert tokenize("5-3") == ["5", "-", "3"]


def test_lowercase_option():
    assert tokenize("Big DOG", lowercase=True) == ["big", "dog"]


def test_words_drop_symbols():
    assert words("Hello, world! 42") == ["Hello", "world", "42"]


def test_sentences():
    assert sentences("It rained. Then it stopped! Did it? Yes.") == [
        "It rained.", "Then it stopped!", "Did it?", "Yes."]


def test_sentences_skip_abbreviations():
    assert sentences("Dr. Smith arrived, e.g. At noon. He sat down.") == [
        "Dr. Smith arrived, e.g. At noon.", "He sat down."]


def test_ngrams():
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a", "b"], 3) == []
    assert ngrams(["a", "b"], 1) == [("a",), ("b",)]


def test_ngrams_need_a_positive_n():
    with pytest.raises(ValueError):
        ngrams(["a"], 0)
''',
    "tests/test_shorten.py": r'''
import pytest

from slugtext import excerpt, truncate, wrap


def test_short_text_is_unchanged():
    assert truncate("short", 10) == "short"


def test_truncate_at_a_word_boundary():
    assert truncate("The quick brown fox", 12) == "The quick…"


def test_truncate_collapses_whitespace():
    assert truncate("  lots   of\n space  ", 20) == "lots of space"


def test_placeholder_must_fit():
    with pytest.raises(ValueError, match="placeholder"):
        truncate("hello", 2, placeholder="...")


def test_excerpt_around_a_match():
    text = "The quick brown fox jumps over the lazy dog and runs far away"
    assert excerpt(text, "LAZY", 20) == "…the lazy dog…"
    assert excerpt(text, "quick", 20) == "The quick brown fox…"
    assert excerpt(text, "away", 20) == "…and runs far away"
    assert excerpt("a  short\ntext", "short") == "a short text"


def test_wrap():
    assert wrap("the quick brown fox jumps over the lazy dog", 10) == [
        "the quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_wrap_long_words():
    assert wrap("a supercalifragilistic word", 8) == ["a", "supercalifragilistic", "word"]


def test_wrap_needs_a_positive_width():
    with pytest.raises(ValueError):
        wrap("text", 0)
''',
    **scaffold("slugtext", "0.4", "Slugs, tokens and text shortening", r'''
# slugtext

Small text utilities: URL slugs, a tokenizer for words, numbers and symbols,
sentence splitting, n-grams, and shortening text at word boundaries.

```python
from slugtext import slugify, tokenize, truncate

slugify("Crème Brûlée: a recipe!")        # 'creme-brulee-a-recipe'
slugify("Zürich", allow_unicode=True)      # 'zürich'
tokenize("Don't pay -3.50 for it!")        # ["Don't", 'pay', '-3.50', 'for', 'it', '!']
truncate("The quick brown fox", 12)        # 'The quick…'
```

Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("slugtext", "0.4", SLUGTEXT_FILES, (
    Bug(
        key="unicode_slug",
        kind="unicode: non-ASCII letters dropped with allow_unicode",
        inject=(Edit("slugtext/slugify.py",
                     'WORD_RE = re.compile(r"[^\\W_]+")  # runs of letters and digits, in any script',
                     'WORD_RE = re.compile(r"[A-Za-z0-9]+")  # runs of letters and digits'),),
        tests=(add_tests("tests/test_slugify.py", r'''
def test_allow_unicode_keeps_letters():
    assert slugify("Zürich Straße", allow_unicode=True) == "zürich-straße"
    assert slugify("東京 タワー", allow_unicode=True) == "東京-タワー"
    assert slugify("Ελληνικά!", allow_unicode=True, lowercase=False) == "Ελληνικά"
'''),),
        fail_to_pass=("tests/test_slugify.py::test_allow_unicode_keeps_letters",),
        title="slugify(allow_unicode=True) drops every non-ASCII letter",
        body=issue(r'''
We build slugs for a multilingual site and pass `allow_unicode=True` so that
non-Latin titles keep their letters. The letters are dropped anyway:

```python
>>> from slugtext import slugify
>>> slugify("Zürich Straße", allow_unicode=True)
'z-rich-stra-e'
>>> slugify("東京 タワー", allow_unicode=True)
''
```

Expected `'zürich-straße'` and `'東京-タワー'`, as the README shows for Zürich.
Without `allow_unicode` the ASCII transliteration works as documented
(`'zurich-strasse'`).
'''),
        hint="The word pattern is shared by both modes.",
    ),
    Bug(
        key="max_length_exact",
        kind="off-by-one: a slug of exactly max_length loses its last word",
        inject=(Edit("slugtext/slugify.py", "        if length + extra > max_length:",
                     "        if length + extra >= max_length:"),),
        tests=(add_tests("tests/test_slugify.py", r'''
def test_max_length_is_inclusive():
    assert slugify("hello world", max_length=11) == "hello-world"
    assert slugify("one two three", max_length=7) == "one-two"
'''),),
        fail_to_pass=("tests/test_slugify.py::test_max_length_is_inclusive",),
        title="slugify(max_length=n) drops a word although the slug would be exactly n long",
        body=issue(r'''
```python
>>> from slugtext import slugify
>>> slugify("hello world", max_length=11)
'hello'
```

`'hello-world'` is 11 characters, so it fits in `max_length=11`; I expected the whole
slug back. Our URL column is `VARCHAR(40)` and titles that would make slugs of exactly
40 characters lose their last word for no reason. With `max_length=12` I get
`'hello-world'` as expected.
'''),
        hint="Check the comparison against max_length.",
    ),
    Bug(
        key="decimal_numbers",
        kind="edge case: decimal and grouped numbers split",
        inject=(Edit("slugtext/tokenize.py", r"(?P<number>(?<![\w.])-?\d+(?:[.,]\d+)*)   # 42, -3.5, 1,000,000",
                     r"(?P<number>(?<![\w.])-?\d+)   # 42, -3"),),
        tests=(add_tests("tests/test_tokenize.py", r'''
def test_decimal_and_grouped_numbers_are_one_token():
    assert tokenize("Pi is 3.14, not -2.5 or 1,000.") == [
        "Pi", "is", "3.14", ",", "not", "-2.5", "or", "1,000", "."]
    assert words("version 2.0 costs 1,299.99") == ["version", "2.0", "costs", "1,299.99"]
'''),),
        fail_to_pass=("tests/test_tokenize.py::test_decimal_and_grouped_numbers_are_one_token",),
        title="tokenize() splits 3.14 into three tokens",
        body=issue(r'''
```python
>>> from slugtext import tokenize
>>> tokenize("Pi is 3.14, not -2.5")
['Pi', 'is', '3', '.', '14', ',', 'not', '-2', '.', '5']
```

I expected `['Pi', 'is', '3.14', ',', 'not', '-2.5']`; the README example even shows
`-3.50` as a single token. Numbers with thousands separators (`1,000`) are split as
well. Integers work fine.
'''),
        hint="The number alternative of the token pattern only covers integers.",
    ),
    Bug(
        key="truncate_width",
        kind="boundary: placeholder not counted in the width",
        inject=(Edit("slugtext/shorten.py", "    room = width - len(placeholder)\n", "    room = width\n"),),
        tests=(add_tests("tests/test_shorten.py", r'''
def test_truncated_text_fits_the_width():
    text = "The quick brown fox jumps over the lazy dog"
    for width in range(1, len(text) + 1):
        assert len(truncate(text, width)) <= width
    assert truncate("abcdefghij", 5) == "abcd…"
    assert truncate("The quick brown", 9, placeholder="...") == "The..."
'''),),
        fail_to_pass=("tests/test_shorten.py::test_truncated_text_fits_the_width",),
        title="truncate() returns text longer than the width",
        body=issue(r'''
We use `truncate()` for SMS previews that must not exceed a fixed length, and some
messages were rejected by the gateway:

```python
>>> from slugtext import truncate
>>> truncate("abcdefghij", 5)
'abcde…'
>>> len(truncate("The quick brown", 9, placeholder="..."))
12
```

The docstring says the result is at most `width` characters *placeholder
included*, so I expected `'abcd…'` and `'The...'`. The README example
(`truncate("The quick brown fox", 12)`) happens to come out right.
'''),
        hint="The room left for text has to account for the placeholder.",
    ),
    Bug(
        key="stopwords_case",
        kind="case sensitivity: stopwords",
        inject=(Edit("slugtext/slugify.py", "found = [word for word in found if word.lower() not in stop]",
                     "found = [word for word in found if word not in stop]"),),
        tests=(add_tests("tests/test_slugify.py", r'''
def test_stopwords_ignore_letter_case():
    assert slugify("The Lord of the Rings", stopwords=["the", "of"]) == "lord-rings"
    assert slugify("A Tale", stopwords=["A"], lowercase=False) == "Tale"
'''),),
        fail_to_pass=("tests/test_slugify.py::test_stopwords_ignore_letter_case",),
        title="Stop words are only removed when they are written in lower case",
        body=issue(r'''
```python
>>> from slugtext import slugify
>>> slugify("The Lord of the Rings", stopwords=["the", "of"])
'the-lord-rings'
```

The lower-case `the` and `of` are removed, but the capitalised `The` at the start of
the title is kept. Expected `'lord-rings'`: the docstring says stop words are left
out whatever their letter case, and titles almost always start with a capital.
'''),
        hint="The stop words are lower-cased before the comparison; the words of the title are not.",
    ),
)))


# ====================================================================== ttlcache: LRU and TTL caches, memoize
TTLCACHE_FILES = sources({
    "ttlcache/__init__.py": r'''
"""ttlcache: an LRU cache, a TTL cache on top of it, and a memoize decorator."""

from ttlcache.clock import FakeClock, monotonic
from ttlcache.lru import CacheInfo, LRUCache
from ttlcache.memo import make_key, memoize
from ttlcache.ttl import TTLCache

__all__ = ["CacheInfo", "FakeClock", "LRUCache", "TTLCache", "make_key", "memoize", "monotonic"]
__version__ = "1.1"
''',
    "ttlcache/clock.py": r'''
"""Clocks: the real monotonic one, and a fake one that tests move by hand."""

import time


def monotonic() -> float:
    """Seconds since an arbitrary start; never goes backwards."""
    return time.monotonic()


class FakeClock:
    """A clock that only moves when told to.

    >>> clock = FakeClock(100.0)
    >>> clock.advance(2.5)
    >>> clock()
    102.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go backwards")
        self.now += seconds
''',
    "ttlcache/lru.py": r'''
"""A size-bounded mapping that evicts the least recently used entry."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple

_MISSING: Any = object()


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int

    @property
    def hit_rate(self) -> float:
        """Hits per lookup, 0.0 before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class LRUCache:
    """At most ``maxsize`` entries; storing one more evicts the least recently used one.

    Reading an entry (``get``, ``cache[key]``) or storing it makes it the most
    recently used; ``peek`` and ``in`` do not. ``on_evict(key, value)`` is called
    for each entry pushed out by the size limit (not for ``del``, ``pop`` or ``clear``).
    """

    def __init__(self, maxsize: int = 128, *, on_evict: Callable[[Hashable, Any], None] | None = None) -> None:
        if maxsize < 0:
            raise ValueError(f"maxsize must be >= 0, not {maxsize}")
        self.maxsize = maxsize
        self.on_evict = on_evict
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (which becomes the most recently used), or ``default``."""
        if key not in self._data:
            self.misses += 1
            return default
        self.hits += 1
        self._data.move_to_end(key)
        return self._data[key]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key``, without counting a hit or changing the order."""
        return self._data.get(key, default)

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        self._evict_overflow()

    def resize(self, maxsize: int) -> None:
        """Change the size limit, evicting the least recently used entries that no longer fit."""
        if maxsize < 0:
            raise ValueError(f"maxsize must be >= 0, not {maxsize}")
        self.maxsize = maxsize
        self._evict_overflow()

    def _evict_overflow(self) -> None:
        while len(self._data) > self.maxsize:
            old_key, old_value = self._data.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(old_key, old_value)

    def __delitem__(self, key: Hashable) -> None:
        del self._data[key]

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        if default is _MISSING:
            return self._data.pop(key)
        return self._data.pop(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Hashable]:
        """Keys from the least to the most recently used."""
        return iter(list(self._data))

    def clear(self) -> None:
        """Drop every entry and reset the statistics."""
        self._data.clear()
        self.hits = self.misses = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self._data))
''',
    "ttlcache/ttl.py": r'''
"""A cache whose entries expire a fixed time after they were stored."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

from ttlcache.clock import monotonic
from ttlcache.lru import LRUCache

_MISSING: Any = object()


class TTLCache:
    """An LRU-bounded cache whose entries also expire ``ttl_s`` seconds after being set.

    An entry set at time ``t`` is visible while ``clock() < t + ttl_s``; from
    ``t + ttl_s`` on it is gone. ``clock`` returns seconds (``time.monotonic`` by default).
    """

    def __init__(self, maxsize: int = 128, ttl_s: float = 60.0, *, clock: Callable[[], float] = monotonic) -> None:
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, not {ttl_s}")
        self.ttl_s = ttl_s
        self._clock = clock
        self._lru = LRUCache(maxsize)

    def set(self, key: Hashable, value: Any, ttl_s: float | None = None) -> None:
        """Store ``value``; ``ttl_s`` overrides the cache's lifetime for this entry."""
        lifetime = self.ttl_s if ttl_s is None else ttl_s
        if lifetime <= 0:
            raise ValueError(f"ttl_s must be positive, not {lifetime}")
        self._lru[key] = (self._clock() + lifetime, value)

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.set(key, value)

    def get_or_set(self, key: Hashable, factory: Callable[[], Any], ttl_s: float | None = None) -> Any:
        """The live value for ``key``; when there is none, ``factory()`` is stored and returned."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = factory()
            self.set(key, value, ttl_s)
        return value

    def _is_expired(self, expires_at: float) -> bool:
        return self._clock() >= expires_at

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._lru.get(key, _MISSING)
        if entry is _MISSING:
            return default
        expires_at, value = entry
        if self._is_expired(expires_at):
            del self._lru[key]
            return default
        return value

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        entry = self._lru.peek(key, _MISSING)
        return entry is not _MISSING and not self._is_expired(entry[0])

    def ttl_remaining(self, key: Hashable) -> float | None:
        """Seconds until ``key`` expires, or None if it is missing or expired."""
        entry = self._lru.peek(key, _MISSING)
        if entry is _MISSING or self._is_expired(entry[0]):
            return None
        return entry[0] - self._clock()

    def expire(self) -> int:
        """Drop every expired entry now; returns how many were dropped."""
        expired = [key for key in self._lru if self._is_expired(self._lru.peek(key)[0])]
        for key in expired:
            del self._lru[key]
        return len(expired)

    def __len__(self) -> int:
        """The number of live entries (expired ones are dropped first)."""
        self.expire()
        return len(self._lru)

    def __iter__(self) -> Iterator[Hashable]:
        self.expire()
        return iter(self._lru)

    def clear(self) -> None:
        self._lru.clear()
''',
    "ttlcache/memo.py": r'''
"""The ``memoize`` decorator: cache a function's results by its arguments."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from ttlcache.lru import LRUCache

_MISSING: Any = object()


class _KeywordMark:
    """Separates positional from keyword arguments in a key (one shared instance)."""

    def __repr__(self) -> str:
        return "<kwargs>"


_KWARGS = _KeywordMark()


def make_key(args: tuple, kwargs: dict[str, Any], *, typed: bool = False) -> Hashable:
    """A hashable key for a call; the order of keyword arguments does not matter.

    >>> make_key((1,), {"b": 2, "a": 1}) == make_key((1,), {"a": 1, "b": 2})
    True
    """
    key: tuple = args
    if kwargs:
        key += (_KWARGS, *sorted(kwargs.items()))
    if typed:
        key += tuple(type(arg) for arg in args)
        key += tuple(type(value) for _, value in sorted(kwargs.items()))
    return key


def memoize(cache: LRUCache | None = None, *, typed: bool = False) -> Callable[[Callable], Callable]:
    """Decorator caching results in ``cache``; when it is omitted, each function gets its own ``LRUCache(128)``.

    Any object with ``get(key, default)``, ``cache[key] = value`` and ``clear()``
    works as a cache (a TTLCache, for instance). ``typed=True`` caches ``f(1)`` and
    ``f(1.0)`` separately. The wrapper has ``cache`` and ``cache_clear()`` attributes.
    """

    def decorate(func: Callable) -> Callable:
        store = LRUCache(128) if cache is None else cache

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(args, kwargs, typed=typed)
            result = store.get(key, _MISSING)
            if result is _MISSING:
                result = func(*args, **kwargs)
                store[key] = result
            return result

        wrapper.cache = store
        wrapper.cache_clear = store.clear
        return wrapper

    return decorate
''',
    "tests/test_clock.py": r'''
import pytest

from ttlcache import FakeClock, monotonic


def test_fake_clock_moves_when_told():
    clock = FakeClock(100)
    clock.advance(2.5)
    assert clock() == 102.5


def test_fake_clock_cannot_go_backwards():
    with pytest.raises(ValueError):
        FakeClock().advance(-1)


def test_monotonic_does_not_decrease():
    first = monotonic()
    assert monotonic() >= first
''',
    "tests/test_lru.py": r'''
import pytest

from ttlcache import CacheInfo, LRUCache


def test_set_and_get():
    cache = LRUCache(2)
    cache["a"] = 1
    assert cache["a"] == 1
    assert cache.get("missing", "default") == "default"
    with pytest.raises(KeyError):
        cache["missing"]


def test_oldest_entry_is_evicted():
    cache = LRUCache(2)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert list(cache) == ["b", "c"]


def test_storing_again_refreshes_an_entry():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    cache["a"] = 10
    cache["c"] = 3
    assert "b" not in cache
    assert cache.peek("a") == 10


def test_peek_and_contains_do_not_count():
    cache = LRUCache(2)
    cache["a"] = 1
    assert cache.peek("a") == 1 and "a" in cache
    assert cache.info() == CacheInfo(hits=0, misses=0, maxsize=2, currsize=1)


def test_hits_and_misses():
    cache = LRUCache(4)
    assert cache.info().hit_rate == 0.0
    cache["a"] = 1
    cache.get("a")
    cache.get("b")
    cache.get("c")
    cache.get("d")
    assert (cache.hits, cache.misses) == (1, 3)
    assert cache.info().hit_rate == 0.25


def test_resize_evicts_the_oldest_entries():
    calls = []
    cache = LRUCache(4, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    cache.resize(1)
    assert list(cache) == ["c"] and len(calls) == 2
    with pytest.raises(ValueError):
        cache.resize(-1)


def test_delete_and_pop():
    cache = LRUCache(4)
    cache["a"], cache["b"] = 1, 2
    del cache["a"]
    assert cache.pop("b") == 2
    assert cache.pop("b", None) is None
    with pytest.raises(KeyError):
        cache.pop("b")
    assert len(cache) == 0


def test_clear_resets_statistics():
    cache = LRUCache(4)
    cache["a"] = 1
    cache.get("a")
    cache.clear()
    assert cache.info() == CacheInfo(0, 0, 4, 0)


def test_zero_maxsize_stores_nothing():
    cache = LRUCache(0)
    cache["a"] = 1
    assert "a" not in cache and len(cache) == 0


def test_negative_maxsize_is_rejected():
    with pytest.raises(ValueError, match="maxsize"):
        LRUCache(-1)


def test_on_evict_is_called_once_per_eviction():
    calls = []
    cache = LRUCache(1, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert len(calls) == 2


def test_on_evict_is_not_called_for_deletes():
    calls = []
    cache = LRUCache(3, on_evict=lambda *args: calls.append(args))
    cache["a"], cache["b"] = 1, 2
    del cache["a"]
    cache.pop("b")
    cache["c"] = 3
    cache.clear()
    assert calls == []
''',
    "tests/test_ttl.py": r'''
import pytest

from ttlcache import FakeClock, TTLCache


def make(maxsize=8, ttl_s=10.0):
    clock = FakeClock()
    return TTLCache(maxsize, ttl_s, clock=clock), clock


def test_entries_live_until_they_expire():
    cache, clock = make()
    cache["a"] = 1
    clock.advance(5)
    assert cache["a"] == 1
    clock.advance(6)
    assert cache.get("a") is None
    with pytest.raises(KeyError):
        cache["a"]


def test_per_entry_lifetime():
    cache, clock = make()
    cache.set("short", 1, ttl_s=1)
    cache.set("long", 2)
    clock.advance(2)
    assert "short" not in cache and "long" in cache


def test_len_and_expire_drop_expired_entries():
    cache, clock = make()
    cache.set("a", 1, ttl_s=1)
    cache.set("b", 2, ttl_s=5)
    cache["c"] = 3
    clock.advance(3)
    assert len(cache) == 2
    clock.advance(3)
    assert cache.expire() == 1
    assert list(cache) == ["c"]


def test_ttl_remaining():
    cache, clock = make()
    cache["a"] = 1
    clock.advance(4)
    assert cache.ttl_remaining("a") == 6
    assert cache.ttl_remaining("missing") is None


def test_size_limit_still_applies():
    cache, _ = make(maxsize=2)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert "a" not in cache and len(cache) == 2


def test_lifetime_must_be_positive():
    with pytest.raises(ValueError):
        TTLCache(ttl_s=0)
    cache, _ = make()
    with pytest.raises(ValueError):
        cache.set("a", 1, ttl_s=-1)


def test_clear():
    cache, _ = make()
    cache["a"] = 1
    cache.clear()
    assert len(cache) == 0


def test_get_or_set():
    cache, clock = make()
    made = []

    def factory():
        made.append(clock())
        return len(made)

    assert cache.get_or_set("a", factory) == 1
    assert cache.get_or_set("a", factory) == 1
    clock.advance(11)
    assert cache.get_or_set("a", factory, ttl_s=2) == 2
    assert made == [0.0, 11.0]
''',
    "tests/test_memo.py": r'''
import pytest

from ttlcache import FakeClock, LRUCache, TTLCache, make_key, memoize


def test_results_are_cached():
    calls = []

    @memoize(LRUCache(8))
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]


def test_cache_clear():
    calls = []

    @memoize(LRUCache(8))
    def cube(x):
        calls.append(x)
        return x ** 3

    cube(2)
    cube.cache_clear()
    cube(2)
    assert calls == [2, 2]


def test_default_cache_is_an_lru_cache():
    @memoize()
    def identity(x):
        return x

    assert identity("default-cache-probe") == "default-cache-probe"
    assert isinstance(identity.cache, LRUCache) and identity.cache.maxsize == 128


def test_typed_keys():
    calls = []

    @memoize(LRUCache(8), typed=True)
    def half(x):
        calls.append(x)
        return x / 2

    half(1)
    half(1.0)
    assert len(calls) == 2


def test_make_key():
    assert make_key((1, 2), {}) == (1, 2)
    assert make_key((1,), {"a": 1}) != make_key((1, 1), {})
    assert make_key((1,), {}, typed=True) != make_key((1.0,), {}, typed=True)


def test_works_with_a_ttl_cache():
    clock = FakeClock()
    calls = []

    @memoize(TTLCache(8, 5.0, clock=clock))
    def load(name):
        calls.append(name)
        return name.upper()

    load("a")
    load("a")
    clock.advance(6)
    load("a")
    assert calls == ["a", "a"]


def test_unhashable_arguments_raise():
    @memoize(LRUCache(8))
    def total(items):
        return sum(items)

    with pytest.raises(TypeError):
        total([1, 2])
''',
    **scaffold("ttlcache", "1.1", "LRU and TTL caches and a memoize decorator", r'''
# ttlcache

An LRU cache, a TTL cache on top of it (with an injectable clock for tests) and a
`memoize` decorator that works with either.

```python
from ttlcache import LRUCache, TTLCache, memoize

cache = LRUCache(2, on_evict=lambda key, value: print("evicted", key))
sessions = TTLCache(maxsize=1000, ttl_s=300)

@memoize(TTLCache(ttl_s=60))
def exchange_rate(base, quote):
    ...
```

Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("ttlcache", "1.1", TTLCACHE_FILES, (
    Bug(
        key="lru_recency",
        kind="logic error: reads do not refresh recency",
        inject=(Edit("ttlcache/lru.py", "        self.hits += 1\n        self._data.move_to_end(key)\n",
                     "        self.hits += 1\n"),),
        tests=(add_tests("tests/test_lru.py", r'''
def test_reading_an_entry_protects_it_from_eviction():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache["a"] == 1
    cache["c"] = 3
    assert "a" in cache and "b" not in cache
    assert list(cache) == ["a", "c"]
'''),),
        fail_to_pass=("tests/test_lru.py::test_reading_an_entry_protects_it_from_eviction",),
        title="LRUCache evicts entries that were just read",
        body=issue(r'''
The cache behaves like a FIFO rather than an LRU: reading an entry does not make it
recently used, so hot entries get evicted.

```python
from ttlcache import LRUCache

cache = LRUCache(2)
cache["a"] = 1
cache["b"] = 2
cache.get("a")          # "a" is now the most recently used
cache["c"] = 3          # should evict "b"
print(list(cache))      # ['b', 'c'] -- "a" was evicted
```

Expected `['a', 'c']`. Writing to `"a"` again does protect it; only reads
(`get()` and `cache[key]`) don't. The class docstring says reads make the entry the
most recently used.
'''),
        hint="Compare what reads and writes do to the order of entries.",
    ),
    Bug(
        key="ttl_boundary",
        kind="boundary: entry still visible at exactly its expiry time",
        inject=(Edit("ttlcache/ttl.py", "        return self._clock() >= expires_at",
                     "        return self._clock() > expires_at"),),
        tests=(add_tests("tests/test_ttl.py", r'''
def test_entry_is_gone_at_exactly_its_expiry_time():
    cache, clock = make(ttl_s=10.0)
    cache["a"] = 1
    clock.advance(10)
    assert "a" not in cache
    assert cache.get("a") is None
    assert cache.ttl_remaining("a") is None
'''),),
        fail_to_pass=("tests/test_ttl.py::test_entry_is_gone_at_exactly_its_expiry_time",),
        title="TTLCache entries are still returned at exactly t + ttl",
        body=issue(r'''
With a fake clock the boundary is easy to see:

```python
from ttlcache import FakeClock, TTLCache

clock = FakeClock()
cache = TTLCache(ttl_s=10, clock=clock)
cache["token"] = "abc"
clock.advance(10)
print(cache.get("token"))            # 'abc'
print(cache.ttl_remaining("token"))  # 0.0
```

The docs say an entry set at `t` is visible while `clock() < t + ttl_s`, so at
exactly `t + 10` it should be gone (`None` for both calls). We hand out tokens whose
server-side lifetime is exactly the TTL, so the last instant returns a token that
the server already rejects.
'''),
        hint="Check the comparison with the expiry time.",
    ),
    Bug(
        key="kwargs_order",
        kind="logic error: cache key depends on keyword order",
        inject=(Edit("ttlcache/memo.py", "        key += (_KWARGS, *sorted(kwargs.items()))",
                     "        key += (_KWARGS, *kwargs.items())"),),
        tests=(add_tests("tests/test_memo.py", r'''
def test_keyword_order_does_not_matter():
    calls = []

    @memoize(LRUCache(8))
    def area(width, height):
        calls.append((width, height))
        return width * height

    assert area(width=2, height=3) == 6
    assert area(height=3, width=2) == 6
    assert len(calls) == 1
    assert make_key((), {"b": 2, "a": 1}) == make_key((), {"a": 1, "b": 2})
'''),),
        fail_to_pass=("tests/test_memo.py::test_keyword_order_does_not_matter",),
        title="memoize misses the cache when keyword arguments come in another order",
        body=issue(r'''
```python
from ttlcache import memoize

@memoize()
def fetch(user, *, region, fields):
    print("fetching")
    ...

fetch("ann", region="eu", fields="all")   # fetching
fetch("ann", fields="all", region="eu")   # fetching again
```

Both calls are the same call, but the second one is a cache miss. Our call sites
pass keywords in different orders, so the hit rate is much lower than it should be
(and the expensive function runs twice). The docs of `make_key` say keyword order does
not matter.
'''),
        hint="Keyword arguments should be normalised before they go into the key.",
    ),
    Bug(
        key="shared_default_cache",
        kind="mutable default argument",
        inject=(Edit("ttlcache/memo.py", "def memoize(cache: LRUCache | None = None, *, typed: bool = False)",
                     "def memoize(cache: LRUCache = LRUCache(128), *, typed: bool = False)"),
                Edit("ttlcache/memo.py", "        store = LRUCache(128) if cache is None else cache\n",
                     "        store = cache\n")),
        tests=(add_tests("tests/test_memo.py", r'''
def test_each_function_gets_its_own_default_cache():
    @memoize()
    def double(x):
        return 2 * x

    @memoize()
    def negate(x):
        return -x

    assert double(21) == 42
    assert negate(21) == -21
    assert double.cache is not negate.cache
'''),),
        fail_to_pass=("tests/test_memo.py::test_each_function_gets_its_own_default_cache",),
        title="Two @memoize() functions return each other's results",
        body=issue(r'''
This one took us a while to track down:

```python
from ttlcache import memoize

@memoize()
def price_in_eur(sku):
    return lookup_eur(sku)

@memoize()
def price_in_usd(sku):
    return lookup_usd(sku)

price_in_eur("A-1")   # 10.0
price_in_usd("A-1")   # 10.0  -- the EUR price!
```

The second function returns the first one's cached result for the same argument.
`price_in_eur.cache is price_in_usd.cache` is `True`, and `cache_clear()` on one
clears the other. The docstring says each function gets its own cache when none is
passed.
'''),
        hint="This is the classic mutable-default-argument pitfall.",
    ),
    Bug(
        key="on_evict_order",
        kind="wrong argument order",
        inject=(Edit("ttlcache/lru.py", "self.on_evict(old_key, old_value)", "self.on_evict(old_value, old_key)"),),
        tests=(add_tests("tests/test_lru.py", r'''
def test_on_evict_receives_the_key_and_the_value():
    evicted = []
    cache = LRUCache(1, on_evict=lambda key, value: evicted.append((key, value)))
    cache["a"] = 1
    cache["b"] = 2
    assert evicted == [("a", 1)]
'''),),
        fail_to_pass=("tests/test_lru.py::test_on_evict_receives_the_key_and_the_value",),
        title="on_evict callback gets (value, key) instead of (key, value)",
        body=issue(r'''
We close connections when they fall out of our pool cache:

```python
from ttlcache import LRUCache

def closed(key, value):
    print("evicted", key, "->", value)

cache = LRUCache(1, on_evict=closed)
cache["db-1"] = "<conn 1>"
cache["db-2"] = "<conn 2>"
```

prints `evicted <conn 1> -> db-1`. The docs (and the README example
`on_evict=lambda key, value: ...`) say the callback is called with the key first,
then the value.
'''),
        hint="Check how the callback is called.",
    ),
)))


# ====================================================================== daterange: date ranges and calendars
DATERANGE_FILES = sources({
    "daterange/__init__.py": r'''
"""daterange: inclusive date ranges, month arithmetic, business days and range parsing."""

from daterange.business import add_business_days, business_days_between, is_business_day
from daterange.errors import DateRangeError, InvalidRange, ParseError
from daterange.months import add_months, days_in_month, is_leap_year, month_end, months_between
from daterange.parsing import format_range, iso_week, parse_date, parse_range
from daterange.ranges import DateRange, gaps, merge_ranges

__all__ = ["DateRange", "DateRangeError", "InvalidRange", "ParseError", "add_business_days", "add_months",
           "business_days_between", "days_in_month", "format_range", "gaps", "is_business_day", "is_leap_year",
           "iso_week", "merge_ranges", "month_end", "months_between", "parse_date", "parse_range"]
__version__ = "0.7"
''',
    "daterange/errors.py": r'''
"""Exceptions raised by daterange."""


class DateRangeError(ValueError):
    """Base class of every daterange error."""


class InvalidRange(DateRangeError):
    """A range whose end is before its start."""


class ParseError(DateRangeError):
    """Text that is not a date or a range."""
''',
    "daterange/months.py": r'''
"""Month arithmetic that clamps to the end of shorter months."""

from __future__ import annotations

from datetime import date


def is_leap_year(year: int) -> bool:
    """Gregorian rule: every fourth year, except century years not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, not {month}")
    if month == 2:
        return 29 if is_leap_year(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    return day.replace(day=days_in_month(day.year, day.month))


def add_months(day: date, months: int) -> date:
    """The same day of the month ``months`` later (earlier if negative), clamped to the month's end.

    >>> add_months(date(2023, 1, 31), 1)
    datetime.date(2023, 2, 28)
    """
    index = day.year * 12 + (day.month - 1) + months
    year, month0 = divmod(index, 12)
    return date(year, month0 + 1, min(day.day, days_in_month(year, month0 + 1)))


def months_between(start: date, end: date) -> int:
    """Whole months from ``start`` to ``end`` (negative when ``end`` is earlier).

    A month is complete when ``add_months(start, n)`` has not passed ``end``.
    """
    months = (end.year - start.year) * 12 + end.month - start.month
    if months > 0 and add_months(start, months) > end:
        months -= 1
    elif months < 0 and add_months(start, months) < end:
        months += 1
    return months
''',
    "daterange/ranges.py": r'''
"""DateRange: the days from a start to an end, both included."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from daterange.errors import InvalidRange
from daterange.months import days_in_month, month_end

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True, order=True)
class DateRange:
    """The days from ``start`` to ``end``, both included.

    >>> len(DateRange(date(2024, 1, 1), date(2024, 1, 31)))
    31
    """

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise InvalidRange(f"end {self.end} is before start {self.start}")

    @classmethod
    def month(cls, year: int, month: int) -> DateRange:
        """The whole month."""
        return cls(date(year, month, 1), date(year, month, days_in_month(year, month)))

    def __len__(self) -> int:
        return (self.end - self.start).days + 1

    def __iter__(self) -> Iterator[date]:
        day = self.start
        while day <= self.end:
            yield day
            day += ONE_DAY

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day <= self.end

    def overlaps(self, other: DateRange) -> bool:
        """Whether the two ranges share at least one day."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: DateRange) -> DateRange | None:
        """The days in both ranges, or None when there are none."""
        start, end = max(self.start, other.start), min(self.end, other.end)
        return DateRange(start, end) if start <= end else None

    def shift(self, days: int) -> DateRange:
        return DateRange(self.start + timedelta(days=days), self.end + timedelta(days=days))

    def split_by_month(self) -> list[DateRange]:
        """The range cut at month boundaries, one piece per calendar month it touches."""
        pieces = []
        start = self.start
        while start <= self.end:
            end = min(month_end(start), self.end)
            pieces.append(DateRange(start, end))
            start = end + ONE_DAY
        return pieces

    def __str__(self) -> str:
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def merge_ranges(ranges: Iterable[DateRange]) -> list[DateRange]:
    """The union of ``ranges`` as sorted, disjoint ranges; ranges that overlap or touch are joined."""
    merged: list[DateRange] = []
    for current in sorted(ranges):
        if merged and current.start <= merged[-1].end + ONE_DAY:
            if current.end > merged[-1].end:
                merged[-1] = DateRange(merged[-1].start, current.end)
        else:
            merged.append(current)
    return merged


def gaps(ranges: Iterable[DateRange], within: DateRange) -> list[DateRange]:
    """The days of ``within`` that none of ``ranges`` covers, as sorted ranges."""
    free = []
    start = within.start
    for busy in merge_ranges(ranges):
        if busy.end < within.start or busy.start > within.end:
            continue
        if busy.start > start:
            free.append(DateRange(start, busy.start - ONE_DAY))
        start = max(start, busy.end + ONE_DAY)
    if start <= within.end:
        free.append(DateRange(start, within.end))
    return free
''',
    "daterange/business.py": r'''
"""Business-day arithmetic: weekends and the given holidays are skipped."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

WEEKEND = frozenset({5, 6})  # date.weekday() of Saturday and Sunday


def is_business_day(day: date, holidays: Iterable[date] = ()) -> bool:
    return day.weekday() not in WEEKEND and day not in set(holidays)


def add_business_days(day: date, days: int, holidays: Iterable[date] = ()) -> date:
    """The date ``days`` business days after ``day``, or before it when ``days`` is negative.

    ``day`` itself need not be a business day; ``days == 0`` returns it unchanged.

    >>> add_business_days(date(2024, 3, 8), 1)  # a Friday
    datetime.date(2024, 3, 11)
    """
    off = frozenset(holidays)
    step = timedelta(days=1 if days >= 0 else -1)
    remaining = abs(days)
    while remaining > 0:
        day += step
        if is_business_day(day, off):
            remaining -= 1
    return day


def business_days_between(start: date, end: date, holidays: Iterable[date] = ()) -> int:
    """Business days in ``[start, end)``; negative when ``end`` is before ``start``."""
    if end < start:
        return -business_days_between(end, start, holidays)
    off = frozenset(holidays)
    count = 0
    day = start
    while day < end:
        count += is_business_day(day, off)
        day += timedelta(days=1)
    return count
''',
    "daterange/parsing.py": r'''
"""Ranges from and to text: ``2024-01-05..2024-02-10``, ``2024-03``, ``2024-W09``, ``2024``; ``5–9 March 2024``."""

from __future__ import annotations

import re
from datetime import date, timedelta

from daterange.errors import ParseError
from daterange.ranges import DateRange

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WEEK_RE = re.compile(r"(\d{4})-W(\d{2})")
_MONTH_RE = re.compile(r"(\d{4})-(\d{2})")
_YEAR_RE = re.compile(r"\d{4}")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


def parse_date(text: str) -> date:
    """A ``YYYY-MM-DD`` date."""
    match = _DATE_RE.fullmatch(text.strip())
    if match is None:
        raise ParseError(f"not a YYYY-MM-DD date: {text!r}")
    try:
        return date(*map(int, match.groups()))
    except ValueError as e:
        raise ParseError(f"not a date: {text!r} ({e})") from None


def iso_week(year: int, week: int) -> DateRange:
    """Monday to Sunday of ISO week ``week`` of ``year`` (week 1 is the week with the year's first Thursday).

    >>> str(iso_week(2021, 1))
    '2021-01-04..2021-01-10'
    """
    try:
        monday = date.fromisocalendar(year, week, 1)
    except ValueError:
        raise ParseError(f"ISO year {year} has no week {week}") from None
    return DateRange(monday, monday + timedelta(days=6))


def parse_range(text: str) -> DateRange:
    """A range written as ``START..END``, a month, an ISO week or a year."""
    text = text.strip()
    if ".." in text:
        first, _, last = text.partition("..")
        return DateRange(parse_date(first), parse_date(last))
    if match := _WEEK_RE.fullmatch(text):
        return iso_week(int(match.group(1)), int(match.group(2)))
    if match := _MONTH_RE.fullmatch(text):
        year, month = int(match.group(1)), int(match.group(2))
        if not 1 <= month <= 12:
            raise ParseError(f"no month {month}: {text!r}")
        return DateRange.month(year, month)
    if _YEAR_RE.fullmatch(text):
        year = int(text)
        return DateRange(date(year, 1, 1), date(year, 12, 31))
    raise ParseError(f"not a date range: {text!r} (try 2024-01-05..2024-02-10, 2024-03, 2024-W09 or 2024)")


def format_range(dates: DateRange, *, dash: str = "–") -> str:
    """A range as people write it, repeating only what changes.

    >>> format_range(parse_range("2024-01-30..2024-02-02"))
    '30 January – 2 February 2024'
    """
    start, end = dates.start, dates.end
    first, last = MONTH_NAMES[start.month - 1], MONTH_NAMES[end.month - 1]
    if start == end:
        return f"{start.day} {first} {start.year}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}{dash}{end.day} {first} {start.year}"
    if start.year == end.year:
        return f"{start.day} {first} {dash} {end.day} {last} {end.year}"
    return f"{start.day} {first} {start.year} {dash} {end.day} {last} {end.year}"
''',
    "tests/test_months.py": r'''
from datetime import date

import pytest

from daterange import add_months, days_in_month, is_leap_year, month_end, months_between


def test_leap_years():
    assert is_leap_year(2024)
    assert not is_leap_year(2023)
    assert not is_leap_year(1900)


def test_days_in_month():
    assert [days_in_month(2023, m) for m in range(1, 13)] == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    assert days_in_month(2024, 2) == 29


def test_days_in_month_rejects_bad_months():
    with pytest.raises(ValueError, match="month"):
        days_in_month(2024, 13)


def test_add_months():
    assert add_months(date(2024, 1, 15), 1) == date(2024, 2, 15)
    assert add_months(date(2024, 11, 15), 3) == date(2025, 2, 15)


def test_add_months_clamps_to_the_month_end():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 3, 31), 1) == date(2024, 4, 30)


def test_add_negative_months():
    assert add_months(date(2024, 1, 31), -2) == date(2023, 11, 30)


def test_month_end():
    assert month_end(date(2023, 2, 3)) == date(2023, 2, 28)


def test_months_between():
    assert months_between(date(2024, 1, 15), date(2024, 3, 15)) == 2
    assert months_between(date(2024, 1, 15), date(2024, 3, 14)) == 1
    assert months_between(date(2024, 1, 31), date(2024, 2, 29)) == 1
    assert months_between(date(2024, 3, 15), date(2024, 1, 15)) == -2
''',
    "tests/test_ranges.py": r'''
from datetime import date

import pytest

from daterange import DateRange, InvalidRange, gaps, merge_ranges


def d(day, month=1, year=2024):
    return date(year, month, day)


def test_length_counts_both_ends():
    assert len(DateRange(d(1), d(31))) == 31
    assert len(DateRange(d(5), d(5))) == 1


def test_iteration():
    assert list(DateRange(d(30), d(2, 2))) == [d(30), d(31), d(1, 2), d(2, 2)]


def test_membership():
    week = DateRange(d(8), d(14))
    assert d(8) in week and d(14) in week
    assert d(15) not in week and "2024-01-10" not in week


def test_end_before_start_is_rejected():
    with pytest.raises(InvalidRange, match="before start"):
        DateRange(d(10), d(9))


def test_overlaps():
    assert DateRange(d(1), d(10)).overlaps(DateRange(d(5), d(15)))
    assert DateRange(d(1), d(10)).overlaps(DateRange(d(3), d(4)))
    assert not DateRange(d(1), d(5)).overlaps(DateRange(d(7), d(9)))


def test_intersection():
    assert DateRange(d(1), d(10)).intersection(DateRange(d(5), d(15))) == DateRange(d(5), d(10))
    assert DateRange(d(1), d(5)).intersection(DateRange(d(7), d(9))) is None


def test_shift():
    assert DateRange(d(30), d(31)).shift(2) == DateRange(d(1, 2), d(2, 2))


def test_whole_month():
    assert DateRange.month(2024, 2) == DateRange(d(1, 2), d(29, 2))


def test_split_by_month():
    pieces = DateRange(d(15), d(10, 3)).split_by_month()
    assert pieces == [DateRange(d(15), d(31)), DateRange.month(2024, 2), DateRange(d(1, 3), d(10, 3))]


def test_split_within_one_month():
    assert DateRange(d(3), d(9)).split_by_month() == [DateRange(d(3), d(9))]


def test_str():
    assert str(DateRange(d(1), d(31))) == "2024-01-01..2024-01-31"


def test_merge_ranges():
    ranges = [DateRange(d(10), d(12)), DateRange(d(1), d(3)), DateRange(d(4), d(5)), DateRange(d(11), d(20))]
    assert merge_ranges(ranges) == [DateRange(d(1), d(5)), DateRange(d(10), d(20))]
    assert merge_ranges([]) == []


def test_gaps():
    busy = [DateRange(d(3), d(4)), DateRange(d(8), d(9)), DateRange(d(28, 12, 2023), d(1))]
    assert gaps(busy, DateRange(d(1), d(10))) == [DateRange(d(2), d(2)), DateRange(d(5), d(7)), DateRange(d(10), d(10))]
    assert gaps([], DateRange(d(1), d(2))) == [DateRange(d(1), d(2))]
''',
    "tests/test_business.py": r'''
from datetime import date

from daterange import add_business_days, business_days_between, is_business_day

FRIDAY = date(2024, 3, 8)
MONDAY = date(2024, 3, 11)


def test_weekends_are_not_business_days():
    assert is_business_day(FRIDAY)
    assert not is_business_day(date(2024, 3, 9))
    assert not is_business_day(date(2024, 3, 10))


def test_holidays_are_not_business_days():
    assert not is_business_day(MONDAY, holidays=[MONDAY])


def test_add_business_days_skips_the_weekend():
    assert add_business_days(FRIDAY, 1) == MONDAY
    assert add_business_days(FRIDAY, 5) == date(2024, 3, 15)


def test_add_business_days_skips_holidays():
    assert add_business_days(FRIDAY, 1, holidays=[MONDAY]) == date(2024, 3, 12)


def test_zero_days():
    assert add_business_days(date(2024, 3, 9), 0) == date(2024, 3, 9)


def test_business_days_between():
    assert business_days_between(FRIDAY, MONDAY) == 1
    assert business_days_between(MONDAY, date(2024, 3, 18)) == 5
    assert business_days_between(MONDAY, MONDAY) == 0


def test_business_days_between_reversed():
    assert business_days_between(date(2024, 3, 18), MONDAY) == -5
''',
    "tests/test_parsing.py": r'''
from datetime import date

import pytest

from daterange import DateRange, InvalidRange, ParseError, format_range, iso_week, parse_date, parse_range


def test_parse_date():
    assert parse_date(" 2024-02-29 ") == date(2024, 2, 29)


def test_bad_dates():
    for text in ("2024-02-30", "2024-2-3", "20240203", "yesterday"):
        with pytest.raises(ParseError):
            parse_date(text)


def test_explicit_range():
    assert parse_range("2024-01-05..2024-02-10") == DateRange(date(2024, 1, 5), date(2024, 2, 10))


def test_reversed_range():
    with pytest.raises(InvalidRange):
        parse_range("2024-02-10..2024-01-05")


def test_month():
    assert parse_range("2023-02") == DateRange(date(2023, 2, 1), date(2023, 2, 28))
    with pytest.raises(ParseError):
        parse_range("2023-13")


def test_year():
    assert len(parse_range("2024")) == 366


def test_iso_week():
    assert parse_range("2024-W09") == DateRange(date(2024, 2, 26), date(2024, 3, 3))
    assert iso_week(2024, 1).start == date(2024, 1, 1)


def test_iso_week_out_of_range():
    with pytest.raises(ParseError):
        iso_week(2024, 54)


def test_garbage():
    with pytest.raises(ParseError, match="not a date range"):
        parse_range("next week")


def test_format_range():
    assert format_range(parse_range("2024-03-05..2024-03-09")) == "5–9 March 2024"
    assert format_range(parse_range("2024-01-30..2024-02-02")) == "30 January – 2 February 2024"
    assert format_range(parse_range("2023-12-30..2024-01-02"), dash="-") == "30 December 2023 - 2 January 2024"
    assert format_range(parse_range("2024-07-04..2024-07-04")) == "4 July 2024"
''',
    **scaffold("daterange", "0.7", "Date ranges, month arithmetic and business days", r'''
# daterange

Inclusive date ranges, month arithmetic that clamps to month ends, business-day
arithmetic with holidays, and parsing of ranges such as `2024-01-05..2024-02-10`,
`2024-03`, `2024-W09` or `2024`.

```python
from datetime import date
from daterange import DateRange, add_business_days, add_months, parse_range

add_months(date(2024, 1, 31), 1)           # date(2024, 2, 29)
add_business_days(date(2024, 3, 8), 1)     # date(2024, 3, 11), the next Monday
parse_range("2024-W09")                    # DateRange(2024-02-26, 2024-03-03)
DateRange(date(2024, 1, 15), date(2024, 3, 10)).split_by_month()
```

Run the tests with `python -m pytest`.
'''),
})

PROJECTS.append(Project("daterange", "0.7", DATERANGE_FILES, (
    Bug(
        key="century_leap",
        kind="edge case: century leap years",
        inject=(Edit("daterange/months.py", "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
                     "return year % 4 == 0 and year % 100 != 0"),),
        tests=(add_tests("tests/test_months.py", r'''
def test_centuries_divisible_by_400_are_leap_years():
    assert is_leap_year(2000) and is_leap_year(2400)
    assert days_in_month(2000, 2) == 29
    assert add_months(date(2000, 1, 31), 1) == date(2000, 2, 29)
'''),),
        fail_to_pass=("tests/test_months.py::test_centuries_divisible_by_400_are_leap_years",),
        title="Year 2000 is not treated as a leap year",
        body=issue(r'''
We import historical data that goes back to the nineties and rows dated
29 February 2000 fail validation:

```python
>>> from datetime import date
>>> from daterange import add_months, days_in_month
>>> days_in_month(2000, 2)
28
>>> add_months(date(2000, 1, 31), 1)
datetime.date(2000, 2, 28)
```

2000 was a leap year (divisible by 400), so I expected 29 and `date(2000, 2, 29)`.
1900 is correctly treated as a common year.
'''),
        hint="The Gregorian rule has an exception to the exception.",
    ),
    Bug(
        key="negative_business_days",
        kind="negative numbers: going back in business days",
        inject=(Edit("daterange/business.py", "    remaining = abs(days)\n", "    remaining = days\n"),),
        tests=(add_tests("tests/test_business.py", r'''
def test_add_negative_business_days():
    assert add_business_days(MONDAY, -1) == FRIDAY
    assert add_business_days(MONDAY, -6) == date(2024, 3, 1)
    assert add_business_days(MONDAY, -1, holidays=[FRIDAY]) == date(2024, 3, 7)
'''),),
        fail_to_pass=("tests/test_business.py::test_add_negative_business_days",),
        title="add_business_days() ignores negative numbers of days",
        body=issue(r'''
I need "two business days before the due date", and the docstring says a negative
number goes back in time. It does not move at all:

```python
>>> from datetime import date
>>> from daterange import add_business_days
>>> add_business_days(date(2024, 3, 11), -1)   # a Monday
datetime.date(2024, 3, 11)
```

Expected `datetime.date(2024, 3, 8)` (the Friday before). Positive numbers work.
'''),
        hint="",
    ),
    Bug(
        key="split_last_day",
        kind="off-by-one: last one-day piece dropped",
        inject=(Edit("daterange/ranges.py", "        while start <= self.end:\n            end = min(",
                     "        while start < self.end:\n            end = min("),),
        tests=(add_tests("tests/test_ranges.py", r'''
def test_split_by_month_keeps_a_last_single_day():
    pieces = DateRange(d(15), d(1, 2)).split_by_month()
    assert pieces == [DateRange(d(15), d(31)), DateRange(d(1, 2), d(1, 2))]
    assert DateRange(d(5), d(5)).split_by_month() == [DateRange(d(5), d(5))]
    assert sum(len(piece) for piece in DateRange(d(20), d(1, 3)).split_by_month()) == 42
'''),),
        fail_to_pass=("tests/test_ranges.py::test_split_by_month_keeps_a_last_single_day",),
        title="split_by_month() loses the last day when a range ends on the 1st",
        body=issue(r'''
We bill per calendar month by splitting a subscription period with
`split_by_month()`. A period that ends on the first day of a month loses that day:

```python
>>> from datetime import date
>>> from daterange import DateRange
>>> DateRange(date(2024, 1, 15), date(2024, 2, 1)).split_by_month()
[DateRange(start=datetime.date(2024, 1, 15), end=datetime.date(2024, 1, 31))]
```

I expected a second piece `DateRange(2024-02-01, 2024-02-01)`, so that the pieces
cover the whole range. A one-day range gives an empty list instead of itself.
'''),
        hint="Look at the loop condition.",
    ),
    Bug(
        key="touching_overlap",
        kind="boundary: ranges sharing one day",
        inject=(Edit("daterange/ranges.py", "return self.start <= other.end and other.start <= self.end",
                     "return self.start < other.end and other.start < self.end"),),
        tests=(add_tests("tests/test_ranges.py", r'''
def test_ranges_sharing_one_day_overlap():
    first, second = DateRange(d(1), d(5)), DateRange(d(5), d(9))
    assert first.overlaps(second) and second.overlaps(first)
    assert first.intersection(second) == DateRange(d(5), d(5))
    assert DateRange(d(3), d(3)).overlaps(DateRange(d(3), d(3)))
'''),),
        fail_to_pass=("tests/test_ranges.py::test_ranges_sharing_one_day_overlap",),
        title="overlaps() is False for ranges that share their last/first day",
        body=issue(r'''
Our room-booking check let two guests book the same room for the night of the 5th:

```python
>>> from datetime import date
>>> from daterange import DateRange
>>> a = DateRange(date(2024, 1, 1), date(2024, 1, 5))
>>> b = DateRange(date(2024, 1, 5), date(2024, 1, 9))
>>> a.overlaps(b)
False
>>> a.intersection(b)
DateRange(start=datetime.date(2024, 1, 5), end=datetime.date(2024, 1, 5))
```

Ranges include both ends, so the two share January 5th and `overlaps` should be
`True`, consistent with `intersection`. A one-day range does not even overlap
itself.
'''),
        hint="Ranges include both ends.",
    ),
    Bug(
        key="iso_week",
        kind="logic error: ISO week computed from January 1st",
        inject=(Edit("daterange/parsing.py",
                     "    try:\n        monday = date.fromisocalendar(year, week, 1)\n    except ValueError:\n"
                     "        raise ParseError(f\"ISO year {year} has no week {week}\") from None\n",
                     "    if not 1 <= week <= 53:\n        raise ParseError(f\"ISO year {year} has no week {week}\")\n"
                     "    monday = date(year, 1, 1) + timedelta(weeks=week - 1)\n"),),
        tests=(add_tests("tests/test_parsing.py", r'''
def test_iso_weeks_of_years_not_starting_on_monday():
    assert str(iso_week(2021, 1)) == "2021-01-04..2021-01-10"
    assert parse_range("2020-W53") == DateRange(date(2020, 12, 28), date(2021, 1, 3))
    assert parse_range("2026-W01").start == date(2025, 12, 29)
'''),),
        fail_to_pass=("tests/test_parsing.py::test_iso_weeks_of_years_not_starting_on_monday",),
        title="ISO weeks are wrong for most years (2021-W01 starts on a Friday)",
        body=issue(r'''
```python
>>> from daterange import parse_range
>>> parse_range("2021-W01")
DateRange(start=datetime.date(2021, 1, 1), end=datetime.date(2021, 1, 7))
```

ISO weeks always start on a Monday, and week 1 is the week that contains the
year's first Thursday, so 2021-W01 is 2021-01-04..2021-01-10
(`date(2021, 1, 4).isocalendar()` agrees). It looks right for 2024 only because
1 January 2024 was a Monday. `2020-W53` should be 2020-12-28..2021-01-03.
'''),
        hint="The standard library knows the ISO calendar.",
    ),
)))


# ====================================================================== git: deterministic commits and diffs
def git_env() -> dict[str, str]:
    """The environment for every git call: no inherited GIT_* variables, no user or system config, fixed dates."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1",
               GIT_AUTHOR_DATE=GIT_DATE, GIT_COMMITTER_DATE=GIT_DATE, LC_ALL="C")
    return env


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["git", *GIT_HYGIENE, *args], cwd=repo, env=git_env(), input=stdin, capture_output=True,
                          text=True, encoding="utf-8", check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def write_files(files: dict[str, str], dest: Path) -> None:
    for rel, text in sorted(files.items()):
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        path.chmod(0o644)


def diff_from_head(repo: Path, changed: dict[str, str]) -> str:
    """The ``git diff`` that turns HEAD into HEAD with ``changed`` written over it; the work tree is reset after."""
    write_files(changed, repo)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames", "--src-prefix=a/",
               "--dst-prefix=b/")
    git(repo, "reset", "-q", "--hard", "HEAD")
    return diff


def diff_paths(diff: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", diff, flags=re.MULTILINE)


# ====================================================================== instances
ENVIRONMENTS = ("Ubuntu 22.04", "macOS 14.2", "Windows 11", "Debian 12", "Fedora 39")
PYTHONS = ("3.11.4", "3.11.6", "3.11.7")
FOOTERS = (
    "**Environment:** {name} {version}, Python {python} on {os}",
    "Versions: `{name}=={version}`, CPython {python} ({os})",
    "Environment:\n- {name} {version}\n- Python {python}\n- {os}",
)
CLOSINGS = ("", "Thanks!", "Happy to open a PR if this is confirmed.", "Thanks for the library!",
            "I can work on a fix if you agree this is a bug.")


def apply_edits(files: dict[str, str], edits: tuple[Edit, ...]) -> dict[str, str]:
    """``files`` with ``edits`` applied; each ``old`` must occur exactly once in its file."""
    out = dict(files)
    for edit in edits:
        text = out.get(edit.path, "")
        if edit.old == "":
            out[edit.path] = text + edit.new
            continue
        count = text.count(edit.old)
        if count != 1:
            raise SystemExit(f"edit of {edit.path}: the text to replace occurs {count} times, not once: {edit.old!r}")
        out[edit.path] = text.replace(edit.old, edit.new)
    return out


def collect_test_ids(files: dict[str, str]) -> list[str]:
    """Node ids of the top-level ``test_*`` functions in ``tests/test_*.py``, without running anything."""
    ids = []
    for path, text in sorted(files.items()):
        if path.startswith("tests/") and Path(path).name.startswith("test_") and path.endswith(".py"):
            names = [node.name for node in ast.parse(text).body
                     if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
            if len(set(names)) != len(names):
                raise SystemExit(f"{path}: two test functions share a name")
            ids += [f"{path}::{name}" for name in names]
    return ids


def seed_of(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def plan(seed: int) -> list[dict]:
    """Who gets which issue number, date, hint and footer: everything the seed decides."""
    rows = []
    for project in sorted(PROJECTS, key=lambda p: p.name):
        r = random.Random(seed_of(seed, project.name))
        bugs = sorted(project.bugs, key=lambda bug: bug.key)
        r.shuffle(bugs)
        number = r.randint(2, 9)
        when = datetime(2024, 1, 2, tzinfo=timezone.utc) + timedelta(days=r.randint(0, 20))
        for bug in bugs:
            number += r.randint(1, 12)
            when += timedelta(days=r.randint(1, 25), seconds=r.randint(0, 86399))
            footer = r.choice(FOOTERS).format(name=project.name, version=project.version, python=r.choice(PYTHONS),
                                              os=r.choice(ENVIRONMENTS))
            closing = r.choice(CLOSINGS)
            show_hint = r.random() < 0.5
            rows.append({"project": project, "bug": bug, "number": number,
                         "created_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "statement": "\n\n".join(filter(None, (bug.title, bug.body, footer, closing))) + "\n",
                         "hints_text": bug.hint if show_hint else ""})
    return rows


def build_instance(row: dict, workdir: Path) -> tuple[dict, dict[str, str]]:
    """One instance (SWE-bench's fields) and its repository at ``base_commit``."""
    project, bug = row["project"], row["bug"]
    base = apply_edits(project.files, bug.inject)
    repo = workdir / f"{project.name}-{row['number']}"
    commit = materialize(base, repo, f"{project.name} {project.version}")
    fixed = {edit.path: project.files[edit.path] for edit in bug.inject}
    with_tests = apply_edits(base, bug.tests)
    patch = diff_from_head(repo, fixed)
    test_patch = diff_from_head(repo, {path: with_tests[path] for path in sorted({e.path for e in bug.tests})})
    fail_to_pass = sorted(bug.fail_to_pass)
    # SWE-bench's convention: the harness runs the test files the test patch touches, and PASS_TO_PASS lists
    # the other tests of those files
    touched = {e.path for e in bug.tests}
    pass_to_pass = [test for test in collect_test_ids(with_tests)
                    if test not in fail_to_pass and test.split("::", 1)[0] in touched]
    instance = {
        "instance_id": f"{OWNER}__{project.name}-{row['number']}",
        "repo": f"{OWNER}/{project.name}",
        "base_commit": commit,
        "environment_setup_commit": commit,
        "version": project.version,
        "problem_statement": row["statement"],
        "hints_text": row["hints_text"],
        "created_at": row["created_at"],
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(fail_to_pass),
        "PASS_TO_PASS": json.dumps(pass_to_pass),
    }
    return instance, base


def build(seed: int) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """Every instance, sorted by repository and number, and each one's repository files by instance id."""
    instances, repos = [], {}
    with tempfile.TemporaryDirectory(prefix="swe-build-") as tmp:
        for row in plan(seed):
            instance, files = build_instance(row, Path(tmp))
            instances.append(instance)
            repos[instance["instance_id"]] = files
    instances.sort(key=lambda inst: (inst["repo"], int(inst["instance_id"].rsplit("-", 1)[1])))
    return instances, repos


# ====================================================================== checks
def added_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def check_static(instances: list[dict], repos: dict[str, dict[str, str]]) -> list[str]:
    """Schema-level checks that need no test run."""
    problems = []
    ids = [inst["instance_id"] for inst in instances]
    per_repo: dict[str, int] = {}
    for inst in instances:
        per_repo[inst["repo"]] = per_repo.get(inst["repo"], 0) + 1
    if len(set(ids)) != len(ids):
        problems.append("instance ids are not unique")
    if len(instances) < MIN_INSTANCES or len(per_repo) < MIN_PROJECTS or min(per_repo.values()) < 4:
        problems.append(f"need >= {MIN_INSTANCES} instances from >= {MIN_PROJECTS} projects, 4+ each: {per_repo}")
    if set(repos) != set(ids):
        problems.append("the repositories are not exactly one per instance")
    for inst in instances:
        iid = inst["instance_id"]
        fail_to_pass, pass_to_pass = json.loads(inst["FAIL_TO_PASS"]), json.loads(inst["PASS_TO_PASS"])
        if not 1 <= len(fail_to_pass) <= 3 or set(fail_to_pass) & set(pass_to_pass):
            problems.append(f"{iid}: needs 1-3 FAIL_TO_PASS tests, none also in PASS_TO_PASS")
        patch_paths, test_paths = diff_paths(inst["patch"]), diff_paths(inst["test_patch"])
        if not patch_paths or any(path.startswith("tests/") or "/test_" in path for path in patch_paths):
            problems.append(f"{iid}: the patch must change source files only: {patch_paths}")
        if not test_paths or not all(path.startswith("tests/") for path in test_paths):
            problems.append(f"{iid}: the test_patch must change tests/ only: {test_paths}")
        text = inst["problem_statement"] + inst["hints_text"]
        leaked = [line for line in added_lines(inst["patch"]) if len(line) >= 12 and line in text]
        if leaked:
            problems.append(f"{iid}: the issue text quotes the fix: {leaked}")
    return problems


def parse_summary(log: str) -> dict[str, str]:
    """Test id -> status from pytest's ``-rA`` short summary (``PASSED id``, ``FAILED id - message``)."""
    results = {}
    for line in log.splitlines():
        status, _, rest = line.partition(" ")
        if status in SUMMARY_STATUSES and rest:
            results[rest.split(" - ", 1)[0].strip()] = status
    return results


def run_pytest(repo: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    try:
        proc = subprocess.run([sys.executable, *PYTEST], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=PYTEST_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"<pytest timed out>": "ERROR"}
    return parse_summary(proc.stdout)


def expect(stage: str, results: dict[str, str], *, passing: set[str], failing: set[str],
           either: frozenset[str] = frozenset()) -> list[str]:
    problems = []
    if set(results) != passing | failing | either:
        extra, missing = sorted(set(results) - passing - failing - either), sorted(passing | failing - set(results))
        problems.append(f"{stage}: ran tests {extra} that were not expected, and not {missing}")
    wrong = sorted(t for t in passing if results.get(t) != "PASSED")
    wrong += sorted(t for t in failing if results.get(t) not in ("FAILED", "ERROR"))
    if wrong:
        problems.append(f"{stage}: unexpected outcome for {[(t, results.get(t)) for t in wrong]}")
    return problems


def apply_diff_to_files(files: dict[str, str], diff: str, repo: Path) -> dict[str, str]:
    """``files`` with the test files as ``repo`` now has them (``diff`` already applied there)."""
    return {**files, **{path: (repo / path).read_text(encoding="utf-8") for path in diff_paths(diff)}}


def git_apply(repo: Path, diff: str, *, check: bool = False) -> bool:
    try:
        git(repo, "apply", *(["--check"] if check else []), "-", stdin=diff)
    except RuntimeError:
        return False
    return True


def check_instance(job: tuple[dict, dict[str, str]]) -> list[str]:
    """Run one instance's suite at base, base + test_patch and base + test_patch + patch."""
    inst, files = job
    iid = inst["instance_id"]
    fail_to_pass, pass_to_pass = set(json.loads(inst["FAIL_TO_PASS"])), set(json.loads(inst["PASS_TO_PASS"]))
    with tempfile.TemporaryDirectory(prefix="swe-check-") as tmp:
        repo = Path(tmp) / "repo"
        if materialize(files, repo, f"{inst['repo'].split('/', 1)[1]} {inst['version']}") != inst["base_commit"]:
            return [f"{iid}: the repository does not re-create base_commit"]
        if not (git_apply(repo, inst["patch"], check=True) and git_apply(repo, inst["test_patch"], check=True)):
            return [f"{iid}: patch or test_patch does not apply at base_commit"]
        base_tests = set(collect_test_ids(files))
        problems = expect(f"{iid} at base", run_pytest(repo), passing=base_tests - fail_to_pass, failing=set(),
                          either=frozenset(base_tests & fail_to_pass))
        git_apply(repo, inst["test_patch"])
        # the whole suite runs here; PASS_TO_PASS is the part of it in the files the test patch touches
        others = set(collect_test_ids(apply_diff_to_files(files, inst["test_patch"], repo))) - fail_to_pass
        if not pass_to_pass <= others:
            problems.append(f"{iid}: PASS_TO_PASS names tests the suite does not have")
        problems += expect(f"{iid} with test_patch", run_pytest(repo), passing=others, failing=fail_to_pass)
        git_apply(repo, inst["patch"])
        problems += expect(f"{iid} with both patches", run_pytest(repo), passing=others | fail_to_pass,
                           failing=set())
    return problems


def validate(instances: list[dict], repos: dict[str, dict[str, str]]) -> float:
    """Run every instance's checks (two at a time); raise SystemExit listing every problem. Returns seconds."""
    start = time.perf_counter()
    jobs = [(inst, repos[inst["instance_id"]]) for inst in instances]
    with ProcessPoolExecutor(max_workers=2) as pool:
        problems = [problem for found in pool.map(check_instance, jobs) for problem in found]
    if problems:
        raise SystemExit("validation failed:\n" + "\n".join(problems))
    return time.perf_counter() - start


# ====================================================================== output
def write(out: Path, instances: list[dict], repos: dict[str, dict[str, str]]) -> dict[str, int]:
    """``instances.jsonl`` and ``repos.json.gz`` (gzip with no name and mtime 0, so the bytes are reproducible)."""
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(inst, sort_keys=True, ensure_ascii=False) + "\n" for inst in instances)
    (out / "instances.jsonl").write_bytes(lines.encode("utf-8"))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as fh:
        fh.write(json.dumps(repos, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    (out / "repos.json.gz").write_bytes(buffer.getvalue())
    return {name: (out / name).stat().st_size for name in ("instances.jsonl", "repos.json.gz")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/swe")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip running the test suites (the output is the same, only unchecked)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    instances, repos = build(args.seed)
    problems = check_static(instances, repos)
    if problems:
        raise SystemExit("invalid instances:\n" + "\n".join(problems))
    build_s = time.perf_counter() - start
    validate_s = None if args.no_validate else validate(instances, repos)
    sizes = write(args.out, instances, repos)
    per_repo: dict[str, int] = {}
    for inst in instances:
        per_repo[inst["repo"]] = per_repo.get(inst["repo"], 0) + 1
    stats = {
        "instances": len(instances),
        "projects": len(per_repo),
        "per_project": per_repo,
        "fail_to_pass": sum(len(json.loads(inst["FAIL_TO_PASS"])) for inst in instances),
        "pass_to_pass": sum(len(json.loads(inst["PASS_TO_PASS"])) for inst in instances),
        "bytes": sizes,
        "build_s": round(build_s, 1),
        "validate_s": None if validate_s is None else round(validate_s, 1),
    }
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
