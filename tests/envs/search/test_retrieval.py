"""Retrieval engines on a small corpus written here: parsing, ranking, adversarial queries, the cache."""

import json
import os

import pytest
from helpers.gates import requires_dense, requires_pyserini, requires_search

from agentgym.envs.search.retrieval import Corpus, make_retriever
from agentgym.envs.search.retrieval.base import cached_index_dir
from agentgym.errors import ConfigError, DataError

ROWS = [
    {"id": "a", "contents": '"Lima"\nLima is the capital of Peru and lies on the Pacific coast.'},
    {"id": "b", "contents": '"Quito"\nQuito is the capital of Ecuador, high in the Andes.'},
    {"id": "c", "contents": '"Economy of Peru"\nThe currency of Peru is the sol.'},
    {"id": "d", "contents": '"Oslo"\nOslo is the capital of Norway.'},
    {"id": "e", "contents": '"Zürich"\nZürich is the largest city in Switzerland.'},
    {"id": "f", "contents": '"Bergen"\nBergen is a city on the west coast of Norway.'},
]
ADVERSARIAL = ['"unbalanced quote', "title:Lima", "AND OR NOT", "(((", ")))", "*", "~2 ^3", "Peru AND",
               "body:[a TO z]", "-", "Zürich", "日本の首都", "\x00\n\t", "a" * 5000, "' OR 1=1 --"]


def write_corpus(path, rows=ROWS):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def corpus_file(tmp_path):
    return write_corpus(tmp_path / "corpus.jsonl")


def test_wiki18_parsing_and_other_schema(tmp_path, corpus_file):
    corpus = Corpus.load(corpus_file)
    assert corpus.titles[:2] == ["Lima", "Quito"] and corpus.texts[0].startswith("Lima is the capital")
    other = write_corpus(tmp_path / "psgs.jsonl", [{"id": 1, "title": "T", "text": "body"}])
    assert Corpus.load(other).passage(0).render() == "(Title: T) body"
    bad = write_corpus(tmp_path / "bad.jsonl", [{"id": 1, "body": "x"}])
    with pytest.raises(DataError, match="needs 'contents'"):
        Corpus.load(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="no passages"):
        Corpus.load(empty)


@pytest.mark.parametrize("kind", ["bm25", "bm25s", pytest.param("tantivy", marks=requires_search)])
def test_embedded_engines_rank_and_never_raise(kind, corpus_file, tmp_path):
    retriever = make_retriever(kind, corpus=corpus_file, cache_dir=tmp_path / "cache")
    top = retriever.search("What currency does Peru use?", 2)
    assert top[0].id == "c" and top[0].title == "Economy of Peru" and top[0].score > 0
    assert retriever.search("capital of Norway", 1)[0].title == "Oslo"
    assert [p.id for p in retriever.search("capital", 6)] == [p.id for p in retriever.search("capital", 6)]
    assert retriever.search("   ", 3) == [] and retriever.search("", 3) == []
    assert retriever.search("xyzzy unknownword", 3) == []
    for query in ADVERSARIAL:
        assert isinstance(retriever.search(query, 3), list)
    assert retriever.search("Zürich", 1)[0].id == "e"
    assert [len(r) for r in retriever.batch_search(["Lima", "Oslo"], 1)] == [1, 1]
    with pytest.raises(ConfigError, match="k must be"):
        retriever.search("Lima", 0)


def test_ties_break_by_corpus_order(tmp_path):
    rows = [{"id": str(i), "contents": f'"Doc {i}"\nsame words here'} for i in range(8)]
    retriever = make_retriever("bm25s", corpus=write_corpus(tmp_path / "c.jsonl", rows), cache_dir=tmp_path)
    assert [p.id for p in retriever.search("same words", 3)] == ["0", "1", "2"]


def test_index_is_cached_and_keyed_by_content(tmp_path, corpus_file):
    cache = tmp_path / "cache"
    first = make_retriever("bm25s", corpus=corpus_file, cache_dir=cache)
    stamp = {p.name: p.stat().st_mtime_ns for p in first.index_dir.iterdir()}
    second = make_retriever("bm25s", corpus=corpus_file, cache_dir=cache)
    assert second.index_dir == first.index_dir
    assert {p.name: p.stat().st_mtime_ns for p in second.index_dir.iterdir()} == stamp  # loaded, not rebuilt
    write_corpus(corpus_file, ROWS[:3])
    third = make_retriever("bm25s", corpus=corpus_file, cache_dir=cache)
    assert third.index_dir != first.index_dir and len(third.corpus) == 3
    assert sorted(p.name for p in (cache / "indexes").iterdir() if p.name.startswith(".")) == []  # no tmp left


@requires_search
def test_cache_env_var(tmp_path, corpus_file, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "envcache"))
    retriever = make_retriever("tantivy", corpus=corpus_file)
    assert str(retriever.index_dir).startswith(str(tmp_path / "envcache"))


def test_failed_build_leaves_nothing(tmp_path):
    def build(out):
        (out / "partial").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        cached_index_dir(tmp_path, "k", build)
    assert os.listdir(tmp_path / "indexes") == []


def test_unknown_kind_and_bad_arguments(corpus_file):
    with pytest.raises(ConfigError, match="Did you mean 'dense'"):
        make_retriever("dens", corpus=corpus_file)
    with pytest.raises(ConfigError, match="needs corpus"):
        make_retriever("bm25")
    with pytest.raises(ConfigError, match="index= is for retriever='pyserini'"):
        make_retriever("bm25", corpus=corpus_file, index="x")


@requires_dense
def test_dense_with_the_real_offline_model(tmp_path, corpus_file):
    retriever = make_retriever("dense", corpus=corpus_file, cache_dir=tmp_path)
    assert retriever.search("Which money is used in Peru?", 1)[0].id == "c"
    assert retriever.search("Scandinavian capital city", 1)[0].title == "Oslo"
    assert (retriever.index_dir / "embeddings.npy").is_file()
    again = make_retriever("dense", corpus=corpus_file, cache_dir=tmp_path)
    assert [p.id for p in again.search("Andes", 2)] == [p.id for p in retriever.search("Andes", 2)]


@requires_pyserini
def test_pyserini_builds_a_lucene_index_and_searches_it(tmp_path, corpus_file):
    retriever = make_retriever("pyserini", corpus=corpus_file, cache_dir=tmp_path)
    top = retriever.search("What currency does Peru use?", 2)
    assert top[0].id == "c" and top[0].title == "Economy of Peru" and "sol" in top[0].text
    for query in ADVERSARIAL:
        assert isinstance(retriever.search(query, 3), list)
    # a prebuilt index (as users bring Search-R1's wiki-18 index) loads without a corpus
    prebuilt = make_retriever("pyserini", index=retriever.index_dir)
    assert prebuilt.search("capital of Norway", 1)[0].title == "Oslo"
    with pytest.raises(ConfigError, match="not a directory"):
        make_retriever("pyserini", index=tmp_path / "nope")


def test_pyserini_stored_document_forms():
    from agentgym.envs.search.retrieval.pyserini import _contents

    assert _contents(json.dumps({"id": "1", "contents": '"Lima"\nThe capital.'})) == '"Lima"\nThe capital.'
    assert _contents(json.dumps({"title": "Lima", "text": "The capital."})) == '"Lima"\nThe capital.'
    assert _contents("The capital.") == "\nThe capital."
