"""agentgym envs in TRL's environment mode: ``GRPOTrainer(environment_factory=..., reward_funcs=reward)``.

TRL (>= 1.16, ``environment_factory``, experimental there) runs the multi-turn loop itself: it calls
``reset(**dataset_row)`` on one environment instance per rollout, appends what ``reset`` returns to the row's
last user message, exposes the instance's public methods as function-calling tools, calls them when the model
writes a tool call, and ends the rollout when the model answers without one. This module makes an agentgym
env such an instance, in process or against ``agentgym serve``:

    factory = environment_factory("agentgym/MathTool-v0")               # or base_url="http://host:8000"
    trainer = GRPOTrainer(model=..., processing_class=tokenizer, train_dataset=dataset(...),
                          environment_factory=factory, reward_funcs=reward, args=GRPOConfig(...))

The env speaks the ``hermes`` action format: its prompt lists the tools and asks for the final answer between
``<answer>`` tags, which is what a tool-calling chat template renders. Each tool of the env is a method with
the tool's name, arguments and description; a tool call is one env step. ``reward`` ends each rollout's episode
with the model's last message (its ``<answer>``) and returns the env's verified reward: the same verifier, and
the same reward, as every other way of playing the env. No agentgym trainer code is involved.

TRL's ``GRPOConfig`` defaults to bf16 autocast; on a CPU without native bf16 that is emulated and several
times slower than fp32: pass ``bf16=agentgym.trainer.grpo.uses_bf16("auto")`` to get what ``agentgym train`` picks.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable, Mapping, Sequence

from agentgym.errors import ConfigError

__all__ = ["AgentGymToolEnv", "dataset", "environment_factory", "reward"]

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}
_RESET_COLUMNS = ("seed", "task_id", "split", "index")


class AgentGymToolEnv:
    """One agentgym env session as a TRL environment: ``reset(**row)``, one method per tool, ``reward``.

    ``base_url`` plays the env on an ``agentgym serve`` (through ``RemoteEnv``) instead of in process. The
    reset columns of a dataset row are ``seed``, ``task_id``, ``split`` and ``index`` (see ``dataset``): put the
    task in the row, so that every rollout of a GRPO group starts from the same task.
    """

    def __init__(self, env_id: str, *, base_url: str | None = None, token: str | None = None,
                 **env_kwargs: Any) -> None:
        self.env_id = env_id
        self.env = _make(env_id, base_url, token, {"action_format": "hermes", **env_kwargs})
        self.reward = 0.0
        self.done = False
        self.info: dict[str, Any] = {}
        _, self.info = self.env.reset(seed=0)  # the tools are known before TRL's first reset, which it needs
        # TRL finds tools on the class (inspect.getmembers(type(env), inspect.isfunction)), not on the instance:
        # this instance becomes one of a class per env id and tool set, whose methods are the env's tools
        self.__class__ = _tool_class(type(self), env_id, self.info["tools"])

    def reset(self, **row: Any) -> str:
        """Start the row's task; the returned prompt is appended to the row's last user message by TRL."""
        options = {k: row[k] for k in ("task_id", "split", "index") if row.get(k) is not None}
        seed = row.get("seed")
        observation, self.info = self.env.reset(seed=None if seed is None else int(seed), options=options or None)
        self.reward, self.done = 0.0, False
        return observation

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """A tool call: one env step. TRL feeds an exception's message back to the model as the tool's reply."""
        if self.done:
            raise ValueError(f"The episode is over: {name!r} was called after it ended.")
        observation = self._step({"name": name, "arguments": arguments})
        # the tool's own output: the chat template wraps tool replies itself (an action error has none)
        return "\n\n".join(self.info.get("tool_outputs") or []) or observation

    def _finish(self, text: str) -> float:
        """End the episode with the model's final message (its ``<answer>``); the env's reward."""
        if not self.done:
            self._step(text)
        return self.reward if self.done else 0.0

    def _step(self, action: Any) -> str:
        observation, reward, terminated, truncated, self.info = self.env.step(action)
        if terminated or truncated:
            self.done, self.reward = True, float(reward)
        return observation

    # Not a public ``close``: TRL would expose every public method as a tool.
    def __enter__(self) -> AgentGymToolEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.env.close()


def environment_factory(env_id: str, *, base_url: str | None = None, token: str | None = None,
                        **env_kwargs: Any) -> Callable[[], AgentGymToolEnv]:
    """The zero-argument, picklable factory ``GRPOTrainer(environment_factory=...)`` takes, for one env id."""
    return functools.partial(AgentGymToolEnv, env_id, base_url=base_url, token=token, **env_kwargs)


def reward(completions: Sequence[Any], environments: Sequence[AgentGymToolEnv], **_: Any) -> list[float]:
    """TRL reward function: each rollout's episode ended with its last assistant message, scored by the env."""
    return [env._finish(_last_assistant_text(completion)) for completion, env in zip(completions, environments)]


def dataset(env_id: str, *, split: str | None = None, count: int | None = None,
            instruction: str = "Solve the task below.", **env_kwargs: Any) -> list[dict[str, Any]]:
    """Rows for ``datasets.Dataset.from_list``: a short user prompt and the ``task_id`` reset plays.

    TRL appends the env's own prompt (the task, the tools, the answer format) to ``instruction``.
    """
    import gymnasium as gym

    import agentgym  # noqa: F401 - registers the ids

    env = gym.make(env_id, **env_kwargs)
    try:
        tasks = env.unwrapped.tasks.tasks(split or env.unwrapped.split)
    finally:
        env.close()
    chosen = tasks if count is None else tasks[:count]
    return [{"prompt": [{"role": "user", "content": instruction + "\n\n"}], "task_id": task.id}
            for task in chosen]


def _make(env_id: str, base_url: str | None, token: str | None, env_kwargs: dict[str, Any]) -> Any:
    if base_url is not None:
        from agentgym.client import RemoteEnv

        return RemoteEnv(env_id, base_url, token=token, env_kwargs=env_kwargs)
    import gymnasium as gym

    import agentgym  # noqa: F401 - registers the ids

    return gym.make(env_id, **env_kwargs)


_CLASSES: dict[tuple[type, str, str], type] = {}


def _tool_class(base: type, env_id: str, tools: Sequence[Mapping[str, Any]]) -> type:
    """The subclass of ``base`` whose methods are ``tools`` (one per env id and tool set, made once)."""
    key = (base, env_id, json.dumps(tools, sort_keys=True))
    if key not in _CLASSES:
        if getattr(base, "_env_tools", None) is not None:  # already a tool class: its own base
            base = base.__mro__[1]
        methods = {schema["function"]["name"]: _tool_function(schema["function"]) for schema in tools}
        clash = sorted(set(methods) & {"reset", "get_reward", "reward", "done", "info", "env", "env_id"})
        if clash:
            raise ConfigError(f"{env_id}'s tools {clash} clash with the names TRL's environment contract or this "
                              "adapter uses; rename the tools.")
        name = "AgentGymToolEnv_" + "".join(c if c.isalnum() else "_" for c in env_id)
        _CLASSES[key] = type(name, (base,), {**methods, "_env_tools": tuple(methods), "__module__": __name__})
    return _CLASSES[key]


def _tool_function(spec: Mapping[str, Any]) -> Callable[..., str]:
    """A function with the tool's name, typed keyword arguments and Google-style docstring.

    transformers builds the tool schema the chat template renders from exactly these (``get_json_schema``).
    """
    name = spec["name"]
    if not name.isidentifier():
        raise ConfigError(f"Tool {name!r} is not a Python identifier, so TRL cannot expose it as a method.")
    properties: dict[str, Any] = spec.get("parameters", {}).get("properties", {})
    required = set(spec.get("parameters", {}).get("required", []))

    def tool(self: AgentGymToolEnv, **arguments: Any) -> str:
        return self._call(name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for arg, prop in properties.items():
        kind = _TYPES.get(prop.get("type", "string"), str)
        default = inspect.Parameter.empty if arg in required else None
        parameters.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind))
        annotations[arg] = kind
    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    args_doc = "".join(f"\n    {arg}: {prop.get('description') or arg}" for arg, prop in properties.items())
    tool.__doc__ = (f"{spec.get('description') or name}\n\nArgs:{args_doc}\n\nReturns:\n"
                    "    The environment's observation.")
    return tool


def _last_assistant_text(completion: Any) -> str:
    """The text of a rollout's last message when it is the model's (not a tool's reply, cut by the budget)."""
    if isinstance(completion, str):
        return completion
    if not completion or completion[-1].get("role") != "assistant":
        return ""
    content = completion[-1].get("content") or ""
    if isinstance(content, list):  # multimodal parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content
