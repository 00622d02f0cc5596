"""Eval results as a training dataset: ``agentgym data sft`` picks episodes out of results files and writes them as
a dataset directory that ``datasets.load_dataset(DIR)`` reads.

Layout (a dataset repository's, so the directory can be uploaded to the Hub as is; ``<hash>`` is the file's
content hash)::

    DIR/README.md                    dataset card; its YAML header names the two configs
    DIR/chat/train-<hash>.parquet    config "chat" (the default): one conversation per episode
    DIR/tokens/train-<hash>.parquet  config "tokens": the trainer's token ids and loss mask
    DIR/agentgym_sft.json            what made it: sources, filters, counts, tokenizer

``chat`` rows hold ``messages`` (the task prompt as the first user message, each assistant turn as the model or
policy wrote it, each observation as the env wrote it, in the chat role the trainer and the eval give it: ``tool``
after function calls in the hermes/json formats, else ``user``), the env's tool schemas (``tools``, a JSON string,
as TRL's SFTTrainer takes them), the env id and kwargs, the task, reward and format. ``tokens`` rows are the same
episodes as ``agentgym train`` tokenizes them (:mod:`agentgym.lm.replay`): ``input_ids``, ``loss_mask`` (1 on the
model's tokens only) and ``labels`` (-100 where the mask is 0), for one tokenizer and observation style.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import AgentGymError, ConfigError, DataError, DependencyNotInstalled
from agentgym.eval.results import load_results

__all__ = ["Selection", "build_sft_dataset", "chat_rows", "load_tokenizer", "quiet_datasets", "sample_rows",
           "select_episodes", "token_rows", "write_dataset"]

MANIFEST = "agentgym_sft.json"


def _require(modules: Sequence[str]) -> None:
    """The modules writing the dataset needs (the train extra), checked before anything is read or written."""
    import importlib.util

    try:
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
    except (ImportError, ValueError):  # a module set to None in sys.modules: it cannot be imported either
        missing = list(modules)
    missing = [m for m in modules if m in missing or sys.modules.get(m, False) is None]
    if missing:
        raise DependencyNotInstalled(f"agentgym data sft's dependency {', '.join(missing)}",
                                     "pip install 'agentgym-suite[train]' torch==2.13.0")


def _features() -> tuple[Any, Any]:
    from datasets import Features, List, Value

    chat = Features({
        "messages": List({"role": Value("string"), "content": Value("string")}),
        "tools": Value("string"), "env_id": Value("string"), "env_kwargs": Value("string"),
        "task_id": Value("string"), "split": Value("string"), "seed": Value("int64"), "sample": Value("int64"),
        "reward": Value("float64"), "correct": Value("bool"), "format": Value("string"), "policy": Value("string"),
        "model": Value("string")})
    tokens = Features({
        "input_ids": List(Value("int32")), "loss_mask": List(Value("int8")), "labels": List(Value("int32")),
        "env_id": Value("string"), "task_id": Value("string"), "reward": Value("float64")})
    return chat, tokens


@dataclass
class Selection:
    """The episodes kept from the results files, and how many each env had (``read``, errored ones included;
    a line superseded by a later line of the same key is not counted)."""

    kept: list[dict[str, Any]] = field(default_factory=list)
    read: dict[str, int] = field(default_factory=dict)
    errored: int = 0

    def summary(self) -> str:
        """One line: kept N of M, by env."""
        by_env: dict[str, int] = {}
        for record in self.kept:
            by_env[record["env_id"]] = by_env.get(record["env_id"], 0) + 1
        envs = ", ".join(f"{env_id.removeprefix('agentgym/')} {by_env.get(env_id, 0)}/{n}"
                         for env_id, n in sorted(self.read.items()))
        errored = f"; {self.errored} errored dropped" if self.errored else ""
        return f"kept {len(self.kept)} of {sum(self.read.values())} episodes ({envs}){errored}"


def _records(path: Path) -> list[dict[str, Any]]:
    """A results file's episodes, the latest line of a key winning (a retried episode's line supersedes its
    errored one, as in ``ResultsFile``)."""
    if not path.is_file():
        raise DataError(f"{path}: no such results file (agentgym eval --results FILE writes one).")
    try:
        records = load_results(path)
    except UnicodeDecodeError:
        raise DataError(f"{path} is not an agentgym eval results file (not UTF-8 JSON lines).") from None
    if not records:
        raise DataError(f"{path} has no episodes: it is empty (agentgym eval --results FILE writes them).")
    latest: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get("transcript"), list) or not record.get("env_id"):
            raise DataError(f"{path} is not an agentgym eval results file: line {number} has no 'env_id' and "
                            "'transcript' (agentgym eval --results FILE writes one episode per line).")
        latest[str(record.get("key") or f"line {number}")] = record
    return list(latest.values())


def select_episodes(paths: Sequence[str | Path], *, keep_all: bool = False, envs: Sequence[str] = (),
                    min_reward: float | None = None, dedupe: bool = False) -> Selection:
    """The episodes of ``paths`` to train on, in file order: never errored ones; only those the verifier called
    correct unless ``keep_all``; only ``envs`` when given; reward at least ``min_reward``; with ``dedupe``, one
    per task of an env (id and kwargs): the best reward, the first of equals."""
    if not paths:
        raise ConfigError("Name at least one results file (agentgym eval --results FILE writes one).")
    selection = Selection()
    candidates = []
    for path in paths:
        for record in _records(Path(path)):
            if envs and record["env_id"] not in envs:
                continue
            selection.read[record["env_id"]] = selection.read.get(record["env_id"], 0) + 1
            if record.get("error") is not None:
                selection.errored += 1
                continue
            if not keep_all and not record.get("correct"):
                continue
            if min_reward is not None and float(record.get("reward") or 0.0) < min_reward:
                continue
            if not any(m.get("role") == "assistant" for m in record["transcript"]):
                continue
            candidates.append(record)
    if envs and not selection.read:
        raise DataError(f"No episode of {', '.join(envs)} in {', '.join(map(str, paths))}.")
    if dedupe:
        best: dict[str, dict[str, Any]] = {}
        for record in candidates:
            task = json.dumps([record["env_id"], _env_kwargs(record), record.get("task_id")], sort_keys=True)
            if task not in best or float(record.get("reward") or 0.0) > float(best[task].get("reward") or 0.0):
                best[task] = record
        chosen = {id(r) for r in best.values()}
        candidates = [r for r in candidates if id(r) in chosen]
    selection.kept = candidates
    return selection


def _env_kwargs(record: Mapping[str, Any]) -> dict[str, Any]:
    """The env kwargs the episode was played with (they are part of its results key)."""
    try:
        key = json.loads(record.get("key") or "{}")
    except json.JSONDecodeError:
        return {}
    kwargs = key.get("env_kwargs") if isinstance(key, dict) else None
    return dict(kwargs) if isinstance(kwargs, dict) else {}


@dataclass(frozen=True)
class _EnvFacts:
    """What the rows of one env (id + kwargs) share: its tool schemas, format, and what parses an action."""

    tools: list[dict[str, Any]]
    format: str
    action_format: Any
    tool_objects: Mapping[str, Any]

    def observation_role(self, action: str) -> str:
        """The chat role of the observation after ``action``, as the trainer and the eval give it."""
        from agentgym.core.formats import check_calls

        parsed = self.action_format.parse(action, self.tool_objects)
        if parsed.error is None:
            parsed = check_calls(parsed, self.tool_objects)
        return self.action_format.observation_role(made_tool_calls=parsed.error is None and bool(parsed.tool_calls))


def _env_facts(env_id: str, kwargs: Mapping[str, Any], task_id: str) -> _EnvFacts:
    from agentgym.core.registry import make

    try:
        env = make(env_id, **kwargs)
    except AgentGymError as e:
        raise DataError(f"Cannot make {env_id} (kwargs {dict(kwargs)}) to read its tools and format: {e}") from e
    try:
        _, info = env.reset(options={"task_id": task_id} if task_id else None)
        inner = env.unwrapped
        return _EnvFacts(tools=list(info.get("tools") or []), format=str(info.get("format") or "dict"),
                         action_format=inner.action_format, tool_objects=dict(inner.tools))
    finally:
        env.close()


def chat_rows(records: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """The ``chat`` row of each record (one env is made per env id and kwargs, to read its tools and format)."""
    facts: dict[str, _EnvFacts] = {}
    for record in records:
        kwargs = _env_kwargs(record)
        name = json.dumps([record["env_id"], kwargs], sort_keys=True)
        if name not in facts:
            facts[name] = _env_facts(record["env_id"], kwargs, str(record.get("task_id") or ""))
        env = facts[name]
        # no system message: `agentgym train` and the eval of a local model send none unless told to
        # (--system-prompt, which `agentgym sft` takes too), so the conversation is the one they would build
        messages: list[dict[str, str]] = []
        last_action = None
        for message in record["transcript"]:
            role, content = message.get("role"), str(message.get("content") or "")
            if role == "assistant":
                last_action = content
            elif role == "tool":  # the eval's transcript calls every observation "tool"
                role = env.observation_role(last_action or "")
            messages.append({"role": role, "content": content})
        yield {"messages": messages, "tools": json.dumps(env.tools, ensure_ascii=False), "env_id": record["env_id"],
               "env_kwargs": json.dumps(kwargs, sort_keys=True), "task_id": str(record.get("task_id") or ""),
               "split": record.get("split"), "seed": record.get("seed"), "sample": record.get("sample", 0),
               "reward": float(record.get("reward") or 0.0), "correct": bool(record.get("correct")),
               "format": env.format, "policy": record.get("policy"), "model": record.get("model")}


def token_rows(rows: Sequence[Mapping[str, Any]], replay: Any) -> Iterator[dict[str, Any]]:
    """The ``tokens`` row of each ``chat`` row, tokenized by ``replay`` (an :class:`agentgym.lm.replay.Replay`)."""
    for row in rows:
        tokens = replay.tokens(row["messages"], action_format=row["format"], tools=json.loads(row["tools"]))
        yield {**tokens, "env_id": row["env_id"], "task_id": row["task_id"], "reward": row["reward"]}


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """No ``datasets`` progress bars while writing (they would interleave with the command's own lines)."""
    from datasets.utils import logging as ds_logging

    enabled = ds_logging.is_progress_bar_enabled()
    ds_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            ds_logging.enable_progress_bar()


def _check_out(out: Path) -> None:
    """``out`` may be new, empty, or an earlier output of this command (replaced); anything else is refused."""
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out} is a file; name a directory for the dataset.")
    entries = {p.name for p in out.iterdir()}
    if entries and not (MANIFEST in entries and entries <= {MANIFEST, "README.md", "chat", "tokens"}):
        raise ConfigError(f"--out {out} holds other files; name a new or empty directory (an earlier "
                          "agentgym data sft output there is replaced).")


def write_dataset(rows: Sequence[dict[str, Any]], out: str | Path, *, tokens: Sequence[dict[str, Any]] | None,
                  manifest: dict[str, Any]) -> Path:
    """Write the ``chat`` rows (and ``tokens`` rows, when given) as the dataset directory ``out``, with its card
    and ``agentgym_sft.json`` (``manifest``); an earlier output of this command there is replaced."""
    from datasets import Dataset

    chat_features, token_features = _features()
    out = Path(out)
    _check_out(out)
    for sub in ("chat", "tokens"):
        shutil.rmtree(out / sub, ignore_errors=True)
    configs = {"chat": (rows, chat_features)}
    if tokens is not None:
        configs["tokens"] = (tokens, token_features)
    files = {}
    with quiet_datasets():
        for name, (data, features) in configs.items():
            (out / name).mkdir(parents=True, exist_ok=True)
            written = out / name / "train.parquet.tmp"
            Dataset.from_list(list(data), features=features).to_parquet(str(written))
            # named by its content: datasets caches a local dataset by its card's file names, not the files'
            # dates, so a rewritten dataset under an unchanged name would load as the old one
            digest = hashlib.sha256(written.read_bytes()).hexdigest()[:16]
            files[name] = f"{name}/train-{digest}.parquet"
            written.replace(out / files[name])
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "README.md").write_text(_card(files, manifest), encoding="utf-8")
    return out


def _card(files: Mapping[str, str], manifest: Mapping[str, Any]) -> str:
    import yaml

    header = {"configs": [{"config_name": name, "data_files": [{"split": "train", "path": path}],
                           **({"default": True} if name == "chat" else {})} for name, path in files.items()],
              "tags": ["agentgym", "sft", "trajectories"]}
    tokens = manifest.get("tokens")
    by_env = ", ".join(f"{k}: {v}" for k, v in manifest["by_env"].items())
    chat = ("- `chat` (default): `messages` (the task prompt, each assistant turn as the policy wrote it, each "
            "observation as the env wrote it, as a `tool` message after function calls, else `user`), `tools` (the "
            "env's tool schemas, JSON), `env_id`, `env_kwargs` (JSON), `task_id`, `split`, `seed`, `sample`, "
            "`reward`, `correct`, `format`, `policy`, `model`.")
    lines = ["---", yaml.safe_dump(header, sort_keys=False).rstrip(), "---", "",
             "# agentgym trajectories for supervised fine-tuning", "",
             f"{manifest['kept']} episodes ({by_env}) from {', '.join(manifest['sources'])}.", "",
             f"Written by `{manifest['command']}`.", "", chat]
    if tokens:
        lines.append(f"- `tokens`: `input_ids`, `loss_mask` (1 on the model's own tokens; 0 on the prompt, every "
                     f"observation and the chat template's glue, as `agentgym train` masks them) and `labels` "
                     f"(-100 where the mask is 0), tokenized for `{tokens['tokenizer']}` with observation style "
                     f"`{tokens['observation_style']}`; `env_id`, `task_id`, `reward`.")
    out = manifest["out"]
    lines += ["", "```python", "import datasets", f'chat = datasets.load_dataset("{out}", split="train")',
              *([f'tokens = datasets.load_dataset("{out}", "tokens", split="train")'] if tokens else []),
              "```", "", f"Train on it: `agentgym sft --data {out} --output-dir runs/sft`.", ""]
    return "\n".join(lines)


def sample_rows(records: Sequence[Mapping[str, Any]], tokenizer: str) -> Iterator[dict[str, Any]]:
    """The ``tokens`` rows of agent episodes: each recorded sample (a leaf of the rollout) as the gateway's model
    sampled it, its loss mask 1 exactly on sampled ids. Nothing is re-tokenized, so ``tokenizer`` must be the
    model the gateway served."""
    for record in records:
        if record.get("model") != tokenizer:
            raise DataError(f"{record['env_id']} episode {record.get('episode')} was played through a gateway serving "
                            f"{record.get('model')!r}: its tokens are that model's. Pass --tokenizer "
                            f"{record.get('model')} (or --tokenizer none for the chat config only).")
        for sample in record["samples"]:
            mask = [int(m) for m in sample["loss_mask"]]
            ids = [int(i) for i in sample["token_ids"]]
            yield {"input_ids": ids, "loss_mask": mask, "labels": [i if m else -100 for i, m in zip(ids, mask)],
                   "env_id": record["env_id"], "task_id": str(record.get("task_id") or ""),
                   "reward": float(record.get("reward") or 0.0)}


def load_tokenizer(model: str) -> Any:
    """The tokenizer of ``model`` (the names ``agentgym train --model`` takes), from local files only."""
    from transformers import AutoTokenizer

    from agentgym.lm.local import resolve_model

    path = resolve_model(model)
    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ConfigError(f"Cannot load the tokenizer of {model!r} ({path}): {e}") from e


def build_sft_dataset(paths: Sequence[str | Path], out: str | Path, *, keep_all: bool = False,
                      envs: Sequence[str] = (), min_reward: float | None = None, dedupe: bool = False,
                      tokenizer: str | None = "smollm2", observation_style: str = "chat") -> tuple[Selection, Path]:
    """Select episodes from the results files ``paths`` (``select_episodes``) and write them to ``out``
    (``write_dataset``), with the ``tokens`` config for ``tokenizer`` (a model name; None: chat only).

    Raises ``DataError`` for a file that is not a results file or when no episode passes the filters."""
    _require(("datasets", "pyarrow") + (("transformers",) if tokenizer is not None else ()))
    selection = select_episodes(paths, keep_all=keep_all, envs=envs, min_reward=min_reward, dedupe=dedupe)
    if not selection.kept:
        raise DataError(f"No episode passed the filters: {selection.summary()}. "
                        + ("" if keep_all else "Only successful episodes are kept by default; --all keeps every "
                                               "one that did not error."))
    _check_out(Path(out))  # before any env is made or tokenizer loaded
    rows = list(chat_rows(selection.kept))
    tokens, token_info = None, None
    if tokenizer is not None:
        from agentgym.lm.replay import Replay

        # an agent's episodes (eval --agent) carry the ids the gateway's model sampled: taken as they are
        recorded = [r for r in selection.kept if r.get("samples")]
        replay = Replay(load_tokenizer(tokenizer), style=observation_style)  # type: ignore[arg-type]
        tokens = [*token_rows([row for row, r in zip(rows, selection.kept) if not r.get("samples")], replay),
                  *sample_rows(recorded, tokenizer)]
        token_info = {"tokenizer": tokenizer, "observation_style": observation_style,
                      "model_tokens": sum(sum(t["loss_mask"]) for t in tokens),
                      "tokens": sum(len(t["input_ids"]) for t in tokens)}
    by_env: dict[str, int] = {}
    for row in rows:
        by_env[row["env_id"]] = by_env.get(row["env_id"], 0) + 1
    manifest = {"command": _command(paths, out, keep_all=keep_all, envs=envs, min_reward=min_reward, dedupe=dedupe,
                                    tokenizer=tokenizer, observation_style=observation_style), "sources": [str(p) for p in paths], "out": str(out),
                "filters": {"all": keep_all, "env": list(envs), "min_reward": min_reward, "dedupe": dedupe},
                "read": sum(selection.read.values()), "errored": selection.errored, "kept": len(rows),
                "by_env": by_env, "tokens": token_info}
    return selection, write_dataset(rows, out, tokens=tokens, manifest=manifest)


def _command(paths: Sequence[str | Path], out: str | Path, *, keep_all: bool, envs: Sequence[str],
             min_reward: float | None, dedupe: bool, tokenizer: str | None, observation_style: str) -> str:
    """The ``agentgym data sft`` command line that writes this dataset."""
    import shlex

    words = ["agentgym", "data", "sft", *map(str, paths), "--out", str(out)]
    words += ["--all"] * keep_all + [w for env_id in envs for w in ("--env", env_id)]
    words += ["--min-reward", str(min_reward)] * (min_reward is not None) + ["--dedupe"] * dedupe
    words += ["--tokenizer", tokenizer or "none"] * (tokenizer != "smollm2")
    words += ["--observation-style", observation_style] * (observation_style != "chat")
    return shlex.join(words)
