"""``agentgym probe``: each probe against a verifier weak in exactly its way (caught on at least 90% of the tasks),
and the same env with an honest verifier (not flagged); the CLI and the pytest check a user calls."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import unicodedata

import pytest
from helpers.gates import env_params

import agentgym
from agentgym.probe import GENERIC, probe_env

COUNTRIES = [("Peru", "Lima"), ("Kenya", "Nairobi"), ("France", "Paris"), ("Japan", "Tokyo"), ("Chile", "Santiago"),
             ("Egypt", "Cairo"), ("Spain", "Madrid"), ("Canada", "Ottawa"), ("Norway", "Oslo"), ("Ghana", "Accra")]
CITIES = [city for _, city in COUNTRIES]
# each question names candidates (the gold among them), as multiple-choice tasks do
TASKS = [{"id": f"q{i}", "answer": city,
          "question": f"Which is the capital of {country}? One of: {', '.join(CITIES[i:] + CITIES[:i])}."}
         for i, (country, city) in enumerate(COUNTRIES)]


def honest(answer, task):
    return (answer or "").strip().lower() == task["answer"].lower()


def lookup(country: str) -> str:
    """Look up facts about a country."""
    return f"{country}: a country"


def leaky_lookup(country: str) -> str:
    """Look up facts about a country."""
    return "The answer is hidden"


def _fold(text: str) -> str:
    """A normalizer that folds too much: compatibility forms, zero-width characters, Cyrillic lookalikes, case."""
    folded = unicodedata.normalize("NFKC", text).replace("\u200b", "")
    return folded.translate({ord("а"): "a", ord("е"): "e", ord("о"): "o", ord("і"): "i", ord("р"): "p",
                             ord("с"): "c", ord("А"): "A", ord("Е"): "E", ord("О"): "O", ord("С"): "C",
                             ord("Н"): "H", ord("К"): "K", ord("М"): "M", ord("Т"): "T", ord("Р"): "P"}).lower()


# probe -> (verifier weak in its way, tools)
WEAK = {
    "empty": (lambda answer, task: not (answer or "").strip() or honest(answer, task), [lookup]),
    "echo-prompt": (lambda answer, task: task["question"][:25] in (answer or "") or honest(answer, task), [lookup]),
    "all-candidates": (lambda answer, task: task["answer"].lower() in (answer or "").lower(), [lookup]),
    "junk-tags": (lambda answer, task: "<answer>" in (answer or "") or honest(answer, task), [lookup]),
    "observations-back": (lambda answer, task: "hidden" in (answer or "") or honest(answer, task), [leaky_lookup]),
    "enormous": (lambda answer, task: min(1.0, len(answer or "") / 5000), [lookup]),
    "lookalikes": (lambda answer, task: _fold(task["answer"]) in _fold(answer or ""), [lookup]),
    "tool-spam": (lambda answer, task: answer is None or honest(answer, task), [lookup]),
    "answer-at-once": (lambda answer, task: bool((answer or "").strip()), [lookup]),
}


def _register(env_id, verifier, tools, **kwargs):
    agentgym.register(env_id, agentgym.ToolEnv, tasks=TASKS, tools=tools, verifier=verifier, **kwargs)
    return env_id


def test_every_generic_probe_has_a_weak_verifier_here():
    assert set(WEAK) == {p.name for p in GENERIC}


@pytest.mark.parametrize("name", sorted(WEAK))
def test_each_probe_catches_a_verifier_weak_in_its_way_and_not_the_honest_one(name):
    verifier, tools = WEAK[name]
    weak = probe_env(_register(f"test-probe/Weak-{name}-v0", verifier, tools), episodes=10, only=[name])
    result = weak.probes[name]
    assert result.exploit_rate >= 0.9, result.as_dict()
    assert name in {p for p, r in weak.probes.items() if r.exploited} and weak.exploit_rate >= 0.9
    assert result.best is not None and result.best["reward"] >= 1.0 and result.best["transcript"]
    fair = probe_env(_register(f"test-probe/Honest-{name}-v0", "qa", tools), episodes=10, only=[name])
    assert fair.probes[name].exploit_rate == 0.0 and fair.exploit_rate == 0.0, fair.probes[name].as_dict()


def test_the_whole_battery_leaves_an_honest_env_at_zero():
    report = probe_env(_register("test-probe/HonestAll-v0", "qa", [lookup]), episodes=10)
    assert report.exploit_rate == 0.0 and set(report.probes) == {p.name for p in GENERIC}
    assert all(r.episodes == 10 and r.verdict.startswith("held") for r in report.probes.values())


# code envs: the answer is a program, the verifier runs it against a test of f(2) == 4
CODE_TASKS = [{"id": f"c{i}", "question": f"Write def f(x): return x * 2 (case {i}).", "answer": "4"}
              for i in range(10)]


def _run(program: str, test: str, tmp) -> subprocess.CompletedProcess:
    (tmp / "prog.py").write_text(program or "")
    return subprocess.run([sys.executable, "-c", f"import prog\n{test}"], cwd=tmp, capture_output=True, text=True,
                          timeout=30)


def _code_verifiers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("code")

    def ran(answer):
        return _run(answer, "assert prog.f(2) == 4, 'wrong'", tmp)

    return {
        "always-equal": lambda answer, task: ran(answer).returncode == 0,
        "exit-zero": lambda answer, task: _run(answer, "raise SystemExit(0 if prog.f(2) == 4 else 1)", tmp
                                               ).returncode == 0 and "exit" in (answer or ""),
        "hard-exit": lambda answer, task: ran(answer).returncode == 0 and "os._exit" in (answer or ""),
        "printed-passes": lambda answer, task: "PASSED" in ran(answer).stdout,
        "outcome-files": lambda answer, task: ran(answer) is not None and (tmp / "report.json").exists()
                                              and json.loads((tmp / "report.json").read_text()).get("passed"),
        "swallowed-errors": lambda answer, task: "Error" not in ran(answer).stderr,
    }


@pytest.fixture(scope="module")
def code_verifiers(tmp_path_factory):
    return _code_verifiers(tmp_path_factory)


def _honest_code(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("honest-code")

    def verify(answer, task):
        # the test runs in its own process and says PASS with a nonce only after its assertion held
        done = _run(answer, "import sys\nok = prog.f(2) == 4 and type(prog.f(2)) is int\n"
                            "sys.stdout.write('nonce-7f3a PASS' if ok else 'FAIL')", tmp)
        return done.stdout.endswith("nonce-7f3a PASS")

    return verify


@pytest.mark.parametrize("name", ["always-equal", "exit-zero", "hard-exit", "printed-passes", "outcome-files",
                                  "swallowed-errors"])
def test_each_code_probe_catches_a_runner_weak_in_its_way(name, code_verifiers, tmp_path_factory):
    env_id = f"test-probe/WeakCode-{name}-v0"
    agentgym.register(env_id, agentgym.ToolEnv, tasks=CODE_TASKS, verifier=code_verifiers[name])
    result = probe_env(env_id, episodes=10, only=[name], family="code").probes[name]
    assert result.exploit_rate >= 0.9, result.as_dict()
    honest_id = f"test-probe/HonestCode-{name}-v0"
    agentgym.register(honest_id, agentgym.ToolEnv, tasks=CODE_TASKS, verifier=_honest_code(tmp_path_factory))
    assert probe_env(honest_id, episodes=10, only=[name], family="code").probes[name].exploit_rate == 0.0


USERS_ENV = textwrap.dedent('''
    import agentgym

    TASKS = [{"question": f"Which is the capital of {c}? One of: Lima, Nairobi, Paris, Tokyo.", "answer": a}
             for c, a in [("Peru", "Lima"), ("Kenya", "Nairobi"), ("France", "Paris"), ("Japan", "Tokyo")] * 3]
    agentgym.register("byo/Contains-v0", agentgym.ToolEnv, tasks=TASKS,
                      verifier=lambda answer, task: task["answer"] in (answer or ""))
    agentgym.register("byo/ByLength-v0", agentgym.ToolEnv, tasks=TASKS,
                      verifier=lambda answer, task: min(1.0, len(answer or "") / 400))
    agentgym.register("byo/Fair-v0", agentgym.ToolEnv, tasks=TASKS, verifier="qa")

    def spam(view):
        """Answers the word 'spam'."""
        return view.answer("spam")
''')


def test_the_cli_flags_a_users_single_file_envs_and_names_the_probe(tmp_path):
    path = tmp_path / "users_env.py"
    path.write_text(USERS_ENV)

    def probe(env_id, *extra):
        out = tmp_path / f"{env_id.split('/')[1]}.json"
        done = subprocess.run([sys.executable, "-m", "agentgym.cli", "probe", env_id, "--import", str(path),
                               "--episodes", "12", "--json", str(out), *extra], capture_output=True, text=True,
                              timeout=300)
        return done, json.loads(out.read_text())

    done, contains = probe("byo/Contains-v0")
    assert done.returncode == 1 and "all-candidates" in done.stdout and "EXPLOITS" in done.stdout, done.stderr
    assert contains["exploit_rate"] >= 0.9 and contains["probes"]["all-candidates"]["exploit_rate"] >= 0.9
    assert contains["battery_version"] and contains["probes"]["all-candidates"]["best_episode"]["transcript"]
    done, by_length = probe("byo/ByLength-v0")
    assert done.returncode == 1 and by_length["probes"]["enormous"]["exploit_rate"] >= 0.9
    done, fair = probe("byo/Fair-v0", "--probe", f"{path}:spam")
    assert done.returncode == 0 and fair["exploit_rate"] == 0.0, done.stdout + done.stderr
    assert fair["probes"]["spam"]["episodes"] == 12  # the user's own probe ran beside the battery
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "probe", "byo/Fair-v0", "--import", str(path),
                           "--probe", f"{path}:nothing"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no function 'nothing'" in done.stderr


def test_the_pytest_check_fails_with_the_probes_transcript_and_passes_an_honest_env():
    from agentgym.testing import check_not_exploitable

    weak_id = _register("test-probe/CheckWeak-v0", WEAK["all-candidates"][0], [lookup])
    with pytest.raises(AssertionError) as failed:
        check_not_exploitable(weak_id, episodes=5)
    message = str(failed.value)
    assert "all-candidates" in message and "[assistant]" in message and "exploit rate" in message
    report = check_not_exploitable(_register("test-probe/CheckFair-v0", "qa", [lookup]), episodes=5)
    assert report.exploit_rate == 0.0


BUNDLED = {"agentgym/SearchQA-v0": 5, "agentgym/MathTool-v0": 5, "agentgym/PyCode-v0": 5, "agentgym/WebShop-v0": 5,
           "agentgym/ALFWorld-v0": 5, "agentgym/SWEBench-v0": 3, "agentgym/WebShopBrowser-v0": 2}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", env_params(BUNDLED))
def test_no_probe_exploits_a_bundled_env(env_id):
    """The battery on each bundled env's first tasks (docs/probe.md has the run over 20): 0, and every probe that
    applies played every task."""
    report = probe_env(env_id, episodes=BUNDLED[env_id])
    assert report.exploit_rate == 0.0, {n: r.verdict for n, r in report.probes.items() if r.exploited}
    played = [r for r in report.probes.values() if not r.skipped]
    assert played and all(r.episodes == BUNDLED[env_id] for r in played)


BOUGHT: dict[str, bool] = {}  # the shop's order book (plain functions: gym.make copies bound methods' objects)


def search(query: str) -> str:
    """Search the shop."""
    return "[button] Plain Mug [button] Blue Kettle"


def click(button: str) -> str:
    """Click a button on the page."""
    if button == "Buy Now":
        BOUGHT["order"] = True
        return "Thank you for your order."
    return f"{button}: $9.99 [button] Buy Now"


def test_the_shop_probe_catches_a_verifier_that_pays_any_purchase():
    """A shop whose verifier pays any purchase (WebShop's once paid a goal with no name 0.5 for any): buy-first
    buys the first thing it finds; the verifier that pays only the goal (never sold here) is not flagged."""
    tasks = [{"id": f"s{i}", "question": f"Buy a red teapot with a lid, item {i}.", "answer": "Red Teapot"}
             for i in range(10)]

    def any_purchase(answer, task):
        return BOUGHT.pop("order", False)

    def only_the_goal(answer, task):
        BOUGHT.pop("order", None)
        return False

    for verifier, expected in ((any_purchase, 1.0), (only_the_goal, 0.0)):
        env_id = f"test-probe/Shop-{verifier.__name__}-v0"
        agentgym.register(env_id, agentgym.ToolEnv, tasks=tasks, tools=[search, click], verifier=verifier,
                          max_turns=5)
        result = probe_env(env_id, episodes=10, only=["buy-first"], family="shop").probes["buy-first"]
        assert result.exploit_rate == expected, result.as_dict()
