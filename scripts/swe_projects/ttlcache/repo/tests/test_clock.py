import pytest

from ttlcache import FakeClock, monotonic


def test_fake_clock_moves_when_told():
    clock = FakeClock(100)
    clock.advance(2.5)
    assert clock() == 102.5


def test_fake_clock_cannot_go_backwards():
    with pytest.raises(ValueError):
        FakeClock().advance(-1)


def test_monotonic_does_not_decrease():
    first = monotonic()
    assert monotonic() >= first
