"""SWE-bench: repositories with real bugs, shell and file tools, graded by the repositories' own tests."""
