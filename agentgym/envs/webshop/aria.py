"""Reading the page: Playwright's ai-mode accessibility tree parsed into elements, and what the agent last saw."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ELEMENT_REF", "PageView", "TreeNode", "find_node", "parse_tree"]

ELEMENT_REF = re.compile(r"(?:f\d+)?e\d+")  # an element's id in the tree, [ref=e12]; f3e12: element 12 of the third document


@dataclass(frozen=True)
class TreeNode:
    """One line of an ``aria_snapshot(mode="ai")`` tree: role, name, ref, flags, value and ancestors."""

    role: str
    name: str
    ref: str | None
    flags: frozenset[str]
    value: str
    ancestors: tuple[tuple[str, str], ...]

    @property
    def is_pressed(self) -> bool:
        return "pressed" in self.flags


_ITEM = re.compile(r"(?P<indent> *)- (?P<rest>.*)")
_KEY = re.compile(r'(?P<role>[a-z]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<flags>(?: \[[^\]]*\])*)')


def parse_tree(tree: str) -> list[TreeNode]:
    """The elements of an ai-mode aria snapshot (text lines and ``/url`` properties are skipped).

    >>> [(n.role, n.name, n.ref, n.ancestors) for n in parse_tree('- group "size" [ref=e3]:\\n'
    ...                                                              '  - button "large" [pressed] [ref=e4]')]
    [('group', 'size', 'e3', ()), ('button', 'large', 'e4', (('group', 'size'),))]
    """
    nodes: list[TreeNode] = []
    stack: list[tuple[int, str, str]] = []
    for line in tree.splitlines():
        item = _ITEM.fullmatch(line)
        key, value = _split_item(item.group("rest")) if item else ("", "")
        match = _KEY.fullmatch(key)
        if item is None or match is None or match.group("role") == "text":
            continue
        indent = len(item.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        name = _unquote(f'"{match.group("name") or ""}"')
        flags = re.findall(r"\[([^\]]*)\]", match.group("flags"))
        ref = next((f[4:] for f in flags if f.startswith("ref=")), None)
        nodes.append(TreeNode(match.group("role"), name, ref, frozenset(f for f in flags if not f.startswith("ref=")),
                              _unquote(value), tuple((role, n) for _, role, n in stack)))
        stack.append((indent, match.group("role"), name))
    return nodes


def _split_item(rest: str) -> tuple[str, str]:
    """A YAML list item as (key, value); a key with ': ' in it comes single-quoted, quotes doubled."""
    if rest.startswith("'"):
        end = 1
        while True:
            end = rest.find("'", end)
            if end < 0 or not rest.startswith("''", end):
                break
            end += 2
        if end < 0:
            return "", ""
        key, tail = rest[1:end].replace("''", "'"), rest[end + 1:]
    else:
        colon = re.search(r":(?= |$)", rest)
        key, tail = (rest[:colon.start()], rest[colon.start():]) if colon else (rest, "")
    return key, tail[2:] if tail.startswith(": ") else ""


def _unquote(text: str) -> str:
    """A YAML value: double-quoted with JSON escapes when it needs quotes, else as is."""
    if len(text) > 1 and text.startswith('"') and text.endswith('"'):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text[1:-1]
    return text


def _squash(text: str) -> str:
    """Text as an accessible name compares: whitespace collapsed, case folded."""
    return " ".join(text.split()).lower()


def find_node(nodes: Sequence[TreeNode], role: str, name: str, *,
              inside: tuple[str, str] | None = None) -> TreeNode | None:
    """The first element with an id of ``role`` named ``name`` (whitespace and case aside), within an ancestor
    ``inside = (role, name)`` when given; None if the page has none."""

    def within(node: TreeNode) -> bool:
        return inside is None or any(r == inside[0] and _squash(a) == _squash(inside[1]) for r, a in node.ancestors)

    return next((n for n in nodes if n.role == role and _squash(n.name) == _squash(name) and n.ref and within(n)),
                None)


@dataclass(frozen=True)
class PageView:
    """What the agent last saw of its page: its URL, title, tree and (when asked) a screenshot."""

    url: str = ""
    title: str = ""
    tree: str = ""
    png: bytes | None = None

    def render(self) -> str:
        return f"URL: {self.url}\nTitle: {self.title}\n{self.tree}"

    def refs(self) -> set[str]:
        return set(re.findall(r"\[ref=([^\]]+)\]", self.tree))
