from decimal import Decimal

import pytest

from tinymoney import Money, allocate, split_evenly


def test_even_split():
    assert allocate(Money("100.00"), [1, 1]) == [Money("50"), Money("50")]


def test_proportional_split():
    assert allocate(Money("100.00"), [70, 20, 10]) == [Money("70"), Money("20"), Money("10")]


def test_decimal_ratios():
    assert allocate(Money("10.00"), [Decimal("0.25"), Decimal("0.75")]) == [Money("2.50"), Money("7.50")]


def test_negative_amounts():
    assert allocate(Money("-10.00"), [1, 4]) == [Money("-2"), Money("-8")]


def test_zero_ratio_gets_nothing():
    assert allocate(Money("8.00"), [1, 0, 1]) == [Money("4"), Money("0"), Money("4")]


def test_bad_ratios_raise():
    with pytest.raises(ValueError, match="at least one ratio"):
        allocate(Money("1"), [])
    with pytest.raises(ValueError, match="negative"):
        allocate(Money("1"), [1, -1])
    with pytest.raises(ValueError, match="positive"):
        allocate(Money("1"), [0, 0])


def test_split_evenly():
    assert split_evenly(Money("9.00"), 3) == [Money("3")] * 3


def test_split_evenly_needs_a_positive_count():
    with pytest.raises(ValueError):
        split_evenly(Money("9.00"), 0)
