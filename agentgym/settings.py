"""Settings read from the environment: one reading, one error, for every ``AGENTGYM_*`` count."""

from __future__ import annotations

import os

from agentgym.errors import ConfigError

__all__ = ["count_from_env"]


def count_from_env(name: str, default: int) -> int:
    """``$name`` as a whole number >= 1, ``default`` where it is unset or blank; anything else is a ``ConfigError``
    that names the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a whole number >= 1, got {raw!r}.")
    return int(raw)
