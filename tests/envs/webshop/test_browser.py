"""agentgym/WebShopBrowser-v0: the action format, and the env in real Chromium (one shared env per module)."""

from __future__ import annotations

import asyncio
import base64
import doctest
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from helpers.gates import requires_browser
from test_webapp import write_shop_data

import agentgym
import agentgym.envs.webshop.aria
import agentgym.envs.webshop.browser_actions
from agentgym.core.tools import Tool, ToolCall
from agentgym.envs.webshop.browser import SHOP_ORIGIN, BrowserGymFormat, WebShopBrowserEnv, parse_tree
from agentgym.envs.webshop.webapp import shared_server


def _tool(name: str, *params: str) -> Tool:
    return Tool(name, name, {"type": "object", "properties": {p: {"type": "string"} for p in params},
                             "required": list(params)}, lambda **_: "")


TOOLS = {t.name: t for t in (_tool("click", "element"), _tool("fill", "element", "value"), _tool("go_back"))}


# ---- the format, no browser ----------------------------------------------------------------------
@pytest.mark.parametrize("text, name, arguments", [
    ('click("e12")', "click", {"element": "e12"}),
    ("click('e12')", "click", {"element": "e12"}),
    ("  click ( 'e12' )  ", "click", {"element": "e12"}),
    ("click(e12)", "click", {"element": "e12"}),
    ('click(bid="f2e7")', "click", {"element": "f2e7"}),
    ('fill("e5", "a (small) \\"red\\" hat")', "fill", {"element": "e5", "value": 'a (small) "red" hat'}),
    ("I'll search.\n```python\nfill('e5', 'ski pants')\n```", "fill", {"element": "e5", "value": "ski pants"}),
    ('I could click("e1") but better:\n```\ngo_back()\n```', "go_back", {}),
    ('<think>maybe click("e1")</think>fill("e2", "x")\nclick("e3")', "fill", {"element": "e2", "value": "x"}),
    ('print("hi") then click("e4")', "click", {"element": "e4"}),
])
def test_browsergym_actions_parse(text, name, arguments):
    parsed = BrowserGymFormat().parse(text, TOOLS)
    assert parsed.error is None and parsed.tool_calls == (ToolCall(name, arguments),)


@pytest.mark.parametrize("text, message", [
    ("I am not sure what to do", "No action found"),
    ('hover("e1")', "No action found"),
    ('click("e1"', "Cannot read the call of click"),
    ("click(__import__('os').system('true'))", "must be literals"),
    ('click("e1", "e2")', "click takes 1 argument"),
    ("click(**{'element': 'e1'})", "not **kwargs"),
    (None, "Expected the action as text"),
])
def test_browsergym_mistakes_are_messages(text, message):
    parsed = BrowserGymFormat().parse(text, TOOLS)
    assert not parsed.tool_calls and message in parsed.error


def test_browsergym_calls_render_and_parse_back():
    fmt = BrowserGymFormat()
    call = ToolCall("fill", {"element": "e5", "value": 'say "hi", \\ (now)'})
    text = fmt.render_call(call, TOOLS)
    assert text == 'fill("e5", "say \\"hi\\", \\\\ (now)")'
    assert fmt.parse(text, TOOLS).tool_calls == (call,)
    assert fmt.has_answer is False and fmt.render_answer("x") == "noop()"  # only buying ends an episode


@pytest.mark.parametrize("module", [agentgym.envs.webshop.aria, agentgym.envs.webshop.browser_actions])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted >= 1 and result.failed == 0


def test_tree_parsing_reads_quoted_lines():
    lines = [
        "- main [ref=e1]:",
        "  - 'heading \"Page 1 (Total results: 36)\" [level=1] [ref=e2]'",
        "  - 'group \"size: it''s\" [ref=e3]':",
        '    - button "15.6\\" cable" [pressed] [ref=e4]',
        '  - searchbox "Search query" [active] [ref=e5]: "Foo: bar"',
        "  - link \"B01\" [ref=e6] [cursor=pointer]:",
        "    - /url: /item/B01",
        "  - text: plain",
    ]
    nodes = {n.ref: n for n in parse_tree("\n".join(lines))}
    assert nodes["e2"].name == "Page 1 (Total results: 36)"
    assert nodes["e4"].name == '15.6" cable' and nodes["e4"].is_pressed
    assert nodes["e4"].ancestors == (("main", ""), ("group", "size: it's"))
    assert nodes["e5"].value == "Foo: bar" and "active" in nodes["e5"].flags
    assert sorted(nodes) == ["e1", "e2", "e3", "e4", "e5", "e6"]


# ---- the env in Chromium ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_shop_data(tmp_path_factory.mktemp("shop"))


@pytest.fixture(scope="module")
def env(data_dir):
    # a browser timeout of 15 s: a mistake that waited one out shows, with room for a machine 5x slower (12.5 s)
    env = WebShopBrowserEnv(data_dir=data_dir, timeout_s=15.0)
    yield env
    env.close()


def refs(env, role, name=None):
    """The ids of the current page's elements of ``role`` (and ``name``)."""
    return [n.ref for n in parse_tree(env.page.view.tree) if n.role == role and n.ref and (name is None or n.name == name)]


def play_oracle(env, **reset_options):
    obs, info = env.reset(options=reset_options)
    for _ in range(env.max_turns):
        obs, reward, terminated, truncated, info = env.step(env.oracle_action())
        assert info["action_error"] is None, info["action_error"]
        if terminated or truncated:
            return obs, reward, terminated, info
    raise AssertionError("the oracle did not finish")


@pytest.mark.parametrize("index", range(8))
@pytest.mark.browser
@requires_browser
def test_oracle_buys_the_goal_through_the_page(env, index):
    obs, reward, terminated, info = play_oracle(env, index=index)
    task = env.task
    assert reward == 1.0 and terminated and info["verification"]["correct"]
    purchase = json.loads(info["answer"])
    assert purchase["asin"] == task.gold["asin"]
    assert sorted(purchase["options"].values()) == sorted(task.gold["goal_options"])
    assert info["url"] == f"{SHOP_ORIGIN}/receipt"
    assert "Thank you for shopping with us!" in obs


@pytest.mark.browser
@requires_browser
def test_first_observation_is_the_search_page(env):
    obs, info = env.reset(options={"index": 0})
    assert f"URL: {SHOP_ORIGIN}/\nTitle: WebShop\n" in obs
    assert f"Instruction: {env.task.prompt}" in obs
    assert 'searchbox "Search query"' in obs and 'button "Search"' in obs
    assert 'click("e12")' in obs  # the action syntax
    assert info["url"] == f"{SHOP_ORIGIN}/" and "screenshot" not in info
    assert {t["function"]["name"] for t in info["tools"]} == {"click", "fill", "press", "scroll", "go_back",
                                                               "goto", "noop"}


@pytest.mark.browser
@requires_browser
def test_a_wrong_purchase_scores_less(env):
    env.reset(options={"index": 0})  # goal: B00TEST000 in black and medium, under $40
    gold = env.task.gold
    env.step('goto("/item/B00TEST001")')  # the same kind of product, another model
    _, reward, terminated, _, info = env.step(f'click("{refs(env, "button", "Buy Now")[0]}")')
    assert terminated and 0.0 < reward < 1.0
    assert info["verification"]["details"]["options_matched"] == []
    env.reset(options={"index": 0})
    env.step('goto("/item/B02TEST005")')  # headphones: not the goal's type at all
    _, reward, terminated, _, info = env.step(f'click("{refs(env, "button", "Buy Now")[0]}")')
    assert terminated and reward < 0.5 and json.loads(info["answer"])["asin"] == "B02TEST005" != gold["asin"]


@pytest.mark.browser
@requires_browser
def test_mistakes_are_observations_with_the_page(env):
    env.reset(options={"index": 0})
    link_free_page = env.page.view.url
    cases = [
        ("just some words", "No action found"),
        ('click("e999")', "There is no element 'e999' on this page"),
        ('click("#submit")', "is not an element id"),
        (f'fill("{refs(env, "button", "Search")[0]}", "x")', "fill failed"),
        (f'press("{refs(env, "searchbox")[0]}", "NotAKey")', "press failed"),
        ('goto("https://example.com/")', "goto opens pages of this shop only"),
        ("go_back()", "There is no previous page"),
        ('click("e1"', "Cannot read the call of click"),
    ]
    for action, message in cases:
        start = time.perf_counter()
        obs, reward, terminated, _, info = env.step(action)
        assert message in info["action_error"], (action, info["action_error"])
        assert message in obs and f"URL: {link_free_page}" in obs and "searchbox" in obs
        assert reward == 0.0 and not terminated
        assert time.perf_counter() - start < 12.5, action  # a mistake never waits out the browser timeout (15 s)
    env.step('goto("/search?q=ski+pants")')
    obs, *_, info = env.step(f'fill("{refs(env, "link", "Next >")[0]}", "x")')  # a link is no text box
    assert "fill failed" in info["action_error"] and "Element is not an <input>" in info["action_error"]


@pytest.mark.browser
@requires_browser
def test_navigation_goto_go_back_and_pages(env):
    env.reset(options={"index": 0})
    box = refs(env, "searchbox")[0]
    env.step(f'fill("{box}", "ski pants")')
    obs, *_, info = env.step(f'press("{box}", "Enter")')
    results_url = info["url"]
    assert results_url == f"{SHOP_ORIGIN}/search?q=ski+pants" and "Page 1 (Total results:" in obs
    obs, *_, info = env.step(f'click("{refs(env, "link", "Next >")[0]}")')
    assert info["url"].endswith("page=2") and "Page 2 (Total results:" in obs and refs(env, "link", "< Prev")
    obs, *_, info = env.step(f'goto("{SHOP_ORIGIN}/item/B00TEST002/features")')
    assert info["action_error"] is None and "Waterproof design" in obs
    obs, *_, info = env.step("go_back()")
    assert info["action_error"] is None and info["url"].endswith("page=2")
    obs, *_, info = env.step("scroll(0, 300)")
    assert info["action_error"] is None and info["url"].endswith("page=2")
    obs, *_, info = env.step('goto("/item/B0NOTHERE")')
    assert "404 Not Found" in obs and "No product with asin" in obs
    obs, *_, info = env.step(f'goto("/{env.session_id}/search?q=ski+pants")')  # the path form: not for the browser
    assert "404 Not Found" in obs and "There is no page" in obs and 'link "Back to Search"' in obs


@pytest.mark.browser
@requires_browser
def test_an_action_that_opens_a_page_is_read_on_that_page_however_slow(env, monkeypatch):
    """Pages that take a second to answer (a loaded machine): the observation after a click, an Enter or a submit
    is the page it opened, never the page it left; a click that opens nothing is read at once."""
    from agentgym.envs.webshop.webapp import _Shop

    render = _Shop._render

    def slow(self, request, template, context, status_code=200):
        if template in ("results.html", "item.html"):
            time.sleep(1.0)
        return render(self, request, template, context, status_code)

    monkeypatch.setattr(_Shop, "_render", slow)
    env.reset(options={"index": 0})
    box = refs(env, "searchbox")[0]
    obs, *_, info = env.step(f'press("{box}", "Enter")')  # an empty required box: the form does not submit
    assert info["url"] == f"{SHOP_ORIGIN}/" and 'searchbox "Search query"' in obs
    env.step(f'fill("{box}", "ski pants")')
    obs, *_, info = env.step(f'press("{box}", "Enter")')
    assert info["url"] == f"{SHOP_ORIGIN}/search?q=ski+pants" and "Page 1 (Total results:" in obs
    product = next(n.ref for n in parse_tree(env.page.view.tree) if n.role == "link" and n.ref
                   and not any(word in n.name for word in ("Back", "Next", "Prev")))
    obs, *_, info = env.step(f'click("{product}")')
    assert "/item/" in info["url"] and "Buy Now" in obs


@pytest.mark.browser
@requires_browser
def test_observations_do_not_depend_on_the_envs_made_before(env, data_dir):
    env.reset(seed=5)  # the module's env has made pages of its own session
    later = WebShopBrowserEnv(data_dir=data_dir)
    try:
        assert later.session_id != env.session_id
        first, second = env.reset(seed=5)[0], later.reset(seed=5)[0]
        assert first == second and env.task.id == later.task.id
        assert f"URL: {SHOP_ORIGIN}/\n" in first
        box = refs(env, "searchbox")[0]
        assert refs(later, "searchbox") == [box]
        for action in (f'fill("{box}", "ski pants")', f'press("{box}", "Enter")'):
            first, second = env.step(action)[0], later.step(action)[0]
            assert first == second
        assert "/url: /item/" in first and f"URL: {SHOP_ORIGIN}/search?q=ski+pants" in first
        assert f"/{env.session_id}" not in first and f"/{later.session_id}" not in second
    finally:
        later.close()


@pytest.mark.browser
@requires_browser
def test_answers_cannot_claim_a_purchase(data_dir):
    env = WebShopBrowserEnv(data_dir=data_dir, action_format="hermes")
    try:
        env.reset(options={"index": 0})
        gold = env.task.gold
        fake = {"asin": gold["asin"], "price": 1.0, "options": dict.fromkeys(gold["goal_options"], "x"),
                "product": {"name": gold["name"], "query": gold["query"], "attributes": gold["attributes"]}}
        _, reward, terminated, _, info = env.step(f"<answer>{json.dumps(fake)}</answer>")
        assert terminated and reward == 0.0 and info["verification"]["details"]["reason"] == "nothing was bought"
        env.reset(options={"index": 0})
        _, reward, terminated, _, _ = env.step({"answer": json.dumps(fake)})
        assert terminated and reward == 0.0
    finally:
        env.close()


@pytest.mark.parametrize("action_format", ["hermes", "tags", "dict"])
@pytest.mark.browser
@requires_browser
def test_oracle_in_the_standard_formats(data_dir, action_format):
    env = WebShopBrowserEnv(data_dir=data_dir, action_format=action_format)
    try:
        _, reward, terminated, _ = play_oracle(env, index=1)
        assert reward == 1.0 and terminated
        if action_format == "tags":
            env.reset(options={"index": 1})
            obs, *_, info = env.step(f"<fill>{refs(env, 'searchbox')[0]}, ski pants, black</fill>")
            assert info["action_error"] is None and "ski pants, black" in obs
    finally:
        env.close()


@pytest.mark.browser
@requires_browser
def test_works_inside_a_running_event_loop(env):
    async def episode():
        await asyncio.sleep(0)
        env.reset(options={"index": 2})
        for _ in range(env.max_turns):
            _, reward, terminated, truncated, _ = env.step(env.oracle_action())
            if terminated or truncated:
                return reward
        return None

    assert asyncio.run(episode()) == 1.0


@pytest.mark.browser
@requires_browser
def test_envs_in_threads_share_the_browser_and_not_their_sessions(env, data_dir):
    other = WebShopBrowserEnv(data_dir=data_dir)
    rewards = {}

    def run(name, e, index):
        rewards[name] = play_oracle(e, index=index)[1]

    try:
        threads = [threading.Thread(target=run, args=("a", env, 3)), threading.Thread(target=run, args=("b", other, 4))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert rewards == {"a": 1.0, "b": 1.0}
        assert env.page.chromium is other.page.chromium and env.session_id != other.session_id
    finally:
        other.close()
    assert shared_server().app.state.sessions.get(other.session_id) is None


@pytest.mark.browser
@requires_browser
def test_screenshot_when_asked(data_dir):
    env = WebShopBrowserEnv(data_dir=data_dir, screenshot=True, viewport=(800, 600))
    try:
        _, info = env.reset(options={"index": 0})
        png = base64.b64decode(info["screenshot"])
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert int.from_bytes(png[16:20], "big") == 800 and int.from_bytes(png[20:24], "big") == 600
        *_, info = env.step("noop()")
        assert base64.b64decode(info["screenshot"]).startswith(b"\x89PNG")
    finally:
        env.close()


@pytest.mark.browser
@requires_browser
def test_env_checker_and_registry(data_dir):
    env = agentgym.make("agentgym/WebShopBrowser-v0", data_dir=str(data_dir), max_turns=8)
    try:
        report = agentgym.check_env(env, n_tasks=1)
        assert len(report["oracle_solved"]) == 1
    finally:
        env.close()


@pytest.mark.browser
@requires_browser
def test_a_browser_that_died_is_relaunched(data_dir, tmp_path):
    own = tmp_path / "chromium"  # another executable path: a browser of its own, not the shared one
    own.symlink_to(shutil.which("chromium"))
    env = WebShopBrowserEnv(data_dir=data_dir, chromium_path=own)
    try:
        env.reset(options={"index": 0})
        first = env.page.chromium
        first.run(first.browser.close(), timeout_s=10)
        obs, *_, info = env.step("noop()")  # the page is gone: an error of the env, not the agent's
        assert "Tool 'noop' failed: The browser failed" in obs and info["action_error"] is None
        obs, _ = env.reset(options={"index": 0})
        assert env.page.chromium is not first and env.page.chromium.is_alive and 'searchbox "Search query"' in obs
    finally:
        env.close()


@pytest.mark.browser
@requires_browser
def test_ctrl_c_in_the_terminal_reaches_neither_the_driver_nor_the_browser(env):
    """A terminal's Ctrl-C signals the foreground process group: Playwright's driver and Chromium are not in it."""
    env.reset(options={"index": 0})
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue

    def descends(pid: int, ancestor: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == ancestor:
                return True
        return False

    def cmdline(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            return ""

    drivers = [pid for pid in parents if descends(pid, os.getpid()) and "run-driver" in cmdline(pid)]
    browsers = [pid for pid in parents if any(descends(pid, d) for d in drivers)]
    ours = os.getpgid(0)
    assert drivers and browsers
    assert all(os.getpgid(pid) != ours for pid in drivers)
    assert all(os.getpgid(pid) != ours for pid in browsers)
