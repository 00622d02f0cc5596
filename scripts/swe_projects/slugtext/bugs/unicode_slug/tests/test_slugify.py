def test_allow_unicode_keeps_letters():
    assert slugify("Zürich Straße", allow_unicode=True) == "zürich-straße"
    assert slugify("東京 タワー", allow_unicode=True) == "東京-タワー"
    assert slugify("Ελληνικά!", allow_unicode=True, lowercase=False) == "Ελληνικά"
