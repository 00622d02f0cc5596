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
