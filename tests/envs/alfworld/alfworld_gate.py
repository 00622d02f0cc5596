"""The ALFWorld capability gate: skipped without alfworld locally, never in CI (a missing install fails there)."""

import importlib.util
import os

import pytest

requires_alfworld = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("alfworld", "textworld", "fast_downward")) and not os.environ.get("CI"),
    reason="needs pip install 'agentgym-suite[alfworld]' (alfworld==0.4.2 textworld==1.7.0)")
