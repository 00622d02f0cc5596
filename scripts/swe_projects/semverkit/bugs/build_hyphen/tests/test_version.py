def test_build_metadata_may_contain_hyphens():
    assert Version.parse("1.0.0+21AF26D3----117B344092BD").build == ("21AF26D3----117B344092BD",)
    assert str(Version.parse("1.0.0-beta+exp.sha-5114f85")) == "1.0.0-beta+exp.sha-5114f85"
