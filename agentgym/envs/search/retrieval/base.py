"""The retriever interface and the on-disk index cache."""

from __future__ import annotations

import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

from agentgym.envs.search.retrieval.corpus import Passage
from agentgym.errors import ConfigError

__all__ = ["Retriever", "cache_root", "cached_index_dir"]


class Retriever(ABC):
    """Finds the top-k passages for a query. A blank query returns no passages."""

    name: str = ""

    @abstractmethod
    def _search(self, query: str, k: int) -> list[Passage]:
        """Top-``k`` passages for a non-blank query, best first, ties broken by corpus order."""

    def search(self, query: str, k: int = 3) -> list[Passage]:
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be an int >= 1, got {k!r}.")
        if not query or not query.strip():
            return []
        return self._search(query, k)

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        return [self.search(q, k) for q in queries]

    def close(self) -> None:
        """Release files and threads held by the engine."""


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """``cache_dir``, else ``$AGENTGYM_CACHE_DIR``, else ``~/.cache/agentgym``."""
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get("AGENTGYM_CACHE_DIR") or Path.home() / ".cache" / "agentgym")


def cached_index_dir(cache_dir: str | Path | None, key: str, build: Callable[[Path], None]) -> Path:
    """The index dir for ``key``, built by ``build(tmp_dir)`` on first use.

    The build goes to a temporary sibling dir that is renamed into place, so a
    crash or a concurrent builder never leaves a half-written index behind.
    """
    final = cache_root(cache_dir) / "indexes" / key
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, final)
        except OSError:  # another process won the race; its index is as good as ours
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
