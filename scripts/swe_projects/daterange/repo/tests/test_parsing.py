from datetime import date

import pytest

from daterange import DateRange, InvalidRange, ParseError, format_range, iso_week, parse_date, parse_range


def test_parse_date():
    assert parse_date(" 2024-02-29 ") == date(2024, 2, 29)


def test_bad_dates():
    for text in ("2024-02-30", "2024-2-3", "20240203", "yesterday"):
        with pytest.raises(ParseError):
            parse_date(text)


def test_explicit_range():
    assert parse_range("2024-01-05..2024-02-10") == DateRange(date(2024, 1, 5), date(2024, 2, 10))


def test_reversed_range():
    with pytest.raises(InvalidRange):
        parse_range("2024-02-10..2024-01-05")


def test_month():
    assert parse_range("2023-02") == DateRange(date(2023, 2, 1), date(2023, 2, 28))
    with pytest.raises(ParseError):
        parse_range("2023-13")


def test_year():
    assert len(parse_range("2024")) == 366


def test_iso_week():
    assert parse_range("2024-W09") == DateRange(date(2024, 2, 26), date(2024, 3, 3))
    assert iso_week(2024, 1).start == date(2024, 1, 1)


def test_iso_week_out_of_range():
    with pytest.raises(ParseError):
        iso_week(2024, 54)


def test_garbage():
    with pytest.raises(ParseError, match="not a date range"):
        parse_range("next week")


def test_format_range():
    assert format_range(parse_range("2024-03-05..2024-03-09")) == "5–9 March 2024"
    assert format_range(parse_range("2024-01-30..2024-02-02")) == "30 January – 2 February 2024"
    assert format_range(parse_range("2023-12-30..2024-01-02"), dash="-") == "30 December 2023 - 2 January 2024"
    assert format_range(parse_range("2024-07-04..2024-07-04")) == "4 July 2024"
