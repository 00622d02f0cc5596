import pytest

from slugtext import slugify, unique_slug


def test_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_accents_are_transliterated():
    assert slugify("Crème Brûlée: a recipe!") == "creme-brulee-a-recipe"
    assert slugify("Straße") == "strasse"


def test_apostrophes_are_dropped():
    assert slugify("Don't Stop Me Now") == "dont-stop-me-now"
    assert slugify("l’amour") == "lamour"


def test_custom_separator():
    assert slugify("Hello World", separator="_") == "hello_world"


def test_bad_separator():
    with pytest.raises(ValueError):
        slugify("Hello World", separator="x")


def test_keep_case():
    assert slugify("Hello World", lowercase=False) == "Hello-World"


def test_stopwords():
    assert slugify("a tale of two cities", stopwords=["a", "of"]) == "tale-two-cities"


def test_max_length_cuts_between_words():
    assert slugify("the quick brown fox", max_length=12) == "the-quick"


def test_max_length_cuts_a_long_first_word():
    assert slugify("supercalifragilistic", max_length=5) == "super"


def test_punctuation_and_underscores_separate_words():
    assert slugify("__init__ & main()") == "init-main"
    assert slugify("Python 3.11 released") == "python-3-11-released"


def test_nothing_left():
    assert slugify("") == ""
    assert slugify("!!! ???") == ""


def test_allow_unicode_with_ascii_text():
    assert slugify("Hello World", allow_unicode=True) == "hello-world"


def test_unique_slug():
    taken = {"hello-world", "hello-world-2"}
    assert unique_slug("Hello World", taken) == "hello-world-3"
    assert unique_slug("Something else", taken) == "something-else"
    assert unique_slug("!!!", set()) == "n-a"
    assert unique_slug("abcdef", {"abcdef"}, max_length=6) == "abcd-2"
