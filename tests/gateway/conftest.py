"""The gateway tests' shared fixtures: the default model's gateway served once per module, and a gateway whose
model is scripted (the model's double, as ``helpers.oracle`` is for the adapters) for tests that need a given model
turn, such as a tool call."""

from __future__ import annotations

import pytest

from agentgym.gateway.engine import Engine
from agentgym.gateway.server import GatewayServer, load_gateway
from agentgym.gateway.service import Gateway
from agentgym.lm.generation import Turn


@pytest.fixture(scope="module")
def gateway():
    built = load_gateway("smollm2", dtype="float32")
    server = GatewayServer(built).start()
    yield built, server
    server.stop()
    built.close()


class ScriptedGenerator:
    """Writes the next of ``texts`` for every row (ending its turn); keeps the contexts it was given."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts, self.contexts = tokenizer, list(texts), []
        self.temperature, self.top_p = 1.0, 1.0

    def generate(self, contexts, *, stops, max_new_tokens, seed):
        turns = []
        for context, row_stops in zip(contexts, stops):
            self.contexts.append(list(context))
            ids = list(self.tokenizer(self.texts.pop(0), add_special_tokens=False)["input_ids"])
            cut = next((k for k in range(1, len(ids) + 1)
                        if any(s in self.tokenizer.decode(ids[:k]) for s in row_stops)), None)
            if cut is not None:  # as the real generator does: the stop string's tokens are kept
                ids = ids[:cut]
            else:
                ids.append(self.tokenizer.eos_token_id)
            turns.append(Turn(ids=ids, ended=cut is None, stopped=cut is not None, logprobs=[-0.25] * len(ids)))
        return turns


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
