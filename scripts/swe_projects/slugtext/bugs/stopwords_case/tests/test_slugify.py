def test_stopwords_ignore_letter_case():
    assert slugify("The Lord of the Rings", stopwords=["the", "of"]) == "lord-rings"
    assert slugify("A Tale", stopwords=["A"], lowercase=False) == "Tale"
