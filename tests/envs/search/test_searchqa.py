"""agentgym/SearchQA-v0 end to end, and loading user data in the upstream schemas."""

import gzip
import json

import gymnasium as gym
import pytest
from helpers.gates import requires_dense, requires_pyserini

import agentgym
from agentgym.envs.search import SearchQAEnv
from agentgym.envs.search.data import load_qa_tasks
from agentgym.errors import ConfigError, DataError

CORPUS = [
    {"id": "0", "contents": '"Lima"\nLima is the capital and largest city of Peru, on the Pacific coast.'},
    {"id": "1", "contents": '"Peru"\nPeru is a country in South America. Its currency is the Peruvian sol.'},
    {"id": "2", "contents": '"Oslo"\nOslo is the capital of Norway and its most populous city.'},
    {"id": "3", "contents": '"Norway"\nNorway is a Nordic country. Its currency is the Norwegian krone.'},
]


@pytest.fixture()
def user_data(tmp_path):
    """A wiki-18 style corpus and FlashRAG-style QA files, as a user would have them."""
    corpus = tmp_path / "wiki-18.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    data = tmp_path / "qa"
    data.mkdir()
    test_rows = [
        {"id": "test_0", "question": "What is the currency of the country whose capital is Lima?",
         "golden_answers": ["Peruvian sol", "sol"]},
        {"id": "test_1", "question": "Which city is the capital of Norway?", "golden_answers": "Oslo"},
    ]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test_rows), encoding="utf-8")
    with gzip.open(data / "train.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"question": "Capital of Peru?", "golden_answers": ["Lima"]}) + "\n")
    return {"corpus": corpus, "data_dir": data, "tmp": tmp_path}


def test_bundled_default_works_offline_through_gym_make():
    env = gym.make("agentgym/SearchQA-v0")
    obs, info = env.reset(seed=0)
    assert "<search>" in obs and "Question:" in obs and info["split"] == "test"
    obs, reward, terminated, truncated, info = env.step(f"<search>{env.unwrapped.task.prompt}</search>")
    assert obs.startswith("\n\n<information>Doc 1 (Title: ") and obs.count("\nDoc ") == 2  # top-3
    assert reward == 0.0 and not terminated


def test_user_files_end_to_end(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], topk=2,
                      cache_dir=tmp_path / "cache")
    assert env.tasks.splits() == ["test", "train"] and env.tasks.get("train_0").gold == {"golden_answers": ["Lima"]}
    obs, info = env.reset(options={"task_id": "test_0"})
    obs, *_ = env.step("<think>find the country first</think><search>capital Lima</search>")
    assert "Doc 1 (Title: Lima) Lima is the capital" in obs and "Doc 3" not in obs
    obs, *_ = env.step("<search>Peru currency</search>")
    assert "Doc 1 (Title: Peru)" in obs
    obs, reward, terminated, truncated, info = env.step("<answer> the Sol </answer>")
    assert reward == 1.0 and terminated and info["verification"]["details"]["em"] == 1.0


def test_reward_is_em_and_details_carry_f1_and_cover(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], cache_dir=tmp_path / "c")
    env.reset(options={"task_id": "test_1"})
    _, reward, _, _, info = env.step("<answer>Oslo, Norway</answer>")
    details = info["verification"]["details"]
    assert reward == 0.0 and details["cover_em"] == 1.0 and 0 < details["f1"] < 1
    f1_env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], reward_metric="f1",
                         cache_dir=tmp_path / "c")
    f1_env.reset(options={"task_id": "test_1"})
    assert 0 < f1_env.step("<answer>Oslo, Norway</answer>")[1] < 1


def test_max_turns_truncates_with_zero_reward(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], max_turns=2,
                      cache_dir=tmp_path / "c")
    env.reset(seed=0)
    assert env.step("<search>Oslo</search>")[3] is False
    _, reward, terminated, truncated, info = env.step("<search>Oslo</search>")
    assert truncated and not terminated and reward == 0.0 and info["answer"] is None


def test_hermes_format_and_dict_actions(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], action_format="hermes",
                      cache_dir=tmp_path / "c")
    obs, _ = env.reset(options={"task_id": "test_1"})
    assert '"name": "search"' in obs
    obs, *_ = env.step('<tool_call>{"name": "search", "arguments": {"query": "Norway capital"}}</tool_call>')
    assert obs.startswith("<tool_response>\nDoc 1 (Title: ")
    obs, *_ = env.step({"name": "search", "arguments": {"query": "Oslo"}})
    assert "Oslo is the capital" in obs
    assert env.step({"answer": "Oslo"})[1] == 1.0


def test_search_r1_parquet_schema(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": "train_0", "question": "who wrote hamlet?", "golden_answers": ["William Shakespeare"],
             "data_source": "nq", "reward_model": {"style": "rule",
                                                    "ground_truth": {"target": ["William Shakespeare"]}}},
            {"question": "capital of peru", "reward_model": {"ground_truth": {"target": ["Lima"]}}}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")
    tasks = load_qa_tasks({"train": tmp_path / "train.parquet"})
    assert tasks.get("train_0").gold["golden_answers"] == ["William Shakespeare"]
    assert tasks.get("train_1").gold["golden_answers"] == ["Lima"]


@pytest.mark.parametrize("row, fragment", [({"golden_answers": ["x"]}, "question"),
                                           ({"question": "q"}, "golden_answers"),
                                           ({"question": "q", "golden_answers": []}, "golden_answers")])
def test_bad_qa_records(tmp_path, row, fragment):
    (tmp_path / "test.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=fragment):
        load_qa_tasks({"test": tmp_path / "test.jsonl"})


def test_config_errors(user_data):
    with pytest.raises(ConfigError, match="topk"):
        SearchQAEnv(topk=0)
    with pytest.raises(ConfigError, match="either data_dir or qa_files"):
        SearchQAEnv(data_dir=user_data["data_dir"], qa_files={"test": "x"})
    with pytest.raises(DataError, match="does not exist"):
        SearchQAEnv(data_dir=user_data["tmp"] / "missing")
    with pytest.raises(ConfigError, match="Unknown retriever|retriever"):
        SearchQAEnv(retriever="elastic")


def test_oracle_uses_search_then_answers():
    env = agentgym.make("agentgym/SearchQA-v0").unwrapped
    env.reset(seed=3)
    first = env.oracle_action()
    assert first.startswith("<search>")
    *_, info = env.step(first)
    assert info["action_error"] is None


@requires_pyserini
def test_env_on_pyserini_lucene_index(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], retriever="pyserini",
                      cache_dir=tmp_path / "c")
    env.reset(options={"task_id": "test_1"})
    obs, *_ = env.step("<search>capital of Norway</search>")
    assert obs.startswith("\n\n<information>Doc 1 (Title: Oslo) Oslo is the capital of Norway and")


@requires_dense
@pytest.mark.slow
def test_env_on_dense_retrieval(user_data, tmp_path):
    env = SearchQAEnv(data_dir=user_data["data_dir"], corpus=user_data["corpus"], retriever="dense",
                      cache_dir=tmp_path / "c", topk=1)
    env.reset(options={"task_id": "test_0"})
    obs, *_ = env.step("<search>money used in Peru</search>")
    assert "Doc 1 (Title: Peru)" in obs


def test_no_search_baseline_has_no_tool_and_the_oracle_answers_at_once():
    """search=False (Search-R1's no-search baseline): the same questions and answer format, nothing to call."""
    env = gym.make("agentgym/SearchQA-v0", search=False)
    obs, _ = env.reset(seed=0)
    assert "<search>" not in obs and "<answer>" in obs and "Question:" in obs
    assert not env.unwrapped.tools
    obs, reward, terminated, _, info = env.step("<search>Santana population</search>")
    assert reward == 0.0 and not terminated and "<information>" not in obs and "No valid action" in obs
    env.reset(seed=0)
    action = env.unwrapped.oracle_action()
    assert action.startswith("<answer>")
    assert env.step(action)[1:3] == (1.0, True)
    with pytest.raises(ConfigError, match="search must be bool"):
        gym.make("agentgym/SearchQA-v0", search="no")
