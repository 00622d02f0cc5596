"""Passages and corpora in the wiki-18 / FlashRAG schema."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from agentgym.core.task import read_records
from agentgym.errors import DataError

__all__ = ["Corpus", "Passage"]


@dataclass(frozen=True)
class Passage:
    """One retrieved passage; ``score`` is the engine's relevance score."""

    id: str
    title: str
    text: str
    score: float = 0.0

    def render(self) -> str:
        """Search-R1's ``(Title: t) text`` form (``Doc i`` is prefixed by the env)."""
        return f"(Title: {self.title}) {self.text}"


@dataclass
class Corpus:
    """Parallel lists of passage ids, titles and texts."""

    ids: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    _fingerprint: str | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def passage(self, index: int, score: float = 0.0) -> Passage:
        return Passage(self.ids[index], self.titles[index], self.texts[index], score)

    def add(self, passage_id: str, title: str, text: str) -> None:
        self.ids.append(passage_id)
        self.titles.append(title)
        self.texts.append(text)
        self._fingerprint = None

    @classmethod
    def load(cls, path: str | Path) -> Corpus:
        """Read ``{"id", "contents": "\\"Title\\"\\ntext"}`` (wiki-18) or ``{"id", "title", "text"}`` records."""
        corpus = cls()
        for i, record in enumerate(read_records(path)):
            passage_id = str(record.get("id", i))
            if isinstance(record.get("contents"), str):
                head, _, text = record["contents"].partition("\n")
                title = head.strip()
                if len(title) >= 2 and title[0] == title[-1] == '"':
                    title = title[1:-1]
            elif isinstance(record.get("text"), str):
                title, text = str(record.get("title", "")), record["text"]
            else:
                raise DataError(f"{path} record {i}: needs 'contents' (\"Title\"\\ntext) or 'title' + 'text'.")
            corpus.add(passage_id, title, text.strip())
        if not corpus.ids:
            raise DataError(f"Corpus {path} holds no passages.")
        return corpus

    def fingerprint(self) -> str:
        """A stable hash of the content: the key of every cached index of this corpus."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            for row in zip(self.ids, self.titles, self.texts):
                digest.update(json.dumps(row, ensure_ascii=False).encode())
                digest.update(b"\n")
            self._fingerprint = digest.hexdigest()[:20]
        return self._fingerprint
