def test_parse_error_reports_the_1_based_line_number():
    with pytest.raises(ParseError) as info:
        tokenize("[a]\nx = 1\noops\n")
    assert info.value.lineno == 3
    assert str(info.value).startswith("line 3: ")
