import pytest

from slugtext import excerpt, truncate, wrap


def test_short_text_is_unchanged():
    assert truncate("short", 10) == "short"


def test_truncate_at_a_word_boundary():
    assert truncate("The quick brown fox", 12) == "The quick…"


def test_truncate_collapses_whitespace():
    assert truncate("  lots   of\n space  ", 20) == "lots of space"


def test_placeholder_must_fit():
    with pytest.raises(ValueError, match="placeholder"):
        truncate("hello", 2, placeholder="...")


def test_excerpt_around_a_match():
    text = "The quick brown fox jumps over the lazy dog and runs far away"
    assert excerpt(text, "LAZY", 20) == "…the lazy dog…"
    assert excerpt(text, "quick", 20) == "The quick brown fox…"
    assert excerpt(text, "away", 20) == "…and runs far away"
    assert excerpt("a  short\ntext", "short") == "a short text"


def test_wrap():
    assert wrap("the quick brown fox jumps over the lazy dog", 10) == [
        "the quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_wrap_long_words():
    assert wrap("a supercalifragilistic word", 8) == ["a", "supercalifragilistic", "word"]


def test_wrap_needs_a_positive_width():
    with pytest.raises(ValueError):
        wrap("text", 0)
