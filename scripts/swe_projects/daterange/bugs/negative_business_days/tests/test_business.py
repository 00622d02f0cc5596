def test_add_negative_business_days():
    assert add_business_days(MONDAY, -1) == FRIDAY
    assert add_business_days(MONDAY, -6) == date(2024, 3, 1)
    assert add_business_days(MONDAY, -1, holidays=[FRIDAY]) == date(2024, 3, 7)
