def test_builtin_sum_without_a_start_value():
    assert sum([Money("1.10"), Money("2.20")]) == Money("3.30")
    assert sum([Money("5", "EUR")]) == Money("5", "EUR")
