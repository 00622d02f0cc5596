"""Moved to ``agentgym.envs.swe.grader`` (a sandboxed grader lives in ``grader.py`` next to its env); this name
keeps working for one release, with a ``DeprecationWarning``."""

import warnings

from agentgym.envs.swe.grader import (
    TEST_TOOLING,
    eval_script,
    grade_log,
    instance_image,
    run_tests,
    swebench_spec,
    test_files,
    tooling_guard,
)

__all__ = ["TEST_TOOLING", "eval_script", "grade_log", "instance_image", "run_tests", "swebench_spec", "test_files",
           "tooling_guard"]

warnings.warn("agentgym.envs.swe.grading moved to agentgym.envs.swe.grader; import from there.", DeprecationWarning,
              stacklevel=2)
