"""A scripted agent for ``train --agent`` on ``vf:vf_capitals`` (tests/helpers/vf_capitals.py): one call to the model
in training through its base_url, then the right capital on even rollouts and a wrong one on odd ones, so every GRPO
group has a signal."""

from __future__ import annotations

import re

from openai import OpenAI

CAPITALS = {"France": "Paris", "Peru": "Lima", "Japan": "Tokyo", "Kenya": "Nairobi"}


def half_right(task):
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    client.chat.completions.create(model=task.model, messages=[{"role": "user", "content": task.prompt}],
                                   max_tokens=6, temperature=0)
    rollout = int(re.match(r"s\d+-r(\d+)-", task.rollout_id)[1])
    country = re.search(r"capital of (\w+)\?", task.prompt)[1]
    return CAPITALS[country] if rollout % 2 == 0 else "Quito"
