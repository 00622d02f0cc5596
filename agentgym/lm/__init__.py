"""Local language models shared by the eval and the trainer: the default model, loading, batched rollouts."""
