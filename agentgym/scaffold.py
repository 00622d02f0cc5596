"""``agentgym init NAME``: write a pip-installable package holding one env of one's own, ready to change.

The package registers ``NAME/Name-v0`` through the ``agentgym.envs`` entry point, so once it is installed
(``pip install -e ./NAME``) every agentgym command sees it with no ``--import``. Its env is a ``ToolEnv`` over a
few rows (``data/train.jsonl``, ``data/test.jsonl``), with one tool, a verifier function and an oracle; its
``tests/test_env.py`` runs ``agentgym.testing``'s checks and passes as written.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from agentgym.errors import ConfigError

__all__ = ["Scaffold", "scaffold"]

# letters and digits, words joined by single - or _; starts with a letter (a pip name and a Python module)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")
_TAKEN = {"agentgym", "tests", "test", "gymnasium", "setuptools"}


@dataclass(frozen=True)
class Scaffold:
    """What ``scaffold`` wrote: the package's directory, its module, its env id and the files."""

    directory: Path
    module: str
    env_id: str
    files: tuple[Path, ...]

    def next_commands(self, shown_dir: str) -> tuple[str, str, str]:
        """Install it, run its tests, evaluate its oracle; ``shown_dir``: the directory as the user named it."""
        # the test extra: pytest, and the server its tests serve the env on (a fresh venv has neither)
        return (f"pip install -e '{shown_dir}[test]'", f"python -m pytest -q {shown_dir}",
                f"agentgym eval --env {self.env_id} --policy oracle")


def check_name(name: str) -> tuple[str, str]:
    """The module name and the CamelCase env name of the package ``name``; a ``ConfigError`` for a bad one."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"agentgym init: {name!r} is not a package name; use letters and digits, words joined by "
                          "- or _, starting with a letter (e.g. stockroom or my-env).")
    module = name.replace("-", "_").lower()
    if keyword.iskeyword(module) or module in _TAKEN or module in sys.stdlib_module_names:
        raise ConfigError(f"agentgym init: {name!r} would make a module named {module!r}, which is taken (a Python "
                          "keyword, a standard-library module or one agentgym needs); pick another name.")
    camel = "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name))
    return module, camel


def scaffold(name: str, directory: str | Path | None = None) -> Scaffold:
    """Write the package ``name`` into ``directory`` (default ``./name``), which must be new or empty."""
    module, camel = check_name(name)
    target = Path(directory) if directory is not None else Path(name)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigError(f"agentgym init: {target} already exists and is not an empty directory; pass another NAME "
                          "or --dir.")
    env_id = f"{name}/{camel}-v0"
    values = {"__DIST__": name, "__MODULE__": module, "__CLASS__": camel, "__ENV_ID__": env_id}
    written = []
    for relative, template in _FILES.items():
        path = target / relative.replace("__MODULE__", module)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = template.lstrip("\n")
        for key, value in values.items():
            text = text.replace(key, value)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Scaffold(directory=target, module=module, env_id=env_id, files=tuple(written))


_PYPROJECT = '''
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "__DIST__"
version = "0.1.0"
description = "The agentgym environment __ENV_ID__"
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["agentgym-suite"]

[project.optional-dependencies]
# the tests serve the env once (agentgym.testing.check_against_server): the server extra
test = ["pytest>=8", "agentgym-suite[server]"]

# What makes every agentgym command (list, eval, serve, train, mcp) find the env once this package is installed:
# `import agentgym` imports the module named here, whose import registers the env.
[project.entry-points."agentgym.envs"]
__MODULE__ = "__MODULE__"

# the src layout: a flat ./__MODULE__ here would shadow the installed package in commands run from the folder above
[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
__MODULE__ = ["data/*.jsonl"]

[tool.pytest.ini_options]
testpaths = ["tests", "src"]
addopts = "--doctest-modules"
'''

_INIT = '''
"""__DIST__: the agentgym env __ENV_ID__ (see env.py). Importing this module registers it; the package's
``agentgym.envs`` entry point imports it whenever ``import agentgym`` runs."""

import agentgym

from __MODULE__.env import DATA_DIR, ENV_ID, oracle, stock_level, verify

agentgym.register(ENV_ID, agentgym.ToolEnv, tasks=str(DATA_DIR), tools=[stock_level], verifier=verify,
                  oracle=oracle, max_turns=4, prompt_template="{question} Answer with the number alone.",
                  description="How many units of an item are in stock? Look it up, answer with the number.")
'''

_ENV = '''
"""__CLASS__: questions about a stockroom's inventory, answered by looking items up with a tool.

Make it yours: put your rows in data/<split>.jsonl (a "question", the "answer", and any columns your tools,
verifier and oracle read), your tools below (plain functions: type hints and a docstring make their schema),
and a verifier that scores an answer against a row. Bump the id's version (-v0, -v1, ...) whenever the
observations, tools or scoring change: results compare only within one id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import agentgym

ENV_ID = "__ENV_ID__"
#: one <split>.jsonl per split; each row: question, item (what the oracle looks up), answer
DATA_DIR = Path(__file__).parent / "data"
#: the world the tool reads: units in stock per item
STOCK = {"blue mug": 12, "red kettle": 0, "green teapot": 7, "steel spoon": 140, "glass jar": 33, "oak tray": 5}


def stock_level(item: str) -> str:
    """Look up how many units of an item the stockroom holds.

    Args:
        item: The item's name, e.g. "blue mug".
    """
    units = STOCK.get(item.strip().lower())
    if units is None:
        return f"No item named {item!r}. Items: {', '.join(sorted(STOCK))}."
    return f"{item.strip().lower()}: {units} units in stock"


def verify(answer: str | None, task: dict[str, Any]) -> float:
    """1.0 when the answer is the task's number of units (alone; "units" after it may be), else 0.0.

    A pure function of the answer and the task's row. A hedge ("7 or 12") or extra text is not an answer.

    >>> verify("12", {"answer": "12"})
    1.0
    >>> verify(" 12 units. ", {"answer": "12"})
    1.0
    >>> verify("7 or 12", {"answer": "12"})
    0.0
    """
    if answer is None:
        return 0.0
    match = re.fullmatch(r"(\\d+)(?:\\s+units?)?\\.?", answer.strip())
    return 1.0 if match is not None and int(match.group(1)) == int(task["answer"]) else 0.0


def oracle(task: dict[str, Any], turn: int) -> agentgym.ToolCall | dict[str, str]:
    """The privileged solver (``--policy oracle``, the checks): look the item up, then answer with the gold."""
    if turn == 0:
        return agentgym.ToolCall("stock_level", {"item": task["item"]})
    return {"answer": str(task["answer"])}
'''

_TRAIN = '''
{"id": "mug", "question": "How many blue mugs are in stock?", "item": "blue mug", "answer": "12"}
{"id": "kettle", "question": "How many red kettles are in stock?", "item": "red kettle", "answer": "0"}
{"id": "spoon", "question": "How many steel spoons are in stock?", "item": "steel spoon", "answer": "140"}
{"id": "tray", "question": "How many oak trays are in stock?", "item": "oak tray", "answer": "5"}
'''

_TEST = '''
{"id": "teapot", "question": "How many green teapots are in stock?", "item": "green teapot", "answer": "7"}
{"id": "jar", "question": "How many glass jars are in stock?", "item": "glass jar", "answer": "33"}
'''

_TESTS = '''
"""__ENV_ID__'s own tests: agentgym's env checker, the standard verifier attacks, a real server, the pieces."""

import pytest

import agentgym
from agentgym.testing import check_against_server, check_env, check_not_exploitable, check_verifier_attacks
from __MODULE__.env import ENV_ID, stock_level, verify


@pytest.mark.parametrize("split", ["train", "test"])
def test_env_passes_the_checker_and_the_oracle_solves_every_task(split):
    report = check_env(agentgym.make(ENV_ID, split=split), n_tasks=100)
    assert len(report["oracle_solved"]) >= 2


def test_verifier_resists_the_standard_attacks():
    report = check_verifier_attacks(ENV_ID)
    assert report["oracle"] == 1.0 and report["hedged"] < 1.0


def test_no_probe_gets_the_reward_without_the_work():
    check_not_exploitable(ENV_ID, episodes=10)  # agentgym probe's battery; fails with the exploiting episode


def test_verifier_gold_near_miss_and_malformed():
    task = {"answer": "12"}
    assert verify("12", task) == verify("12 units", task) == 1.0
    assert verify("13", task) == verify("twelve", task) == verify("12 or 13", task) == verify(None, task) == 0.0


def test_tool_reads_the_stock_and_names_the_items_for_an_unknown_one():
    assert stock_level("Blue Mug") == "blue mug: 12 units in stock"
    assert "blue mug" in stock_level("purple unicorn")


def test_a_served_env_plays_as_the_local_one():
    pytest.importorskip("uvicorn", reason="serving needs agentgym's server extra: pip install -e '.[test]'")
    check_against_server(ENV_ID)
'''

_README = '''
# __DIST__

The [agentgym](https://pypi.org/project/agentgym-suite/) environment `__ENV_ID__`: questions about a
stockroom's inventory, answered by looking items up with the `stock_level` tool. Written by `agentgym init`.

- `src/__MODULE__/env.py`: the tool, the verifier (a pure function of answer and row) and the oracle
- `src/__MODULE__/data/{train,test}.jsonl`: the tasks, one row each (`question`, `answer`, and what the rest reads)
- `src/__MODULE__/__init__.py`: `agentgym.register(...)`; `pyproject.toml`'s `agentgym.envs` entry point runs it
- `tests/test_env.py`: `agentgym.testing`'s checks

## Install and test

```bash
pip install -e '.[test]'      # offline, agentgym installed: pip install --no-deps --no-build-isolation -e .
python -m pytest -q
agentgym list                 # __ENV_ID__, from package __DIST__
```

## Evaluate

```bash
agentgym eval --env __ENV_ID__ --policy oracle      # 1.0: the verifier and the oracle agree
agentgym eval --env __ENV_ID__ --policy random      # a floor
agentgym eval --env __ENV_ID__                      # SmolLM2, offline (agentgym's eval extra)
agentgym play __ENV_ID__                            # play it yourself
```

## Serve

```bash
agentgym serve __ENV_ID__ --port 8000
```

```python
import agentgym
env = agentgym.RemoteEnv("__ENV_ID__", "http://127.0.0.1:8000")
observation, info = env.reset(seed=0)
```

OpenEnv clients use `http://127.0.0.1:8000/openenv/__ENV_ID__`; `agentgym mcp __ENV_ID__` serves it over MCP.

## Train

```bash
agentgym train --env __ENV_ID__ --steps 50 --output-dir runs/__MODULE__   # GRPO on the train split (train extra)
agentgym eval --env __ENV_ID__ --policy hf:runs/__MODULE__/final
```
'''

_FILES = {
    "pyproject.toml": _PYPROJECT,
    "README.md": _README,
    "src/__MODULE__/__init__.py": _INIT,
    "src/__MODULE__/env.py": _ENV,
    "src/__MODULE__/data/train.jsonl": _TRAIN,
    "src/__MODULE__/data/test.jsonl": _TEST,
    "tests/test_env.py": _TESTS,
}
