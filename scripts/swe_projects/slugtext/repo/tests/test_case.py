from slugtext import split_identifier, title_case, to_camel, to_kebab, to_snake


def test_split_identifier():
    assert split_identifier("parseHTTPResponse_v2") == ["parse", "HTTP", "Response", "v2"]
    assert split_identifier("  kebab-case.and snake_case ") == ["kebab", "case", "and", "snake", "case"]


def test_snake_and_kebab():
    assert to_snake("parseHTTPResponse") == "parse_http_response"
    assert to_kebab("XMLHttpRequest") == "xml-http-request"


def test_camel():
    assert to_camel("parse_http_response") == "parseHttpResponse"
    assert to_camel("parse-http-response", upper_first=True) == "ParseHttpResponse"
    assert to_camel("") == ""


def test_title_case():
    assert title_case("the lord of the rings") == "The Lord of the Rings"
    assert title_case("what the iPhone is for") == "What the iPhone Is For"
