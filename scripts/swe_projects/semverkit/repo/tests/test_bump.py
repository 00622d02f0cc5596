import pytest

from semverkit import bump


def test_bump_major():
    assert str(bump("1.4.2", "major")) == "2.0.0"


def test_bump_minor():
    assert str(bump("1.4.0", "minor")) == "1.5.0"


def test_bump_patch():
    assert str(bump("1.4.2", "patch")) == "1.4.3"


def test_bump_patch_of_a_prerelease_releases_it():
    assert str(bump("1.4.2-rc.1", "patch")) == "1.4.2"


def test_bump_prerelease():
    assert str(bump("1.4.2", "prerelease")) == "1.4.3-rc.0"
    assert str(bump("1.4.2-rc.0", "prerelease")) == "1.4.2-rc.1"
    assert str(bump("1.0.0-beta", "prerelease")) == "1.0.0-beta.0"
    assert str(bump("1.4.2", "prerelease", label="alpha")) == "1.4.3-alpha.0"


def test_bump_drops_build_metadata():
    assert str(bump("1.4.2+exp.7", "patch")) == "1.4.3"


def test_unknown_part():
    with pytest.raises(ValueError, match="part must be one of"):
        bump("1.0.0", "micro")
