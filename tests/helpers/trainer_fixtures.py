"""A tiny randomly initialised model with the SmolLM2 tokenizer's vocabulary, for the trainer tests."""

from __future__ import annotations


def tiny_model(tokenizer, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id)
    return LlamaForCausalLM(config)
