"""Test helpers, imported by the tests as ``helpers.<module>`` (tests/ is on ``sys.path`` through its rootdir
conftest): the capability gates (``gates``), a real ``agentgym serve`` in a subprocess (``server_process``), small
test envs (``toy_env``, ``crashy_env``, ``sandbox_down_env``) and data writers for the env tests."""
