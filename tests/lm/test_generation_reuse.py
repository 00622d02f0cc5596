"""The generator's per-row cache reuse (a changing, reordered set of rollouts) and its sampler log-probabilities:
every row is computed as if it were alone."""

from __future__ import annotations

import types

import pytest
from helpers.gates import requires_extra, requires_smollm2

PROMPTS = {"A": "Count from one to twenty in words.", "B": "What is 2+2? Answer in one word.",
           "C": "Write a haiku about the sea.", "D": "Name three colours, then three animals.",
           "E": "Say yes."}
STOPS = {"A": (), "B": (".",), "C": ("\n",), "D": (",",), "E": ()}


@pytest.fixture(scope="module")
def smollm2(smollm2_fp32):
    """The default model in fp32 and its tokenizer (loaded once per process: tests/conftest.py), on one thread."""
    import torch

    torch.set_num_threads(1)
    return smollm2_fp32


def _prompt(tokenizer, name):
    text = tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[name]}], tokenize=False,
                                         add_generation_prompt=True)
    return tokenizer(text)["input_ids"]


def _observation(tokenizer, repeats):
    return tokenizer("\nObservation: noted, go on. " * repeats, add_special_tokens=False)["input_ids"]


class _Rollouts:
    """Rollouts by name, played through one generator; every (context, turn) played is kept for the checks."""

    def __init__(self, generator, tokenizer):
        self.generator, self.tokenizer = generator, tokenizer
        self.contexts, self.played = {}, []

    def play(self, names, *, seed=0):
        """One call with the named rollouts, in this order: a new name starts from its prompt, a known one goes on
        with its last turn and an observation (of a length of its own, so observations are read in buckets)."""
        for name in names:
            if name not in self.contexts:
                self.contexts[name] = _prompt(self.tokenizer, name)
        contexts = [self.contexts[n] for n in names]
        before = dict(self.generator.stats)
        out = self.generator.generate(contexts, stops=[STOPS[n] for n in names], max_new_tokens=12, seed=seed)
        self.played.extend((list(c), t) for c, t in zip(contexts, out))
        for k, (name, turn) in enumerate(zip(names, out)):
            self.contexts[name] = [*contexts[k], *turn.ids, *_observation(self.tokenizer, 2 + 7 * k)]
        return out, {key: self.generator.stats[key] - before[key] for key in before}


def _from_scratch(model, played):
    """For each (context, turn) of ``played``: the logits each of the turn's ids was picked from, computed for its row
    alone, without a cache. One forward per rollout, not per turn: the model is causal (the logits at a position do
    not depend on what follows it), and a rollout's last sequence holds each of its earlier turns, with the context
    it was played from, as a prefix. Only the positions asked for go through the output layer."""
    import torch

    sequences = [context + turn.ids for context, turn in played]
    covered: dict[tuple[int, ...], list[int]] = {}  # a rollout's last sequence -> the played turns it holds
    for k, sequence in enumerate(sequences):
        longest = max((s for s in sequences if s[: len(sequence)] == sequence), key=len)
        covered.setdefault(tuple(longest), []).append(k)
    out = [None] * len(played)
    with torch.no_grad():
        for sequence, ks in covered.items():
            spans = [range(len(played[k][0]) - 1, len(sequences[k]) - 1) for k in ks]
            keep = torch.tensor([position for span in spans for position in span], dtype=torch.long)
            logits = model(torch.tensor([sequence]), logits_to_keep=keep).logits[0].float()
            for k, rows in zip(ks, logits.split([len(span) for span in spans])):
                out[k] = rows
    return out


def _worst_gap(model, played):
    """How far below its row's best each greedy token is, at worst: 0 up to float noise; a wrong position, mask or
    cache slot puts it whole logits below (the check of tests/lm/test_cache.py)."""
    import torch

    assert all(turn.ids for _, turn in played), "every row generates at least one token a turn"
    worst = 0.0
    for (_, turn), logits in zip(played, _from_scratch(model, played)):
        chosen = logits.gather(1, torch.tensor(turn.ids)[:, None])[:, 0]
        worst = max(worst, float((logits.max(dim=1).values - chosen).max()))
    return worst


def _generator(model, tokenizer, **kwargs):
    from agentgym.lm.generation import TransformersGenerator

    return TransformersGenerator(model, tokenizer, **kwargs)


@requires_smollm2
def test_greedy_logprobs_are_each_chosen_tokens_log_softmax_and_off_by_default(smollm2):
    import torch

    model, tokenizer = smollm2
    rollouts = _Rollouts(_generator(model, tokenizer, temperature=0, logprobs=True), tokenizer)
    first, _ = rollouts.play(["A", "B", "C"])
    rollouts.play(["C", "A"])  # the second turn reads through the cache
    worst = 0.0
    for (_, turn), logits in zip(rollouts.played, _from_scratch(model, rollouts.played)):
        assert len(turn.logprobs) == len(turn.ids) and all(p <= 0 for p in turn.logprobs)
        want = torch.log_softmax(logits, dim=-1)
        want = want.gather(1, torch.tensor(turn.ids)[:, None])[:, 0]
        worst = max(worst, float((want - torch.tensor(turn.logprobs)).abs().max()))
    assert worst < 1e-4, worst
    # the default reports none, and picks the very same tokens
    plain = _generator(model, tokenizer, temperature=0).generate(
        [_prompt(tokenizer, n) for n in "ABC"], stops=[STOPS[n] for n in "ABC"], max_new_tokens=12, seed=0)
    assert [t.ids for t in plain] == [t.ids for t in first]
    assert all(t.logprobs is None for t in plain)


@requires_smollm2
def test_sampled_logprobs_are_those_of_the_tempered_nucleus(smollm2):
    import torch

    model, tokenizer = smollm2
    settings = {"temperature": 0.7, "top_p": 0.9}
    rollouts = _Rollouts(_generator(model, tokenizer, logprobs=True, **settings), tokenizer)
    first, _ = rollouts.play(["A", "D", "E"], seed=3)
    rollouts.play(["E", "A", "D"], seed=4)
    for (_, turn), logits in zip(rollouts.played, _from_scratch(model, rollouts.played)):
        assert len(turn.logprobs) == len(turn.ids) and all(p <= 0 for p in turn.logprobs)
        # the distribution sampled from, from scratch: tempered, cut to the smallest set of mass >= top_p, renormalised
        probs = torch.softmax(logits / settings["temperature"], dim=-1)
        ranked, order = probs.sort(dim=-1, descending=True)
        kept = ranked.cumsum(dim=-1) - ranked <= settings["top_p"]
        rank = (order == torch.tensor(turn.ids)[:, None]).int().argmax(dim=-1)
        assert kept.gather(1, rank[:, None]).all(), "every sampled token is inside its nucleus"
        want = ranked.gather(1, rank[:, None])[:, 0].log() - (ranked * kept).sum(dim=-1).log()
        assert torch.allclose(torch.tensor(turn.logprobs), want, atol=1e-3), (turn.logprobs, want.tolist())
    # asking for logprobs changes no sampled token
    plain = _generator(model, tokenizer, **settings).generate(
        [_prompt(tokenizer, n) for n in "ADE"], stops=[STOPS[n] for n in "ADE"], max_new_tokens=12, seed=3)
    assert [t.ids for t in plain] == [t.ids for t in first] and all(t.logprobs is None for t in plain)


@requires_smollm2
def test_rows_keep_their_cache_when_rollouts_end_join_and_reorder(smollm2, monkeypatch):
    """Call 2 has A and C back (reordered), B gone and D new: A and C read only what they have not seen, D starts
    afresh, and every token of every row is the greedy choice for that row alone."""
    from agentgym.lm import generation

    merges = []
    merge = generation._merge
    monkeypatch.setattr(generation, "_merge", lambda groups, n: merges.append(len(groups)) or merge(groups, n))
    model, tokenizer = smollm2
    rollouts = _Rollouts(_generator(model, tokenizer, temperature=0), tokenizer)
    first, stats = rollouts.play(["A", "B", "C"])
    assert stats["reused_rows"] == 0 and stats["fresh_rows"] == 3
    new = {n: len(_observation(tokenizer, 2 + 7 * k)) for k, n in enumerate("ABC")}
    merges.clear()
    _, stats = rollouts.play(["C", "D", "A"])
    assert (stats["reused_rows"], stats["fresh_rows"]) == (2, 1)
    assert 2 in merges, "the reused rows and the fresh one decode as one batch"
    # only the observations and the new prompt were read (and a row's last generated token, which the cache lacks)
    read = new["A"] + new["C"] + len(_prompt(tokenizer, "D"))
    assert read <= stats["prefill_tokens"] <= read + 2, (stats, read)
    # a third call: D and C go on in another order, two new rollouts share their chat-template prefix
    _, stats = rollouts.play(["E", "D", "B", "C"])
    assert (stats["reused_rows"], stats["fresh_rows"]) == (2, 2)
    assert _worst_gap(model, rollouts.played) < 1e-2


@requires_smollm2
def test_rows_extending_in_order_take_the_fast_path(smollm2, monkeypatch):
    """Rows that all extend the previous call's, in order, are matched without the per-row search and kept in
    place (no rows selected when all come back), and stay exact."""
    from agentgym.lm import generation

    model, tokenizer = smollm2
    rollouts = _Rollouts(_generator(model, tokenizer, temperature=0), tokenizer)
    rollouts.play(["A", "B", "C"])
    searched, selected = [], []
    assign, take = generation.TransformersGenerator._assign, generation._take
    monkeypatch.setattr(generation.TransformersGenerator, "_assign",
                        lambda self, contexts: searched.append(len(contexts)) or assign(self, contexts))

    def select(kv, rows, *, copy):
        if not copy:  # rows selected in place (copies are the prefill's buckets and parked rows)
            selected.append(rows)
        return take(kv, rows, copy=copy)

    monkeypatch.setattr(generation, "_take", select)
    _, stats = rollouts.play(["A", "B", "C"])
    assert (stats["reused_rows"], stats["fresh_rows"]) == (3, 0)
    assert not searched and [0, 1, 2] not in selected
    _, stats = rollouts.play(["A", "C"])  # B ended: the rest stay in order
    assert (stats["reused_rows"], stats["fresh_rows"]) == (2, 0)
    assert not searched and [0, 2] in selected
    assert _worst_gap(model, rollouts.played) < 1e-2


@requires_extra("eval")
def test_each_previous_row_goes_to_at_most_one_context_the_longest_first():
    from agentgym.lm.generation import _KV, TransformersGenerator

    stub = types.SimpleNamespace(forward=lambda input_ids, past_key_values=None: None)
    generator = TransformersGenerator(stub, tokenizer=None)
    assert generator._assign([[1, 2]]) == [None]
    generator._kv = _KV(cache=None, mask=None, seqs=[[1, 2], [1, 2, 3], [7] * 20, [7] * 20])
    assert generator._assign([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3], [9]]) == [1, 0, None, None]
    # the same context twice takes two equal rows; a context no longer than a row does not extend it
    assert generator._assign([[7] * 21, [7] * 20, [7] * 21]) == [2, None, 3]
    # a match in the last tokens only is no match
    assert generator._assign([[8] + [7] * 20]) == [None]
