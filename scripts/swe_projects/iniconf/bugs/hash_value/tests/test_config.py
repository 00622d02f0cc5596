def test_values_starting_with_a_comment_marker():
    config = parse("[theme]\naccent = #ff8800\nmuted = #999 ; grey\nsep = ;\n")
    assert config.get("theme", "accent") == "#ff8800"
    assert config.get("theme", "muted") == "#999"
    assert config.get("theme", "sep") == ";"
