"""The locks ./install.sh and .ci/run install from (requirements/lock.txt and the overlay venvs' lock-verl.txt,
lock-ors.txt and lock-verifiers.txt; written by scripts/lock.sh) agree with pyproject.toml: every requirement of what
they install is pinned, exactly, to a version its range admits. In CI, where .ci/run installed from the lock, every
locked package is installed at its version."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from helpers.gates import IN_CI, SMOLLM2_INSTALL, TORCH_PIN
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SELF = canonicalize_name(PROJECT["name"])
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def read_lock(name: str) -> dict[str, str]:
    """``{canonical name: version}`` of a lock file; every line a comment or ``name==version``."""
    pins: dict[str, str] = {}
    for number, line in enumerate((ROOT / "requirements" / name).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line.strip())
        assert match, f"requirements/{name}:{number}: {line!r} is not name==version (scripts/lock.sh writes pins only)"
        key = canonicalize_name(match[1])
        assert key not in pins, f"requirements/{name}:{number}: {match[1]} pinned twice"
        pins[key] = match[2]
    return pins


def requirements_of(*extras: str) -> list[Requirement]:
    """The base dependencies and those of ``extras``, self-references (``agentgym-suite[webshop]``) expanded."""
    found, todo, seen = [Requirement(r) for r in PROJECT["dependencies"]], list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in PROJECT["optional-dependencies"][extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == SELF:
                todo.extend(requirement.extras)
            else:
                found.append(requirement)
    return [r for r in found if r.marker is None or r.marker.evaluate({"extra": ""})]


def unmet(requirements: list[Requirement], pins: dict[str, str]) -> list[str]:
    problems = []
    for requirement in requirements:
        version = pins.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement} does not admit the locked {version}")
    return problems


def test_the_lock_pins_every_requirement_of_the_install_within_its_range():
    assert unmet(requirements_of("all"), read_lock("lock.txt")) == []


@pytest.mark.parametrize(("extra", "package"), [("verl", "verl"), ("ors", "openreward"), ("verifiers", "verifiers")])
def test_an_overlay_lock_with_the_base_lock_meets_its_extra(extra, package):
    base, own = read_lock("lock.txt"), read_lock(f"lock-{extra}.txt")
    assert own, f"requirements/lock-{extra}.txt pins nothing: scripts/lock.sh writes what the {extra} venv installs"
    assert unmet(requirements_of(extra), base | own) == []
    assert canonicalize_name(package) in own


def test_the_lock_holds_install_sh_pins():
    pins = read_lock("lock.txt")
    for pin in (TORCH_PIN, SMOLLM2_INSTALL.split()[-1]):
        name, version = pin.split("==")
        locked = pins.get(canonicalize_name(name))
        # torch's CPU build is 2.13.0+cpu: == 2.13.0 admits that local version (PEP 440), as pip does
        assert locked and Version(locked).public == version, f"install.sh installs {pin}, the lock has {locked}"
    assert SELF not in pins, "the lock pins agentgym-suite itself: scripts/lock.sh freezes with --exclude-editable"


def test_a_pin_outside_its_range_is_found():
    """The check above can fail: a lock that pins transformers below the train extra's range is reported."""
    pins = read_lock("lock.txt") | {"transformers": "4.0.0"}
    assert any("transformers" in problem for problem in unmet(requirements_of("train"), pins))
    del pins["trl"]
    assert "trl==1.16.0 is not in the lock" in unmet(requirements_of("train"), pins)


@pytest.mark.skipif(not IN_CI, reason="outside CI this Python may not have been installed from the lock "
                                     "(.ci/run installs with ./install.sh, which uses it)")
def test_ci_installed_every_package_at_its_locked_version():
    drift = {}
    for name, version in read_lock("lock.txt").items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            drift[name] = (version, installed)
    assert drift == {}, "locked (version, installed): run ./install.sh, or scripts/lock.sh to refresh the lock"


def test_the_harbor_lock_pins_the_harbor_its_script_installs():
    script = (ROOT / "scripts" / "harbor_venv.sh").read_text()
    [pin] = re.findall(r"^HARBOR=harbor==(\S+)$", script, flags=re.MULTILINE)
    assert read_lock("lock-harbor.txt").get("harbor") == pin
