"""The generator's growing key/value cache holds exactly what transformers' own DynamicCache holds."""

from __future__ import annotations

from helpers.gates import requires_extra, requires_smollm2


@requires_extra("eval")
def test_growing_cache_matches_dynamic_cache_through_appends_selects_and_repeats():
    import torch
    from transformers import DynamicCache, LlamaConfig

    from agentgym.lm.generation import _growing_cache

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2)
    grown, plain = _growing_cache(config), DynamicCache(config=config)
    assert type(grown.layers[0]).__name__ == "GrowingLayer"
    torch.manual_seed(0)
    lengths = [5, 1, 1, 40, 1, 1, 100, 1]
    batch = 1
    for step, length in enumerate(lengths):
        if step == 1:  # the shared prefix copied to every row
            grown.batch_repeat_interleave(3), plain.batch_repeat_interleave(3)
            batch = 3
        if step == 5:  # a finished row dropped
            index = torch.tensor([0, 2])
            grown.batch_select_indices(index), plain.batch_select_indices(index)
            batch = 2
        for layer in range(2):
            k, v = torch.randn(batch, 2, length, 16), torch.randn(batch, 2, length, 16)
            got = grown.update(k, v, layer)
            want = plain.update(k.clone(), v.clone(), layer)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert grown.get_seq_length() == plain.get_seq_length()
    # appends land in spare room: a one-token step does not reallocate
    buffer = grown.layers[0]._buffers[0].data_ptr()
    grown.update(torch.randn(2, 2, 1, 16), torch.randn(2, 2, 1, 16), 0)
    assert grown.layers[0]._buffers[0].data_ptr() == buffer


@requires_smollm2
def test_rows_parked_and_compacted_across_turns_generate_greedily_for_each_row_alone(monkeypatch, smollm2_fp32):
    """Three turns of five rows that stop at different times and read observations of different lengths (so
    finished rows are parked mid-turn, observations read in buckets, the cache compacted between turns): every
    token a row generates in the batch is the greedy choice for that row computed alone, from scratch, without a
    cache, up to float noise. (Exact equality with a batch of one holds on some CPUs and not on others: the
    kernels sum in another order for other shapes, and a near-tie can then go either way; agentgym.lm.compute.)"""
    import torch

    from agentgym.lm import generation
    from agentgym.lm.generation import TransformersGenerator

    merges, compactions, buckets = [], [], []
    merge, compact = generation._merge, generation._compact
    monkeypatch.setattr(generation, "_merge", lambda groups, n: merges.append(len(groups)) or merge(groups, n))
    monkeypatch.setattr(generation, "_compact", lambda kv: compactions.append(kv.mask.shape) or compact(kv))
    bucket = generation._buckets
    monkeypatch.setattr(generation, "_buckets", lambda lengths: buckets.append(bucket(lengths)) or buckets[-1])

    torch.set_num_threads(1)
    model, tokenizer = smollm2_fp32  # the default model in fp32, loaded once per process (tests/conftest.py)
    prompts = ["Count from one to twenty in words.", "What is 2+2? Answer in one word.", "Name a colour.",
               "Write a haiku about the sea.", "Say yes."]
    stops = [(), (".",), (",",), (), ("\n",)]
    observations = ["\nObservation: thanks, go on. " * 20, "\nok, the tool says: " + "1 2 3 4 5 6 7 8 9 " * 10]
    generator = TransformersGenerator(model, tokenizer, temperature=0)
    contexts = [tokenizer(tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                        add_generation_prompt=True))["input_ids"] for p in prompts]
    played: list[tuple[list[int], list[int]]] = []  # (a row's context, the ids it generated) for every turn
    for turn in range(3):
        out = generator.generate(contexts, stops=stops, max_new_tokens=24, seed=0)
        for k, t in enumerate(out):
            played.append((list(contexts[k]), t.ids))
            extra = tokenizer(observations[(k + turn) % 2], add_special_tokens=False)["input_ids"]
            contexts[k] = [*contexts[k], *t.ids, *extra[: 3 + 40 * k]]
    # finished rows were parked mid-turn and brought back, the cache compacted between turns, observations of
    # different lengths read in separate buckets
    assert merges and compactions and any(len(b) > 1 for b in buckets), (merges, compactions, buckets)
    worst = 0.0
    with torch.no_grad():
        for k in range(len(prompts)):
            # one forward per row, over its last turn: the model is causal (a position's logits do not depend on
            # what follows it), and that sequence holds each of the row's turns, after its context, as a prefix
            turns = played[k::len(prompts)]
            sequence = [*turns[-1][0], *turns[-1][1]]
            positions = []
            for context, ids in turns:
                assert ids, "every row generates at least one token a turn"
                assert sequence[: len(context) + len(ids)] == [*context, *ids]
                positions += range(len(context) - 1, len(context) + len(ids) - 1)
            logits = model(torch.tensor([sequence]), logits_to_keep=torch.tensor(positions)).logits[0]
            chosen = logits.gather(1, torch.tensor([sequence[p + 1] for p in positions])[:, None])[:, 0]
            # how far below the row's own best each chosen token is: 0 for a greedy pick; a wrong position, mask
            # or cache slot puts it whole logits below
            worst = max(worst, float((logits.max(dim=1).values - chosen).max()))
    assert worst < 1e-2, worst
