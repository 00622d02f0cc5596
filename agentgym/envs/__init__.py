"""The environment families and the table of registered ids.

Entry points are strings so that ``import agentgym`` stays light: an env's
heavy dependencies load only when the env is made.
"""

from __future__ import annotations

from agentgym.core.registry import EnvInfo, client_kwargs

__all__ = ["ENVS"]

ENVS: tuple[EnvInfo, ...] = (
    EnvInfo(
        id="agentgym/SearchQA-v0",
        entry_point="agentgym.envs.search:SearchQAEnv",
        description="Search-R1 style multi-hop QA: <search> a Wikipedia-style corpus, <answer>; exact-match reward.",
        # reward_metric is the server's: cover_em scores an answer listing every candidate 1 (a client may repeat it)
        client_kwargs=client_kwargs("question_types", "topk"),
    ),
    EnvInfo(
        id="agentgym/MathTool-v0",
        entry_point="agentgym.envs.code.mathtool:MathToolEnv",
        description="ReTool / ToRL math: <code> runs Python in a sandbox, <answer>\\boxed{}; math-equivalence reward.",
        extras=("code",),
        client_kwargs=client_kwargs(),
    ),
    EnvInfo(
        id="agentgym/PyCode-v0",
        entry_point="agentgym.envs.code.pycode:PyCodeEnv",
        description="Write a Python function (HumanEval / MBPP schema); reward = hidden unit tests pass in a sandbox.",
        extras=("code",),
        client_kwargs=client_kwargs("dataset"),
    ),
    EnvInfo(
        id="agentgym/WebShop-v0",
        entry_point="agentgym.envs.webshop:WebShopEnv",
        description="WebShop text mode: search[...] and click[...] through a shop; WebShop's purchase reward.",
        extras=("webshop",),
        client_kwargs=client_kwargs(),
    ),
    EnvInfo(
        id="agentgym/WebShopBrowser-v0",
        entry_point="agentgym.envs.webshop.browser:WebShopBrowserEnv",
        description="WebShop in real Chromium (Playwright): BrowserGym-style click/fill on the accessibility tree.",
        extras=("webshop", "browser"),
        client_kwargs=client_kwargs("screenshot"),
    ),
    EnvInfo(
        id="agentgym/SWEBench-v0",
        entry_point="agentgym.envs.swe.env:SWEBenchEnv",
        description="SWE-bench: fix an issue in a repository with bash/view/edit tools; FAIL_TO_PASS + PASS_TO_PASS "
                    "graded by the swebench harness.",
        extras=("swe",),
        client_kwargs=client_kwargs("timeout_s"),
    ),
    EnvInfo(
        id="agentgym/ALFWorld-v0",
        entry_point="agentgym.envs.alfworld:ALFWorldEnv",
        description="ALFWorld text household tasks (six types) on TextWorld's PDDL engine; reward 1 when the goal holds.",
        extras=("alfworld",),
        client_kwargs=client_kwargs("admissible_commands", "task_types"),
    ),
)
