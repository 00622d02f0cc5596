"""The examples of docs/custom-envs.md (examples/) work as the page says: they pass the env checker, the QA env is
at most 30 lines of user code, the booking desk scores the database it leaves, and the command line runs them."""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import agentgym

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _load(stem: str) -> ModuleType:
    """Import ``examples/<stem>.py`` once per test process (a second import would register its ids again)."""
    name = f"agentgym_example_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _code_lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.strip().startswith("#")]


@pytest.mark.parametrize(("stem", "env_id"), [("byo_qa", "byo/HandbookQA-v0"),
                                               ("booking_desk", "byo/BookingDesk-v0")])
def test_the_examples_pass_the_env_checker(stem, env_id):
    _load(stem)
    report = agentgym.check_env(agentgym.make(env_id, action_format="tags"))
    assert len(report["oracle_solved"]) == 3


def test_the_qa_example_is_at_most_30_lines_of_user_code():
    lines = _code_lines(EXAMPLES / "byo_qa.py")
    assert len(lines) <= 30, f"examples/byo_qa.py has {len(lines)} lines of code; the docs promise at most 30"
    assert _code_lines(ROOT / "tests" / "test_custom_env_examples.py")  # the counter counts


def test_the_docs_show_the_examples_exactly():
    """docs/custom-envs.md includes examples/byo_qa.py whole, and each block marked ``<!-- from FILE -->`` is a
    verbatim part of FILE, so the page cannot drift from the tested files."""
    page = (ROOT / "docs" / "custom-envs.md").read_text(encoding="utf-8")
    assert (EXAMPLES / "byo_qa.py").read_text(encoding="utf-8") in page
    excerpts = re.findall(r"<!-- from (\S+) -->\n```python\n(.*?)```", page, re.DOTALL)
    assert len(excerpts) >= 3
    for path, block in excerpts:
        assert block in (ROOT / path).read_text(encoding="utf-8"), f"docs/custom-envs.md's excerpt of {path} drifted"


@pytest.mark.parametrize("env_id", ["byo/HandbookQA-v0", "byo/BookingDesk-v0"])
def test_the_examples_resist_the_standard_verifier_attacks(env_id):
    from agentgym.testing import check_verifier_attacks

    _load("byo_qa")
    _load("booking_desk")
    report = check_verifier_attacks(env_id)
    assert report["oracle"] == 1.0 and max(v for k, v in report.items() if k != "oracle") == 0.0


@pytest.mark.slow
def test_the_booking_desk_served_plays_as_in_process():
    """A real `agentgym serve --import examples/booking_desk.py` (its per-episode database in each session)."""
    pytest.importorskip("uvicorn", reason="pip install -e '.[server]'")
    from agentgym.testing import check_against_server

    _load("booking_desk")
    report = check_against_server("byo/BookingDesk-v0", imports=[str(EXAMPLES / "booking_desk.py")])
    assert report["steps"] > 3 * 3  # three episodes of two mistakes, some tool calls and the answer


def test_the_qa_search_tool_finds_the_passage_with_the_answer():
    qa = _load("byo_qa")
    env = agentgym.make("byo/HandbookQA-v0").unwrapped
    env.reset(options={"task_id": "test-2"})
    observation, reward, terminated, _, info = env.step("<search_handbook>Kestrel telemetry</search_handbook>")
    assert "Oslo" in observation.split("\n")[2]  # the best match comes first
    assert (reward, terminated, info["action_error"]) == (0.0, False, None)
    assert qa.search_handbook("zebra") == "No match; try other keywords."
    assert env.tool_schemas()[0]["function"]["parameters"]["properties"]["query"]["description"] == \
        "Keywords to look for."


def _play(env_id: str, task_id: str, actions: list[str]) -> tuple[float, dict]:
    env = agentgym.make(env_id).unwrapped
    env.reset(options={"task_id": task_id})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        assert info["action_error"] is None, info["action_error"]
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")


def test_the_booking_desk_oracle_scores_1_on_every_task():
    desk = _load("booking_desk")
    env = agentgym.make("byo/BookingDesk-v0").unwrapped
    for row in desk.TASKS:
        env.reset(options={"task_id": row["id"]})
        for _ in range(env.max_turns):
            _, reward, terminated, truncated, info = env.step(env.oracle_action())
            assert info["action_error"] is None
            if terminated or truncated:
                break
        assert (reward, terminated) == (1.0, True), row["id"]


def test_the_booking_desk_verifier_rejects_a_wrong_final_state():
    _load("booking_desk")
    answer = "<answer>Done!</answer>"
    # saying it is done without changing the database
    assert _play("byo/BookingDesk-v0", "ada-cheapest", [answer])[0] == 0.0
    # a booking, but on the dearer flight
    reward, info = _play("byo/BookingDesk-v0", "ada-cheapest", ["<book>AG101</book>", answer])
    assert reward == 0.0 and info["verification"]["details"]["differs"] == ["bookings", "seats"]
    # the right booking, and another customer's flight changed on the way: refused by the tool, so it scores 1
    reward, _ = _play("byo/BookingDesk-v0", "ada-cheapest", ["<cancel>BK3</cancel>", "<book>AG103</book>", answer])
    assert reward == 1.0
    # the evening flight booked but the morning one kept: two seats held, not one
    reward, _ = _play("byo/BookingDesk-v0", "grace-evening", ["<book>AG302</book>", answer])
    assert reward == 0.0
    # running out of turns scores the database as it is: right here, so 1 (tau-bench scores the state, not words)
    env = agentgym.make("byo/BookingDesk-v0", max_turns=1).unwrapped
    env.reset(options={"task_id": "alan-cancel"})
    _, reward, terminated, truncated, info = env.step("<cancel>BK3</cancel>")
    assert (reward, terminated, truncated) == (1.0, False, True)


def test_the_booking_desk_verifier_is_pure_and_its_doctest_passes():
    desk = _load("booking_desk")
    task = next(row for row in desk.TASKS if row["id"] == "alan-cancel")
    before = desk.Desk("alan").state()
    after = desk.Desk("alan")
    after.cancel("bk3")
    assert desk.verify_bookings(before, task).reward == 0.0
    assert desk.verify_bookings(after.state(), task).reward == 1.0
    assert desk.verify_bookings(None, task).reward == 0.0
    assert desk.Desk("alan").state() == before  # scoring replays the gold actions on a copy
    failed, attempted = doctest.testmod(desk)
    assert attempted >= 1 and failed == 0


def test_eval_runs_the_qa_example_from_the_command_line(tmp_path):
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "eval", "--import", str(EXAMPLES / "byo_qa.py"),
         "--env", "byo/HandbookQA-v0", "--policy", "oracle", "--episodes", "3",
         "--results", str(tmp_path / "episodes.jsonl"), "--summary-json", str(summary)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"},
        check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(summary.read_text())["byo/HandbookQA-v0"]
    assert result["episodes"] == 3 and result["mean_reward"] == 1.0 and result["errors"] == 0, result


def test_the_open_ended_example_scores_with_an_exact_part_a_judged_part_and_a_gate(tmp_path, monkeypatch):
    """examples/byo_explain.py: a rubric of a citation gate, an exact part and a judged part, its judge a scripted
    OpenAI-compatible server on a real port; a rerun asks the judge nothing (its cache)."""
    pytest.importorskip("starlette")
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.judge_server import judge

    def reply(user, answers):
        return "SCORE: 9" if "printer" in answers[0] else "SCORE: 2"

    with judge(reply) as (url, requests):
        monkeypatch.setenv("AGENTGYM_JUDGE_URL", url)
        monkeypatch.setenv("AGENTGYM_JUDGE_MODEL", "scripted")
        monkeypatch.setenv("AGENTGYM_JUDGE_CACHE", str(tmp_path / "cache"))
        spec = importlib.util.spec_from_file_location("agentgym_example_byo_explain_judged", EXAMPLES / "byo_explain.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        env = agentgym.make("byo/ExplainHandbook-v0", action_format="tags")

        def play(answer):
            env.reset(options={"split": "test", "index": 0})
            _, reward, _, _, info = env.step(f"<answer>{answer}</answer>")
            return reward, info["verification"]["parts"]

        reward, parts = play("Floor 3 [0]: the badge printer is there.")  # the oracle's answer
        assert reward == pytest.approx((2 * 1.0 + 0.9) / 3) and parts["explains"]["score"] == 0.9
        reward, parts = play("Floor 3 [0], because it is convenient.")
        assert reward == pytest.approx((2 * 1.0 + 0.2) / 3)
        reward, parts = play("Floor 3 or building C or Oslo [0]: the badge printer is there.")  # listing answers
        assert parts["correct"]["score"] == 0.0
        reward, parts = play("Floor 3, the badge printer is there.")  # no citation: the gate
        assert reward == 0.0 and parts["cites"]["passed"] is False
        asked = len(requests)
        assert play("Floor 3 [0]: the badge printer is there.")[0] > 0.9 and len(requests) == asked  # cached
        assert module.JUDGE.stats["hits"] >= 1
        env.close()
