from datetime import date

import pytest

from daterange import DateRange, InvalidRange, gaps, merge_ranges


def d(day, month=1, year=2024):
    return date(year, month, day)


def test_length_counts_both_ends():
    assert len(DateRange(d(1), d(31))) == 31
    assert len(DateRange(d(5), d(5))) == 1


def test_iteration():
    assert list(DateRange(d(30), d(2, 2))) == [d(30), d(31), d(1, 2), d(2, 2)]


def test_membership():
    week = DateRange(d(8), d(14))
    assert d(8) in week and d(14) in week
    assert d(15) not in week and "2024-01-10" not in week


def test_end_before_start_is_rejected():
    with pytest.raises(InvalidRange, match="before start"):
        DateRange(d(10), d(9))


def test_overlaps():
    assert DateRange(d(1), d(10)).overlaps(DateRange(d(5), d(15)))
    assert DateRange(d(1), d(10)).overlaps(DateRange(d(3), d(4)))
    assert not DateRange(d(1), d(5)).overlaps(DateRange(d(7), d(9)))


def test_intersection():
    assert DateRange(d(1), d(10)).intersection(DateRange(d(5), d(15))) == DateRange(d(5), d(10))
    assert DateRange(d(1), d(5)).intersection(DateRange(d(7), d(9))) is None


def test_shift():
    assert DateRange(d(30), d(31)).shift(2) == DateRange(d(1, 2), d(2, 2))


def test_whole_month():
    assert DateRange.month(2024, 2) == DateRange(d(1, 2), d(29, 2))


def test_split_by_month():
    pieces = DateRange(d(15), d(10, 3)).split_by_month()
    assert pieces == [DateRange(d(15), d(31)), DateRange.month(2024, 2), DateRange(d(1, 3), d(10, 3))]


def test_split_within_one_month():
    assert DateRange(d(3), d(9)).split_by_month() == [DateRange(d(3), d(9))]


def test_str():
    assert str(DateRange(d(1), d(31))) == "2024-01-01..2024-01-31"


def test_merge_ranges():
    ranges = [DateRange(d(10), d(12)), DateRange(d(1), d(3)), DateRange(d(4), d(5)), DateRange(d(11), d(20))]
    assert merge_ranges(ranges) == [DateRange(d(1), d(5)), DateRange(d(10), d(20))]
    assert merge_ranges([]) == []


def test_gaps():
    busy = [DateRange(d(3), d(4)), DateRange(d(8), d(9)), DateRange(d(28, 12, 2023), d(1))]
    assert gaps(busy, DateRange(d(1), d(10))) == [DateRange(d(2), d(2)), DateRange(d(5), d(7)), DateRange(d(10), d(10))]
    assert gaps([], DateRange(d(1), d(2))) == [DateRange(d(1), d(2))]
