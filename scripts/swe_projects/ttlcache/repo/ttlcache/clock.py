"""Clocks: the real monotonic one, and a fake one that tests move by hand."""

import time


def monotonic() -> float:
    """Seconds since an arbitrary start; never goes backwards."""
    return time.monotonic()


class FakeClock:
    """A clock that only moves when told to.

    >>> clock = FakeClock(100.0)
    >>> clock.advance(2.5)
    >>> clock()
    102.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go backwards")
        self.now += seconds
