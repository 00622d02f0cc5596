"""Business-day arithmetic: weekends and the given holidays are skipped."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

WEEKEND = frozenset({5, 6})  # date.weekday() of Saturday and Sunday


def is_business_day(day: date, holidays: Iterable[date] = ()) -> bool:
    return day.weekday() not in WEEKEND and day not in set(holidays)


def add_business_days(day: date, days: int, holidays: Iterable[date] = ()) -> date:
    """The date ``days`` business days after ``day``, or before it when ``days`` is negative.

    ``day`` itself need not be a business day; ``days == 0`` returns it unchanged.

    >>> add_business_days(date(2024, 3, 8), 1)  # a Friday
    datetime.date(2024, 3, 11)
    """
    off = frozenset(holidays)
    step = timedelta(days=1 if days >= 0 else -1)
    remaining = abs(days)
    while remaining > 0:
        day += step
        if is_business_day(day, off):
            remaining -= 1
    return day


def business_days_between(start: date, end: date, holidays: Iterable[date] = ()) -> int:
    """Business days in ``[start, end)``; negative when ``end`` is before ``start``."""
    if end < start:
        return -business_days_between(end, start, holidays)
    off = frozenset(holidays)
    count = 0
    day = start
    while day < end:
        count += is_business_day(day, off)
        day += timedelta(days=1)
    return count
