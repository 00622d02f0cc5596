import pytest

from slugtext import ngrams, sentences, tokenize, words


def test_words_and_punctuation():
    assert tokenize("Hello, world!") == ["Hello", ",", "world", "!"]


def test_apostrophes_inside_words():
    assert tokenize("don't l’homme 'quoted'") == ["don't", "l’homme", "'", "quoted", "'"]


def test_integers_and_negative_numbers():
    assert tokenize("I have 3 cats and -2 dogs") == ["I", "have", "3", "cats", "and", "-2", "dogs"]


def test_minus_between_numbers_is_a_symbol():
    assert tokenize("5-3") == ["5", "-", "3"]


def test_lowercase_option():
    assert tokenize("Big DOG", lowercase=True) == ["big", "dog"]


def test_words_drop_symbols():
    assert words("Hello, world! 42") == ["Hello", "world", "42"]


def test_sentences():
    assert sentences("It rained. Then it stopped! Did it? Yes.") == [
        "It rained.", "Then it stopped!", "Did it?", "Yes."]


def test_sentences_skip_abbreviations():
    assert sentences("Dr. Smith arrived, e.g. At noon. He sat down.") == [
        "Dr. Smith arrived, e.g. At noon.", "He sat down."]


def test_ngrams():
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a", "b"], 3) == []
    assert ngrams(["a", "b"], 1) == [("a",), ("b",)]


def test_ngrams_need_a_positive_n():
    with pytest.raises(ValueError):
        ngrams(["a"], 0)
