def test_reference_to_a_missing_section():
    config = parse("[a]\nx = ${nowhere:y}\n")
    with pytest.raises(InterpolationError, match="nowhere"):
        config.get("a", "x")
