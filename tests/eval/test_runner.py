"""The eval runner: plans, concurrency, resuming after a crash, remote envs, errors, summaries, export."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from helpers.gates import requires_envs, requires_every_env

from agentgym.envs import ENVS
from helpers.server_process import serving

import agentgym
from agentgym.errors import ConfigError, DataError, PolicyError
from agentgym.eval.episode import EpisodeResult
from agentgym.eval.plan import plan_episodes
from agentgym.eval.results import export_parquet, load_results
from agentgym.eval.runner import run_plan
from agentgym.eval.stats import summarize
from agentgym.policies import OraclePolicy, RandomPolicy, Sampling, make_policy
from agentgym.policies.chat import ChatPolicy, Generation
from agentgym.eval.suites import SUITES, Suite, SuiteEntry, get_suite

SEARCH, MATH, CODE = "agentgym/SearchQA-v0", "agentgym/MathTool-v0", "agentgym/PyCode-v0"


def comparable(results, *drop):
    """Results without what legitimately differs between runs (timing, where the env ran)."""
    return [{k: v for k, v in (r.as_dict() if isinstance(r, EpisodeResult) else r).items()
             if k not in ("wall_s", "env_s", "generate_s", *drop)} for r in results]


def keys_in(path):
    return [json.loads(line)["key"] for line in path.read_text().splitlines()]


class ScriptedChat(ChatPolicy):
    """A stand-in for a model: a fixed two-turn script that reads only the conversation."""

    name = "scripted"
    model = "scripted-model-1"

    def generate(self, messages, tools):
        prompt = " ".join(m["content"] or "" for m in messages)
        if len(messages) == 1:
            text = "<search>" + " ".join(messages[0]["content"].split()[-5:]) + "</search>"
        else:
            text = "<answer>" + (messages[-1]["content"].split() or ["x"])[0] + "</answer>"
        return Generation(text, prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4)


class FailsOnTask(OraclePolicy):
    """The oracle, except that its model call blows up on one task."""

    def __init__(self, task_id):
        self.task_id = task_id

    def act(self, observation, info):
        if info["task_id"] == self.task_id:
            raise PolicyError("endpoint returned 503")
        return super().act(observation, info)


# ---------------------------------------------------------------- suites and plans


HELD_OUT = {"agentgym/ALFWorld-v0": "valid_unseen"}


def test_every_registered_env_is_in_the_full_suite():
    """A new env id must be added to `full` (and its version bumped), never silently left out."""
    shipped = {info.id for info in ENVS}  # not test-only ids other tests register
    missing = shipped - {e.env_id for e in SUITES["full"].entries}
    assert not missing, f"registered but in no suite's full: {sorted(missing)}"
    # the whole held-out split: "test", or ALFWorld's valid_unseen (floor plans never trained on)
    assert all(e.episodes is None and e.split == HELD_OUT.get(e.env_id, "test") for e in SUITES["full"].entries)
    # core: every text env but ALFWorld, whose 50-turn episodes would add minutes to the main job
    text_only = {info.id for info in ENVS if "browser" not in info.extras} - {"agentgym/ALFWorld-v0"}
    assert {e.env_id for e in SUITES["core"].entries} == text_only
    # at least 30 episodes an entry (a useful interval), short episodes, and the arithmetic rung small models climb
    assert all(e.episodes >= 30 and e.env_kwargs["max_turns"] <= 6 for e in SUITES["core"].entries)
    assert "agentgym/MathTool-v0[arithmetic]" in {e.label for e in SUITES["core"].entries}
    assert "agentgym/PyCode-v0[humaneval]" in {e.label for e in SUITES["full"].entries}


def test_named_entries_and_the_envs_default_split():
    with pytest.raises(ConfigError, match="give each a name"):
        Suite("two", "1", (SuiteEntry(SEARCH, "test", 2), SuiteEntry(SEARCH, "test", 2, {"topk": 2})))
    entries = (SuiteEntry(SEARCH, None, 2), SuiteEntry(SEARCH, "train", 2, {"topk": 2}, name="top2"))
    plan = plan_episodes(Suite("two", "1", entries), seed=0)
    assert [(p.entry, p.split) for p in plan] == [(SEARCH, "test")] * 2 + [(f"{SEARCH}[top2]", "train")] * 2
    with pytest.raises(ConfigError, match="short lower-case word"):
        SuiteEntry(SEARCH, name="Top 2")


def test_unknown_suite_suggests_the_close_name():
    assert get_suite("core") is SUITES["core"]
    with pytest.raises(ConfigError, match="Did you mean 'full'"):
        get_suite("ful")
    with pytest.raises(ConfigError, match="more than once"):
        Suite("dup", "1", (SuiteEntry(SEARCH), SuiteEntry(SEARCH, episodes=3)))
    with pytest.raises(ConfigError, match="episodes must be >= 1"):
        SuiteEntry(SEARCH, episodes=0)


def test_plan_is_deterministic_and_plays_each_task_once_however_many_episodes_are_asked():
    """More episodes than tasks used to cycle the tasks silently, and the repeats counted as independent
    evidence (n=30 over 15 tasks); the plan now plays each task once and says so (``--samples`` repeats)."""
    entries = [SuiteEntry(CODE, "test", 200), SuiteEntry(SEARCH, "train", 3)]
    capped = []
    plan = plan_episodes(entries, seed=5, on_capped=lambda *c: capped.append(c))
    assert plan == plan_episodes(entries, seed=5, on_capped=lambda *c: None)
    n_code = len(agentgym.make(CODE).unwrapped.tasks.tasks("test"))
    assert capped == [(CODE, 200, n_code)]  # the search entry asked for fewer than it has
    code = [p for p in plan if p.env_id == CODE]
    assert [p.episode for p in code] == list(range(n_code)) and [p.seed for p in code] == list(range(5, 5 + n_code))
    assert [p.task_index for p in code] == list(range(n_code))
    repeated = plan_episodes([SuiteEntry(CODE, "test", 200)], seed=5, samples=2, on_capped=lambda *c: None)
    assert len(repeated) == 2 * n_code  # repeats only as samples, each task twice
    policy = make_policy("random")
    keys = [p.key(policy) for p in plan]
    assert len(set(keys)) == len(plan) and keys == [p.key(make_policy("random")) for p in plan]
    assert plan[0].key(policy) != plan[0].key(make_policy("oracle"))
    with pytest.raises(ConfigError, match="no split 'dev'"):
        plan_episodes([SuiteEntry(SEARCH, "dev", 1)], seed=0)


@requires_every_env
def test_full_suite_resolves_to_the_whole_test_split():
    plan = plan_episodes(get_suite("full"), seed=0)
    for entry in SUITES["full"].entries:
        n_tasks = len(agentgym.make(entry.env_id, **entry.env_kwargs).unwrapped.tasks.tasks(entry.split))
        planned = [p for p in plan if p.entry == entry.label]
        assert sorted(p.task_index for p in planned) == list(range(n_tasks))
    assert {(p.suite, p.suite_version) for p in plan} == {("full", "5")}
    assert len([p for p in plan if p.entry == "agentgym/PyCode-v0[humaneval]"]) == 164


# ---------------------------------------------------------------- running


@pytest.mark.parametrize("policy", ["oracle", "random"])
def test_concurrency_does_not_change_any_episode(policy):
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 12), SuiteEntry(MATH, "test", 6)], seed=3)
    serial = run_plan(plan, lambda: make_policy(policy, seed=3), concurrency=1)
    threaded = run_plan(plan, lambda: make_policy(policy, seed=3), concurrency=3)
    assert comparable(serial) == comparable(threaded)
    assert [r.episode for r in serial] == [p.episode for p in plan] and all(r.error is None for r in serial)
    expected_reward = 1.0 if policy == "oracle" else 0.0
    assert summarize(serial)["mean_reward"] == pytest.approx(expected_reward, abs=0.1)


@requires_envs(get_suite("core").env_ids)
def test_results_carry_provenance(tmp_path):
    plan = plan_episodes(get_suite("core"), seed=0)[:2]
    sampling = Sampling(temperature=0.7, seed=1)

    result, _ = run_plan(plan, lambda: ScriptedChat(sampling=sampling), results_path=tmp_path / "r.jsonl")
    assert result.env_version == "v0" and result.suite == "core" and result.suite_version == "4"
    assert result.model == "scripted-model-1" and result.sampling == sampling.as_dict()
    assert result.prompt_tokens > 0 and result.completion_tokens > 0 and result.remote is None
    assert result.agentgym_version == agentgym.__version__
    assert result.git_commit is None or re.fullmatch(r"[0-9a-f]{40}", result.git_commit)
    assert json.loads(result.key)["model"] == "scripted-model-1"
    assert EpisodeResult.from_dict(load_results(tmp_path / "r.jsonl")[0]) == result


def test_a_failing_episode_is_recorded_and_the_run_goes_on(tmp_path):
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 6)], seed=0)
    results = run_plan(plan, lambda: FailsOnTask("test_2"), concurrency=2, results_path=tmp_path / "r.jsonl")
    assert len(results) == 6 and len(load_results(tmp_path / "r.jsonl")) == 6
    failed = results[2]
    assert failed.error == "PolicyError: endpoint returned 503"
    assert failed.reward == 0.0 and not failed.correct and failed.task_id == "test_2"
    assert failed.transcript[0]["role"] == "user"  # what happened before the failure is kept
    assert all(r.error is None and r.correct for i, r in enumerate(results) if i != 2)
    assert summarize(results)["errors"] == 1


def test_stop_then_rerun_appends_only_the_missing_episodes(tmp_path):
    path = tmp_path / "r.jsonl"
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 10), SuiteEntry(MATH, "test", 4)], seed=1)
    stop, seen = threading.Event(), []

    def record(result):
        seen.append(result.key)
        if len(seen) == 4:
            stop.set()

    first = run_plan(plan, lambda: make_policy("random", seed=1), concurrency=2, results_path=path,
                     on_episode=record, stop=stop)
    assert 4 <= len(first) < len(plan) and len(keys_in(path)) == len(first)  # running ones finished
    rerun = []
    results = run_plan(plan, lambda: make_policy("random", seed=1), concurrency=2, results_path=path,
                       on_episode=lambda r: rerun.append(r.key))
    planned = [p.key(make_policy("random")) for p in plan]
    assert sorted(keys_in(path)) == sorted(planned) and len(rerun) == len(plan) - len(first)
    assert not set(rerun) & set(seen)
    fresh = run_plan(plan, lambda: make_policy("random", seed=1))
    assert comparable(results) == comparable(fresh)
    # a third run has nothing left to do and returns the stored results
    again = run_plan(plan, lambda: make_policy("random", seed=1), results_path=path,
                     on_episode=lambda r: pytest.fail("a finished episode ran again"))
    assert comparable(again) == comparable(fresh)


def test_a_plan_prefix_then_the_whole_plan(tmp_path):
    path = tmp_path / "r.jsonl"
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 8)], seed=0)
    run_plan(plan[:3], OraclePolicy, results_path=path)
    ran = []
    results = run_plan(plan, OraclePolicy, concurrency=3, results_path=path, on_episode=lambda r: ran.append(r))
    assert [r.episode for r in ran] and sorted(r.episode for r in ran) == [3, 4, 5, 6, 7]
    assert [r.episode for r in results] == list(range(8)) and len(keys_in(path)) == 8


KILLED_RUN = """
import sys, time
from agentgym.policies import RandomPolicy
from agentgym.eval.plan import plan_episodes
from agentgym.eval.runner import run_plan
from agentgym.eval.suites import SuiteEntry

class SlowRandom(RandomPolicy):
    def act(self, observation, info):
        time.sleep(0.03)
        return super().act(observation, info)

plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", "test", 40)], seed=7)
run_plan(plan, lambda: SlowRandom(7), concurrency=2, results_path=sys.argv[1])
"""


def test_sigkill_mid_run_then_rerun_gives_exactly_the_plan(tmp_path):
    path = tmp_path / "results" / "r.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(path)], env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 60
        while not (path.exists() and path.read_bytes().count(b"\n") >= 5):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no results appeared"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    survived = path.read_bytes().count(b"\n")
    assert 5 <= survived < 40
    with path.open("ab") as f:  # a torn write, as a kill mid-line leaves it
        f.write(b'{"env_id": "agentgym/SearchQA-v0", "task_id": "te')
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 40)], seed=7)
    rerun = []
    results = run_plan(plan, lambda: RandomPolicy(7), concurrency=2, results_path=path,
                       on_episode=lambda r: rerun.append(r))
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line is valid JSON
    planned = [p.key(RandomPolicy(7)) for p in plan]
    assert sorted(r["key"] for r in records) == sorted(planned) and len(records) == 40
    assert len(rerun) == 40 - survived
    assert comparable(results) == comparable(run_plan(plan, lambda: RandomPolicy(7)))


def test_remote_env_gives_the_same_episodes_as_in_process():
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 6), SuiteEntry(MATH, "test", 4)], seed=2)
    with serving(SEARCH, MATH) as url:
        for factory in (OraclePolicy, lambda: RandomPolicy(2), ScriptedChat):
            local = run_plan(plan, factory, concurrency=2)
            remote = run_plan(plan, factory, concurrency=2, remote=url)
            assert all(r.remote == url and r.error is None for r in remote)
            assert comparable(remote, "remote") == comparable(local, "remote")
        assert summarize(remote)["mean_prompt_tokens"] > 0


# ---------------------------------------------------------------- results files, summaries, export


def test_load_results_ignores_a_torn_tail_and_rejects_a_bad_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b"')
    assert load_results(path) == [{"a": 1}, {"a": 2}]
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(DataError, match=r"r\.jsonl:2"):
        load_results(path)


def test_results_load_with_pandas_and_export_flat_parquet(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "r.jsonl"
    plan = plan_episodes([SuiteEntry(SEARCH, "test", 4)], seed=0)
    run_plan(plan[:2], lambda: make_policy("random"), results_path=path)
    run_plan(plan, lambda: ScriptedChat(sampling=Sampling()), results_path=path)
    frame = pd.read_json(path, lines=True)
    assert len(frame) == 6 and {"key", "reward", "transcript", "git_commit", "error"} <= set(frame.columns)
    assert export_parquet(path, tmp_path / "out" / "r.parquet") == 6
    table = pq.read_table(tmp_path / "out" / "r.parquet")
    assert not any(pa.types.is_nested(t) for t in table.schema.types)
    rows = table.to_pylist()
    assert json.loads(rows[0]["transcript"])[0]["role"] == "user"
    assert rows[0]["sampling"] is None and json.loads(rows[-1]["sampling"]) == Sampling().as_dict()
    assert [r["key"] for r in rows] == keys_in(path)


def test_summary_intervals_match_hand_computed_values():
    results = [{"reward": 1.0, "correct": True, "turns": 2, "tool_calls": 1, "prompt_tokens": 10,
                "completion_tokens": 4, "error": None}] * 8
    results += [{"reward": 0.0, "correct": False, "turns": 4, "tool_calls": 3, "prompt_tokens": 20,
                 "completion_tokens": 6, "error": "PolicyError: boom"}] * 2
    s = summarize(results + [{**results[-1], "correct": False, "error": None}] * 2)
    # the 2 errored episodes are excluded: 8 of the 10 scored.
    # Wilson, z = 1.96, 8 of 10: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n) = 0.4902 .. 0.9433
    assert (s["episodes"], s["scored"], s["errors"]) == (12, 10, 2)
    assert s["success_rate"] == 0.8
    assert s["success_rate_ci_low"] == pytest.approx(0.4902, abs=1e-4)
    assert s["success_rate_ci_high"] == pytest.approx(0.9433, abs=1e-4)
    # normal: sd = sqrt(1.6 / 9) = 0.42164, 0.8 ± 1.96 · 0.42164 / sqrt(10) = 0.5387 .. 1.0613, clipped to 1
    assert s["mean_reward_ci_low"] == pytest.approx(0.5387, abs=1e-4) and s["mean_reward_ci_high"] == 1.0
    # effort is over every episode, errored or not: 8 of 2 turns and 4 of 4
    assert (s["mean_turns"], s["mean_tool_calls"]) == (pytest.approx(32 / 12), pytest.approx(20 / 12))
    assert (s["mean_prompt_tokens"], s["mean_completion_tokens"]) == (pytest.approx(160 / 12), pytest.approx(56 / 12))
    perfect = summarize([{"reward": 1.0, "correct": True}] * 5)
    assert perfect["success_rate_ci_high"] == 1.0 and perfect["success_rate_ci_low"] == pytest.approx(0.5655, abs=1e-4)
    assert summarize([])["episodes"] == 0


def test_a_system_prompt_reaches_model_policies_and_keys_their_results():
    """`agentgym eval --system-prompt`: a recipe trained with a system message is evaluated with it; its episodes
    are keyed apart from the same run without one, and the keys of runs without one are as they always were."""
    from agentgym.eval.command import EvalRequest

    plan = plan_episodes([SuiteEntry(MATH, "test", 1)], seed=0)
    request = EvalRequest(policy="openai:http://127.0.0.1:9/v1", model="m", system_prompt="Use the tool.")
    with_prompt, without = request.make_policy(), make_policy("openai:http://127.0.0.1:9/v1", model="m")
    assert with_prompt.system_prompt == "Use the tool." and without.system_prompt is None
    assert json.loads(plan[0].key(with_prompt))["system_prompt"] == "Use the tool."
    assert "system_prompt" not in json.loads(plan[0].key(without))
    with pytest.raises(ConfigError, match="The oracle policy reads no prompt"):
        make_policy("oracle", system_prompt="Use the tool.")


@pytest.mark.parametrize(("action_format", "expected"), [("tags", "<answer>Lima</answer>"),
                                                         ("hermes", "<answer>Lima</answer>"),
                                                         ("dict", '{"answer": "Lima"}')])
def test_an_oracles_dict_answer_is_recorded_as_the_formats_action(action_format, expected):
    """The scaffold's oracle answers with a dict: the transcript held Python's repr ``{'answer': 'Lima'}``, and
    `agentgym data sft` taught it as an action. Now it is the action the model would write in the env's format."""
    from agentgym.eval.runner import evaluate
    from agentgym.eval.sft_data import chat_rows

    env_id = f"agentgym-test/DictOracle-{action_format}-v0"
    if env_id not in agentgym.core.registry.env_ids():
        agentgym.register(env_id, agentgym.ToolEnv, tasks=[{"question": "Capital of Peru?", "answer": "Lima"}],
                          verifier="qa", oracle=lambda task, turn: {"answer": task["answer"]})
    results = evaluate(env_id, "oracle", episodes=1, env_kwargs={"action_format": action_format})
    assert results[0].reward == 1.0
    assert results[0].transcript[1] == {"role": "assistant", "content": expected}
    [row] = chat_rows([results[0].as_dict()])
    assert row["messages"][1]["content"] == expected


def test_a_dead_server_stops_the_run_after_a_few_episodes_and_keeps_what_was_played(tmp_path):
    """`eval --remote` against a server that died retried every remaining episode and saved each as an error (402
    errors in 5 minutes; ~18 minutes for 1,500 episodes). Now the run stops once a few episodes in a row could not
    reach it, with one line that says what to do, and what was written stays."""
    from helpers.server_process import free_port

    from agentgym.errors import RemoteEnvError
    from agentgym.eval.runner import UNREACHABLE_IN_A_ROW

    plan = plan_episodes([SuiteEntry("agentgym/SearchQA-v0", episodes=30)], seed=0)
    path = tmp_path / "r.jsonl"
    start = time.perf_counter()
    with pytest.raises(RemoteEnvError, match="stopped answering: 3 episodes in a row could not reach it"):
        run_plan(plan, lambda: OraclePolicy(), concurrency=2, remote=f"http://127.0.0.1:{free_port()}",
                 results_path=path)
    assert time.perf_counter() - start < 60
    rows = load_results(path)
    assert UNREACHABLE_IN_A_ROW <= len(rows) <= UNREACHABLE_IN_A_ROW + 2
    assert all("connection_error" in r["error"] for r in rows)
