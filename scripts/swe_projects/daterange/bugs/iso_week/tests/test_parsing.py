def test_iso_weeks_of_years_not_starting_on_monday():
    assert str(iso_week(2021, 1)) == "2021-01-04..2021-01-10"
    assert parse_range("2020-W53") == DateRange(date(2020, 12, 28), date(2021, 1, 3))
    assert parse_range("2026-W01").start == date(2025, 12, 29)
