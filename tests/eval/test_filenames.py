"""One rule for file names made from names: results files and leaderboard runs agree."""

import doctest
from pathlib import Path

import agentgym.eval.filenames
from agentgym.eval.command import EvalRequest, default_results_path
from agentgym.eval.filenames import slug
from agentgym.eval.leaderboard import write_submission
from agentgym.eval.suites import get_suite


def test_doctests():
    result = doctest.testmod(agentgym.eval.filenames)
    assert result.attempted > 0 and result.failed == 0


def test_separators_collapse_and_ends_are_clean():
    assert slug("Meta-Llama/Llama-3.1 8B -- Instruct") == "meta-llama-llama-3.1-8b-instruct"
    assert slug("a" * 79 + "-b") == "a" * 79  # cut at 80, then no trailing "-"
    assert slug("") == slug("///") == "run" and slug("snake_case.v2") == "snake_case.v2"


def test_the_results_file_and_the_leaderboard_run_name_a_model_alike(tmp_path):
    model = "Org/Model -- v2"
    path = default_results_path(EvalRequest(policy="openai", model=model), get_suite("core"))
    assert path == Path("results") / "core-openai-org-model-v2-seed0.jsonl"
    written = write_submission({"suite": "core", "model": model, "policy": "openai", "date": "2025-06-01"}, tmp_path)
    assert written == tmp_path / "runs" / "core" / "org-model-v2-2025-06-01.json"


def test_envs_of_two_namespaces_get_two_results_files(tmp_path, monkeypatch):
    """`a/Env-v0` and `b/Env-v0` wrote the same default results file; the namespace now stays in the name
    (agentgym's own ids keep their names), and a file named the old way is still resumed."""
    monkeypatch.chdir(tmp_path)

    def path(*envs):
        request = EvalRequest(policy="oracle", envs=envs)
        return default_results_path(request, request.selection())

    assert path("a/Env-v0") == Path("results/a-env-v0-oracle-seed0.jsonl")
    assert path("b/Env-v0") == Path("results/b-env-v0-oracle-seed0.jsonl")
    assert path("agentgym/SearchQA-v0") == Path("results/searchqa-v0-oracle-seed0.jsonl")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "env-v0-oracle-seed0.jsonl").write_text("")
    assert path("a/Env-v0") == Path("results/env-v0-oracle-seed0.jsonl")  # the run it started before
