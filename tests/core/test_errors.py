"""``agentgym.errors.describe``: an episode's one-line error says where in the user's code it happened."""

from __future__ import annotations

import sys

from agentgym.errors import ConfigError, describe


def test_a_librarys_error_points_at_the_users_line_not_the_library(tmp_path, monkeypatch):
    """A stdlib or installed library raising for the user's call pointed into the library (decoder.py:355); it
    points at the user's line that made the call."""
    (tmp_path / "my_agent_code.py").write_text("import json\n\n\ndef parse():\n    return json.loads('{')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_agent_code

    try:
        my_agent_code.parse()
    except ValueError as e:
        said = describe(e)
    assert said.startswith("JSONDecodeError: ") and said.endswith("(my_agent_code.py:5)"), said
    sys.modules.pop("my_agent_code", None)


def test_the_users_own_raise_and_agentgyms_errors():
    def mine():
        raise KeyError("x")

    try:
        mine()
    except KeyError as e:
        assert describe(e) == f"KeyError: 'x' (test_errors.py:{mine.__code__.co_firstlineno + 1})"
    assert describe(ConfigError("what to do")) == "ConfigError: what to do"  # it says what happened itself
