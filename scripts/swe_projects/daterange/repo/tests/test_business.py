from datetime import date

from daterange import add_business_days, business_days_between, is_business_day

FRIDAY = date(2024, 3, 8)
MONDAY = date(2024, 3, 11)


def test_weekends_are_not_business_days():
    assert is_business_day(FRIDAY)
    assert not is_business_day(date(2024, 3, 9))
    assert not is_business_day(date(2024, 3, 10))


def test_holidays_are_not_business_days():
    assert not is_business_day(MONDAY, holidays=[MONDAY])


def test_add_business_days_skips_the_weekend():
    assert add_business_days(FRIDAY, 1) == MONDAY
    assert add_business_days(FRIDAY, 5) == date(2024, 3, 15)


def test_add_business_days_skips_holidays():
    assert add_business_days(FRIDAY, 1, holidays=[MONDAY]) == date(2024, 3, 12)


def test_zero_days():
    assert add_business_days(date(2024, 3, 9), 0) == date(2024, 3, 9)


def test_business_days_between():
    assert business_days_between(FRIDAY, MONDAY) == 1
    assert business_days_between(MONDAY, date(2024, 3, 18)) == 5
    assert business_days_between(MONDAY, MONDAY) == 0


def test_business_days_between_reversed():
    assert business_days_between(date(2024, 3, 18), MONDAY) == -5
