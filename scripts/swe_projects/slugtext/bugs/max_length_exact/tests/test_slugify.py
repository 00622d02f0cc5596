def test_max_length_is_inclusive():
    assert slugify("hello world", max_length=11) == "hello-world"
    assert slugify("one two three", max_length=7) == "one-two"
