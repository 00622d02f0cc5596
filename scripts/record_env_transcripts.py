"""Record seeded scripted episodes of SearchQA-v0 and MathTool-v0 as a gzipped JSONL fixture (issue 30).

For each env, action format and seed ``0 .. --episodes - 1`` it plays one episode of
a deterministic scripted mix of actions (the oracle's, tool calls with a seeded query
or cheap program, malformed actions, dict actions, an empty answer, wrong and
near-miss answers, running out of turns) and writes one JSON line per episode: how
the env was made and reset, and every action with its observation, reward,
terminated, truncated and info. ``tests/envs/test_toolenv_equivalence.py`` replays
the actions and asserts the env still answers exactly so. MathTool's tool runs real
code in the bubblewrap sandbox: the scripted programs are one-liners.

    OMP_NUM_THREADS=1 python scripts/record_env_transcripts.py \\
        --out tests/envs/fixtures/searchqa_mathtool_transcripts.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agentgym
from agentgym.core.env import AgentEnv
from agentgym.core.tools import ToolCall

ENV_IDS = ("agentgym/SearchQA-v0", "agentgym/MathTool-v0")
# The names agentgym.core.formats registers; every one works with both envs (json is hermes's alias).
FORMATS = ("tags", "hermes", "json", "plain", "dict")
# Constructor keyword arguments, one set per episode in turn: the defaults, and each knob the env's info,
# observations or reward read.
KWARGS: dict[str, tuple[dict[str, Any], ...]] = {
    "agentgym/SearchQA-v0": ({}, {"topk": 1}, {"reward_metric": "f1"}, {"reward_metric": "cover_em", "max_turns": 3},
                             {"question_types": ["bridge", "comparison"]}, {"max_observation_chars": 120}),
    "agentgym/MathTool-v0": ({}, {"max_turns": 3}, {"max_observation_chars": 60}),
}
PLANS = ("oracle", "tool_then_oracle", "malformed_then_wrong", "empty", "out_of_turns", "mix")

# Text no registered format reads as a final answer (hermes reads plain text as one): an error in every format.
_NON_FINAL_TEXT = (
    '<tool_call>{"name": "search", "arguments": {"query": ',
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "TOOL", "arguments": {"wrong_argument": "x"}}</tool_call>',
    '<tool_call>{"name": "TOOL", "arguments": {"ARG": 7}}</tool_call>',
    '<tool_call>["a list"]</tool_call>',
)
_MALFORMED_TEXT = (
    *_NON_FINAL_TEXT,
    "I am not sure yet, let me think.",
    "<think>maybe <answer>hidden</answer></think>",
    "<TOOL></TOOL>",
    "<TOOL>unclosed",
    "Action: dance wildly",
    "Action: TOOL",
    '{"name": "TOOL"}',
    "",
)
_MALFORMED_DICT: tuple[Any, ...] = (
    {"name": "no_such_tool", "arguments": {}},
    {"name": "TOOL", "arguments": {"wrong_argument": "x"}},
    {"name": "TOOL", "arguments": "not json"},
    {"arguments": {}},
    {"answer": 3},
    [],
    ["not a call"],
)
_SEARCH_WORDS = ("capital", "river", "born", "director", "film", "album", "country", "university", "president",
                 "population", "founded", "zzqxv", "Lima", "Oslo", "Mozart", "the")
_WRONG_QA = ("Paris", "1999", "I don't know", "yes", "no", "John Smith")
_CODE = ("print({a} * {b})", "print(sum(range({a})))", "x = {a}", "print({a} / 0)", "print('{a}' * {b})",
         "import sympy; print(sympy.factorint({a} * {b}))", "print(undefined_name_{a})", "print({a} +)")


def tool_name(env: AgentEnv) -> str:
    return next(iter(env.tools))


def tool_argument(env: AgentEnv) -> str:
    return env.tools[tool_name(env)].primary_argument or ""


def _fill(text: Any, env: AgentEnv) -> Any:
    if isinstance(text, str):
        return text.replace("TOOL", tool_name(env)).replace("ARG", tool_argument(env))
    if isinstance(text, dict):
        return {_fill(k, env): _fill(v, env) for k, v in text.items()}
    if isinstance(text, list):
        return [_fill(v, env) for v in text]
    return text


def seeded_call(env: AgentEnv, rng: random.Random) -> ToolCall:
    """A call of the env's one tool with a seeded query (SearchQA) or a cheap one-line program (MathTool)."""
    if tool_argument(env) == "query":
        words = env.task.prompt.split() + list(_SEARCH_WORDS)
        value = " ".join(rng.sample(words, rng.randint(1, 4)))
    else:
        value = rng.choice(_CODE).format(a=rng.randint(2, 999), b=rng.randint(2, 60))
    return ToolCall(tool_name(env), {tool_argument(env): value})


def tool_action(env: AgentEnv, rng: random.Random, *, as_dict: bool) -> Any:
    call = seeded_call(env, rng)
    if as_dict:
        return call.as_dict()
    if rng.random() < 0.15 and env.action_format.name in ("hermes", "dict"):  # two calls in one turn
        other = seeded_call(env, rng)
        if env.action_format.name == "dict":
            return json.dumps([call.as_dict(), other.as_dict()])
        return env.action_format.render_call(call, env.tools) + "\n" + env.action_format.render_call(other, env.tools)
    return env.action_format.render_call(call, env.tools)


def wrong_answer(env: AgentEnv, rng: random.Random) -> str:
    """A wrong answer, or a near miss (a gold with an extra word, an article, its own ``\\boxed{}``)."""
    gold = env.task.gold
    if "golden_answers" in gold:
        first = gold["golden_answers"][0]
        return rng.choice((*_WRONG_QA, f"the {first}", f"{first} City", first.upper(),
                           f"{first} or {rng.choice(_WRONG_QA)}"))
    answer = gold["answer"]
    return rng.choice(("\\boxed{-7}", "42", answer, f"\\boxed{{{answer}}} \\boxed{{3}}", f"{answer} or 5",
                       f"\\boxed{{{answer}0}}", "\\boxed{x}", "\\frac{1}{0}", "\\boxed{"))


def choose_action(env: AgentEnv, plan: str, rng: random.Random) -> Any:
    """The next action of episode plan ``plan`` (see ``PLANS``)."""
    turn = env.turn
    last = turn == env.max_turns - 1
    if plan == "oracle":
        return env.oracle_action()
    if plan == "tool_then_oracle":
        return tool_action(env, rng, as_dict=rng.random() < 0.3) if turn == 0 and not last else env.oracle_action()
    if plan == "malformed_then_wrong":
        if turn == 0 and not last:
            return _fill(rng.choice(_MALFORMED_TEXT), env)
        return env.action_format.render_answer(wrong_answer(env, rng))
    if plan == "empty":
        if turn == 0 and not last and rng.random() < 0.5:
            return tool_action(env, rng, as_dict=False)
        return env.action_format.render_answer("") if rng.random() < 0.7 else {"answer": ""}
    if plan == "out_of_turns":
        kind = rng.choice(("tool", "text", "dict")) if turn < 2 else rng.choice(("text", "dict"))
        if kind == "tool":
            return tool_action(env, rng, as_dict=rng.random() < 0.3)
        return _fill(rng.choice(_NON_FINAL_TEXT if kind == "text" else _MALFORMED_DICT[:4]), env)
    kind = rng.choice(("oracle", "tool", "malformed", "malformed_dict", "empty", "wrong"))
    if kind == "tool" and turn >= 2:
        kind = "malformed"
    if kind == "oracle":
        return env.oracle_action()
    if kind == "tool":
        return tool_action(env, rng, as_dict=rng.random() < 0.3)
    if kind == "malformed":
        return _fill(rng.choice(_MALFORMED_TEXT), env)
    if kind == "malformed_dict":
        return _fill(rng.choice(_MALFORMED_DICT), env)
    if kind == "empty":
        return env.action_format.render_answer("")
    return env.action_format.render_answer(wrong_answer(env, rng))


def episode_setup(env_id: str, fmt: str, seed: int) -> dict[str, Any]:
    """How episode ``seed`` is made and reset: its kwargs, reset options and plan."""
    kwargs = KWARGS[env_id][(seed // len(PLANS)) % len(KWARGS[env_id])]
    options = {"split": "train"} if seed % 7 == 3 else {"index": seed % 5} if seed % 11 == 5 else None
    return {"env_id": env_id, "format": fmt, "kwargs": kwargs, "seed": seed, "options": options,
            "plan": PLANS[seed % len(PLANS)]}


def as_json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists): what the fixture holds."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def play(env: AgentEnv, setup: dict[str, Any]) -> dict[str, Any]:
    """One scripted episode: the reset and every step, as JSON values."""
    rng = random.Random(f"{setup['env_id']}/{setup['format']}/{setup['seed']}")
    observation, info = env.reset(seed=setup["seed"], options=setup["options"])
    record = {**setup, "reset": as_json({"observation": observation, "info": info}), "steps": []}
    done = False
    while not done:
        action = choose_action(env, setup["plan"], rng)
        observation, reward, terminated, truncated, info = env.step(action)
        record["steps"].append(as_json({"action": action, "observation": observation, "reward": reward,
                                        "terminated": terminated, "truncated": truncated, "info": info}))
        done = terminated or truncated
    return record


def record(episodes: int) -> Iterator[dict[str, Any]]:
    envs: dict[str, AgentEnv] = {}
    try:
        for env_id in ENV_IDS:
            for fmt in FORMATS:
                for seed in range(episodes):
                    setup = episode_setup(env_id, fmt, seed)
                    key = json.dumps([env_id, fmt, setup["kwargs"]], sort_keys=True)
                    if key not in envs:
                        envs[key] = agentgym.make(env_id, action_format=fmt, **setup["kwargs"]).unwrapped
                    yield play(envs[key], setup)
    finally:
        for env in envs.values():
            env.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="The fixture to write (.jsonl.gz).")
    parser.add_argument("--episodes", type=int, default=100, help="Episodes per env and format.")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same episodes give the same bytes, so a re-recording that changes nothing shows no diff
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        for line in record(args.episodes):
            gz.write((json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
