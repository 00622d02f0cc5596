from slugtext import collapse_whitespace, strip_accents, to_ascii


def test_strip_accents():
    assert strip_accents("Crème Brûlée à la française") == "Creme Brulee a la francaise"


def test_to_ascii_transliterates():
    assert to_ascii("Straße in Øresund, Łódź") == "Strasse in Oresund, Lodz"


def test_to_ascii_drops_what_it_cannot_spell():
    assert to_ascii("price: 5€") == "price: 5"


def test_collapse_whitespace():
    assert collapse_whitespace("  a\tb\n\n c  ") == "a b c"
