def test_getboolean_ignores_letter_case():
    config = parse("[flags]\na = True\nb = NO\nc = On\nd = FALSE\n")
    assert [config.getboolean("flags", key) for key in "abcd"] == [True, False, True, False]
