"""A fast player for ALFWorld games on TextWorld's real PDDL engine.

The same parts as ``textworld.envs.pddl.PddlEnv`` wrapped in alfworld's
``AlfredDemangler``: Fast Downward's library (``fast_downward``) holds the state
and applies operators, TextWorld's ``PddlState`` holds the facts, and TextWorld's
context-sensitive grammar writes every observation. What differs is only where
the work happens:

- the grammar is parsed once per process (the task line is substituted in text);
- a game's PDDL is translated to SAS once per process, and a reset reloads the
  SAS into the library and copies the initial facts;
- the command text of an operator is derived once per game and cached (it
  depends only on static facts), so a step costs one library call for the
  applicable operators plus the feedback derivation of the action taken;
- grammar expressions (derivations and conditions) are parsed once and reused.

``tests/envs/alfworld`` replays games in both this player and ``PddlEnv`` and
asserts identical observations, admissible commands and wins.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["CompiledGame", "GamePlayer", "compile_game", "game_logic", "load_alfworld"]

_TASK_LINE = re.compile(r'"rhs": "Your task is to: (.*?)"')
_LOCK = threading.Lock()
# TextWorld's PDDL parser (a module-level tatsu parser) and the translator keep state while they parse: two
# threads parsing at once corrupt each other (IndexError: pop from empty list). One parse at a time.
_PARSE_LOCK = threading.Lock()
_COMPILED: OrderedDict[str, CompiledGame] = OrderedDict()
_MAX_COMPILED = 256


def load_alfworld() -> Any:
    """Import the engine's packages, or say how to install them."""
    try:
        import alfworld.agents.utils.misc  # noqa: F401
        import fast_downward
        import textworld.envs.pddl.logic  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled(
            "alfworld (TextWorld's PDDL engine)",
            "pip install 'agentgym-suite[alfworld]' (alfworld==0.4.2 textworld==1.7.0; "
            "fast-downward-textworld compiles from source: needs g++ and cmake)") from e
    return fast_downward


@cache
def shipped_logic_files() -> tuple[str, str]:
    """The PDDL domain and grammar (``alfred.pddl``, ``alfred.twl2``) the alfworld package ships."""
    load_alfworld()
    import alfworld

    data = Path(alfworld.__file__).parent / "data"
    return (data / "alfred.pddl").read_text(), (data / "alfred.twl2").read_text()


def split_task(grammar: str) -> tuple[str, str]:
    """``(grammar with the task line set to 'UNKNOWN GOAL', task text)``: one parse serves every game."""
    match = _TASK_LINE.search(grammar)
    if match is None:
        raise DataError("The game's grammar has no 'Your task is to: ...' rule; is this an ALFWorld game file?")
    start, end = match.span(1)
    return grammar[:start] + "UNKNOWN GOAL" + grammar[end:], match.group(1)


@cache
def game_logic(domain: str, grammar: str) -> Any:
    """TextWorld's ``GameLogic`` for a (domain, task-free grammar), parsed once per process."""
    load_alfworld()
    from textworld.envs.pddl import logic as pddl_logic

    return pddl_logic.GameLogic(domain=domain, grammar=grammar)


@dataclass
class CompiledGame:
    """A game translated once: SAS text, initial facts, demangled names, intro, command cache."""

    key: str
    task_text: str
    logic: Any
    template_state: Any  # a PddlState in the initial state; copied at each reset
    entity_infos: dict[str, Any]
    intro: str
    walkthrough: list[str] | None
    ops: dict[str, tuple[str, Any, dict[str, Any], str]]  # operator name -> (command, mapping, variables, feedback)


def _game_key(data: Mapping[str, Any]) -> str:
    blob = json.dumps([data["pddl_domain"], data["grammar"], data["pddl_problem"]])
    return hashlib.sha256(blob.encode()).hexdigest()


def compile_game(data: Mapping[str, Any], lib: Any) -> CompiledGame:
    """The compiled form of a game dict (``pddl_domain``, ``grammar``, ``pddl_problem``), cached per process."""
    key = _game_key(data)
    with _LOCK:
        if key in _COMPILED:
            _COMPILED.move_to_end(key)
            return _COMPILED[key]
    load_alfworld()
    from alfworld.agents.utils.misc import Demangler
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.generator.game import EntityInfo

    base_grammar, task_text = split_task(data["grammar"])
    with _PARSE_LOCK:
        logic = game_logic(data["pddl_domain"], base_grammar)
        try:
            state = pddl_logic.PddlState(lib, data["pddl_problem"], logic)
        except Exception as e:  # the translator raises bare exceptions on malformed PDDL
            raise DataError(f"The game's PDDL problem does not translate: {e}") from e
    infos = {v.name: EntityInfo(v.name, v.type) for fact in state.facts for v in fact.arguments}
    for info in infos.values():
        info.name, info.definite, info.indefinite = info.id, "the", "a"
    demangler = Demangler(game_infos=infos, shuffle=False)  # as AlfredDemangler(shuffle=False)
    for info in infos.values():
        info.name = demangler.demangle_alfred_name(info.id)
    intro = _derive(logic.grammar, "#intro#", state, {}, {}, infos).replace("UNKNOWN GOAL", task_text)
    compiled = CompiledGame(key=key, task_text=task_text, logic=logic, template_state=_clone_state(state),
                            entity_infos=infos, intro=intro, walkthrough=data.get("walkthrough"), ops={})
    with _LOCK:
        _COMPILED[key] = compiled
        while len(_COMPILED) > _MAX_COMPILED:
            _COMPILED.popitem(last=False)
    return compiled


def _clone_state(state: Any) -> Any:
    """A copy of a ``PddlState`` sharing its immutable parts (translated task, SAS text, logic)."""
    clone = object.__new__(type(state))
    clone.__dict__.update(state.__dict__)
    clone._facts = type(state._facts)(set)
    for k, v in state._facts.items():
        clone._facts[k] = set(v)
    clone._vars_by_name = dict(state._vars_by_name)
    clone._vars_by_type = type(state._vars_by_type)(set)
    for k, v in state._vars_by_type.items():
        clone._vars_by_type[k] = set(v)
    clone._var_counts = state._var_counts.copy()
    return clone


# ---- grammar derivation ---------------------------------------------------------------------------------
# TextWorld's ContextSensitiveGrammar.derive re-parses the start expression and every rule condition (TatSu) and
# deep-copies symbols and contexts (entity infos included) at every step. ``_derive`` runs the same algorithm
# (first applicable rule, conditional symbols expanded by a conjunctive query on the state, lists joined with
# the grammar's separators) over parses made once, with contexts as plain (variables, mapping) pairs that are
# extended by copy and never mutated. The strings are the same; the tests compare them with PddlEnv's.

@cache
def _parsed_symbols(start: str) -> tuple[Any, ...]:
    from textworld.envs.pddl import textgen

    return tuple(textgen._parse_and_convert(start, rule_name="symbols"))


@cache
def _parsed_query(expr: str) -> Any:
    from textworld.logic import Rule

    return Rule.parse_conjunctive_query(expr)


@cache
def _textgen() -> Any:
    from textworld.envs.pddl import textgen

    return textgen


def _rule_rhs(grammar: Any, name: str, state: Any, mapping: dict) -> Any:
    rules = grammar._rules.get(name)
    if not rules:
        raise _textgen().CSGUnknownSymbolError(_textgen().NonterminalSymbol(name))
    for rule in rules:
        if not rule.condition or next(iter(state.all_assignments(_parsed_query(rule.condition), mapping)), None):
            return rule.rhs
    raise IndexError(f"no applicable rule for #{name}#")  # TextWorld fails the same way (rules[0] of [])


def _expand_conditional(sym: Any, state: Any, variables: dict, mapping: dict, infos: Mapping[str, Any]) -> list:
    if not sym.given:
        return [(sym.expression, variables, mapping)]
    out = []
    for found in state.all_assignments(_parsed_query(sym.given), mapping):
        new_vars = dict(variables)
        new_vars.update({ph.name: infos[var.name] for ph, var in found.items()})
        new_map = dict(mapping)
        new_map.update(found)
        out.append((sym.expression, new_vars, new_map))
    return out


def _derive(grammar: Any, start: str, state: Any, variables: dict, mapping: dict, infos: Mapping[str, Any]) -> str:
    """``ContextSensitiveGrammar.derive(start, context)`` for the context (state, variables, mapping, infos)."""
    tg = _textgen()
    derived: list[str] = []
    stack = [(sym, variables, mapping) for sym in reversed(_parsed_symbols(start))]
    while stack:
        sym, var, mp = stack.pop()
        if isinstance(sym, str):  # a list separator or the empty-list rule, by name
            stack.extend((s, var, mp) for s in reversed(_rule_rhs(grammar, sym, state, mp)))
        elif isinstance(sym, tg.TerminalSymbol):
            derived.append(str(sym.symbol))
        elif isinstance(sym, tg.NonterminalSymbol):
            stack.extend((s, var, mp) for s in reversed(_rule_rhs(grammar, str(sym), state, mp)))
        elif isinstance(sym, tg.EvalSymbol):
            derived.append(str(eval(sym.expression, vars(tg), dict(var))))
        elif isinstance(sym, tg.ConditionalSymbol):
            stack.extend(reversed(_expand_conditional(sym, state, var, mp, infos)))
        elif isinstance(sym, tg.ListSymbol) and isinstance(sym.symbol, tg.ConditionalSymbol):
            items = _expand_conditional(sym.symbol, state, var, mp, infos)
            if not items:
                items = [("list_empty", var, mp)]
            elif len(items) > 1:
                joined = []
                for item in items[:-2]:
                    joined += [item, ("list_separator", var, mp)]
                items = joined + [items[-2], ("list_last_separator", var, mp), items[-1]]
            stack.extend(reversed(items))
        else:
            raise DataError(f"The game's grammar uses a symbol this player cannot render: {sym!r}; "
                            "is it an ALFWorld grammar?")
    return "".join(derived)


class GamePlayer:
    """Plays compiled games on its own copy of Fast Downward's library (one per env instance)."""

    def __init__(self) -> None:
        self._fd = load_alfworld()
        self.lib = self._fd.load_lib()
        self.game: CompiledGame | None = None
        self.state: Any = None
        self.won = False
        self.moves = 0
        self._applicable: list[tuple[str, Any]] | None = None

    def close(self) -> None:
        # The library is left loaded: dlclose while TextWorld objects still point into it can crash the process.
        self.game = self.state = None

    def load(self, data: Mapping[str, Any]) -> CompiledGame:
        return compile_game(data, self.lib)

    def reset(self, game: CompiledGame) -> str:
        """Start ``game`` from its initial state; returns the intro text."""
        sas, sas_replan = game.template_state.sas, game.template_state.sas_replan
        self.lib.load_sas(sas.encode("utf-8"))
        self.lib.load_sas_replan(sas_replan.encode("utf-8"))
        self.game = game
        self.state = _clone_state(game.template_state)
        self.state.downward_lib = self.lib
        self.won = bool(self.lib.check_goal())
        self.moves = 0
        self._applicable = None
        return game.intro

    # ---- commands ------------------------------------------------------------------------------------------
    def _operators(self) -> list[tuple[str, Any]]:
        """(command, operator) for the applicable operators, first operator per command, library order."""
        if self._applicable is None:
            count = self.lib.get_applicable_operators_count()
            operators = (self._fd.Operator * count)()
            self.lib.get_applicable_operators(operators)
            seen: set[str] = set()
            out = []
            for op in operators:
                name = op.name
                if name in seen:
                    continue
                seen.add(name)
                out.append((self._op_info(name)[0], op))
            self._applicable = out
        return self._applicable

    def _op_info(self, name: str) -> tuple[str, Any, dict[str, Any], str]:
        game = self.game
        info = game.ops.get(name)
        if info is None:
            from textworld.logic import Placeholder, Variable

            action_name, *args = name.split()
            params = self.state._actions[action_name].parameters
            mapping = {Placeholder(p.name.strip("?"), p.type_name): Variable(arg, p.type_name)
                       for p, arg in zip(params, args)}
            variables = {ph.name: game.entity_infos[var.name] for ph, var in mapping.items()}
            action = game.logic.actions[action_name]
            template = _derive(game.logic.grammar, action.template, self.state, variables, mapping,
                               game.entity_infos)
            command = template.format(**{k: info.name for k, info in game.entity_infos.items()})
            info = (command, mapping, variables, action.feedback_rule)
            game.ops[name] = info
        return info

    def admissible_commands(self) -> list[str]:
        """The commands that change something or give information now, sorted (as ``PddlEnv``)."""
        return sorted({command for command, _ in self._operators()})

    def step(self, command: str) -> str:
        """Run one command; the feedback text ("Nothing happens." when it is not admissible)."""
        command = command.strip()
        op = next((op for cmd, op in self._operators() if cmd == command), None)
        if op is None:
            return "Nothing happens."
        _, mapping, variables, feedback_rule = self._op_info(op.name)
        from textworld.envs.pddl.logic import Atom

        effects = (Atom * op.nb_effect_atoms)()
        self.lib.apply_operator(op.id, effects)
        state = self.state
        for effect in effects:  # as PddlState.apply
            prop = effect.get_fact(state.name2type)
            state.remove_fact(prop.negate())
            state.add_fact(prop)
        self._applicable = None
        self.moves += 1
        self.won = bool(self.lib.check_goal())
        return _derive(self.game.logic.grammar, feedback_rule, state, variables, mapping, self.game.entity_infos)

    def plan(self) -> list[str]:
        """An optimal plan from the current state (Fast Downward), as commands; [] when none."""
        return self.state.replan(self.game.entity_infos)

