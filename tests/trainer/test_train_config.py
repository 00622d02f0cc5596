"""TrainConfig: one frozen, typed config; every field a YAML key and an `agentgym train` flag, checked in one place."""

from __future__ import annotations

import dataclasses

import pytest
import typer
from helpers.gates import requires_train
from typer.testing import CliRunner

import agentgym
from agentgym.cli import app, main
from agentgym.errors import ConfigError, EnvNotFound
from agentgym.trainer import grpo
from agentgym.trainer.config import LOSS_TYPES, TrainConfig, load_config

runner = CliRunner()


@pytest.fixture
def trained(monkeypatch):
    """The configs `agentgym train` would train with (training itself is replaced)."""
    seen: list[TrainConfig] = []

    def fake_train(config, *, console=None):
        seen.append(config)
        return config.output_dir

    monkeypatch.setattr(grpo, "train", fake_train)
    return seen


def _train(*args: str):
    return runner.invoke(app, ["train", *args])


def test_every_field_is_a_flag_and_every_flag_a_field():
    command = typer.main.get_command(app).commands["train"]
    flags = {p.name for p in command.params} - {"config", "help"}
    assert flags == {f.name for f in dataclasses.fields(TrainConfig)}
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata["help"], f"{f.name} has no help text"
    # the names users type today keep working
    opts = {o for p in command.params for o in p.opts + p.secondary_opts}
    assert {"--config", "-c", "--env", "--kwarg", "-k", "--lora", "--no-lora", "--resume", "--no-resume",
            "--output-dir", "--loss-type", "--vllm-server-url", "--max-completion-tokens"} <= opts


def test_flags_parse_to_typed_values(trained):
    result = _train("--env", "agentgym/SearchQA-v0", "--env", "agentgym/MathTool-v0", "-k", "max_turns=3",
                    "--kwarg", '{"action_format": "hermes", "question_types": ["comparison"]}',
                    "--task-filter", "type=single-hop", "--lora", "--no-resume", "--tasks", "4",
                    "--micro-batch", "8", "--learning-rate", "1e-5", "--loss-type", "gspo",
                    "--observation-style", "chat", "--system-prompt", "Be brief.", "--gradient-checkpointing")
    assert result.exit_code == 0, result.output
    [config] = trained
    assert config.env == ["agentgym/SearchQA-v0", "agentgym/MathTool-v0"]
    assert config.env_kwargs == {"max_turns": 3, "action_format": "hermes", "question_types": ["comparison"]}
    assert config.task_filter == {"type": "single-hop"}
    assert config.lora is True and config.resume is False and config.gradient_checkpointing is True
    assert config.tasks == 4 and config.micro_batch == 8 and config.learning_rate == 1e-5
    assert config.loss_type == "gspo" and config.observation_style == "chat" and config.system_prompt == "Be brief."
    assert config.max_turns is None and config.group_size == 8  # not given: the defaults


def test_flags_win_over_yaml_and_yaml_reaches_every_field(tmp_path, trained):
    path = tmp_path / "train.yaml"
    path.write_text("env: agentgym/MathTool-v0\ngroup_size: 4\nlearning_rate: 1e-6\nsave_total_limit: 5\n"
                    "env_kwargs: {action_format: hermes}\nvllm_gpu_memory_utilization: 0.5\n")
    assert _train("--config", str(path), "--group-size", "6", "-k", "max_turns=2").exit_code == 0
    [config] = trained
    assert config.env == ["agentgym/MathTool-v0"] and config.group_size == 6 and config.save_total_limit == 5
    assert config.learning_rate == 1e-6  # YAML 1.1 reads 1e-6 as text; a float field takes the number
    assert config.env_kwargs == {"max_turns": 2}  # a flag replaces the YAML's value, as it always has
    assert config.vllm_gpu_memory_utilization == 0.5


def test_choices_and_types_are_checked_once_with_the_same_message(tmp_path):
    result = _train("--loss-type", "ppo")
    assert result.exit_code != 0
    assert str(result.exception) == ("TrainConfig: loss_type must be one of " + ", ".join(map(repr, LOSS_TYPES))
                                     + ", got 'ppo' (str).")
    (tmp_path / "bad.yaml").write_text("loss_type: ppo\n")
    with pytest.raises(ConfigError) as from_yaml:
        load_config(tmp_path / "bad.yaml")
    assert str(from_yaml.value) == str(result.exception)
    with pytest.raises(ConfigError, match="observation_style must be one of 'append', 'chat', got 'inline'"):
        TrainConfig(observation_style="inline")
    with pytest.raises(ConfigError, match="group_size must be int, got '8' .str.. Pass it unquoted"):
        load_config(None, group_size="8")
    with pytest.raises(ConfigError, match="micro_batch .3. must divide"):
        TrainConfig(group_size=2, groups_per_step=2, micro_batch=3)
    result = _train("--kwarg", "max_turns")
    assert "expects KEY=VALUE or a JSON object" in str(result.exception)
    result = _train("-k", "max_turns=2", "--kwarg", '{"max_turns": 3}')
    assert "max_turns is given twice" in str(result.exception)


def test_the_config_is_frozen_and_replace_checks_again():
    config = TrainConfig(env="agentgym/SearchQA-v0")
    assert config.env == ["agentgym/SearchQA-v0"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 3  # type: ignore[misc]
    assert dataclasses.replace(config, steps=3).steps == 3
    with pytest.raises(ConfigError, match="group_size must be >= 2"):
        dataclasses.replace(config, group_size=1)
    assert grpo.TrainConfig is TrainConfig and grpo.load_config is load_config  # the old import path


def test_observation_masking_is_on_unless_the_ablation_turns_it_off(tmp_path, trained):
    assert TrainConfig().mask_observations is True
    command = typer.main.get_command(app).commands["train"]
    [param] = [p for p in command.params if p.name == "mask_observations"]
    assert "--no-mask-observations" in param.secondary_opts and "only for the masking ablation" in param.help
    path = tmp_path / "ablation.yaml"
    path.write_text("env: agentgym/MathTool-v0\nmask_observations: false\n")
    assert _train("--config", str(path)).exit_code == 0
    assert _train("--config", str(path), "--mask-observations").exit_code == 0
    assert _train("--no-mask-observations").exit_code == 0
    assert [c.mask_observations for c in trained] == [False, True, False]
    with pytest.raises(ConfigError, match="mask_observations must be bool"):
        load_config(None, mask_observations="no")


@requires_train
def test_an_env_id_or_kwarg_typo_fails_in_one_line_before_the_model_loads(tmp_path, monkeypatch, capsys):
    from agentgym.lm import local

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the envs were checked")

    monkeypatch.setattr(local, "load_for_training", no_model)
    monkeypatch.setattr("sys.argv", ["agentgym", "train", "--env", "agentgym/MathTol-v0", "--output-dir",
                                     str(tmp_path / "r")])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith("error: No environment registered as 'agentgym/MathTol-v0'. Did you mean "
                           "'agentgym/MathTool-v0'")
    result = _train("--env", "agentgym/MathTool-v0", "-k", "max_turn=3", "--output-dir", str(tmp_path / "r"))
    assert isinstance(result.exception, ConfigError) and not isinstance(result.exception, EnvNotFound)
    assert "unknown keyword argument 'max_turn'. Did you mean 'max_turns'?" in str(result.exception)
    assert not (tmp_path / "r").exists()


def test_a_task_filter_value_list_keeps_tasks_of_any_of_its_values():
    env = agentgym.make("agentgym/SearchQA-v0").unwrapped
    types = {t.id: t.meta["type"] for t in env.tasks.tasks("train")}
    env.close()
    chosen = grpo.task_specs(TrainConfig(task_filter={"type": ["bridge", "comparison"]}))
    assert {types[s.task_id] for s in chosen} == {"bridge", "comparison"}
    assert len(chosen) == sum(t in ("bridge", "comparison") for t in types.values())
    assert {types[s.task_id] for s in grpo.task_specs(TrainConfig(task_filter={"type": "bridge"}))} == {"bridge"}
    with pytest.raises(ConfigError, match=r"A list of values is JSON: --task-filter 'type=\["):
        grpo.task_specs(TrainConfig(task_filter={"type": "[bridge,comparison]"}))  # a list typed without quotes
