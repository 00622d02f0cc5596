import pytest

from iniconf import ParseError, load, parse


def test_duplicate_section_raises():
    with pytest.raises(ParseError, match="duplicate section"):
        parse("[a]\nx = 1\n[a]\ny = 2\n")


def test_duplicate_option_raises():
    with pytest.raises(ParseError, match="duplicate option"):
        parse("[a]\nx = 1\nX = 2\n")


def test_option_before_any_section_raises():
    with pytest.raises(ParseError, match="before the first section"):
        parse("x = 1\n[a]\n")


def test_multiline_value():
    config = parse("[a]\ntext = first\n  second\n  third\nafter = yes\n")
    assert config.get("a", "text") == "first\nsecond\nthird"
    assert config.get("a", "after") == "yes"


def test_empty_text_gives_an_empty_config():
    assert parse("").sections() == []
    assert parse("# only a comment\n").sections() == []


def test_load_reads_a_file(tmp_path):
    path = tmp_path / "app.ini"
    path.write_text("[app]\nname = démo\n", encoding="utf-8")
    assert load(path).get("app", "name") == "démo"
