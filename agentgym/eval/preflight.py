"""The policy's pre-flight check, before any episode: a run whose every episode would fail does not start.

An ``openai:`` endpoint must answer a one-token chat completion; an ``hf:`` (or ``vllm:``) folder must hold a
readable ``config.json``, an ``hf:`` ``.gguf`` file must exist. Baselines need nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx

from agentgym.errors import PolicyError
from agentgym.policies import Policy

__all__ = ["check_policy"]

PREFLIGHT_TIMEOUT_S = 30.0


def _check_folder(spec: str, path: str) -> None:
    local = Path(path).expanduser()
    if path.endswith(".gguf"):
        if not local.is_file():
            raise PolicyError(f"Pre-flight: {spec}: no such GGUF file {str(local)!r}.")
        return
    if not local.exists():
        if path.startswith((os.sep, ".", "~")) or path.count("/") > 1:  # a hub id is "org/name"
            raise PolicyError(f"Pre-flight: {spec}: no model folder {str(local)!r}.")
        return  # a hub id: loading it from the local cache says what is missing
    try:
        json.loads((local / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PolicyError(f"Pre-flight: {spec}: {local / 'config.json'} does not load ({type(e).__name__}: {e}); "
                          "is this a saved model folder?") from e


def _check_endpoint(spec: str, policy: Policy) -> None:
    url = str(getattr(policy, "url", ""))
    body = policy.request_body([{"role": "user", "content": "Say OK."}], None)  # type: ignore[attr-defined]
    body["max_tokens"] = 1
    key = os.environ.get("OPENAI_API_KEY", "EMPTY")
    try:
        response = httpx.post(url, json=body, timeout=PREFLIGHT_TIMEOUT_S, headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as e:
        raise PolicyError(f"Pre-flight: {spec} did not answer a one-token request at {url} "
                          f"({type(e).__name__}: {e}); start the server or fix the URL.") from e
    if response.status_code >= 300:
        from agentgym.policies.openai import _server_message

        raise PolicyError(f"Pre-flight: {url} answered a one-token request with {response.status_code} "
                          f"{response.reason_phrase}: {_server_message(response)}")
    try:
        response.json()["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise PolicyError(f"Pre-flight: {url} answered a one-token request without a chat completion: "
                          f"{response.text[:300]!r}") from e


def check_policy(spec: str, policy: Policy | None = None, *, model: str | None = None) -> None:
    """Raise one ``PolicyError`` line when the policy ``spec`` cannot play: call with ``policy=None`` before
    building a local model (its folder is checked), and with the built policy for ``openai:`` (it is asked)."""
    if spec.startswith("hf:") or spec == "hf":
        _check_folder(spec, spec[3:] or model or "")
    elif spec.startswith("vllm:"):
        _check_folder(spec, spec.removeprefix("vllm:"))
    elif spec.startswith("openai:") and policy is not None:
        _check_endpoint(spec, policy)
