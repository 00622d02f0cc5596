"""The byo/Capitals example env of docs/custom-envs.md as a file a test writes and imports (``--import``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

CAPITALS = textwrap.dedent('''
    import agentgym

    def capital_of(country: str) -> str:
        """Look up the capital city of a country."""
        return {"Peru": "Lima", "Kenya": "Nairobi"}.get(country, "unknown country")

    TASKS = [{"question": "What is the capital of Peru?", "answer": "Lima"},
             {"question": "What is the capital of Kenya?", "answer": "Nairobi"}]
    agentgym.register("ID", agentgym.ToolEnv, tasks=TASKS, tools=[capital_of], verifier="qa")
''')


def write_capitals(directory: Path, name: str, env_id: str) -> Path:
    """``directory/name.py`` registering the capitals env as ``env_id``."""
    path = directory / f"{name}.py"
    path.write_text(CAPITALS.replace("ID", env_id))
    return path
