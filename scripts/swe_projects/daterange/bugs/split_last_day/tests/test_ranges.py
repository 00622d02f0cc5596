def test_split_by_month_keeps_a_last_single_day():
    pieces = DateRange(d(15), d(1, 2)).split_by_month()
    assert pieces == [DateRange(d(15), d(31)), DateRange(d(1, 2), d(1, 2))]
    assert DateRange(d(5), d(5)).split_by_month() == [DateRange(d(5), d(5))]
    assert sum(len(piece) for piece in DateRange(d(20), d(1, 3)).split_by_month()) == 42
