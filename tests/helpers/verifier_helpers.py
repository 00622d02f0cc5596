"""Verifiers that misbehave on purpose, importable by a verifier worker (the tests put this directory on its path)."""

from __future__ import annotations

import os
import time

from agentgym.verifiers.score import Score


def quick(value: str) -> Score:
    return Score(1.0, True, {"value": value, "pid": os.getpid()})


def big_integer(digits: int) -> Score:
    """Minutes inside C big-integer arithmetic for large ``digits``: no Python-level timeout reaches it."""
    value = pow(7, digits * 4) % 10
    return Score(0.0, False, {"last_digit": value})


def sleep(seconds: float) -> Score:
    time.sleep(seconds)
    return Score(1.0, True, {})


def allocate(megabytes: int) -> Score:
    block = bytearray(megabytes * 2**20)
    return Score(1.0, True, {"size": len(block)})


def crash() -> Score:
    os._exit(3)
