import pytest

from iniconf import Config, ConfigError, MissingOptionError, MissingSectionError, parse

SAMPLE = """
[server]
host = example.org
port = 8080
debug = off
timeout = 2.5

[paths]
root = /srv/app
logs = ${root}/logs
cache = ${server:host}-cache
"""


def test_sections_keep_file_order():
    assert parse(SAMPLE).sections() == ["server", "paths"]


def test_get_returns_strings():
    assert parse(SAMPLE).get("server", "port") == "8080"


def test_option_names_are_case_insensitive():
    assert parse(SAMPLE).get("server", "HOST") == "example.org"


def test_getint_and_getfloat():
    config = parse(SAMPLE)
    assert config.getint("server", "port") == 8080
    assert config.getfloat("server", "timeout") == 2.5


def test_getboolean():
    config = parse("[flags]\na = yes\nb = off\nc = 1\nd = false\n")
    assert [config.getboolean("flags", key) for key in "abcd"] == [True, False, True, False]


def test_getboolean_rejects_other_words():
    with pytest.raises(ConfigError, match="not a boolean"):
        parse("[flags]\na = maybe\n").getboolean("flags", "a")


def test_bad_integer_is_a_config_error():
    with pytest.raises(ConfigError, match="port"):
        parse("[server]\nport = eighty\n").getint("server", "port")


def test_missing_option_and_defaults():
    config = parse(SAMPLE)
    with pytest.raises(MissingOptionError):
        config.get("server", "user")
    assert config.get("server", "user", default="nobody") == "nobody"
    assert config.getint("server", "workers", default=4) == 4


def test_missing_section():
    with pytest.raises(MissingSectionError):
        parse(SAMPLE).get("database", "url")


def test_defaults_apply_to_every_section():
    config = parse("[a]\nx = 1\n[b]\nlevel = debug\n", defaults={"Level": "info"})
    assert config.get("a", "level") == "info"
    assert config.get("b", "level") == "debug"
    assert config.options("a") == ["x", "level"]


def test_getlist():
    config = parse("[a]\nnames = alpha, beta ,gamma\nports = 80;443\n")
    assert config.getlist("a", "names") == ["alpha", "beta", "gamma"]
    assert config.getlist("a", "ports", separator=";") == ["80", "443"]


def test_set_requires_strings():
    config = Config()
    config.add_section("a")
    with pytest.raises(TypeError):
        config.set("a", "x", 1)


def test_items_are_interpolated():
    assert parse(SAMPLE).items("paths") == {
        "root": "/srv/app", "logs": "/srv/app/logs", "cache": "example.org-cache"}


def test_round_trip_through_to_string():
    config = parse(SAMPLE + "[notes]\ntext = first\n  second\n")
    again = parse(config.to_string())
    assert again.to_string() == config.to_string()
    assert again.get("notes", "text") == "first\nsecond"
