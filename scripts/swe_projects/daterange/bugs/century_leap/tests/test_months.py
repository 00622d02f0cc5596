def test_centuries_divisible_by_400_are_leap_years():
    assert is_leap_year(2000) and is_leap_year(2400)
    assert days_in_month(2000, 2) == 29
    assert add_months(date(2000, 1, 31), 1) == date(2000, 2, 29)
