"""The one rule for turning names (suites, policies, models) into file names: results files, leaderboard runs."""

from __future__ import annotations

import re

__all__ = ["slug"]

MAX_SLUG_CHARS = 80


def slug(text: str) -> str:
    """``text`` as a file-name part: lower case, each run of other characters than ``a-z 0-9 . _`` one ``-``,
    no ``-`` or ``.`` at either end, at most 80 characters; ``run`` when nothing is left.

    >>> slug("Qwen/Qwen2.5-7B-Instruct"), slug("core - v2"), slug("../..")
    ('qwen-qwen2.5-7b-instruct', 'core-v2', 'run')
    """
    text = re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-.")
    return text[:MAX_SLUG_CHARS].rstrip("-.") or "run"
