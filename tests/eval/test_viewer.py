"""The trajectory viewer page (eval results and the trainer's samples.jsonl) and the leaderboard's local server."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request

import pytest
from helpers.gates import requires_browser, requires_smollm2
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError, DataError
from agentgym.eval.viewer import board_server, build_viewer, episode_view, read_episodes

EVIL = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
SEARCH, MATH = "agentgym/SearchQA-v0", "agentgym/MathTool-v0"


def result(env_id, i, *, correct, observation="Doc 1: Lima is the capital of Peru.", error=None):
    """An eval results line as ``EpisodeResult.as_dict`` writes it (the fields the viewer reads)."""
    return {"env_id": env_id, "task_id": f"t{i}", "split": "test", "seed": i, "policy": "smollm2",
            "model": "SmolLM2", "reward": float(correct), "correct": correct, "turns": 2, "tool_calls": 1,
            "error": error, "verification": {} if error else {"correct": correct, "gold": ["Lima"], "pred": "Lima"},
            "transcript": [{"role": "user", "content": f"Question {i}: capital of Peru?"},
                           {"role": "assistant", "content": "<search>capital of Peru</search>"},
                           {"role": "tool", "content": observation},
                           {"role": "assistant", "content": "<answer>Lima</answer>"}]}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def results_files(tmp_path):
    evals = write_jsonl(tmp_path / "results.jsonl", [
        result(SEARCH, 0, correct=True), result(SEARCH, 1, correct=False, observation=EVIL),
        result(MATH, 2, correct=False, error="PolicyError: timeout"), result(MATH, 3, correct=True)])
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "samples.jsonl", [
        {"step": 1, "task": "t9", "reward": 0.0, "success": False, "turns": ["<code>print(1)</code>", "I give up"]},
        {"step": 1, "task": "t8", "reward": 1.0, "success": True, "turns": ["<answer>\\boxed{4}</answer>"],
         "tokens": ["<answer>", "4", "</answer>", "<obs>", "ok"], "mask": [1, 1, 1, 0, 0]}])
    return evals, run


def test_episode_view_of_a_result_and_a_sample(results_files):
    evals, run = results_files
    first = read_episodes([evals])[0]
    assert (first["env"], first["task"], first["correct"], first["reward"]) == (SEARCH, "t0", True, 1.0)
    assert [t["role"] for t in first["turns"]] == ["prompt", "model", "observation", "model"]
    assert first["turns"][1]["calls"] == ["search: capital of Peru"] and first["turns"][3]["calls"] == ["answer: Lima"]
    assert json.loads(first["verification"])["gold"] == ["Lima"] and first["source"] == "results.jsonl:1"
    assert first["meta"] == "policy smollm2 · model SmolLM2 · split test · seed 0"
    assert episode_view({**result(SEARCH, 0, correct=True), "sample": 2}, source="s")["meta"].endswith("sample 2")
    samples = read_episodes([run])  # a training run's directory: its samples.jsonl
    assert [s["meta"] for s in samples] == ["step 1", "step 1"] and samples[0]["tokens"] is None
    assert [t["role"] for t in samples[0]["turns"]] == ["model", "model"]
    assert samples[1]["tokens"] == [["<answer>4</answer>", True], ["<obs>ok", False]]


def test_token_ids_without_text_and_mismatched_masks():
    base = {"step": 0, "turns": ["x"]}
    assert episode_view({**base, "completion_ids": [5, 6, 7], "mask": [1, 0, 0]}, source="s")["tokens"] == [
        ["5 ", True], ["6 7 ", False]]
    assert episode_view({**base, "completion_ids": [5, 6], "mask": [1]}, source="s")["tokens"] is None


def test_bad_input_says_what_to_pass(tmp_path):
    with pytest.raises(DataError, match="neither 'transcript'"):
        read_episodes([write_jsonl(tmp_path / "x.jsonl", [{"step": 1, "loss": 0.1}])])
    with pytest.raises(ConfigError, match="No results file"):
        read_episodes([tmp_path / "missing.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no samples.jsonl"):
        read_episodes([tmp_path / "empty"])


def test_page_is_self_contained_and_escaped(results_files, tmp_path):
    evals, run = results_files
    path, count = build_viewer([evals, run], tmp_path / "out" / "page.html")
    page = path.read_text()
    assert count == 6
    assert "window.pwned" in page and "<script>window.pwned" not in page and "<img" not in page
    assert page.count("<script") == 2 and "</script><img" not in page  # the data block and the one script
    assert "http://" not in page and "https://" not in page and "Content-Security-Policy" in page


def test_cli_view_and_leaderboard_serve(results_files, tmp_path, monkeypatch):
    evals, _ = results_files
    out = tmp_path / "v.html"
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    done = CliRunner().invoke(app, ["view", str(evals), "--out", str(out), "--open"])
    assert done.exit_code == 0, done.output
    assert "(4 episodes)" in done.output and out.is_file() and opened == [out.resolve().as_uri()]

    board = tmp_path / "board"
    with pytest.raises(ConfigError, match="agentgym leaderboard build"):
        board_server(board)
    board.mkdir()
    (board / "index.html").write_text("<p>the board</p>")
    server = board_server(board, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/", timeout=10) as response:
            assert response.read() == b"<p>the board</p>"
        with pytest.raises(ConfigError, match="Pass another --port"):
            board_server(board, host=host, port=port)  # taken
    finally:
        server.shutdown()
        server.server_close()
    missing = CliRunner().invoke(app, ["leaderboard", "serve", "--dir", str(tmp_path / "nothing")])
    assert isinstance(missing.exception, ConfigError)


@pytest.mark.browser
@requires_browser
def test_page_in_chromium(results_files, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    evals, run = results_files
    path, _ = build_viewer([evals, run], tmp_path / "page.html")
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
            page.goto(path.as_uri())
            episodes = page.locator("details.episode")
            assert episodes.count() == 6 and page.locator("#count").inner_text() == "6 of 6 episodes"

            def visible():
                return [episodes.nth(i).get_attribute("data-env") for i in range(episodes.count())
                        if episodes.nth(i).is_visible()]

            page.select_option("#f-env", MATH)
            assert visible() == [MATH, MATH] and page.locator("#count").inner_text() == "2 of 6 episodes"
            page.select_option("#f-error", "yes")
            assert visible() == [MATH]
            page.select_option("#f-env", "")
            page.select_option("#f-error", "no")
            page.select_option("#f-outcome", "correct")
            assert visible() == [SEARCH, MATH, "training samples"]
            page.select_option("#f-outcome", "")
            page.fill("#f-reward", "0.5")
            assert len(visible()) == 3
            page.fill("#f-reward", "")
            page.select_option("#f-error", "")
            assert len(visible()) == 6

            evil = episodes.nth(1)
            assert evil.locator(".turn").count() == 0  # turns are built when the episode opens
            evil.locator("summary").click()
            turns = evil.locator(".turn")
            # the page builds the turns in the toggle event, after the click returns: wait for them
            expect(turns).to_have_count(5, timeout=30_000)  # 4 turns + the verifier
            assert turns.first.is_visible()
            assert EVIL in turns.nth(2).inner_text()  # the observation's markup shown as text, never run
            assert page.evaluate("window.pwned") is None and evil.locator("img").count() == 0
            assert "masked" in (turns.nth(2).get_attribute("class") or "")
            assert turns.nth(1).locator("li.call").inner_text() == "search: capital of Peru"
            assert '"gold"' in evil.locator(".turn.verifier").inner_text()

            sample = episodes.nth(5)
            sample.locator("summary").click()
            expect(sample.locator(".tokens span.masked")).to_have_count(1, timeout=30_000)
            assert sample.locator(".tokens span.masked").inner_text() == "<obs>ok"
            assert sample.locator(".tokens span.trained").inner_text() == "<answer>4</answer>"
            errored = episodes.nth(2)
            errored.locator("summary").click()
            expect(errored.locator(".error-line")).to_have_count(1, timeout=30_000)
            assert "PolicyError: timeout" in errored.locator(".error-line").inner_text()
        finally:
            browser.close()
    assert errors == []
    assert requests and all(url.startswith("file://") for url in requests)


def test_viewer_doctests():
    import doctest

    import agentgym.eval.viewer

    outcome = doctest.testmod(agentgym.eval.viewer)
    assert outcome.attempted >= 2 and outcome.failed == 0


@requires_smollm2
def test_an_agents_recorded_ids_show_as_the_text_the_model_read_and_wrote(tmp_path, smollm2_tokenizer):
    """An eval --agent record's sample: its ids decoded with the record's model (the conversation as the agent sent
    it, and what the model sampled, told apart by the loss mask); --tokenizer none keeps the numbers."""
    sent = smollm2_tokenizer("<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n",
                             add_special_tokens=False)["input_ids"]
    sampled = smollm2_tokenizer("It is 42.", add_special_tokens=False)["input_ids"]
    record = {**result(SEARCH, 0, correct=True), "model": "smollm2",
              "samples": [{"token_ids": [*sent, *sampled], "loss_mask": [0] * len(sent) + [1] * len(sampled)}]}
    path = tmp_path / "agent.jsonl"
    path.write_text(json.dumps(record) + "\n")
    [shown] = read_episodes([path])
    assert shown["tokens"] == [["<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n", False],
                               ["It is 42.", True]]
    [numbers] = read_episodes([path], tokenizer="none")
    assert numbers["tokens"][1] == [" ".join(map(str, sampled)) + " ", True]
    with pytest.raises(ConfigError, match="--tokenizer hf:/no/such/model"):
        read_episodes([path], tokenizer="hf:/no/such/model")
