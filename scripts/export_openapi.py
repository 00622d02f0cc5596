"""Write the server's OpenAPI schema to docs/openapi.json (a test keeps the two in sync).

    python scripts/export_openapi.py
"""

import json
from pathlib import Path

from agentgym.envs import ENVS
from agentgym.server import create_app

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"
    out.write_text(json.dumps(create_app([info.id for info in ENVS]).openapi(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out}")
