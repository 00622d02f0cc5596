def test_numeric_prerelease_identifiers_compare_as_numbers():
    assert Version.parse("1.0.0-rc.10") > Version.parse("1.0.0-rc.9")
    chain = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
             "1.0.0-rc.1", "1.0.0"]
    versions = [Version.parse(text) for text in chain]
    assert versions == sorted(reversed(versions))
