"""Train a policy on agentgym envs with GRPO."""
