import pytest

from iniconf.errors import ParseError
from iniconf.lexer import strip_inline_comment, tokenize


def test_sections_and_options():
    lines = tokenize("[server]\nhost = example.org\nport: 8080\n")
    assert [(line.kind, line.name, line.value) for line in lines] == [
        ("section", "server", ""), ("option", "host", "example.org"), ("option", "port", "8080")]


def test_comments_and_blank_lines_are_skipped():
    lines = tokenize("# top\n\n; another comment\n[a]\n  # indented comment\nx = 1\n")
    assert [line.kind for line in lines] == ["section", "option"]


def test_option_names_are_lowercased():
    section, option = tokenize("[Main]\nName = Value\n")
    assert (section.name, option.name, option.value) == ("Main", "name", "Value")


def test_inline_comment_after_whitespace():
    assert strip_inline_comment("8080  ; the port") == "8080"
    assert strip_inline_comment("on # enabled") == "on"


def test_comment_marker_inside_a_value_is_kept():
    assert strip_inline_comment("a;b") == "a;b"
    assert strip_inline_comment("https://example.org/docs#top") == "https://example.org/docs#top"


def test_continuation_lines():
    lines = tokenize("[a]\nitems = one\n  two\n\tthree\n")
    assert [(line.kind, line.value) for line in lines[1:]] == [
        ("option", "one"), ("continuation", "two"), ("continuation", "three")]


def test_garbage_line_raises():
    with pytest.raises(ParseError, match="expected"):
        tokenize("[a]\nthis is not an option\n")


def test_continuation_without_an_option_raises():
    with pytest.raises(ParseError, match="continuation"):
        tokenize("[a]\n  dangling\n")
