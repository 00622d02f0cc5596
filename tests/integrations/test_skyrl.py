"""The SkyRL-Gym adapter, driven the way SkyRL's generator drives an env, in process and against ``agentgym serve``."""

import copy
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import sandbox_down_env  # noqa: F401 - registers test/SandboxDown-v0
from helpers.gates import env_params, import_or_skip, requires_server
from helpers.oracle import Oracle
from helpers.server_process import serving

import agentgym
from agentgym.errors import ConfigError, RemoteEnvError, ResetNeeded, SandboxError

skyrl_gym = import_or_skip("skyrl_gym", "skyrl")
from agentgym.integrations.skyrl import AgentGymTextEnv, register_skyrl_env, skyrl_rows

SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"
LOCAL, REMOTE = "agentgym-test-local", "agentgym-test-remote"


@pytest.fixture(scope="module")
def url():
    with serving(SEARCH, MATH, "test/Crashy-v0", preload="helpers.crashy_env") as base:
        yield base


@pytest.fixture(scope="module")
def local():
    register_skyrl_env(LOCAL)
    yield LOCAL
    skyrl_gym.envs.deregister(LOCAL)


@pytest.fixture(scope="module")
def remote(url):
    register_skyrl_env(REMOTE, base_url=url)
    yield REMOTE
    skyrl_gym.envs.deregister(REMOTE)


def skyrl_row(row: dict) -> tuple[list, str, dict]:
    """A dataset row as SkyRL's PromptDataset splits it: (prompt, env_class, extras = every other column),
    after a round trip through Parquet (the format SkyRL trains from)."""
    table = pa.Table.from_pylist([row, {**row, "agentgym": {"env_id": "agentgym/Other-v0", "seed": 1}}])
    row = pq.read_table(pa.BufferReader(_parquet_bytes(table))).to_pylist()[0]
    return row.pop("prompt"), row.pop("env_class"), row


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def generator_episode(env_class: str, prompt: list, extras: dict, actions, *, max_turns: int = 6):
    """One trajectory exactly as SkyRL's ``SkyRLGymGenerator.agent_loop`` makes it: ``skyrl_gym.make`` with
    ``env_config`` and ``extras`` (``max_turns`` added), ``init`` on a copy of the prompt, ``step`` on each
    model output until ``done``, ``get_metrics``, ``close``. ``actions(chat_history)`` plays the model."""
    extras = {**extras, "max_turns": max_turns}
    env = skyrl_gym.make(env_class, env_config={}, extras=extras)  # {}: SkyRL's config has no entry for our class
    chat_history, _ = env.init(copy.deepcopy(prompt))
    initial = copy.deepcopy(chat_history)
    rewards, outputs, done = [], [], False
    while not done:
        output = actions(chat_history)
        step = env.step(output)
        assert set(step) >= {"observations", "reward", "done", "metadata"}
        assert step.get("postprocessed_action") is None  # token-in-token-out: the action is never rewritten
        done = step["done"]
        rewards.append(step["reward"])
        outputs.append(step)
        chat_history += [{"role": "assistant", "content": output}, *step["observations"]]
        assert len(rewards) <= max_turns
    metrics = env.get_metrics()
    env.close()
    return initial, chat_history, rewards, outputs, metrics


def where(request, env_class_fixture: str) -> str:
    return request.getfixturevalue(env_class_fixture)


@pytest.mark.parametrize("env_id", env_params([SEARCH, MATH]))
@pytest.mark.parametrize("env_class", ["local", pytest.param("remote", marks=requires_server)])
def test_oracle_episode_through_the_generator_reaches_reward_1(request, env_id, env_class):
    env_class = where(request, env_class)
    row = skyrl_rows(env_id, split="test", env_class=env_class, count=2)[1]
    prompt, env_class, extras = skyrl_row(row)
    oracle = Oracle(env_id, extras["agentgym"]["task_id"])
    initial, history, rewards, outputs, metrics = generator_episode(env_class, prompt, extras, oracle)
    assert initial == [{"role": "user", "content": oracle.prompt}]
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0 and len(rewards) >= 2  # a tool call, then the answer
    assert outputs[-1]["metadata"]["verification"]["correct"] and outputs[-1]["metadata"]["terminated"]
    assert [o["observations"] for o in outputs] == [[{"role": "user", "content": text}] if text else []
                                                  for text in oracle.observations]
    assert all(m["role"] in ("user", "assistant") for m in history)
    assert metrics == {"turns": len(rewards), "action_errors": 0}


@pytest.mark.parametrize("env_class", ["local", pytest.param("remote", marks=requires_server)])
def test_malformed_action_is_an_observation_and_the_episode_goes_on(request, env_class):
    env_class = where(request, env_class)
    prompt, env_class, extras = skyrl_row(skyrl_rows(SEARCH, split="test", env_class=env_class, count=1)[0])
    oracle = Oracle(SEARCH, extras["agentgym"]["task_id"], mistakes=["I think the answer is", "<search></search"])
    _, _, rewards, outputs, metrics = generator_episode(env_class, prompt, extras, oracle, max_turns=8)
    for bad in outputs[:2]:
        assert not bad["done"] and bad["reward"] == 0.0 and bad["metadata"]["action_error"]
        assert bad["observations"][0]["content"] == bad["metadata"]["action_error"]
    assert rewards[-1] == 1.0 and metrics["action_errors"] == 2


def test_system_messages_stay_and_the_prompt_is_the_tasks(local):
    env = skyrl_gym.make(local, env_config={}, extras={"agentgym": {"env_id": SEARCH, "index": 4}})
    system = {"role": "system", "content": "Think step by step."}
    messages, info = env.init([system, {"role": "user", "content": "a stale copy of the prompt"}])
    expected, expected_info = agentgym.make(SEARCH).unwrapped.reset(options={"index": 4})
    assert messages == [system, {"role": "user", "content": expected}]
    assert info == {"task_id": expected_info["task_id"]}
    env.close()


def test_a_group_shares_its_task_and_a_row_must_name_one(local):
    def first_prompt(settings):
        env = skyrl_gym.make(local, env_config={}, extras={"agentgym": settings})
        messages, _ = env.init([])
        env.close()
        return messages[-1]["content"]

    group = [first_prompt({"env_id": SEARCH, "seed": 11}) for _ in range(3)]
    assert len(set(group)) == 1  # the same row, the same starting task: GRPO's baseline compares like with like
    assert first_prompt({"env_id": SEARCH, "seed": 12}) != group[0]
    with pytest.raises(ConfigError, match="same task"):
        skyrl_gym.make(local, env_config={}, extras={"agentgym": {"env_id": SEARCH}})
    with pytest.raises(ConfigError, match="Unknown agentgym setting 'taskid'"):
        skyrl_gym.make(local, env_config={}, extras={"agentgym": {"env_id": SEARCH, "taskid": "x"}})


def test_skyrl_max_turns_is_the_envs_unless_env_kwargs_set_one(local):
    row = {"agentgym": {"env_id": SEARCH, "index": 0}}
    oracle = Oracle(SEARCH, agentgym.make(SEARCH).unwrapped.tasks.tasks("test")[0].id)
    _, _, rewards, outputs, _ = generator_episode(local, [], row, oracle, max_turns=1)
    assert rewards == [0.0] and outputs[0]["metadata"]["truncated"]  # one search, then out of turns
    env = skyrl_gym.make(local, env_config={}, extras={"max_turns": 1, "agentgym": {**row["agentgym"],
                                                                                    "env_kwargs": {"max_turns": 4}}})
    env.init([])
    assert env.max_turns == 4
    env.close()


def test_registry_round_trip():
    register_skyrl_env("agentgym-test-registry", env_id=SEARCH, env_kwargs={"max_turns": 3})
    try:
        spec = skyrl_gym.spec("agentgym-test-registry")
        assert spec.entry_point == "agentgym.integrations.skyrl:AgentGymTextEnv"
        env = skyrl_gym.make("agentgym-test-registry", env_config={}, extras={"agentgym": {"index": 2}})
        assert isinstance(env, AgentGymTextEnv) and isinstance(env, skyrl_gym.Env)
        assert env.spec.id == "agentgym-test-registry" and env.episode.env_id == SEARCH
        env.init([])
        assert env.max_turns == 3
        env.close()
        env.close()  # twice is fine
        with pytest.raises(skyrl_gym.error.RegistrationError):
            register_skyrl_env("agentgym-test-registry")
    finally:
        skyrl_gym.envs.deregister("agentgym-test-registry")
    with pytest.raises(skyrl_gym.error.Error):
        skyrl_gym.make("agentgym-test-registry", env_config={}, extras={})


def test_a_sandbox_failure_is_raised_not_scored(local):
    env = skyrl_gym.make(local, env_config={}, extras={"agentgym": {"env_id": "test/SandboxDown-v0", "index": 0}})
    env.init([])
    with pytest.raises(SandboxError, match="failed to start"):
        env.step("<python>print(1 + 1)</python>")
    assert env.env is None  # closed: SkyRL does not close an env whose step raised
    with pytest.raises(ResetNeeded):
        env.step("<answer>2</answer>")


@requires_server
def test_a_server_side_env_failure_is_raised_not_scored(remote):
    env = skyrl_gym.make(remote, env_config={}, extras={"agentgym": {"env_id": "test/Crashy-v0", "index": 0}})
    env.init([])
    with pytest.raises(RemoteEnvError) as failure:
        env.step("crash")
    assert failure.value.status_code == 500 and env.env is None


@requires_server
def test_an_unreachable_server_is_raised_at_init():
    from helpers.server_process import free_port

    env = AgentGymTextEnv({}, {"agentgym": {"env_id": SEARCH, "index": 0}},
                          base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(RemoteEnvError) as failure:
        env.init([])
    assert failure.value.code == "connection_error" and env.env is None


def test_without_skyrl_gym_it_says_what_to_install():
    code = ("import sys; sys.modules['skyrl_gym'] = None\n"
            "from agentgym.integrations.skyrl import AgentGymTextEnv\n"
            "try:\n    AgentGymTextEnv({}, {'agentgym': {'env_id': 'agentgym/SearchQA-v0', 'index': 0}})\n"
            "except ImportError as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("DependencyNotInstalled") and "pip install 'agentgym-suite[skyrl]'" in out
