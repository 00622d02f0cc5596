"""A gateway in front of a model, served on a port: ``load_gateway`` builds it, ``GatewayServer`` runs its app on
uvicorn in a background thread (``agentgym eval --agent`` does this in process; ``agentgym gateway`` in the
foreground)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.gateway import GATEWAY_INSTALL
from agentgym.gateway.engine import Engine
from agentgym.gateway.service import Gateway, Limits
from agentgym.policies.base import Sampling

__all__ = ["GATEWAY_INSTALL", "GatewayServer", "load_gateway"]


def load_gateway(model: str = "smollm2", *, dtype: str = "auto", upstream: str | None = None,
                 upstream_model: str | None = None, api_key: str | None = None, gather_s: float = 0.05,
                 max_rows: int = 64, default_max_tokens: int = 512,
                 sampling: Mapping[str, Any] | None = None, limits: Limits | None = None) -> Gateway:
    """A gateway serving ``model`` (``smollm2``, ``hf:<path or cached id>``, ``vllm:<id>`` on a GPU) from this
    process, or passing every call through to ``upstream`` (an OpenAI-compatible base URL; text-only records).

    ``sampling``: what every call samples at in place of what it asks (temperature, top_p, seed; ``max_tokens`` a
    cap on the call's own), as ``train --agent`` and ``eval --agent`` set it (an upstream is sent them)."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled("The gateway's HTTP server (starlette, uvicorn)", GATEWAY_INSTALL) from e
    if upstream is not None:
        from agentgym.gateway.upstream import Upstream

        return Gateway(model_name=upstream_model or model, upstream=Upstream(upstream, api_key=api_key,
                                                                             model=upstream_model),
                       sampling=sampling, limits=limits)
    if model.startswith("vllm:"):
        generator, tokenizer, context = _vllm_generator(model.removeprefix("vllm:"))
    else:
        from agentgym.lm.generation import TransformersGenerator
        from agentgym.policies.hf import make_model_policy

        policy = make_model_policy(model, sampling=Sampling(), dtype=dtype)
        if policy is None:
            raise ConfigError(f"The gateway serves 'smollm2', 'hf:<local model>' or 'vllm:<model>' (GPU), or passes "
                              f"through with --upstream URL; got {model!r}.")
        weights, tokenizer = policy.load()
        generator = TransformersGenerator(weights, tokenizer, logprobs=True)
        context = int(getattr(weights.config, "max_position_embeddings", 0) or 8192)
    engine = Engine(generator, gather_s=gather_s, max_rows=max_rows)
    return Gateway(model_name=model, engine=engine, default_max_tokens=default_max_tokens, context_tokens=context,
                   sampling=sampling, limits=limits)


def _vllm_generator(name: str) -> tuple[Any, Any, int]:
    """vLLM's engine on a GPU (the trainer's ``VLLMGenerator``), with per-token log-probabilities."""
    try:
        from vllm import LLM
    except ImportError as e:
        raise DependencyNotInstalled("vLLM (GPU only)", "pip install 'agentgym-suite[vllm]'") from e
    from agentgym.lm.vllm import VLLMGenerator

    llm = LLM(model=name)
    tokenizer = llm.get_tokenizer()
    return VLLMGenerator(tokenizer, llm=llm), tokenizer, int(llm.llm_engine.model_config.max_model_len)


class GatewayServer:
    """``gateway``'s app on uvicorn at ``host:port`` (0: a free port) in a daemon thread."""

    def __init__(self, gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.gateway = gateway
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        #: whether each rollout's env session is also served over MCP (needs the mcp extra)
        self.has_mcp = False

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def app(self) -> Any:
        from agentgym.gateway.app import create_app

        mcp = None
        try:
            from agentgym.gateway.mcp import RolloutMcp

            mcp = RolloutMcp(lambda rid: self.gateway.sessions.get(rid), host=self.host)
        except ImportError:  # the mcp extra is not installed: no per-rollout MCP endpoint
            mcp = None
        self.has_mcp = mcp is not None
        return create_app(self.gateway, mcp=mcp)

    def start(self, timeout_s: float = 30.0) -> GatewayServer:
        from agentgym.core.background_server import start_uvicorn

        self._server, self._thread, self.port = start_uvicorn(
            self.app(), host=self.host, port=self.port, name="agentgym-gateway", timeout_s=timeout_s,
            timeout_keep_alive=30, failed=lambda why: ConfigError(f"The gateway {why}."))
        return self

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.5)

    def stop(self, timeout_s: float = 10.0) -> None:
        from agentgym.core.background_server import stop_uvicorn

        stop_uvicorn(self._server, self._thread, timeout_s)
        self._thread = None
