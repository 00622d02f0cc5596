def test_decimal_and_grouped_numbers_are_one_token():
    assert tokenize("Pi is 3.14, not -2.5 or 1,000.") == [
        "Pi", "is", "3.14", ",", "not", "-2.5", "or", "1,000", "."]
    assert words("version 2.0 costs 1,299.99") == ["version", "2.0", "costs", "1,299.99"]
