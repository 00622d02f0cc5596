import pytest

from semverkit import InvalidVersion, Version


def test_parse_core():
    assert Version.parse("1.2.3") == Version(1, 2, 3)
    assert Version.parse(" v10.20.30 ") == Version(10, 20, 30)


def test_parse_prerelease_and_build():
    version = Version.parse("1.0.0-alpha.1+001")
    assert version.prerelease == ("alpha", "1")
    assert version.build == ("001",)
    assert version.is_prerelease


def test_invalid_versions():
    for text in ("1.2", "1.2.3.4", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "a.b.c", ""):
        with pytest.raises(InvalidVersion):
            Version.parse(text)


def test_str_round_trip():
    for text in ("1.2.3", "1.0.0-rc.1", "2.0.0+build.5", "1.0.0-alpha+sha.1", "0.0.1-x-y-z.9"):
        assert str(Version.parse(text)) == text


def test_release_outranks_its_prereleases():
    assert Version.parse("1.0.0-rc.1") < Version.parse("1.0.0")
    assert Version.parse("1.0.0") < Version.parse("1.0.1-alpha")


def test_precedence_of_prereleases():
    chain = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-rc.1",
             "1.0.0"]
    versions = [Version.parse(text) for text in chain]
    assert versions == sorted(reversed(versions))


def test_build_metadata_is_ignored_for_precedence():
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
    assert hash(Version.parse("1.0.0+a")) == hash(Version.parse("1.0.0"))


def test_numbers_compare_numerically():
    assert Version.parse("1.10.0") > Version.parse("1.9.0")
    assert Version.parse("2.0.0") > Version.parse("1.99.99")


def test_comparison_with_strings():
    assert Version(1, 2, 3) == "1.2.3"
    assert Version(1, 2, 3) < "1.2.4"


def test_negative_numbers_are_rejected():
    with pytest.raises(InvalidVersion):
        Version(1, -1, 0)
