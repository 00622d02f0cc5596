import pytest

from semverkit import InvalidRange, Range, Version, max_satisfying, min_satisfying, satisfies


def test_comparators():
    assert satisfies("1.5.0", ">=1.2.0 <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0 <2.0.0")
    assert satisfies("1.2.0", "=1.2.0") and satisfies("1.2.0", "1.2.0")


def test_caret():
    assert satisfies("1.9.9", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
    assert not satisfies("1.2.2", "^1.2.3")
    assert satisfies("0.2.9", "^0.2.3")
    assert not satisfies("0.3.0", "^0.2.3")


def test_tilde():
    assert satisfies("1.2.9", "~1.2.3")
    assert not satisfies("1.3.0", "~1.2.3")
    assert satisfies("1.9.0", "~1")


def test_x_ranges():
    assert satisfies("1.2.7", "1.2.x")
    assert not satisfies("1.3.0", "1.2.x")
    assert satisfies("1.99.0", "1")
    assert satisfies("42.0.0", "*")


def test_partial_comparators():
    assert satisfies("1.2.9", "<1.3") and not satisfies("1.3.0", "<1.3")
    assert satisfies("1.3.0", ">1.2") and not satisfies("1.2.9", ">1.2")
    assert satisfies("1.2.9", "<=1.2") and not satisfies("1.3.0", "<=1.2")


def test_alternatives():
    assert satisfies("3.1.0", "^1.0.0 || ^3.0.0")
    assert not satisfies("2.0.0", "^1.0.0 || ^3.0.0")


def test_prereleases_are_excluded_by_default():
    assert not satisfies("2.0.0-rc.1", ">=1.0.0")
    assert satisfies("2.0.0-rc.1", ">=1.0.0", include_prerelease=True)
    assert satisfies("1.2.3-rc.2", ">=1.2.3-rc.1")


def test_range_membership():
    assert "1.4.0" in Range("~1.4")
    assert Version(1, 5, 0) not in Range("~1.4")


def test_max_and_min_satisfying():
    versions = ["1.2.0", "1.4.1", "2.0.0", "1.3.5"]
    assert max_satisfying(versions, "^1.0") == Version(1, 4, 1)
    assert min_satisfying(versions, "^1.3") == Version(1, 3, 5)
    assert min_satisfying(versions, "^3.0") is None


def test_invalid_range():
    with pytest.raises(InvalidRange):
        satisfies("1.0.0", ">=banana")
