"""Lucene BM25 through pyserini: prebuilt indexes (e.g. Search-R1's wiki-18) or one built from a corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentgym.envs.search.retrieval.base import Retriever, cached_index_dir
from agentgym.envs.search.retrieval.corpus import Corpus, Passage
from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["PyseriniRetriever"]

_INSTALL = ("pip install 'agentgym-suite[pyserini]'  and Java 17: apt-get install openjdk-17-jdk-headless "
            "(pyserini >= 1.0 needs Java 21)")


def _import_searcher():
    os.environ.setdefault("OPENAI_API_KEY", "unused")  # pyserini's import insists on it
    try:
        from pyserini.search.lucene import LuceneSearcher
    except ImportError as e:
        raise DependencyNotInstalled(f"pyserini (missing module {e.name!r})", _INSTALL) from e
    except Exception as e:  # the JVM failed to start: wrong or missing Java
        raise DependencyNotInstalled(f"A Java runtime pyserini can use ({e})", _INSTALL) from e
    return LuceneSearcher


def _contents(raw: str) -> str:
    """The ``"Title"\ntext`` of a stored document: JSON ``{"contents"}`` (wiki-18) or plain text."""
    try:
        record = json.loads(raw)
    except json.JSONDecodeError:
        return "\n" + raw  # no title stored
    if isinstance(record, dict):
        if "contents" in record:
            return str(record["contents"])
        return f'"{record.get("title", "")}"\n{record.get("text", "")}'
    return "\n" + raw


class PyseriniRetriever(Retriever):
    """BM25 (k1=0.9, b=0.4, pyserini's defaults) over a Lucene index.

    ``index``: a Lucene index directory (titles in ``contents`` as in wiki-18).
    Without it, an index of ``corpus`` is built once with pyserini's indexer and cached.
    """

    name = "pyserini"

    def __init__(self, corpus: Corpus | None, *, index: str | Path | None = None,
                 cache_dir: str | Path | None = None, threads: int = 1) -> None:
        searcher_cls = _import_searcher()
        if index is None and corpus is None:
            raise ConfigError("The pyserini retriever needs index= (a Lucene index dir) or corpus=.")
        self.corpus = corpus
        self._threads = threads
        if index is None:
            index = cached_index_dir(cache_dir, f"lucene-{corpus.fingerprint()}", self._build)
        if not Path(index).is_dir():
            raise ConfigError(f"Lucene index {str(index)!r} is not a directory.")
        self.index_dir = Path(index)
        self._searcher = searcher_cls(str(index))

    def _build(self, out: Path) -> None:
        docs = out / "docs"
        docs.mkdir()
        with open(docs / "corpus.jsonl", "w", encoding="utf-8") as fh:
            for pid, title, text in zip(self.corpus.ids, self.corpus.titles, self.corpus.texts):
                fh.write(json.dumps({"id": pid, "contents": f'"{title}"\n{text}'}, ensure_ascii=False) + "\n")
        cmd = [sys.executable, "-m", "pyserini.index.lucene", "--collection", "JsonCollection",
               "--input", str(docs), "--index", str(out / "lucene"), "--generator", "DefaultLuceneDocumentGenerator",
               "--threads", str(self._threads), "--storePositions", "--storeDocvectors", "--storeRaw"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "unused"})
        if proc.returncode != 0:
            raise DependencyNotInstalled(f"pyserini's indexer (exit {proc.returncode}: {proc.stderr[-500:]})", _INSTALL)
        for item in (out / "lucene").iterdir():
            item.rename(out / item.name)
        (out / "lucene").rmdir()
        (docs / "corpus.jsonl").unlink()
        docs.rmdir()

    def _search(self, query: str, k: int) -> list[Passage]:
        hits = self._searcher.search(query, k=k)
        passages = []
        for hit in hits:
            head, _, text = _contents(self._searcher.doc(hit.docid).raw() or "").partition("\n")
            passages.append(Passage(str(hit.docid), head.strip().strip('"'), text.strip(), float(hit.score)))
        return passages

    def close(self) -> None:
        self._searcher.close()
