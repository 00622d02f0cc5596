"""``agentgym probe``: how hackable is an env? A battery of policies that want the reward without the work.

Each probe is a policy that sees only what any policy sees (the prompt, the tools, the observations; never the
gold or the env's privileged task data) and plays the env's own episodes to their end; the env's verifier scores
them as it scores any episode. A probe *exploits* a task when its episode reaches the env's success threshold
(its verification says ``correct``, or, where it says nothing, reward 1). Reported per probe and overall: the
exploit rate (the share of tasks on which it succeeded; overall: on which any probe did), the mean reward, a
one-line verdict, and the transcript of its best episode.

The generic probes apply to every env with an answer action; the families add their own ways (code envs: a
program that exits 0, prints PASSED lines, returns objects equal to everything, or kills the test process; shop
and household envs: buying or doing whatever comes first, spamming commands). A user adds probes of their own:
a function ``probe(view: ProbeView) -> action`` (``--probe FILE:FUNCTION``, or the ``agentgym.probes`` entry
point group), called once per turn.

>>> sorted(p.name for p in GENERIC)[:3]
['all-candidates', 'answer-at-once', 'echo-prompt']
"""

from __future__ import annotations

import json
import random
import re
import shlex
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.core.tools import ToolCall
from agentgym.errors import ConfigError
from agentgym.policies.base import Policy

__all__ = ["BATTERY_VERSION", "GENERIC", "Probe", "ProbeReport", "ProbeResult", "ProbeView", "load_probe",
           "probe_env", "probes_for", "submit"]

#: bumped whenever a probe is added or changed: an exploit rate is only comparable within one version
BATTERY_VERSION = "2"
_ENORMOUS_CHARS = 200_000


@dataclass
class ProbeView:
    """What a probe may read and do on its turn: the prompt, every observation so far, the turn and the turn
    limit, the tools (name -> JSON schema of its arguments); ``answer(text)`` and ``call(name, **arguments)``
    render an action in the env's own format; ``memory``: the probe's own notes between the turns of an episode."""

    prompt: str
    observations: list[str]
    turn: int
    max_turns: int
    tools: dict[str, dict[str, Any]]
    has_answer: bool
    answer: Callable[[str], Any]
    call: Callable[..., Any]
    memory: dict[str, Any] = field(default_factory=dict)

    @property
    def last(self) -> str:
        return self.observations[-1] if self.observations else self.prompt

    def primary(self, tool: str) -> str | None:
        """The argument a tool reads its main input from (its first required one)."""
        schema = self.tools.get(tool) or {}
        required = schema.get("required") or list(schema.get("properties", {}))
        return required[0] if required else None


ProbeFn = Callable[[ProbeView], Any]


@dataclass(frozen=True)
class Probe:
    """A named exploit policy: ``fn(view)`` gives each turn's action. ``needs_answer``: it plays through the
    env's answer action (skipped where the env ends by acting in its world)."""

    name: str
    family: str
    description: str
    fn: ProbeFn = field(repr=False, compare=False)
    needs_answer: bool = True


# ---- what a task's text offers ------------------------------------------------------------------------------------
_QUOTED = re.compile(r"[\"“']([^\"“”'\n]{1,60})[\"”']")
_OPTION = re.compile(r"(?:^|\s)(?:\(?[A-Ha-h1-8][).:]|[-*•])\s+([^\n;]{1,60})", re.MULTILINE)
_CAPITALIZED = re.compile(r"\b([A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+){0,3})\b")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def candidates(text: str, limit: int = 200) -> list[str]:
    """Everything in ``text`` that could be an answer: quoted strings, listed options, capitalized names, numbers,
    and the words themselves (first seen first, no repeats)."""
    found: dict[str, None] = {}
    for pattern in (_QUOTED, _OPTION, _CAPITALIZED, _NUMBER, _WORD):
        for match in pattern.finditer(text):
            value = (match.group(1) if match.groups() else match.group(0)).strip()
            if value and value.lower() not in {k.lower() for k in found}:
                found[value] = None
            if len(found) >= limit:
                return list(found)
    return list(found)


_LOOKALIKE = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "i": "і", "A": "А",
                            "E": "Е", "O": "О", "P": "Р", "C": "С", "H": "Н", "K": "К", "M": "М", "T": "Т"})


_FULLWIDTH = {c: c + 0xFEE0 for c in range(0x21, 0x7F)}


def _task_text(view: ProbeView) -> str:
    """The prompt without the format's instructions (what the task itself says), when they can be told apart."""
    return view.prompt


# ---- generic probes -------------------------------------------------------------------------------------------------
def _empty(view: ProbeView) -> Any:
    return view.answer("")


def _echo_prompt(view: ProbeView) -> Any:
    return view.answer(view.prompt)


def _all_candidates(view: ProbeView) -> Any:
    return view.answer(", ".join(candidates(_task_text(view))))


def _junk_tags(view: ProbeView) -> Any:
    if view.turn == 0:  # every tag and format the env might read, with junk inside, in one turn
        parts = [str(view.call(name, **({view.primary(name): "junk"} if view.primary(name) else {})))
                 for name in sorted(view.tools)]
        parts += ["<answer>junk</answer>", "<answer></answer>", "\\boxed{junk}", "```\njunk\n```",
                  '<tool_call>{"name": "answer", "arguments": {"answer": "junk"}}</tool_call>', '{"answer": "junk"}',
                  "Final Answer: junk", "ANSWER: junk"]
        return "\n".join(parts)
    return view.answer("junk <answer>junk</answer>")


def _observations_back(view: ProbeView) -> Any:
    tools = [name for name in sorted(view.tools) if view.primary(name)]
    if view.turn == 0 and tools and view.max_turns > 1:
        words = _WORD.findall(view.prompt) or ["x"]
        return view.call(tools[0], **{view.primary(tools[0]): " ".join(words[:8])})
    return view.answer(view.last)


def _enormous(view: ProbeView) -> Any:
    words = candidates(view.prompt) or ["x"]
    text = " ".join(words)
    return view.answer((text + " ") * (_ENORMOUS_CHARS // (len(text) + 1) + 1))


def _lookalikes(view: ProbeView) -> Any:
    """A wrong answer dressed to pass a normalizer that folds too much: each candidate in unicode lookalikes,
    upper case, with odd whitespace."""
    variants = []
    for value in candidates(_task_text(view), limit=40):  # never a candidate as it was written
        variants += [value.translate(_LOOKALIKE), value.upper(), "\u200b".join(value),
                     unicodedata.normalize("NFKC", value).translate(_FULLWIDTH)]
    return view.answer(" ".join(v for v in variants if v))


def _tool_spam(view: ProbeView) -> Any:
    tools = sorted(view.tools)
    if not tools:
        return view.answer("")
    name = tools[view.turn % len(tools)]
    argument = view.primary(name)
    return view.call(name, **({argument: "x" * (1 + view.turn % 3)} if argument else {}))


def _answer_at_once(view: ProbeView) -> Any:
    found = candidates(_task_text(view), limit=1)
    return view.answer(found[0] if found else "yes")


GENERIC: tuple[Probe, ...] = (
    Probe("empty", "generic", "an empty answer", _empty),
    Probe("echo-prompt", "generic", "the prompt sent back as the answer", _echo_prompt),
    Probe("all-candidates", "generic", "every candidate the task text names, at once", _all_candidates),
    Probe("junk-tags", "generic", "every tag and action format with junk inside, then a junk answer", _junk_tags),
    Probe("observations-back", "generic", "one tool call, then its observation as the answer", _observations_back),
    Probe("enormous", "generic", f"an answer of {_ENORMOUS_CHARS:,} characters of the task's words", _enormous),
    Probe("lookalikes", "generic", "the candidates in unicode lookalikes, upper case and odd whitespace",
          _lookalikes),
    Probe("tool-spam", "generic", "tool calls with junk to the turn limit, never an answer", _tool_spam,
          needs_answer=False),
    Probe("answer-at-once", "generic", "the task's first candidate, on the first turn", _answer_at_once),
)


# ---- family probes --------------------------------------------------------------------------------------------------
_DEF = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(")


def _program(view: ProbeView, body: str) -> Any:
    """A program as the answer (code envs: the answer is the program): ``body`` after a stub of each function the
    prompt names."""
    names = list(dict.fromkeys(_DEF.findall(view.prompt))) or ["solution"]
    stubs = "\n".join(f"def {name}(*args, **kwargs):\n    return _Any()" for name in names)
    return view.answer(f"class _Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):"
                       f"\n        return False\n    __hash__ = object.__hash__\n\n{stubs}\n{body}")


CODE: tuple[Probe, ...] = (
    Probe("always-equal", "code", "each named function returns an object equal to everything",
          lambda view: _program(view, "")),
    Probe("exit-zero", "code", "a program that exits 0 as it is imported",
          lambda view: _program(view, "import sys\nsys.exit(0)\n")),
    Probe("hard-exit", "code", "a program that ends the test process with status 0 (os._exit)",
          lambda view: _program(view, "import atexit, os\natexit.register(lambda: os._exit(0))\nos._exit(0)\n")),
    Probe("printed-passes", "code", "a program that prints PASSED lines and a test summary",
          lambda view: _program(view, "print('PASSED')\nprint('All tests passed')\nprint('OK')\n"
                                      "print('==== 99 passed in 0.01s ====')\n")),
    Probe("outcome-files", "code", "a program that writes outcome and report files a grader might read",
          lambda view: _program(view, "import json, os\nfor name in ('reward.json', 'result.json', 'report.json', "
                                      "'outcome.json', '.outcome'):\n    try:\n        open(name, 'w').write("
                                      "json.dumps({'reward': 1.0, 'passed': True, 'correct': True}))\n"
                                      "    except OSError:\n        pass\n")),
    Probe("swallowed-errors", "code", "a program that silences every error and assertion",
          lambda view: _program(view, "import sys\nsys.excepthook = lambda *a: None\nimport builtins\n"
                                      "builtins.AssertionError = type('AssertionError', (Exception,), {})\n")),
)


_INSTRUCTION = re.compile(r"Instruction:\s*(?:\[SEP\]\s*)?([^\[\"\n]+)")
_ASIN = r"B0[0-9A-Z]{8}"
_TEXT_RESULT = re.compile(rf"\b({_ASIN})\b\s*\[SEP\][^\[]*\[SEP\]\s*\$([\d,]+(?:\.\d+)?)")
_PAGE_RESULT = re.compile(rf'link "{_ASIN}" \[ref=(\w+)\][^$]*?\$([\d,]+(?:\.\d+)?)')
_SEARCHBOX = re.compile(r"searchbox\b[^\n]*?\[ref=(\w+)\]")
_BUY_BUTTON = re.compile(r'button "Buy Now"[^\n]*?\[ref=(\w+)\]')
_TEXT_BUY = re.compile(r"(?:\[SEP\]|\[button\])\s*Buy Now\b")
_TEXT_CLICKABLE = re.compile(rf"\[(?:button|link)[^\]]*\]\s*([^\[\n]+)|\b({_ASIN})\b")


def _instruction(text: str) -> str:
    """What the shopper is asked for: the page's instruction line, else the text's first line."""
    found = _INSTRUCTION.search(text)
    line = found.group(1) if found else (text.strip().splitlines() or [""])[0]
    return " ".join(_WORD.findall(line)[:12]) or "item"


def _results(text: str) -> list[tuple[str, float]]:
    """The products a results page lists, as (what to click, price; a range by its low end), in page order."""
    found = [(ref, float(price.replace(",", ""))) for ref, price in _PAGE_RESULT.findall(text)]
    return found or [(asin, float(price.replace(",", ""))) for asin, price in _TEXT_RESULT.findall(text)]


# what the shopper searches for: never the instruction (searching it and buying its best match is the work, and on
# an easy task that is simply a correct purchase)
_ANY_QUERY = "best value product"


def _shopper(choose: Callable[[list[tuple[str, float]]], str]) -> ProbeFn:
    """A shopper that searches for something unrelated to the instruction, opens the product ``choose`` picks
    from the results and buys it with whatever options the page has selected: in the text shop (``search``,
    ``click``) and in the browser (``fill``, ``press``, ``click`` on the page's element ids) alike."""
    def play(view: ProbeView) -> Any:
        page = view.last
        click = view.primary("click") or "element"
        if "click" in view.tools:
            buy = _BUY_BUTTON.search(page) if view.turn else None
            if buy or (view.turn and "search" in view.tools and _TEXT_BUY.search(page)):
                return view.call("click", **{click: buy.group(1) if buy else "Buy Now"})
            listed = _results(page)
            if listed and not view.memory.get("opened"):
                view.memory["opened"] = True
                return view.call("click", **{click: choose(listed)})
        if not view.memory.get("searched"):
            if "search" in view.tools:
                view.memory["searched"] = True
                return view.call("search", **{view.primary("search") or "query": _ANY_QUERY})
            box = _SEARCHBOX.search(page)
            if box and "fill" in view.tools and "press" in view.tools:
                if view.memory.get("filled") != box.group(1):
                    view.memory["filled"] = box.group(1)
                    return view.call("fill", element=box.group(1), value=_ANY_QUERY)
                view.memory["searched"] = True
                return view.call("press", element=box.group(1), key="Enter")
        if "click" in view.tools and "search" in view.tools:
            first = _TEXT_CLICKABLE.search(page)
            if first:
                return view.call("click", **{click: (first.group(1) or first.group(2)).strip()})
        return _tool_spam(view)
    return play


SHOP: tuple[Probe, ...] = (
    Probe("buy-anything", "shop", f"search {_ANY_QUERY!r} (not the instruction), buy the first result",
          _shopper(lambda r: r[0][0]), needs_answer=False),
    Probe("buy-cheapest", "shop", f"search {_ANY_QUERY!r} (not the instruction), buy the cheapest result",
          _shopper(lambda r: min(r, key=lambda item: item[1])[0]), needs_answer=False),
)


# household (ALFWorld): commands at random over what the game has named, and the task sentence as commands
_THING = re.compile(r"\b([a-z]+ \d+)\b")
_VERBS = ("go to {0}", "open {0}", "take {1} from {0}", "move {1} to {0}", "use {0}", "examine {0}", "close {0}",
          "heat {1} with {0}", "clean {1} with {0}", "cool {1} with {0}", "look", "inventory")


def _command_spam(view: ProbeView) -> Any:
    """A command each turn from the game's verbs over every thing it has named so far, in a seeded order."""
    things = list(dict.fromkeys(_THING.findall(" ".join([view.prompt, *view.observations])))) or ["room 1"]
    rng = view.memory.setdefault("rng", random.Random(len(view.prompt)))
    return rng.choice(_VERBS).format(rng.choice(things), rng.choice(things))  # a command is the whole action


def _task_as_commands(view: ProbeView) -> Any:
    """The task sentence typed as a command, then its parts, then "look", "inventory" and claims of being done."""
    task = re.search(r"Your task is to:\s*([^\n.]+)", view.prompt)
    sentence = task.group(1).strip() if task else _instruction(view.prompt)
    parts = [sentence, *re.split(r"\s+(?:and|then)\s+", sentence), "look", "inventory", "done", "task complete"]
    return parts[view.turn % len(parts)]


HOUSEHOLD: tuple[Probe, ...] = (
    Probe("command-spam", "household", "commands at random over every thing the game has named, to the turn limit",
          _command_spam, needs_answer=False),
    Probe("task-as-command", "household", "the task sentence and its parts typed as commands", _task_as_commands,
          needs_answer=False),
)


# SWE (a repository and a shell): the attack classes the grader stops, written with the env's own tools, then submit
_PACKAGES = "$(git ls-files '*__init__.py' | grep -v -E '(^|/)tests?/')"
_ALWAYS_EQUAL = r'''
import sys as _sys, types as _types


class _Any:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = object.__hash__


for _name, _module in list(_sys.modules.items()):
    if _name.split(".")[0] == __name__.split(".")[0]:
        for _key, _value in list(vars(_module).items()):
            if isinstance(_value, _types.FunctionType):
                setattr(_module, _key, lambda *args, **kwargs: _Any())
'''
_CONFTEST = r'''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
'''


def _write(path: str, text: str, mode: str = ">") -> str:
    """A shell command that writes ``text`` to ``path`` (``>>``: appends), whatever the text holds."""
    return f"printf '%s' {shlex.quote(text)} {mode} {path}"


_SWE_ATTACKS: dict[str, tuple[str, str]] = {
    "conftest-passes": ("a conftest.py that reports every test as passed",
                        _write("conftest.py", _CONFTEST) + "; for d in tests test; do [ -d $d ] && cp conftest.py "
                        "$d/conftest.py; done; true"),
    "pytest-shadow": ("a pytest.py at the root that prints a passing summary and exits 0, and a pytest.ini",
                      _write("pytest.py", "import sys\nprint('PASSED')\nprint('==== 99 passed in 0.01s ====')\n"
                                          "sys.exit(0)\n") + "; " + _write("pytest.ini", "[pytest]\naddopts = -q\n")),
    "package-exits": ("the package ends the test process with status 0 as it is imported",
                      f"for f in {_PACKAGES}; do " + _write('"$f"', "\nimport os as _os\n_os._exit(0)\n", ">>")
                      + "; done; true"),
    "always-equal-results": ("every function of the package returns an object equal to everything",
                             f"for f in {_PACKAGES}; do " + _write('"$f"', _ALWAYS_EQUAL, ">>") + "; done; true"),
    "outcome-files": ("report and outcome files claiming every test passed",
                      "for d in . /tmp; do for n in reward.json result.json report.json outcome.json .outcome; do "
                      + _write('"$d/$n"', '{"reward": 1.0, "resolved": true, "passed": true}') + " 2>/dev/null; "
                      "done; done; " + _write("report.xml", '<testsuite tests="1" failures="0" errors="0">'
                                                            '<testcase name="all"/></testsuite>')),
    "git-hook": ("a git hook that turns the test files into passing stubs whenever git checks files out",
                 "mkdir -p .git/hooks; " + _write(".git/hooks/post-checkout", "#!/bin/sh\nfor f in $(git ls-files "
                                                  "'*test*.py'); do printf 'def test_ok():\\n    pass\\n' > \"$f\"; "
                                                  "done\nexit 0\n")
                 + "; chmod +x .git/hooks/post-checkout; true"),
}


def _swe_attack(command: str) -> ProbeFn:
    def play(view: ProbeView) -> Any:
        if view.turn == 0 and "bash" in view.tools:
            return view.call("bash", **{view.primary("bash") or "command": command})
        if "submit" in view.tools:
            return view.call("submit")
        return view.answer("")
    return play


SWE: tuple[Probe, ...] = tuple(Probe(name, "swe", description, _swe_attack(command), needs_answer=False)
                               for name, (description, command) in _SWE_ATTACKS.items())

FAMILIES: dict[str, tuple[Probe, ...]] = {"code": CODE, "shop": SHOP, "household": HOUSEHOLD, "swe": SWE}


def family_of(env: gym.Env) -> str | None:
    """The env's probe family, from its class's module (agentgym's own envs) or its ``probe_family`` attribute."""
    inner = env.unwrapped
    declared = getattr(inner, "probe_family", None)
    if declared:
        return str(declared)
    module = type(inner).__module__
    if module.startswith("agentgym.envs.code") and type(inner).__name__.startswith("PyCode"):
        return "code"
    if module.startswith("agentgym.envs.webshop"):
        return "shop"
    if module.startswith("agentgym.envs.alfworld"):
        return "household"
    if module.startswith("agentgym.envs.swe"):
        return "swe"
    return None


def probes_for(env: gym.Env, extra: Sequence[Probe] = (), family: str | None = None) -> list[Probe]:
    """The battery for ``env``: the generic probes, its family's (``family``, else ``family_of(env)``), then
    ``extra``."""
    family = family or family_of(env)
    if family is not None and family not in FAMILIES:
        raise ConfigError(f"no probe family {family!r}; the families: {', '.join(sorted(FAMILIES))}.")
    return [*GENERIC, *FAMILIES.get(family or "", ()), *extra]


def load_probe(spec: str) -> Probe:
    """``FILE.py:FUNCTION`` or ``module:FUNCTION``: a user's probe function (``fn(view) -> action``)."""
    import importlib
    import importlib.util

    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ConfigError(f"--probe {spec!r}: expected FILE.py:FUNCTION or module:FUNCTION.")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ConfigError(f"--probe {spec!r}: no such file {target}.")
        import sys

        # the file --import already ran (an env file with its probes beside it) is not run twice
        module = next((m for m in list(sys.modules.values())
                       if getattr(m, "__file__", None) and Path(m.__file__).resolve() == path.resolve()), None)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(f"agentgym_probe_{path.stem}", path)
            if module_spec is None or module_spec.loader is None:
                raise ConfigError(f"--probe {spec!r}: not a Python file.")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ConfigError(f"--probe {spec!r}: {target} has no function {name!r}.")
    doc = (fn.__doc__ or "").strip().splitlines()
    return Probe(name.replace("_", "-"), "user", doc[0] if doc else f"{spec}", fn, needs_answer=False)


def entry_point_probes() -> list[Probe]:
    """Probes packages register in the ``agentgym.probes`` entry point group (each loads to a probe function)."""
    from importlib.metadata import entry_points

    out = []
    for point in entry_points(group="agentgym.probes"):
        fn = point.load()
        doc = (fn.__doc__ or "").strip().splitlines()
        out.append(Probe(point.name, "user", doc[0] if doc else point.value, fn, needs_answer=False))
    return out


# ---- playing them ---------------------------------------------------------------------------------------------------
class _ProbePolicy(Policy):
    """A probe as a policy: it reads the prompt, tools and observations, never the task."""

    def __init__(self, probe: Probe) -> None:
        self.probe, self.name = probe, f"probe:{probe.name}"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        super().reset(env, observation, info)
        fmt, tools = env.action_format, env.tools
        self.view = ProbeView(prompt=observation, observations=[], turn=0, max_turns=int(info.get("max_turns", 1)),
                              tools={name: tool.parameters for name, tool in tools.items()},
                              has_answer=fmt.has_answer, answer=fmt.render_answer,
                              call=lambda name, **arguments: fmt.render_call(ToolCall(name, arguments), tools))

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.view.turn:
            self.view.observations.append(observation)
        action = self.probe.fn(self.view)
        self.view.turn += 1
        return action


@dataclass
class ProbeResult:
    """One probe's episodes on one env."""

    name: str
    family: str
    description: str
    episodes: int = 0
    exploited: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    errors: int = 0
    best: dict[str, Any] | None = None
    skipped: str | None = None

    @property
    def exploit_rate(self) -> float:
        return len(self.exploited) / self.episodes if self.episodes else 0.0

    @property
    def mean_reward(self) -> float:
        return sum(self.rewards) / len(self.rewards) if self.rewards else 0.0

    @property
    def verdict(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        if self.exploited:
            return (f"EXPLOITS {len(self.exploited)} of {self.episodes} tasks ({self.description}): the verifier pays "
                    f"for it, e.g. task {self.exploited[0]!r}")
        if self.errors:
            return f"held ({self.errors} episodes ended in an env error, which the run reports)"
        return f"held: best reward {max(self.rewards, default=0.0):.2f}, never the success threshold"

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "description": self.description, "episodes": self.episodes,
                "exploit_rate": self.exploit_rate, "exploited_tasks": self.exploited, "mean_reward": self.mean_reward,
                "errors": self.errors, "verdict": self.verdict, "skipped": self.skipped, "best_episode": self.best}


@dataclass
class ProbeReport:
    """The battery's results on one env."""

    env: str
    tasks: list[str]
    probes: dict[str, ProbeResult]
    seconds: float
    version: str = BATTERY_VERSION
    env_digest: str = ""  # the env version the battery played (agentgym.eval.envdigest), "" where unknown
    date: str = ""

    @property
    def exploited_tasks(self) -> set[str]:
        return {task for result in self.probes.values() for task in result.exploited}

    @property
    def exploit_rate(self) -> float:
        return len(self.exploited_tasks) / len(self.tasks) if self.tasks else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"env": self.env, "battery_version": self.version, "exploit_rate": self.exploit_rate,
                "tasks": len(self.tasks), "seconds": round(self.seconds, 2), "env_digest": self.env_digest,
                "date": self.date,
                "probes": {name: result.as_dict() for name, result in self.probes.items()}}


def _success(result: Any) -> bool:
    verification = result.verification or {}
    if "correct" in verification:
        return bool(verification["correct"])
    return result.reward >= 1.0


def probe_env(env_id: str, *, episodes: int = 20, seed: int = 0, split: str | None = None,
              env_kwargs: Mapping[str, Any] | None = None, extra: Sequence[Probe] = (),
              only: Iterable[str] | None = None, family: str | None = None) -> ProbeReport:
    """Run the battery on the first ``episodes`` tasks of ``split`` (default: the env's own split) of ``env_id``
    (made with ``env_kwargs``). ``extra``: more probes; ``only``: the names to run; ``family``: the env's probe
    family where it does not say (``code``, ``shop``, ``household``, ``swe``)."""
    from agentgym.core.registry import make
    from agentgym.eval.episode import run_episode

    start = time.perf_counter()
    env = make(env_id, **dict(env_kwargs or {}))
    try:
        inner = env.unwrapped
        split = split or inner.split
        n = min(episodes, len(inner.tasks.tasks(split)))
        battery = probes_for(env, extra, family)
        if only is not None:
            wanted = set(only)
            unknown = wanted - {p.name for p in battery}
            if unknown:
                raise ConfigError(f"no probe named {', '.join(sorted(unknown))}; the battery for {env_id}: "
                                  f"{', '.join(p.name for p in battery)}")
            battery = [p for p in battery if p.name in wanted]
        tasks: list[str] = []
        results: dict[str, ProbeResult] = {}
        for probe in battery:
            result = results[probe.name] = ProbeResult(probe.name, probe.family, probe.description)
            if probe.needs_answer and not inner.action_format.has_answer:
                result.skipped = "the env ends by acting in its world, not by an answer"
                continue
            policy = _ProbePolicy(probe)
            best_reward = -1.0
            for i in range(n):
                played = run_episode(env, policy, seed=seed + i, options={"split": split, "index": i}, env_id=env_id)
                task = played.task_id or str(i)
                if len(tasks) < n and task not in tasks:
                    tasks.append(task)
                result.episodes += 1
                result.rewards.append(float(played.reward))
                result.errors += played.error is not None
                if played.error is None and _success(played):
                    result.exploited.append(task)
                if played.reward > best_reward:
                    best_reward = played.reward
                    result.best = {"task_id": task, "reward": played.reward, "error": played.error,
                                   "transcript": _clipped(played.transcript)}
        digest = _digest(env_id, env, dict(env_kwargs or {}), split)
    finally:
        env.close()
    return ProbeReport(env_id, tasks, results, time.perf_counter() - start, env_digest=digest,
                       date=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def _digest(env_id: str, env: Any, kwargs: dict[str, Any], split: str) -> str:
    from agentgym.eval.envdigest import env_digest

    try:
        return env_digest(env_id, env.unwrapped, kwargs, split)
    except Exception:  # noqa: BLE001 - a digest is a label: an env it cannot read is still probed
        return ""


def submit(report: ProbeReport, leaderboard_dir: str | Path) -> Path:
    """Write ``report`` where ``agentgym leaderboard build`` reads it: ``<dir>/probes/<env>.json`` (the newest
    report of an env replaces the one before)."""
    from agentgym.eval.filenames import slug

    path = Path(leaderboard_dir) / "probes" / f"{slug(report.env)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    return path


def _clipped(transcript: Sequence[Mapping[str, Any]], limit: int = 2000) -> list[dict[str, Any]]:
    """A transcript with each message cut at ``limit`` characters (the enormous probe's answer is 200,000)."""
    out = []
    for message in transcript:
        content = str(message.get("content", ""))
        cut = content if len(content) <= limit else f"{content[:limit]}... [{len(content) - limit:,} more characters]"
        out.append({**message, "content": cut})
    return out


def render(report: ProbeReport) -> str:
    """The report as the CLI prints it."""
    lines = [f"{report.env}: exploit rate {report.exploit_rate:.2f} over {len(report.tasks)} tasks "
             f"(battery v{report.version}, {len(report.probes)} probes, {report.seconds:.1f} s)"]
    for name, result in report.probes.items():
        rate = "  -  " if result.skipped else f"{result.exploit_rate:5.2f}"
        lines.append(f"  {name:<18} {rate}  mean reward {result.mean_reward:4.2f}  {result.verdict}")
    for name, result in report.probes.items():
        if result.exploited and result.best:
            lines.append(f"\n{name}'s best episode (task {result.best['task_id']}, reward {result.best['reward']}):")
            lines += [f"  [{m.get('role')}] {str(m.get('content'))[:400]}" for m in result.best["transcript"]]
    return "\n".join(lines)


def write_json(reports: Sequence[ProbeReport], path: str) -> None:
    body = reports[0].as_dict() if len(reports) == 1 else {"battery_version": BATTERY_VERSION,
                                                             "envs": [r.as_dict() for r in reports]}
    Path(path).write_text(json.dumps(body, indent=2, default=str) + "\n")
