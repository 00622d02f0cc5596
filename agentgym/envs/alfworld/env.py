"""``agentgym/ALFWorld-v0``: ALFWorld's text household tasks on TextWorld's PDDL engine."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core.env import AgentEnv, EnvDefaults
from agentgym.core.formats import ActionFormat, ParsedAction, ToolResult
from agentgym.core.shared import load_shared
from agentgym.core.task import Task, TaskList
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.alfworld.engine import CompiledGame, GamePlayer
from agentgym.envs.alfworld.games import GameRecord, collect_official_games, read_bundled
from agentgym.envs.alfworld.gen import TASK_TYPES
from agentgym.errors import ConfigError
from agentgym.verifiers import GameEnd, Score, verify_alfworld

__all__ = ["ALFWorldEnv", "ALFWorldFormat"]

NOTHING = "Nothing happens."
# the first words of the commands of alfworld's grammar (alfred.twl2)
VERBS = ("go", "open", "close", "take", "move", "put", "inventory", "examine", "use", "heat", "clean", "cool",
         "slice", "look", "help")
_INFO_VERBS = ("look", "examine", "inventory", "help")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_ACTION_PREFIX = re.compile(r"^\s*(?:>\s*|action\s*:\s*)", re.IGNORECASE)
_INSTRUCTIONS = (
    "You are in a household and must complete the task below by typing text commands, one per turn. "
    "Commands: go to (receptacle), open (receptacle), close (receptacle), take (object) from (receptacle), "
    "move (object) to (receptacle), examine (something), use (object), heat (object) with (receptacle), "
    "clean (object) with (receptacle), cool (object) with (receptacle), look, inventory. "
    "Name things exactly as the game does (e.g. 'take apple 1 from countertop 2'). "
    "A command that is not possible gives \"Nothing happens.\". The episode ends when the task is done."
)


def normalize_command(text: str) -> str:
    """One command: the first non-empty line after an optional 'Action:', lower case, single spaces."""
    text = _THINK.sub("", text)
    if re.search(r"action\s*:", text, re.IGNORECASE):  # ReAct style "Thought: ... Action: go to desk 1"
        text = re.split(r"action\s*:", text, flags=re.IGNORECASE)[-1]
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _ACTION_PREFIX.sub("", line)
    return " ".join(line.strip().strip("`'\"").rstrip(".").lower().split())


def _downloaded_data() -> str | None:
    """``$ALFWORLD_DATA`` when it holds the downloaded json_2.1.1 games (importing alfworld sets the variable to
    ~/.cache/alfworld whether or not anything was downloaded there)."""
    root = os.environ.get("ALFWORLD_DATA")
    return root if root and (Path(os.path.expanduser(root)) / "json_2.1.1").is_dir() else None


class ALFWorldFormat(ActionFormat):
    """ALFWorld's own action text: the command itself (``go to desk 1``), or ``Action: <command>``."""

    name = "alfworld"
    has_answer = False

    def parse(self, text: str, tools: Mapping[str, Tool]) -> ParsedAction:
        if not isinstance(text, str):
            return ParsedAction(error=f"Expected the command as text, got {type(text).__name__}.")
        command = normalize_command(text)
        if not command:
            return ParsedAction(error="No command found. Write one command per turn, e.g. 'go to countertop 1'; "
                                      "info['admissible_commands'] lists the commands that do something now.")
        if command.split()[0] not in VERBS:
            return ParsedAction(error=f"{NOTHING} {command[:60]!r} is not a command: start with one of "
                                      f"{', '.join(VERBS)} (e.g. 'take apple 1 from countertop 2').")
        return ParsedAction(tool_calls=(ToolCall("action", {"command": command}),))

    def render_call(self, call: ToolCall, tools: Mapping[str, Tool]) -> str:
        return str(call.arguments.get("command", ""))

    def render_answer(self, answer: str) -> str:
        # ALFWorld has no answer action: the episode ends when the goal holds; giving up is saying nothing
        return ""

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n".join(r.output for r in results)

    def instructions(self, tools: Mapping[str, Tool]) -> str:
        return "Write exactly one command per turn, e.g. 'go to countertop 1' or 'take apple 1 from countertop 1'."


class ALFWorldEnv(AgentEnv[GameEnd]):
    """ALFWorld (Shridhar et al., ICLR 2021), text only, on TextWorld's PDDL engine.

    The observation is the game's text: the room and the task at reset, then each
    command's feedback ("Nothing happens." for a command that is not possible).
    ``info["admissible_commands"]`` lists the commands that do something now.
    Reward 1 when the goal holds (the episode then terminates), 0 when ``max_turns``
    runs out. Defaults to the bundled generated games (all six task types; splits
    ``train``, ``valid_seen``, ``valid_unseen``); ``data_dir`` (or ``$ALFWORLD_DATA`` when it
    holds json_2.1.1) plays ALFWorld's own games through the same code; ``data_dir='bundled'`` forces the default.
    """

    defaults = EnvDefaults(action_format="alfworld", split="valid_unseen", max_turns=50)

    def __init__(self, *, data_dir: str | Path | None = None, task_types: Sequence[str] | None = None,
                 admissible_commands: bool = True, **base: Any) -> None:
        if task_types is not None:
            unknown = sorted(set(task_types) - set(TASK_TYPES))
            if unknown:
                raise ConfigError(f"Unknown task type(s) {unknown}; choose from {list(TASK_TYPES)}.")
        if data_dir is None:
            data_dir = _downloaded_data()
        # the game lists are read-only: every env of the process shares them
        if data_dir in (None, "", "bundled"):
            games = [g for g in load_shared(read_bundled) if task_types is None or g.task_type in task_types]
        else:
            games = load_shared(collect_official_games, data_dir, task_types=task_types)
        self.games: dict[str, GameRecord] = {g.id: g for g in games}
        self.show_admissible = admissible_commands
        self.player = GamePlayer()
        self._game: CompiledGame | None = None
        self._plan: list[str] | None = None
        self._plan_pos = 0
        tasks = TaskList(Task(id=g.id, prompt=g.task_desc, gold={"task_type": g.task_type}, split=g.split,
                              meta={"task_type": g.task_type}) for g in games)
        super().__init__(tasks=tasks, **base)

    def make_action_format(self, spec: str | ActionFormat) -> ActionFormat:
        return ALFWorldFormat() if spec == "alfworld" else super().make_action_format(spec)

    def make_tools(self) -> Sequence[Tool]:
        return [Tool("action", "Run one ALFWorld command (e.g. 'go to countertop 1', 'take apple 1 from "
                               "countertop 1', 'move apple 1 to fridge 1'); returns the game's feedback.",
                     {"type": "object", "properties": {"command": {"type": "string",
                      "description": "The command, as listed in admissible_commands."}}, "required": ["command"]},
                     fn=self._act)]

    def on_reset(self, task: Task) -> None:
        self._game = self.player.load(self.games[task.id].game_data())
        self._intro = self.player.reset(self._game)
        self._plan = list(self._game.walkthrough) if self._game.walkthrough else None
        self._plan_pos = 0

    def build_prompt(self, task: Task) -> str:
        if isinstance(self.action_format, ALFWorldFormat):
            return f"{_INSTRUCTIONS}\n\n{self._intro}"
        return f"{_INSTRUCTIONS}\n{self.action_format.instructions(self.tools)}\n\n{self._intro}"

    def _act(self, command: str) -> str:
        command = normalize_command(command)
        feedback = self.player.step(command)
        plan = self._plan
        if plan is not None and self._plan_pos < len(plan) and command == plan[self._plan_pos]:
            self._plan_pos += 1
        elif feedback != NOTHING and not command.startswith(_INFO_VERBS):
            self._plan = None  # the state left the plan: the oracle replans from here
        return feedback

    def episode_outcome(self) -> GameEnd | None:
        """The game's end once its goal holds (the engine decides, never the agent's text)."""
        return GameEnd(won=True, moves=self.player.moves) if self.player.won else None

    def default_outcome(self) -> GameEnd:
        """Out of turns, or an answer in a text format: the game as it stands (not won)."""
        return GameEnd(won=self.player.won, moves=self.player.moves)

    def extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"won": self.player.won, "task_type": self.games[self.task.id].task_type}
        if self.show_admissible:
            info["admissible_commands"] = self.player.admissible_commands()
        return info

    def verify(self, outcome: GameEnd | None, task: Task) -> Score:
        return verify_alfworld(outcome, task.gold)

    def oracle_action(self) -> str | Mapping[str, Any]:
        """The next command of the game's walkthrough (Fast Downward's plan), replanned if the state left it."""
        if self._plan is None or self._plan_pos >= len(self._plan):
            self._plan, self._plan_pos = self.player.plan(), 0
        command = self._plan[self._plan_pos] if self._plan else "look"
        return self.action_format.render_call(ToolCall("action", {"command": command}), self.tools)

    def close(self) -> None:
        self.player.close()
        super().close()
