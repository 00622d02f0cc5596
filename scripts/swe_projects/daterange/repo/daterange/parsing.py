"""Ranges from and to text: ``2024-01-05..2024-02-10``, ``2024-03``, ``2024-W09``, ``2024``; ``5–9 March 2024``."""

from __future__ import annotations

import re
from datetime import date, timedelta

from daterange.errors import ParseError
from daterange.ranges import DateRange

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WEEK_RE = re.compile(r"(\d{4})-W(\d{2})")
_MONTH_RE = re.compile(r"(\d{4})-(\d{2})")
_YEAR_RE = re.compile(r"\d{4}")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


def parse_date(text: str) -> date:
    """A ``YYYY-MM-DD`` date."""
    match = _DATE_RE.fullmatch(text.strip())
    if match is None:
        raise ParseError(f"not a YYYY-MM-DD date: {text!r}")
    try:
        return date(*map(int, match.groups()))
    except ValueError as e:
        raise ParseError(f"not a date: {text!r} ({e})") from None


def iso_week(year: int, week: int) -> DateRange:
    """Monday to Sunday of ISO week ``week`` of ``year`` (week 1 is the week with the year's first Thursday).

    >>> str(iso_week(2021, 1))
    '2021-01-04..2021-01-10'
    """
    try:
        monday = date.fromisocalendar(year, week, 1)
    except ValueError:
        raise ParseError(f"ISO year {year} has no week {week}") from None
    return DateRange(monday, monday + timedelta(days=6))


def parse_range(text: str) -> DateRange:
    """A range written as ``START..END``, a month, an ISO week or a year."""
    text = text.strip()
    if ".." in text:
        first, _, last = text.partition("..")
        return DateRange(parse_date(first), parse_date(last))
    if match := _WEEK_RE.fullmatch(text):
        return iso_week(int(match.group(1)), int(match.group(2)))
    if match := _MONTH_RE.fullmatch(text):
        year, month = int(match.group(1)), int(match.group(2))
        if not 1 <= month <= 12:
            raise ParseError(f"no month {month}: {text!r}")
        return DateRange.month(year, month)
    if _YEAR_RE.fullmatch(text):
        year = int(text)
        return DateRange(date(year, 1, 1), date(year, 12, 31))
    raise ParseError(f"not a date range: {text!r} (try 2024-01-05..2024-02-10, 2024-03, 2024-W09 or 2024)")


def format_range(dates: DateRange, *, dash: str = "–") -> str:
    """A range as people write it, repeating only what changes.

    >>> format_range(parse_range("2024-01-30..2024-02-02"))
    '30 January – 2 February 2024'
    """
    start, end = dates.start, dates.end
    first, last = MONTH_NAMES[start.month - 1], MONTH_NAMES[end.month - 1]
    if start == end:
        return f"{start.day} {first} {start.year}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}{dash}{end.day} {first} {start.year}"
    if start.year == end.year:
        return f"{start.day} {first} {dash} {end.day} {last} {end.year}"
    return f"{start.day} {first} {start.year} {dash} {end.day} {last} {end.year}"
