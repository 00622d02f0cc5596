"""Embedded BM25 engines that need no Java and no server: bm25s and tantivy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from agentgym.envs.search.retrieval.base import Retriever, cached_index_dir
from agentgym.envs.search.retrieval.corpus import Corpus, Passage
from agentgym.errors import DependencyNotInstalled

__all__ = ["BM25sRetriever", "TantivyRetriever"]

_WORD = re.compile(r"(?u)\b\w\w+\b")


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best positive scores, best first; ties go to the earlier passage."""
    k = min(k, scores.shape[0])
    candidates = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    # widen to every passage tied with the k-th score, so the tie-break is by corpus order
    threshold = scores[candidates].min()
    candidates = np.flatnonzero(scores >= threshold) if threshold > 0 else candidates
    order = np.lexsort((candidates, -scores[candidates]))
    best = candidates[order][:k]
    return best[scores[best] > 0]


class BM25sRetriever(Retriever):
    """BM25 (Lucene variant, k1=1.5, b=0.75) with the ``bm25s`` sparse-matrix engine.

    Passages are indexed as title + text, English stopwords removed, Snowball-stemmed.
    """

    name = "bm25s"

    def __init__(self, corpus: Corpus, *, cache_dir: str | Path | None = None) -> None:
        try:
            import bm25s
            import Stemmer
        except ImportError as e:
            raise DependencyNotInstalled("bm25s", "pip install bm25s PyStemmer") from e
        self.corpus = corpus
        self._stem = Stemmer.Stemmer("english").stemWords
        self._stopwords = frozenset(bm25s.stopwords.STOPWORDS_EN)
        self.index_dir = cached_index_dir(cache_dir, f"bm25s-{corpus.fingerprint()}", self._build)
        self._bm25 = bm25s.BM25.load(str(self.index_dir), mmap=False, show_progress=False, verbosity=0)
        self._vocab: dict[str, int] = self._bm25.vocab_dict

    def _tokens(self, text: str) -> list[str]:
        return self._stem([w for w in _WORD.findall(text.lower()) if w not in self._stopwords])

    def _build(self, out: Path) -> None:
        import bm25s

        texts = (f"{t}\n{x}" for t, x in zip(self.corpus.titles, self.corpus.texts))
        model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        model.index([self._tokens(t) for t in texts], show_progress=False)
        model.save(str(out), show_progress=False)

    def _search(self, query: str, k: int) -> list[Passage]:
        tokens = [t for t in self._tokens(query) if t in self._vocab]
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)
        return [self.corpus.passage(int(i), float(scores[i])) for i in _top_k(scores, k)]


class TantivyRetriever(Retriever):
    """BM25 with the ``tantivy`` (Rust, Lucene-like) engine, English stemming."""

    name = "tantivy"

    def __init__(self, corpus: Corpus, *, cache_dir: str | Path | None = None) -> None:
        try:
            import tantivy
        except ImportError as e:
            raise DependencyNotInstalled("tantivy", "pip install tantivy  (or: pip install 'agentgym-suite[search]')") from e
        self.corpus = corpus
        self._tantivy = tantivy
        self.index_dir = cached_index_dir(cache_dir, f"tantivy-{corpus.fingerprint()}", self._build)
        self._index = tantivy.Index(self._schema(), path=str(self.index_dir))
        self._searcher = self._index.searcher()

    def _schema(self):
        builder = self._tantivy.SchemaBuilder()
        builder.add_integer_field("idx", stored=True, fast=True)
        builder.add_text_field("title", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        return builder.build()

    def _build(self, out: Path) -> None:
        index = self._tantivy.Index(self._schema(), path=str(out))
        writer = index.writer(heap_size=200_000_000, num_threads=1)  # one segment: stable scores and order
        for i, (title, text) in enumerate(zip(self.corpus.titles, self.corpus.texts)):
            writer.add_document(self._tantivy.Document(idx=i, title=title, body=text))
        writer.commit()
        writer.wait_merging_threads()
        (out / "agentgym.json").write_text(json.dumps({"passages": len(self.corpus)}))

    def _search(self, query: str, k: int) -> list[Passage]:
        # Model text is not query syntax: keep words only, lower-cased so AND/OR/NOT are plain terms.
        words = _WORD.findall(query.lower())
        if not words:
            return []
        parsed = self._index.parse_query(" ".join(words), ["title", "body"])
        hits = self._searcher.search(parsed, limit=k).hits
        rows = sorted(((-score, self._searcher.doc(addr)["idx"][0]) for score, addr in hits))
        return [self.corpus.passage(int(i), -neg) for neg, i in rows]
