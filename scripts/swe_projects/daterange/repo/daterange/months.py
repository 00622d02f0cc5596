"""Month arithmetic that clamps to the end of shorter months."""

from __future__ import annotations

from datetime import date


def is_leap_year(year: int) -> bool:
    """Gregorian rule: every fourth year, except century years not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, not {month}")
    if month == 2:
        return 29 if is_leap_year(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    return day.replace(day=days_in_month(day.year, day.month))


def add_months(day: date, months: int) -> date:
    """The same day of the month ``months`` later (earlier if negative), clamped to the month's end.

    >>> add_months(date(2023, 1, 31), 1)
    datetime.date(2023, 2, 28)
    """
    index = day.year * 12 + (day.month - 1) + months
    year, month0 = divmod(index, 12)
    return date(year, month0 + 1, min(day.day, days_in_month(year, month0 + 1)))


def months_between(start: date, end: date) -> int:
    """Whole months from ``start`` to ``end`` (negative when ``end`` is earlier).

    A month is complete when ``add_months(start, n)`` has not passed ``end``.
    """
    months = (end.year - start.year) * 12 + end.month - start.month
    if months > 0 and add_months(start, months) > end:
        months -= 1
    elif months < 0 and add_months(start, months) < end:
        months += 1
    return months
