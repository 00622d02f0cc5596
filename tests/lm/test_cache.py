"""The generator's growing key/value cache holds exactly what transformers' own DynamicCache holds."""

from __future__ import annotations

from conftest import requires_extra

pytestmark = requires_extra("eval")


def test_growing_cache_matches_dynamic_cache_through_appends_selects_and_repeats():
    import torch
    from transformers import DynamicCache, LlamaConfig

    from agentgym.lm.rollout import _growing_cache

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
