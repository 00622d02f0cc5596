"""``AGENTGYM_IMPORT``: the user's env modules and files that every agentgym process imports (``--import``).

A leaf module: the Ray pool passes the variable on to its hosts without importing the registry.
"""

from __future__ import annotations

__all__ = ["IMPORT_VARIABLE"]

IMPORT_VARIABLE = "AGENTGYM_IMPORT"
