"""PrimeIntellect's verifiers (0.4, ``verifiers.v1``), both ways.

- ``load_environment(env_id)``: an agentgym env as a verifiers environment (a ``vf.Env`` over the
  ``agentgym-verifiers`` taskset), for verifiers' own eval (``vf-eval``) and prime-rl. Its reward is the env's.
- ``agentgym eval --env vf:TASKSET``: a verifiers environment played as an agentgym env
  (``agentgym.integrations.verifiers_env.VerifiersEnv``).

verifiers 0.4.0 pins ``mcp==2.0.0`` and ``openai<3``, so it is the ``verifiers`` extra, outside ``all``
(``scripts/overlay_venv.sh verifiers DIR`` makes a venv on top of the main install with it). Importing this module
does not import verifiers.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import ConfigError

__all__ = ["TASKSET_ID", "VERIFIERS_INSTALL", "load_environment", "require_verifiers"]

VERIFIERS_INSTALL = "pip install 'agentgym-suite[verifiers]'"
#: the taskset id verifiers' loaders import for agentgym envs (the top-level module ``agentgym_verifiers``)
TASKSET_ID = "agentgym-verifiers"


def require_verifiers() -> Any:
    """``verifiers.v1``, or a one-line ``ConfigError`` naming the install command."""
    try:
        import verifiers.v1 as vf
    except ImportError as e:
        raise ConfigError(f"verifiers is not installed; install it with: {VERIFIERS_INSTALL} (in a venv of its "
                          "own: scripts/overlay_venv.sh verifiers DIR).") from e
    return vf


def load_environment(env_id: str = "agentgym/SearchQA-v0", *, split: str = "test",
                     env_kwargs: dict[str, Any] | None = None, **config: Any) -> Any:
    """The verifiers environment (a ``verifiers.v1.Env``) that plays ``env_id``'s ``split``: one verifiers task per
    agentgym task, the model's replies as the env's actions, the env's verified reward as its one reward
    (``agentgym``). ``env_kwargs`` go to the env (``action_format``, ``max_turns``, ...); ``config`` are fields of
    the verifiers env config (``agent={"max_turns": 8}``, ``timeout={"episode": 600}``).

    The same environment by name, with verifiers' CLI: ``vf-eval agentgym-verifiers --env.taskset.env ENV_ID``.
    """
    vf = require_verifiers()
    from agentgym.core.registry import env_info

    env_info(env_id)  # an unknown id: did-you-mean, before verifiers loads anything
    taskset = {"id": TASKSET_ID, "env": env_id, "split": split, "env_kwargs": dict(env_kwargs or {})}
    return vf.load_environment(vf.resolve_env_config({**config, "taskset": taskset}))
