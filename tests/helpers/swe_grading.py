"""Grading many SWE patches in tests: two envs (each with a grader sandbox of its own) grade two at a time."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from helpers.swe_attacks import ISOLATED_ATTACKS, attack_patch, isolated_attack_patch


def any_patch(name: str, files: dict[str, str]) -> str:
    """The patch of attack ``name`` of either round against the repository ``files``."""
    return isolated_attack_patch(name, files) if name in ISOLATED_ATTACKS else attack_patch(name, files)


def env_pair(**kwargs):
    """Two SWEBench envs made with ``kwargs`` (a fixture's body: yields them, closes them)."""
    from agentgym.envs.swe.env import SWEBenchEnv

    pair = [SWEBenchEnv(**kwargs), SWEBenchEnv(**kwargs)]
    yield pair
    for env in pair:
        env.close()


def grade_all(envs, jobs):
    """``jobs``: (task, patch) pairs, graded two at a time; their scores in order."""
    halves = [jobs[0::2], jobs[1::2]]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda k: [envs[k].grade(t, p) for t, p in halves[k]], range(2)))
    out = [None] * len(jobs)
    out[0::2], out[1::2] = done[0], done[1]
    return out


def one_per_project(tasks):
    return list({task.gold["repo"]: task for task in tasks}.values())
