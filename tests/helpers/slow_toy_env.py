"""The toy env whose every step answers ``delay`` seconds later (a remote tool's latency), registered on import:
the module a Ray rollout worker imports (``imports``) to play it on its node."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from helpers.toy_env import ToyEnv

SLOW_ID = "agentgym-test/SlowToy-v0"


class SlowToyEnv(ToyEnv):
    def __init__(self, turns: int = 2, delay: float = 0.5) -> None:
        super().__init__(turns=turns)
        self.delay = delay

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        time.sleep(self.delay)
        return super().step(action)


if SLOW_ID not in gym.registry:
    gym.register(SLOW_ID, entry_point="helpers.slow_toy_env:SlowToyEnv")
