"""The gateway tests' shared fixtures: the default model's gateway served once per module, and a gateway whose
model is scripted (the model's double, as ``helpers.oracle`` is for the adapters) for tests that need a given model
turn, such as a tool call."""

from __future__ import annotations

import pytest
from helpers.scripted_generator import ScriptedGenerator

from agentgym.gateway.engine import Engine
from agentgym.gateway.server import GatewayServer, load_gateway
from agentgym.gateway.service import Gateway


@pytest.fixture(scope="module")
def gateway():
    built = load_gateway("smollm2", dtype="float32")
    server = GatewayServer(built).start()
    yield built, server
    server.stop()
    built.close()


@pytest.fixture
def scripted(smollm2_tokenizer):
    """A gateway whose model writes the given texts, served on a free port; ``(gateway, generator, url)``."""
    served = []

    def serve(*texts):
        generator = ScriptedGenerator(smollm2_tokenizer, texts)
        gateway = Gateway(model_name="scripted", engine=Engine(generator, gather_s=0.001))
        server = GatewayServer(gateway).start()
        served.append((gateway, server))
        return gateway, generator, server.url

    yield serve
    for gateway, server in served:
        server.stop()
        gateway.close()
