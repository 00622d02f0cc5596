"""Expand ``${option}`` and ``${section:option}`` references in option values."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from iniconf.errors import ConfigError, InterpolationError

if TYPE_CHECKING:
    from iniconf.config import Config

REFERENCE_RE = re.compile(r"\$(?:\{(?P<target>[^{}]*)\}|\$)")
MAX_DEPTH = 10


def interpolate(config: Config, section: str, value: str, depth: int = 0) -> str:
    """``value`` with every reference replaced by the (expanded) value it names.

    ``${name}`` is looked up in ``section`` and then in the defaults,
    ``${other:name}`` in section ``other``; ``$$`` is a literal ``$``. A reference
    that cannot be resolved raises InterpolationError, whatever the reason.
    """
    if depth > MAX_DEPTH:
        raise InterpolationError(f"[{section}]: references nested deeper than {MAX_DEPTH} levels (a cycle?)")

    def expand(match: re.Match) -> str:
        target = match.group("target")
        if target is None:
            return "$"
        ref_section, _, option = target.rpartition(":")
        ref_section = ref_section or section
        try:
            raw = config.get_raw(ref_section, option)
        except ConfigError as e:
            raise InterpolationError(f"[{section}]: bad reference ${{{target}}}: {e}") from None
        return interpolate(config, ref_section, raw, depth + 1)

    return REFERENCE_RE.sub(expand, value)
