"""The verl adapters. ``AgentGymInteraction`` needs no verl and is driven the way verl <= 0.7's ToolAgentLoop drives
an interaction; ``AgentGymAgentLoop`` is run against the real verl 0.9.1 ``AgentLoopBase`` the way its
``AgentLoopWorker`` runs an agent loop, on CPU (the model server is scripted). verl is not in the ``all`` extra (it
caps transformers < 5.11): those tests skip without it, and .ci/run runs them in a venv of its own on top of the main
one (``requires_verl``)."""

import asyncio
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import sandbox_down_env  # noqa: F401 - registers test/SandboxDown-v0
from helpers.gates import env_params, requires_server, requires_smollm2, requires_verl
from helpers.oracle import Oracle
from helpers.server_process import free_port, serving

import agentgym
from agentgym.errors import ConfigError, RemoteEnvError, ResetNeeded, SandboxError
from agentgym.integrations.verl import AGENT_NAME, AgentGymInteraction, verl_rows

SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"


@pytest.fixture(scope="module")
def url():
    with serving(SEARCH, MATH, "test/Crashy-v0", preload="helpers.crashy_env") as base:
        yield base


@pytest.fixture(params=["local", pytest.param("remote", marks=requires_server)])
def config(request):
    """The interaction's config as verl builds it from ``interaction_config_path`` (``name`` injected)."""
    if request.param == "local":
        return {"name": AGENT_NAME}
    return {"name": AGENT_NAME, "base_url": request.getfixturevalue("url")}


def row_of(env_id: str, index: int = 1) -> dict:
    """A row of ``verl_rows`` after a round trip through Parquet (``data.train_files``)."""
    rows = verl_rows(env_id, split="test", count=index + 1)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return pq.read_table(pa.BufferReader(sink.getvalue().to_pybytes())).to_pylist()[index]


async def tool_agent_loop(interaction, row: dict, model, *, max_turns: int = 12):
    """An episode as verl 0.7's ToolAgentLoop plays it with an interaction: ``start_interaction(request_id,
    **interaction_kwargs)``; after each generation the decoded assistant message is appended and
    ``generate_response(request_id, messages, **interaction_kwargs)`` answers ``(terminate, response, reward,
    metrics)``; the response is appended as a user message; the reward goes to ``turn_scores``."""
    kwargs = row["extra_info"]["interaction_kwargs"]
    assert kwargs["name"] == interaction.name  # verl routes the row to the interaction by this name
    request_id = "req-1"
    await interaction.start_interaction(request_id, **kwargs)
    messages, turn_scores, infos = list(row["prompt"]), [], []
    for _ in range(max_turns):
        messages.append({"role": "assistant", "content": model()})
        terminate, response, reward, info = await interaction.generate_response(request_id, messages, **kwargs)
        messages.append({"role": "user", "content": response})
        turn_scores.append(reward)
        infos.append(info)
        if terminate:
            break
    score = await interaction.calculate_score(request_id)
    await interaction.finalize_interaction(request_id)
    return messages, turn_scores, infos, score


@pytest.mark.parametrize("env_id", env_params([SEARCH, MATH]))
def test_interaction_plays_the_oracle_to_reward_1(config, env_id):
    row = row_of(env_id)
    interaction = AgentGymInteraction(config)
    oracle = Oracle(env_id, row["extra_info"]["interaction_kwargs"]["task_id"])
    assert row["prompt"] == [{"role": "user", "content": oracle.prompt}]  # verl <= 0.7 sends the row's prompt
    messages, turn_scores, infos, score = asyncio.run(tool_agent_loop(interaction, row, oracle))
    assert score == 1.0 and turn_scores[-1] == 1.0 and sum(turn_scores) == 1.0 and len(turn_scores) >= 2
    assert infos[-1]["verification"]["correct"] and infos[-1]["terminated"]
    assert [m["content"] for m in messages[2::2]] == oracle.observations  # the env's observations, as in process
    assert interaction._sessions == {}  # finalized


def test_interaction_answers_a_malformed_action_with_an_observation(config):
    row = row_of(SEARCH, index=0)
    interaction = AgentGymInteraction(config)
    oracle = Oracle(SEARCH, row["extra_info"]["interaction_kwargs"]["task_id"], mistakes=["", "<search>x</answer>"])
    _, turn_scores, infos, score = asyncio.run(tool_agent_loop(interaction, row, oracle))
    assert [bool(i["action_error"]) for i in infos[:2]] == [True, True] and turn_scores[:2] == [0.0, 0.0]
    assert not infos[0]["terminated"] and score == 1.0


def test_interaction_prompt_is_the_tasks_and_rows_must_name_one():
    interaction = AgentGymInteraction({"name": "agentgym", "env_id": SEARCH})

    async def prompts():
        await interaction.start_interaction("a", name="agentgym", index=3)
        await interaction.start_interaction("b", name="agentgym", index=3)
        found = interaction.prompt("a"), interaction.prompt("b")
        for instance_id in ("a", "b"):
            await interaction.finalize_interaction(instance_id)
        return found

    a, b = asyncio.run(prompts())
    assert a == b == agentgym.make(SEARCH).unwrapped.reset(options={"index": 3})[0]
    with pytest.raises(ConfigError, match="same task"):
        asyncio.run(interaction.start_interaction("c", name="agentgym"))
    with pytest.raises(ConfigError, match="Unknown agentgym setting"):
        AgentGymInteraction({"name": "agentgym", "env": SEARCH})
    with pytest.raises(ResetNeeded):
        asyncio.run(interaction.calculate_score("never-started"))


def test_interaction_raises_a_sandbox_failure_and_closes_the_session():
    interaction = AgentGymInteraction({"name": "agentgym"})

    async def crash():
        await interaction.start_interaction("x", env_id="test/SandboxDown-v0", index=0)
        await interaction.generate_response("x", [{"role": "assistant", "content": "<python>1+1</python>"}])

    with pytest.raises(SandboxError):
        asyncio.run(crash())
    assert interaction._sessions == {}


@requires_server
def test_interaction_raises_server_failures(url):
    interaction = AgentGymInteraction({"name": "agentgym", "base_url": url})

    async def crash():
        await interaction.start_interaction("x", env_id="test/Crashy-v0", index=0)
        await interaction.generate_response("x", [{"role": "assistant", "content": "crash"}])

    with pytest.raises(RemoteEnvError) as failure:
        asyncio.run(crash())
    assert failure.value.status_code == 500 and interaction._sessions == {}
    gone = AgentGymInteraction({"name": "agentgym", "base_url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(RemoteEnvError, match="unreachable"):
        asyncio.run(gone.start_interaction("y", env_id=SEARCH, index=0))


def test_without_verl_the_agent_loop_says_what_to_install():
    code = ("import sys; sys.modules['verl'] = None\n"
            "from agentgym.integrations.verl import AgentGymAgentLoop\n"
            "try:\n    AgentGymAgentLoop()\nexcept ImportError as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("DependencyNotInstalled") and "pip install 'agentgym-suite[verl]'" in out


# ---- the verl 0.9.1 agent loop, against the real package --------------------------------------------------------

AGENT_LOOP_YAML = """\
- name: agentgym
  _target_: agentgym.integrations.verl.AgentGymAgentLoop
"""


@pytest.fixture
def verl(tmp_path):
    """verl's pieces an AgentLoopWorker uses to run an agent loop."""
    import importlib

    agent_loop = importlib.import_module("verl.experimental.agent_loop.agent_loop")
    replica = importlib.import_module("verl.workers.rollout.replica")
    dataset = importlib.import_module("verl.utils.dataset.rl_dataset")
    return agent_loop, replica.TokenOutput, dataset.RLHFDataset


class Server:
    """verl's LLM server client, scripted: each ``generate`` returns the next model action as tokens, ending
    with ``<|im_end|>`` as a chat model's turn does, with a log-prob per token."""

    def __init__(self, token_output, tokenizer, model):
        self.token_output, self.tokenizer, self.model = token_output, tokenizer, model
        self.prompts: list[list[int]] = []
        self.outputs: list[list[int]] = []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        self.prompts.append(list(prompt_ids))
        ids = self.tokenizer.encode(self.model(), add_special_tokens=False)
        ids.append(self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
        self.outputs.append(ids)
        return self.token_output(token_ids=ids, log_probs=[-0.5] * len(ids))


def agent_loop_episode(verl, tokenizer, tmp_path, row: dict, model, *, settings=None, response_length=4096):
    """One row through verl 0.9.1 as its AgentLoopWorker runs it: the agent loop config file loaded into the
    registry, the row read by ``RLHFDataset``, the loop made by ``hydra.utils.instantiate`` inside the event
    loop, then ``run(sampling_params, **row)`` with ``agent_name`` taken out."""
    import hydra
    from omegaconf import OmegaConf

    agent_loop, token_output, dataset_cls = verl
    entry = OmegaConf.load(_write(tmp_path / "agent_loop.yaml", AGENT_LOOP_YAML))[0]
    entry = OmegaConf.merge(entry, settings or {})
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096,
                                                                 "response_length": response_length}},
                               "data": {"cache_dir": str(tmp_path / "cache")}})
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "train.parquet")
    kwargs = dataset_cls(str(tmp_path / "train.parquet"), tokenizer, config.data)[0]
    assert kwargs.pop("agent_name") == entry.name
    server = Server(token_output, tokenizer, model)

    async def run():
        loop = hydra.utils.instantiate(
            config=entry, trainer_config=agent_loop.DictConfigWrap(config), server_manager=server,
            tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=dataset_cls,
            data_config=agent_loop.DictConfigWrap(config.data), tools=agent_loop.ToolListWrap([]))
        output = await loop.run({"temperature": 1.0}, **kwargs)
        return output, loop

    output, loop = asyncio.run(run())
    assert loop.interaction._sessions == {}  # every session closed
    return output, server


def _write(path, text):
    path.write_text(text)
    return str(path)


def segments(ids, mask):
    """The runs of equal mask value: [(mask, ids), ...]."""
    runs = []
    for token, bit in zip(ids, mask):
        if runs and runs[-1][0] == bit:
            runs[-1][1].append(token)
        else:
            runs.append((bit, [token]))
    return runs


@requires_verl
@requires_smollm2
@pytest.mark.parametrize("env_id", env_params([SEARCH, MATH]))
@pytest.mark.parametrize("where", ["local", pytest.param("remote", marks=requires_server)])
def test_agent_loop_plays_the_oracle_token_in_token_out(request, verl, smollm2_tokenizer, tmp_path, env_id, where):
    tokenizer = smollm2_tokenizer
    row = verl_rows(env_id, split="test", count=2)[1]
    settings = {"base_url": request.getfixturevalue("url")} if where == "remote" else {}
    oracle = Oracle(env_id, row["extra_info"]["interaction_kwargs"]["task_id"])
    output, server = agent_loop_episode(verl, tokenizer, tmp_path, row, oracle, settings=settings)
    assert output.reward_score == 1.0 and len(server.outputs) >= 2
    expected_prompt = tokenizer.apply_chat_template([{"role": "user", "content": oracle.prompt}],
                                                    add_generation_prompt=True, tokenize=True, return_dict=False)
    assert output.prompt_ids == list(expected_prompt) == server.prompts[0]
    runs = segments(output.response_ids, output.response_mask)
    assert [bit for bit, _ in runs] == [1, 0] * (len(server.outputs) - 1) + [1]
    assert [ids for bit, ids in runs if bit] == server.outputs  # the model's tokens, exactly, with mask 1
    for (_, ids), observation in zip(runs[1::2], oracle.observations):
        assert observation.strip() in tokenizer.decode(ids)  # each observation, with mask 0
    assert output.response_logprobs == [-0.5 if bit else 0.0 for bit in output.response_mask]
    for before, after in zip(server.prompts, server.prompts[1:]):  # each prompt extends the last: no re-tokenising
        assert after[:len(before)] == before
    assert output.num_turns == 2 * len(server.outputs)


@requires_verl
@requires_smollm2
def test_agent_loop_feeds_mistakes_back_and_stops_at_response_length(verl, smollm2_tokenizer, tmp_path):
    row = verl_rows(SEARCH, split="test", count=1)[0]
    oracle = Oracle(SEARCH, row["extra_info"]["interaction_kwargs"]["task_id"], mistakes=["no tags at all"])
    output, _ = agent_loop_episode(verl, smollm2_tokenizer, tmp_path, row, oracle)
    assert output.reward_score == 1.0
    assert oracle.observations[0] in smollm2_tokenizer.decode(segments(output.response_ids, output.response_mask)[1][1])
    short = Oracle(SEARCH, row["extra_info"]["interaction_kwargs"]["task_id"])
    (tmp_path / "short").mkdir()
    output, _ = agent_loop_episode(verl, smollm2_tokenizer, tmp_path / "short", row, short, response_length=40)
    assert output.reward_score == 0.0 and len(output.response_ids) == len(output.response_mask) <= 40


@requires_verl
@requires_smollm2
def test_agent_loop_raises_a_sandbox_failure(verl, smollm2_tokenizer, tmp_path):
    row = {"data_source": "test", "prompt": [{"role": "user", "content": "Compute 1+1."}], "agent_name": AGENT_NAME,
           "extra_info": {"interaction_kwargs": {"env_id": "test/SandboxDown-v0", "index": 0}}}
    with pytest.raises(SandboxError):
        agent_loop_episode(verl, smollm2_tokenizer, tmp_path, row, lambda: "<python>1 + 1</python>")
