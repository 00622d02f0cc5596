from datetime import date

import pytest

from daterange import add_months, days_in_month, is_leap_year, month_end, months_between


def test_leap_years():
    assert is_leap_year(2024)
    assert not is_leap_year(2023)
    assert not is_leap_year(1900)


def test_days_in_month():
    assert [days_in_month(2023, m) for m in range(1, 13)] == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    assert days_in_month(2024, 2) == 29


def test_days_in_month_rejects_bad_months():
    with pytest.raises(ValueError, match="month"):
        days_in_month(2024, 13)


def test_add_months():
    assert add_months(date(2024, 1, 15), 1) == date(2024, 2, 15)
    assert add_months(date(2024, 11, 15), 3) == date(2025, 2, 15)


def test_add_months_clamps_to_the_month_end():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 3, 31), 1) == date(2024, 4, 30)


def test_add_negative_months():
    assert add_months(date(2024, 1, 31), -2) == date(2023, 11, 30)


def test_month_end():
    assert month_end(date(2023, 2, 3)) == date(2023, 2, 28)


def test_months_between():
    assert months_between(date(2024, 1, 15), date(2024, 3, 15)) == 2
    assert months_between(date(2024, 1, 15), date(2024, 3, 14)) == 1
    assert months_between(date(2024, 1, 31), date(2024, 2, 29)) == 1
    assert months_between(date(2024, 3, 15), date(2024, 1, 15)) == -2
