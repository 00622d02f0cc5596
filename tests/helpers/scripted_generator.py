"""A scripted stand-in for the gateway's model (as ``helpers.oracle`` is for the adapters): it writes the texts it
was given, for tests that need a given model turn, such as a tool call."""

from __future__ import annotations

from agentgym.lm.generation import Turn


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
