"""The shop website (no browser): pages, search results, options, purchases and errors over HTTP."""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import httpx
import pytest
from markupsafe import escape
from starlette.testclient import TestClient

import agentgym.envs.webshop.webapp
from agentgym.envs.webshop.catalog import load_catalog
from agentgym.envs.webshop.shop import ShopSession
from agentgym.envs.webshop.webapp import SESSION_HEADER, ShopServer, ShopSessions, make_app

_FAMILIES = {
    # query: (title stem, product category, options, attributes)
    "men's ski pants": ("Men's Waterproof Ski Pants", "Clothing › Men › Active › Pants",
                        {"Color": ["Black", "Navy Blue", "Gray"], "Size": ["Medium", "Large", "X-Large"]},
                        ["waterproof", "machine wash"]),
    "lipstick": ("Matte Lipstick Long Lasting Lip Color", "Beauty › Makeup › Lips › Lipstick",
                 {"Color": ["Ruby Red", "Nude", "Pink"]}, ["long lasting", "cruelty free"]),
    "headphones": ('Studio Headphones with 6.6" Cable', "Electronics › Audio › Headphones",
                   {"Style": ["Wired", "Wireless"]}, ["noise cancelling"]),
    # names and options that need quoting in HTML, URLs and the accessibility tree
    "trail shoes": ("Trail Shoes: Men's & Women's <All-Terrain>", "Shoes › Outdoor › Trail Running",
                    {"Size": ["7.5", "8/9 Wide", "XL: Tall"], "Color": ['Navy "Deep" Blue', "Red & Black", "10"]},
                    ["breathable"]),
}
_BRANDS = ("Northpeak", "Alpenlow", "Rouge", "Sonora", "Velvet", "Kestrel", "Brio", "Maple", "Orbit", "Quill",
           "Tundra", "Zephyr")


def write_shop_data(directory: Path) -> Path:
    """A 48-product WebShop data directory (``items_shuffle.json``, ``items_ins_v2.json``, ``goals.json``)."""
    directory.mkdir(parents=True, exist_ok=True)
    products, attributes, goals = [], {}, []
    for f, (query, (stem, category, options, attrs)) in enumerate(_FAMILIES.items()):
        for i, brand in enumerate(_BRANDS):
            asin = f"B0{f}TEST{i:03d}"
            name = f"{brand} {stem} Model {i + 1}"
            products.append({
                "asin": asin, "name": name, "category": "test", "query": query, "product_category": category,
                "pricing": f"${10 + 3 * i:.2f}" if i % 3 else f"${10 + 3 * i:.2f} - ${20 + 3 * i:.2f}",
                "full_description": f"The {name}, a {query} by {brand}.",
                "small_description": [f"{a.capitalize()} design" for a in attrs],
                "customization_options": {k: [{"value": v, "image": None} for v in vals]
                                          for k, vals in options.items()},
                "average_rating": 3.5 + (i % 3) / 2,
                "reviews": [{"title": f"Review of {brand}", "score": 4, "body": "Does the job."}] if i % 2 else []})
            attributes[asin] = {"attributes": attrs}
            if i < 3:
                # as the catalog shows option values: lower case, "/" as " | "
                wanted = [vals[i % len(vals)].replace("/", " | ").lower() for vals in options.values()]
                goals.append({"id": f"goal-{f}{i}", "asin": asin, "split": "test" if i < 2 else "train",
                              "instruction_text": f"i want {query} from {brand}, {' and '.join(wanted)}, "
                                                  f"and price lower than {40 + 3 * i}.00 dollars",
                              "attributes": attrs[:1], "goal_options": wanted, "price_upper": 40.0 + 3 * i})
    (directory / "items_shuffle.json").write_text(json.dumps(products))
    (directory / "items_ins_v2.json").write_text(json.dumps(attributes))
    (directory / "goals.json").write_text(json.dumps(goals))
    return directory


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    return load_catalog(write_shop_data(tmp_path_factory.mktemp("shop")))


@pytest.fixture()
def client(catalog):
    app = make_app(catalog)
    app.state.sessions.open("s1", instruction="i want ski pants, black and large")
    with TestClient(app, base_url="http://webshop.test") as client:
        yield client


def links(html: str) -> dict[str, str]:
    """Link text -> href of a page."""
    return {re.sub(r"\s+", " ", text).strip().replace("&lt;", "<").replace("&gt;", ">"): href.replace("&amp;", "&")
            for href, text in re.findall(r'<a href="([^"]*)">(.*?)</a>', html, re.DOTALL)}


def test_search_page_has_the_instruction_and_a_get_form(client):
    page = client.get("/s1")
    assert page.status_code == 200
    assert "Instruction: i want ski pants, black and large" in page.text
    assert re.search(r'<form role="search" method="get" action="/s1/search">', page.text)
    assert '<label for="search-query">Search query</label>' in page.text
    assert re.search(r'<input id="search-query" type="search" name="q"', page.text)
    assert "<button type=\"submit\">Search</button>" in page.text


def test_results_are_the_catalogs_search_ten_per_page(client, catalog):
    expected = [p.asin for p in catalog.search("ski pants")]
    assert len(expected) > 10
    first = client.get("/s1/search", params={"q": "ski pants"})
    assert f"Page 1 (Total results: {len(expected)})" in first.text
    shown = re.findall(r'<a href="/s1/item/(\w+)\?', first.text)
    assert shown == expected[:10]
    nav = links(first.text)
    assert nav["Back to Search"] == "/s1" and "< Prev" not in nav
    second = client.get(nav["Next >"])
    assert re.findall(r'<a href="/s1/item/(\w+)\?', second.text) == expected[10:20]
    assert links(second.text)["< Prev"] == "/s1/search?q=ski+pants&page=1"
    assert client.get("/s1/search", params={"q": "ski pants", "page": 9}).status_code == 404


def test_results_show_the_text_modes_page(client, catalog):
    shop = ShopSession(catalog, "x")
    shop.search("lipstick")
    html = client.get("/s1/search", params={"q": "lipstick"}).text
    for asin in shop._page_asins():
        product = catalog.products[asin]
        assert f"<p>{escape(product.name)}</p> <p>{product.price_tag}</p>" in html


def test_item_page_options_and_sub_pages(client, catalog):
    asin = "B00TEST000"
    product = catalog.products[asin]
    page = client.get(f"/s1/item/{asin}", params={"q": "ski pants", "page": 1})
    assert page.status_code == 200
    assert f"<h1>{escape(product.name)}</h1>" in page.text and f"Price: {product.price_tag}" in page.text
    assert re.findall(r'value="([^"]+)"\s+aria-pressed="true"', page.text) == []
    for button in ("black", "navy blue", "large", "Buy Now"):
        assert re.search(rf">{button}</button>", page.text)
    nav = links(page.text)
    assert nav["< Prev"] == "/s1/search?q=ski+pants&page=1"
    assert set(nav) >= {"Back to Search", "Description", "Features", "Reviews"}
    # choosing options keeps the search context and the other options
    chosen = client.get(f"/s1/item/{asin}", params={"q": "ski pants", "page": 1, "opt.color": "black",
                                                       "opt.size": "large"})
    pressed = re.findall(r'value="([^"]+)"\s+aria-pressed="true"', chosen.text)
    assert pressed == ["black", "large"]
    assert '<input type="hidden" name="opt.size" value="large">' in chosen.text
    features = client.get(links(chosen.text)["Features"])
    assert "<li>Waterproof design</li>" in features.text
    assert links(features.text)["< Prev"] == f"/s1/item/{asin}?q=ski+pants&page=1&opt.color=black&opt.size=large"
    assert "No reviews." in client.get(f"/s1/item/{asin}/reviews").text
    assert "Does the job." in client.get("/s1/item/B00TEST001/reviews").text
    assert escape(product.description) in client.get(f"/s1/item/{asin}/description").text


def test_buy_records_the_text_modes_purchase(client, catalog):
    sessions: ShopSessions = client.app.state.sessions
    assert sessions.purchase("s1") is None
    receipt = client.post("/s1/buy/B00TEST000", data={"opt.color": "Black", "opt.size": "large"})
    assert receipt.status_code == 200 and str(receipt.url).endswith("/s1/receipt")
    assert "Thank you for shopping with us!" in receipt.text and "Options: color: black, size: large" in receipt.text
    shop = ShopSession(catalog, "x")
    shop.search("ski pants")
    shop.click("B00TEST000")
    shop.click("black")
    shop.click("large")
    shop.click("Buy Now")
    assert sessions.purchase("s1") == shop.purchase
    # the first order stands
    client.post("/s1/buy/B00TEST001", data={})
    assert sessions.purchase("s1")["asin"] == "B00TEST000"
    sessions.open("s1", instruction="again")
    assert sessions.purchase("s1") is None
    assert client.get("/s1/receipt").status_code == 404


def test_errors_are_pages_that_say_what_is_wrong(client):
    unknown_item = client.get("/s1/item/B0NOTHERE0")
    assert unknown_item.status_code == 404 and "No product with asin" in unknown_item.text
    assert links(unknown_item.text)["Back to Search"] == "/s1"
    unknown_session = client.get("/nobody/search", params={"q": "pants"})
    assert unknown_session.status_code == 404 and "Unknown session" in unknown_session.text
    bad_option = client.get("/s1/item/B00TEST000", params={"opt.color": "plaid"})
    assert bad_option.status_code == 404 and "has no color" in bad_option.text
    assert client.get("/s1/item/B00TEST000/manual").status_code == 404
    assert client.get("/s1/buy/B00TEST000").status_code == 405
    empty = client.get("/s1/search", params={"q": "  "})
    assert empty.status_code == 200 and "Enter what you are looking for." in empty.text
    for path in ("/", "/search?q=pants", "/receipt"):  # neither the header nor the path names a session
        missing = client.get(path)
        assert missing.status_code == 400 and "names no shop session" in missing.text, path
        assert SESSION_HEADER in missing.text and "Back to Search" not in missing.text
    # markup is escaped
    client.app.state.sessions.open("s2", instruction="<script>alert(1)</script>")
    assert "&lt;script&gt;" in client.get("/s2").text


def test_doctests():
    result = doctest.testmod(agentgym.envs.webshop.webapp)
    assert result.attempted >= 1 and result.failed == 0


def test_session_ids_are_validated():
    with pytest.raises(ValueError, match="letters, digits"):
        ShopSessions().open("../x", instruction="x")
    with pytest.raises(ValueError, match="name of a page"):
        ShopSessions().open("search", instruction="x")


def test_the_session_header_keeps_the_session_out_of_urls(catalog):
    app = make_app(catalog)
    app.state.sessions.open("s1", instruction="i want ski pants, black and large")
    with TestClient(app, base_url="http://webshop.test", headers={SESSION_HEADER: "s1"}) as client:
        home = client.get("/")
        assert home.status_code == 200 and '<form role="search" method="get" action="/search">' in home.text
        results = client.get("/search", params={"q": "ski pants"})
        expected = [p.asin for p in catalog.search("ski pants")]
        assert re.findall(r'<a href="/item/(\w+)\?', results.text) == expected[:10]
        nav = links(results.text)
        assert nav["Back to Search"] == "/" and nav["Next >"] == "/search?q=ski+pants&page=2"
        item = client.get(f"/item/{expected[0]}", params={"q": "ski pants", "page": 1, "opt.color": "black"})
        assert f'action="/item/{expected[0]}"' in item.text and f'action="/buy/{expected[0]}"' in item.text
        assert links(item.text)["Features"] == f"/item/{expected[0]}/features?q=ski+pants&page=1&opt.color=black"
        receipt = client.post(f"/buy/{expected[0]}", data={"opt.color": "black"})
        assert receipt.status_code == 200 and str(receipt.url) == "http://webshop.test/receipt"
        assert app.state.sessions.purchase("s1")["asin"] == expected[0]
        for page in (home, results, item, receipt):
            assert "s1" not in page.text
        # a browser that names its session in the header reaches no page by the path form, its own or another's
        path_form = client.get("/s1/search", params={"q": "ski pants"})
        assert path_form.status_code == 404 and "There is no page /s1/search" in path_form.text
        assert links(path_form.text)["Back to Search"] == "/"
        unknown = client.get("/", headers={SESSION_HEADER: "nobody"})
        assert unknown.status_code == 404 and "Unknown session &#39;nobody&#39;" in unknown.text


def test_sessions_named_in_the_header_see_the_same_pages(catalog):
    app = make_app(catalog)
    for session in ("s1", "s2"):
        app.state.sessions.open(session, instruction="i want a lipstick")
    with TestClient(app, base_url="http://webshop.test") as client:
        for path in ("/", "/search?q=lipstick&page=2", "/item/B01TEST003?opt.color=nude", "/item/B01TEST003/reviews",
                     "/item/B0NOTHERE0"):
            first, second = (client.get(path, headers={SESSION_HEADER: s}) for s in ("s1", "s2"))
            assert first.status_code == second.status_code and first.text == second.text, path
        client.post("/buy/B01TEST003", data={"opt.color": "pink"}, headers={SESSION_HEADER: "s2"})
        assert app.state.sessions.purchase("s1") is None and app.state.sessions.purchase("s2")["asin"] == "B01TEST003"


def test_server_serves_over_a_real_socket(catalog):
    server = ShopServer(make_app(catalog)).start()
    try:
        server.app.state.sessions.open("s1", instruction="hello")
        page = httpx.get(f"{server.url}/s1/search", params={"q": "headphones"}, timeout=5)
        assert page.status_code == 200 and 'Studio Headphones with 6.6&#34; Cable' in page.text
        page = httpx.get(f"{server.url}/search", params={"q": "headphones"}, headers={SESSION_HEADER: "s1"}, timeout=5)
        assert page.status_code == 200 and 'Studio Headphones with 6.6&#34; Cable' in page.text
    finally:
        server.stop()
    assert not server.is_running
