import pytest

from iniconf import InterpolationError, parse


def test_reference_in_the_same_section():
    config = parse("[paths]\nroot = /srv\nlogs = ${root}/logs\n")
    assert config.get("paths", "logs") == "/srv/logs"


def test_reference_to_another_section():
    config = parse("[server]\nhost = example.org\n[client]\nurl = https://${server:host}/\n")
    assert config.get("client", "url") == "https://example.org/"


def test_dollar_escape():
    assert parse("[shop]\nprice = $$5\n").get("shop", "price") == "$5"


def test_nested_references():
    config = parse("[a]\nx = 1\ny = ${x}${x}\nz = ${y}-${y}\n")
    assert config.get("a", "z") == "11-11"


def test_reference_to_a_default():
    config = parse("[a]\npath = ${home}/bin\n", defaults={"home": "/home/me"})
    assert config.get("a", "path") == "/home/me/bin"


def test_missing_option_reference():
    with pytest.raises(InterpolationError, match="bad reference"):
        parse("[a]\nx = ${nope}\n").get("a", "x")


def test_cycle_is_reported():
    with pytest.raises(InterpolationError, match="deeper"):
        parse("[a]\nx = ${y}\ny = ${x}\n").get("a", "x")


def test_get_raw_skips_interpolation():
    assert parse("[a]\nroot = /srv\nlogs = ${root}/logs\n").get_raw("a", "logs") == "${root}/logs"
