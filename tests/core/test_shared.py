"""``load_shared``: read-only data loaded once per process and arguments, and every env that loads data uses it."""

from __future__ import annotations

import doctest
import threading
import time
from pathlib import Path

import pytest
from helpers.gates import requires_alfworld, requires_code, requires_search, requires_swe, requires_webshop

import agentgym
import agentgym.core.shared
from agentgym.core.shared import MAX_SHARED, clear_shared, load_shared


class Loader:
    """Counts its calls; returns a new object each time."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.calls: list[tuple] = []
        self.delay_s = delay_s

    def __call__(self, *args, **kwargs):
        time.sleep(self.delay_s)
        self.calls.append((args, kwargs))
        return object()


def test_doctests():
    result = doctest.testmod(agentgym.core.shared)
    assert result.attempted > 0 and result.failed == 0


def test_equal_arguments_share_one_load_and_other_arguments_load_again():
    load = Loader()
    first = load_shared(load, {"test": Path("t.jsonl"), "train": "a.jsonl"}, limit=3)
    assert load_shared(load, {"train": "a.jsonl", "test": "t.jsonl"}, limit=3) is first  # order, Path vs str
    assert load_shared(load, {"test": "t.jsonl", "train": "a.jsonl"}, limit=4) is not first
    assert load_shared(load, {"test": ["t.jsonl"], "train": "a.jsonl"}, limit=3) is not first  # a list is not a str
    assert len(load.calls) == 3
    assert load.calls[0] == (({"test": Path("t.jsonl"), "train": "a.jsonl"},), {"limit": 3})  # the arguments as given


def test_each_loader_has_its_own_entries():
    one, other = Loader(), Loader()
    assert load_shared(one, "x") is not load_shared(other, "x")
    assert len(one.calls) == len(other.calls) == 1


def test_the_least_recently_used_is_dropped_past_the_bound():
    load = Loader()
    first = load_shared(load, 0)
    for i in range(1, MAX_SHARED):
        load_shared(load, i)
    assert load_shared(load, 0) is first  # used again: now the most recent
    load_shared(load, MAX_SHARED)  # drops 1, the least recently used
    assert load_shared(load, 0) is first and len(load.calls) == MAX_SHARED + 1
    load_shared(load, 1)
    assert len(load.calls) == MAX_SHARED + 2


def test_envs_made_at_once_in_threads_load_once():
    load = Loader(delay_s=0.05)
    results = []
    threads = [threading.Thread(target=lambda: results.append(load_shared(load, "same"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(load.calls) == 1 and len({id(r) for r in results}) == 1


def test_a_loader_may_share_what_it_loads():
    inner = Loader()
    outer = load_shared(lambda: load_shared(inner, "nested"))  # under the lock that the outer load holds
    assert outer is load_shared(inner, "nested") and len(inner.calls) == 1


def test_an_unhashable_argument_is_a_type_error():
    with pytest.raises(TypeError, match="unhashable"):
        load_shared(Loader(), bytearray(b"x"))


def test_clear_forgets():
    load = Loader()
    first = load_shared(load, "x")
    clear_shared()
    assert load_shared(load, "x") is not first


# ---- every env that reads data shares it ----------------------------------------------------------------
@requires_search
def test_searchqa_envs_share_tasks_and_retriever():
    one, other = (agentgym.make("agentgym/SearchQA-v0").unwrapped for _ in range(2))
    assert one.tasks is other.tasks and one.retriever is other.retriever


@requires_code
@pytest.mark.parametrize("env_id", ["agentgym/MathTool-v0", "agentgym/PyCode-v0"])
def test_code_envs_share_tasks(env_id):
    one, other = (agentgym.make(env_id).unwrapped for _ in range(2))
    assert one.tasks is other.tasks


@requires_webshop
def test_webshop_envs_share_the_catalog():
    one, other = (agentgym.make("agentgym/WebShop-v0").unwrapped for _ in range(2))
    assert one.catalog is other.catalog


@requires_alfworld
def test_alfworld_envs_share_the_games():
    one, other = (agentgym.make("agentgym/ALFWorld-v0", data_dir="bundled").unwrapped for _ in range(2))
    assert all(one.games[gid] is other.games[gid] for gid in one.games)


@requires_swe
def test_swe_envs_share_tasks_and_repositories():
    one, other = (agentgym.make("agentgym/SWEBench-v0").unwrapped for _ in range(2))
    try:
        assert one.tasks is other.tasks and one.repos is other.repos
    finally:
        one.close()
        other.close()
