"""The model gateway: an OpenAI-compatible server in front of a policy model that records every token of every
call, one rollout per base URL (``agentgym gateway``; ``agentgym eval --agent`` runs one in process).

Light to import: the HTTP app, the model and the MCP endpoint load when a gateway is built.
"""

from __future__ import annotations

__all__ = ["GATEWAY_INSTALL"]

GATEWAY_INSTALL = "pip install 'agentgym-suite[gateway]' torch==2.13.0"
