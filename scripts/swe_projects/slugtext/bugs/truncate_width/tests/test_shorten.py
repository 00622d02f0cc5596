def test_truncated_text_fits_the_width():
    text = "The quick brown fox jumps over the lazy dog"
    for width in range(1, len(text) + 1):
        assert len(truncate(text, width)) <= width
    assert truncate("abcdefghij", 5) == "abcd…"
    assert truncate("The quick brown", 9, placeholder="...") == "The..."
