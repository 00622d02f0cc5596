"""DateRange: the days from a start to an end, both included."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from daterange.errors import InvalidRange
from daterange.months import days_in_month, month_end

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True, order=True)
class DateRange:
    """The days from ``start`` to ``end``, both included.

    >>> len(DateRange(date(2024, 1, 1), date(2024, 1, 31)))
    31
    """

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise InvalidRange(f"end {self.end} is before start {self.start}")

    @classmethod
    def month(cls, year: int, month: int) -> DateRange:
        """The whole month."""
        return cls(date(year, month, 1), date(year, month, days_in_month(year, month)))

    def __len__(self) -> int:
        return (self.end - self.start).days + 1

    def __iter__(self) -> Iterator[date]:
        day = self.start
        while day <= self.end:
            yield day
            day += ONE_DAY

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day <= self.end

    def overlaps(self, other: DateRange) -> bool:
        """Whether the two ranges share at least one day."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: DateRange) -> DateRange | None:
        """The days in both ranges, or None when there are none."""
        start, end = max(self.start, other.start), min(self.end, other.end)
        return DateRange(start, end) if start <= end else None

    def shift(self, days: int) -> DateRange:
        return DateRange(self.start + timedelta(days=days), self.end + timedelta(days=days))

    def split_by_month(self) -> list[DateRange]:
        """The range cut at month boundaries, one piece per calendar month it touches."""
        pieces = []
        start = self.start
        while start <= self.end:
            end = min(month_end(start), self.end)
            pieces.append(DateRange(start, end))
            start = end + ONE_DAY
        return pieces

    def __str__(self) -> str:
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def merge_ranges(ranges: Iterable[DateRange]) -> list[DateRange]:
    """The union of ``ranges`` as sorted, disjoint ranges; ranges that overlap or touch are joined."""
    merged: list[DateRange] = []
    for current in sorted(ranges):
        if merged and current.start <= merged[-1].end + ONE_DAY:
            if current.end > merged[-1].end:
                merged[-1] = DateRange(merged[-1].start, current.end)
        else:
            merged.append(current)
    return merged


def gaps(ranges: Iterable[DateRange], within: DateRange) -> list[DateRange]:
    """The days of ``within`` that none of ``ranges`` covers, as sorted ranges."""
    free = []
    start = within.start
    for busy in merge_ranges(ranges):
        if busy.end < within.start or busy.start > within.end:
            continue
        if busy.start > start:
            free.append(DateRange(start, busy.start - ONE_DAY))
        start = max(start, busy.end + ONE_DAY)
    if start <= within.end:
        free.append(DateRange(start, within.end))
    return free
