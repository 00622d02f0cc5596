def test_leftover_cents_are_handed_out():
    assert allocate(Money("0.05"), [1, 1, 1]) == [Money("0.02"), Money("0.02"), Money("0.01")]


def test_parts_add_up_to_the_total():
    for amount in ("100.00", "0.01", "-7.00", "10.01"):
        parts = allocate(Money(amount), [1, 1, 1])
        assert sum(parts, Money("0")) == Money(amount)
