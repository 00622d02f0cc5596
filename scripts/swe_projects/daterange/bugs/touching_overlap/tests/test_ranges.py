def test_ranges_sharing_one_day_overlap():
    first, second = DateRange(d(1), d(5)), DateRange(d(5), d(9))
    assert first.overlaps(second) and second.overlaps(first)
    assert first.intersection(second) == DateRange(d(5), d(5))
    assert DateRange(d(3), d(3)).overlaps(DateRange(d(3), d(3)))
