"""Retrieval behind one interface: embedded BM25 (bm25s, tantivy), pyserini (Lucene), dense.

Importing this package imports no engine; each loads when its retriever is made.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from agentgym.envs.search.retrieval.base import Retriever, cache_root
from agentgym.envs.search.retrieval.corpus import Corpus, Passage
from agentgym.errors import ConfigError

__all__ = ["DEFAULT_BM25", "KINDS", "Corpus", "Passage", "Retriever", "cache_root", "make_retriever"]

# bm25s is the default embedded engine: on the 100k-passage benchmark it answered single
# top-5 queries faster than tantivy (see README, "Performance") and it needs no extra wheel.
DEFAULT_BM25 = "bm25s"
KINDS = ("bm25", "bm25s", "dense", "pyserini", "tantivy")


def make_retriever(kind: str = "bm25", *, corpus: str | Path | Corpus | None = None, index: str | Path | None = None,
                   cache_dir: str | Path | None = None, **kwargs: Any) -> Retriever:
    """A retriever by kind; ``corpus`` is a wiki-18 style file or a ``Corpus``."""
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"Unknown retriever {kind!r}.{hint} Choose one of {', '.join(KINDS)}.")
    if isinstance(corpus, (str, Path)):
        corpus = Corpus.load(corpus)
    if kind == "pyserini":
        from agentgym.envs.search.retrieval.pyserini import PyseriniRetriever

        return PyseriniRetriever(corpus, index=index, cache_dir=cache_dir, **kwargs)
    if corpus is None:
        raise ConfigError(f"The {kind!r} retriever needs corpus= (a wiki-18 style .jsonl file).")
    if index is not None:
        raise ConfigError("index= is for retriever='pyserini'; embedded engines build their own index from corpus=.")
    kind = DEFAULT_BM25 if kind == "bm25" else kind
    if kind == "bm25s":
        from agentgym.envs.search.retrieval.bm25 import BM25sRetriever

        return BM25sRetriever(corpus, cache_dir=cache_dir, **kwargs)
    if kind == "tantivy":
        from agentgym.envs.search.retrieval.bm25 import TantivyRetriever

        return TantivyRetriever(corpus, cache_dir=cache_dir, **kwargs)
    from agentgym.envs.search.retrieval.dense import DenseRetriever

    return DenseRetriever(corpus, cache_dir=cache_dir, **kwargs)
