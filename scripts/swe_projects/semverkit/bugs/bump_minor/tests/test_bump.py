def test_bump_minor_resets_the_patch():
    assert str(bump("1.4.2", "minor")) == "1.5.0"
    assert str(bump("0.9.17-rc.3+build.1", "minor")) == "0.10.0"
