def test_ties_round_away_from_zero():
    assert Money("0.125").rounded() == Money("0.13")
    assert Money("-0.125").rounded() == Money("-0.13")
    assert Money("2.5", "JPY").rounded() == Money("3", "JPY")
