"""``agentgym.testing``: the verifier attacks catch weak verifiers and pass a good one; ``check_against_server``
passes on an env served as it runs in process, and names the first difference when the server's data differs."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from helpers.gates import requires_server

import agentgym
import agentgym.testing
from agentgym.core.imports import IMPORT_VARIABLE
from agentgym.core.plugins import import_envs
from agentgym.errors import EnvCheckFailed
from agentgym.testing import check_against_server, check_verifier_attacks

# byo/Capitals from docs/custom-envs.md, its rows in a JSON file beside it (read at import), and the same env with
# weak verifiers
CAPITALS = textwrap.dedent('''
    import json
    from pathlib import Path

    import agentgym

    def capital_of(country: str) -> str:
        """Look up the capital city of a country."""
        return {"Peru": "Lima", "Kenya": "Nairobi", "Chile": "Santiago"}.get(country, "unknown country")

    TASKS = json.loads(Path(__file__).with_suffix(".json").read_text())

    def contains_gold(answer, task):
        return task["answer"].lower() in (answer or "").lower()

    def any_words(answer, task):
        return bool((answer or "").strip())

    def anything(answer, task):
        return True

    def nothing(answer, task):
        return 0.0

    agentgym.register("byo/Capitals-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], verifier="qa")
    for name, verifier in [("ContainsGold", contains_gold), ("AnyWords", any_words), ("Anything", anything),
                           ("Nothing", nothing)]:
        agentgym.register(f"byo/Capitals{name}-v0", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of],
                          verifier=verifier)
''')
TASKS = [{"question": "What is the capital of Peru?", "answer": "Lima"},
         {"question": "What is the capital of Kenya?", "answer": "Nairobi"},
         {"question": "What is the capital of Chile?", "answer": "Santiago"}]


@pytest.fixture(scope="module")
def capitals(tmp_path_factory):
    """The capitals file, imported (as ``--import`` does); AGENTGYM_IMPORT is restored after."""
    path = tmp_path_factory.mktemp("capitals") / "capitals.py"
    path.write_text(CAPITALS)
    path.with_suffix(".json").write_text(json.dumps(TASKS))
    before = os.environ.get(IMPORT_VARIABLE)
    import_envs([str(path)])
    yield path
    if before is None:
        os.environ.pop(IMPORT_VARIABLE, None)
    else:
        os.environ[IMPORT_VARIABLE] = before


def test_check_env_is_agentgyms():
    assert agentgym.testing.check_env is agentgym.check_env


def test_the_attacks_pass_a_good_verifier_and_the_oracle_scores_1(capitals):
    report = check_verifier_attacks("byo/Capitals-v0")
    assert report == {"oracle": 1.0, "empty": 0.0, "echo": 0.0, "hedged": 0.0, "format": 0.0}
    # a made env, in another action format, passes too
    assert check_verifier_attacks(agentgym.make("byo/Capitals-v0", action_format="hermes"))["hedged"] == 0.0


@pytest.mark.parametrize(("env_id", "caught"), [
    ("byo/CapitalsContainsGold-v0", {"hedged"}),  # "Nairobi or Lima or Santiago" contains Lima
    ("byo/CapitalsAnyWords-v0", {"echo", "hedged", "format"}),
    ("byo/CapitalsAnything-v0", {"empty", "echo", "hedged", "format"}),
])
def test_the_attacks_catch_weak_verifiers(capitals, env_id, caught):
    with pytest.raises(EnvCheckFailed) as error:
        check_verifier_attacks(env_id)
    message = str(error.value)
    assert message.startswith(f"check_verifier_attacks ({env_id}): the verifier gave reward 1 to")
    lines = message.splitlines()[1:]
    assert {line.split()[0] for line in lines} == caught
    assert len({line.split("'")[1] for line in lines if line.strip().startswith("hedged")}) == 3  # on every task
    if caught == {"hedged"}:
        assert "'<answer>Nairobi or Lima or Santiago</answer>'" in message


def test_an_oracle_that_does_not_score_1_is_an_error(capitals):
    with pytest.raises(EnvCheckFailed, match="the oracle scored 0.0 on task 'test-0'"):
        check_verifier_attacks("byo/CapitalsNothing-v0")


@requires_server
@pytest.mark.slow
def test_check_against_server_passes_on_capitals(capitals):
    report = check_against_server("byo/Capitals-v0", seeds=(0, 5))
    assert report["seeds"] == [0, 5] and report["steps"] > 6


@requires_server
@pytest.mark.slow
def test_check_against_server_names_the_first_difference(capitals):
    # the server imports the file afresh and reads the rows now: other questions than this process holds
    drifted = [{**task, "question": task["question"].replace("capital", "capital city")} for task in TASKS]
    capitals.with_suffix(".json").write_text(json.dumps(drifted))
    try:
        with pytest.raises(EnvCheckFailed, match=r"seed 0\): step 0's observation differs") as error:
            check_against_server("byo/Capitals-v0", seeds=(0,))
        assert "capital city" in str(error.value)
    finally:
        capitals.with_suffix(".json").write_text(json.dumps(TASKS))


@requires_server
@pytest.mark.slow
def test_an_env_the_server_cannot_find_is_a_clear_error():
    agentgym.register("byo/OnlyHere-v0", agentgym.SingleTurnEnv, tasks=TASKS)
    with pytest.raises(EnvCheckFailed, match="pass imports=") as error:
        check_against_server("byo/OnlyHere-v0", seeds=(0,))
    assert "No environment registered as 'byo/OnlyHere-v0'" in str(error.value)
