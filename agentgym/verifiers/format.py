"""A format check for the Search-R1 tags protocol (``<think>``, ``<search>``, ``<answer>``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentgym.verifiers.score import Score

__all__ = ["check_tags_format"]

_TAG = re.compile(r"<(/?)([A-Za-z_][\w-]*)>")
_ACTIONS = ("search", "answer")


def _tag_problems(text: str, allowed: Sequence[str]) -> tuple[list[str], list[str]]:
    """Problems with tag nesting/balance, and the top-level tags in order."""
    problems, stack, top = [], [], []
    for match in _TAG.finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        if name not in allowed:
            problems.append(f"unknown tag <{closing and '/' or ''}{name}>")
            continue
        if not closing:
            if stack:
                problems.append(f"<{name}> is nested inside <{stack[-1]}>")
            stack.append(name)
            top.append(name)
        elif not stack or stack[-1] != name:
            problems.append(f"</{name}> closes nothing open")
        else:
            stack.pop()
    problems += [f"<{name}> is never closed" for name in stack]
    return problems, top


def check_tags_format(text: str, *, turn: bool = False,
                      allowed: Sequence[str] = ("think", "search", "answer", "information")) -> Score:
    """1.0 if ``text`` follows the tags protocol, else 0.0 with every problem in ``details``.

    Tags must be known, balanced and not nested; the model must never write
    ``<information>`` (that is the env's, and writing it fakes retrieval);
    with ``turn=True`` the text is one model turn and holds at most one action;
    an ``<answer>`` must not be empty.

    >>> check_tags_format("<think>x</think><search>q</search>", turn=True).reward
    1.0
    >>> check_tags_format("<search>q</search><answer>a</answer>", turn=True).details["problems"]
    ['one turn holds 2 actions (<search>, <answer>); write exactly one']
    >>> check_tags_format("<answer><information>Doc</information></answer>").reward
    0.0
    """
    problems, top = _tag_problems(text, allowed)
    if "information" in top:
        problems.append("the model wrote <information>: only the env may; do not fake search results")
    actions = [t for t in top if t in _ACTIONS]
    if turn and len(actions) > 1:
        problems.append(f"one turn holds {len(actions)} actions ({', '.join(f'<{a}>' for a in actions)}); "
                        "write exactly one")
    for body in re.findall(r"<answer>(.*?)</answer>", text, re.DOTALL):
        if not body.strip():
            problems.append("the <answer> is empty")
    ok = not problems
    return Score(float(ok), ok, {"problems": problems, "actions": actions})
