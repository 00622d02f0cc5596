"""``agentgym probe``: each probe against a verifier weak in exactly its way (caught on at least 90% of the tasks),
and the same env with an honest verifier (not flagged); the CLI and the pytest check a user calls."""

from __future__ import annotations

import json
import os
import secrets
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
    board = tmp_path / "board"
    done, by_length = probe("byo/ByLength-v0", "--submit", "--leaderboard-dir", str(board))
    assert done.returncode == 1 and by_length["probes"]["enormous"]["exploit_rate"] >= 0.9
    submitted = json.loads((board / "probes" / "byo-bylength-v0.json").read_text())
    assert submitted["exploit_rate"] == by_length["exploit_rate"] and submitted["env_digest"]
    done, fair = probe("byo/Fair-v0", "--probe", f"{path}:spam")
    assert done.returncode == 0 and fair["exploit_rate"] == 0.0, done.stdout + done.stderr
    assert fair["probes"]["spam"]["episodes"] == 12  # the user's own probe ran beside the battery
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "probe", "byo/Fair-v0", "--import", str(path),
                           "--probe", f"{path}:nothing"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no function 'nothing'" in done.stderr


def test_a_package_adds_a_probe_through_the_entry_point_group(tmp_path):
    """An installed package that declares ``[agentgym.probes] quote-gold = ...`` (found by importlib.metadata, as
    pip installs it): `agentgym probe` plays it beside the battery and it counts in the overall rate."""
    site = tmp_path / "site"
    (site / "houseprobes-0.1.dist-info").mkdir(parents=True)
    (site / "houseprobes-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: houseprobes\n"
                                                                 "Version: 0.1\n")
    (site / "houseprobes-0.1.dist-info" / "entry_points.txt").write_text(
        "[agentgym.probes]\nsays-lima = houseprobes:says_lima\n")
    (site / "houseprobes.py").write_text('def says_lima(view):\n    """Always answers Lima."""\n'
                                         '    return view.answer("Lima")\n')
    path = tmp_path / "users_env.py"
    path.write_text(USERS_ENV + '\nagentgym.register("byo/LimaOnly-v0", agentgym.ToolEnv, tasks=TASKS,\n'
                                '                  verifier=lambda answer, task: answer == "Lima")\n')
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "probe", "byo/LimaOnly-v0", "--import", str(path),
                           "--episodes", "4", "--json", str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(site)})
    report = json.loads(out.read_text())
    assert done.returncode == 1 and "says-lima" in done.stdout, done.stdout + done.stderr
    assert report["probes"]["says-lima"]["family"] == "user" and report["probes"]["says-lima"]["exploit_rate"] == 1.0
    assert report["exploit_rate"] == 1.0


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
    """A shop whose verifier pays any purchase (WebShop's once paid a goal with no name 0.5 for any): buy-anything
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
        result = probe_env(env_id, episodes=10, only=["buy-anything"], family="shop").probes["buy-anything"]
        assert result.exploit_rate == expected, result.as_dict()


def test_buy_cheapest_catches_a_verifier_that_pays_any_purchase_under_the_budget():
    """A shop whose verifier checks only the budget (any purchase under it pays): buy-cheapest finds it, and the
    verifier that pays only the goal is not flagged."""
    tasks = [{"id": f"c{i}", "question": f"Buy a red teapot with a lid under $5, item {i}.", "answer": "Red Teapot"}
             for i in range(10)]
    prices = {"B0AAAAAAA1": 19.0, "B0AAAAAAA2": 3.5, "B0AAAAAAA3": 12.0}

    def search(query: str) -> str:
        """Search the shop."""
        return "Results [SEP] " + " [SEP] ".join(f"{asin} [SEP] Teapot {asin[-1]} [SEP] ${price:.2f}"
                                                 for asin, price in prices.items())

    def click(element: str) -> str:
        """Click a product, an option or Buy Now."""
        if element == "Buy Now":
            BOUGHT["order"] = BOUGHT.pop("open", None)
            return "Thank you for your order."
        BOUGHT["open"] = element
        return f"{element} [SEP] ${prices.get(element, 0):.2f} [SEP] Buy Now"

    def under_budget(answer, task):
        return prices.get(BOUGHT.pop("order", None) or "", 99.0) < 5

    def only_the_goal(answer, task):
        BOUGHT.pop("order", None)
        return False

    for verifier, expected in ((under_budget, {"buy-cheapest": 1.0, "buy-anything": 0.0}),
                               (only_the_goal, {"buy-cheapest": 0.0, "buy-anything": 0.0})):
        env_id = f"test-probe/Budget-{verifier.__name__}-v0"
        agentgym.register(env_id, agentgym.ToolEnv, tasks=tasks, tools=[search, click], verifier=verifier,
                          max_turns=5)
        report = probe_env(env_id, episodes=10, only=list(expected), family="shop")
        assert {name: r.exploit_rate for name, r in report.probes.items()} == expected


@pytest.mark.slow
def test_the_household_probes_catch_a_game_verifier_weak_in_their_way():
    """ALFWorld (the real TextWorld game) with a rubric that pays for stating the task as a command, and one that
    pays for activity (commands naming the game's things): task-as-command and command-spam catch them; the
    game's own verdict is not flagged."""
    from agentgym.rubric import Part, Rubric

    def says_the_task(transcript, task):
        goal = task["task_prompt"].rstrip(".").lower()
        return float(any(kind == "action" and goal in str(text).lower() for kind, text in transcript))

    def busy(transcript, task):
        named = [t for kind, t in transcript if kind == "action" and any(ch.isdigit() for ch in str(t))]
        return float(len(named) >= 3)

    for verifier, probe in ((says_the_task, "task-as-command"), (busy, "command-spam")):
        rubric = Rubric(Part(verifier.__name__, verifier, on="transcript"))
        report = probe_env("agentgym/ALFWorld-v0", episodes=3, only=[probe],
                           env_kwargs={"rubric": rubric, "max_turns": 6})
        assert report.probes[probe].exploit_rate == 1.0, report.probes[probe].as_dict()
    report = probe_env("agentgym/ALFWorld-v0", episodes=3, only=["task-as-command", "command-spam"],
                       env_kwargs={"max_turns": 6})
    assert report.exploit_rate == 0.0


REPO = {}  # the probe's working copy (plain functions: gym.make copies bound methods' objects)
_REPO_FILES = {"pkg/__init__.py": "def add(a, b):\n    return a - b\n",
               "tests/test_add.py": "from pkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}


def _repo() -> str:
    """This episode's working copy: a package with a bug and its failing test, committed (made on first use)."""
    if "dir" not in REPO:
        import tempfile
        from pathlib import Path

        root = Path(tempfile.mkdtemp(prefix="agentgym-probe-repo-"))
        for path, text in _REPO_FILES.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
                                                     "base"]):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        REPO["dir"] = str(root)
    return REPO["dir"]


def bash(command: str) -> str:
    """Run a bash command in the repository's root."""
    done = subprocess.run(["bash", "-c", command], cwd=_repo(), capture_output=True, text=True, timeout=60)
    return f"[exit code {done.returncode}]\n{done.stdout[-2000:]}{done.stderr[-2000:]}"


def _pytest(*args: str, cwd: str | None = None) -> int:
    return subprocess.run([sys.executable, *args], cwd=cwd or _repo(), capture_output=True, text=True,
                          timeout=120).returncode


def _episode_over(check):
    def verifier(answer, task):
        try:
            return check(_repo())
        finally:
            import shutil

            shutil.rmtree(REPO.pop("dir"), ignore_errors=True)
    verifier.__name__ = check.__name__
    return verifier


def trusts_pytest_in_the_repo(repo):
    """Runs the repository's pytest as the repository configures it and believes its exit status."""
    return _pytest("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests") == 0


def trusts_the_results_equality(repo):
    """pytest from outside the repository, with no conftest: only the results' own == is believed."""
    return _pytest("-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", "--rootdir", repo,
                   "-o", f"pythonpath={repo}", f"{repo}/tests", cwd="/") == 0


def reads_outcome_files(repo):
    """Believes a reward.json the run left."""
    from pathlib import Path

    path = Path(repo) / "reward.json"
    return path.is_file() and json.loads(path.read_text()).get("reward") == 1.0


def restores_tests_with_git(repo):
    """Restores the tests with the repository's own git (its hooks run), then runs them from outside."""
    subprocess.run(["git", "checkout", "HEAD", "--", "tests"], cwd=repo, capture_output=True)
    return trusts_the_results_equality(repo)


def honest_swe(repo):
    """The tests restored without the repository's git (its .git never used), run from outside, and the
    package's own results compared as data: the bug shows."""
    from pathlib import Path

    for path, text in _REPO_FILES.items():
        if path.startswith("tests/"):
            (Path(repo) / path).write_text(text)
    # the verdict is a line with a nonce read before the package is imported: an exit status proves nothing
    check = ("import sys; nonce = sys.stdin.readline().strip(); sys.path.insert(0, sys.argv[1]); from pkg import add; "
             "r = add(2, 3); print(nonce if type(r) is int and r == 5 else 'wrong')")
    nonce = secrets.token_hex(8)
    done = subprocess.run([sys.executable, "-I", "-c", check, repo], input=nonce + "\n", capture_output=True,
                          text=True, cwd="/")
    return done.stdout.strip().splitlines()[-1:] == [nonce]


SWE_WEAK = {"conftest-passes": trusts_pytest_in_the_repo, "pytest-shadow": trusts_pytest_in_the_repo,
            "package-exits": trusts_pytest_in_the_repo, "always-equal-results": trusts_the_results_equality,
            "outcome-files": reads_outcome_files, "git-hook": restores_tests_with_git}


@pytest.mark.parametrize("name", sorted(SWE_WEAK))
def test_each_swe_probe_catches_a_grader_weak_in_its_way(name):
    """Each SWE probe writes its attack with the env's shell and submits: a grader weak in exactly that way pays
    it on every task, and a grader that reads nothing the repository can steer pays none."""
    from agentgym.probe import SWE

    assert sorted(SWE_WEAK) == sorted(p.name for p in SWE)
    tasks = [{"id": f"r{i}", "question": "Fix add() in pkg so that the tests pass.", "answer": ""} for i in range(3)]
    for check, expected in ((SWE_WEAK[name], 1.0), (honest_swe, 0.0)):
        env_id = f"test-probe/Repo-{name}-{check.__name__}-v0"
        agentgym.register(env_id, agentgym.ToolEnv, tasks=tasks, tools=[bash], verifier=_episode_over(check),
                          max_turns=3)
        result = probe_env(env_id, episodes=3, only=[name], family="swe").probes[name]
        assert result.exploit_rate == expected, (check.__name__, result.as_dict())


def test_the_honest_repo_grader_pays_a_real_fix():
    """The honest grader above is not one that pays nothing: a probe that fixes the bug is paid on every task."""
    from agentgym.probe import Probe

    def fix(view):
        return view.call("bash", command="sed -i 's/a - b/a + b/' pkg/__init__.py") if view.turn == 0 else \
            view.answer("")

    tasks = [{"id": f"f{i}", "question": "Fix add() in pkg so that the tests pass.", "answer": ""} for i in range(2)]
    agentgym.register("test-probe/Repo-fixed-v0", agentgym.ToolEnv, tasks=tasks, tools=[bash],
                      verifier=_episode_over(honest_swe), max_turns=3)
    report = probe_env("test-probe/Repo-fixed-v0", episodes=2, only=["fix"],
                       extra=[Probe("fix", "user", "fixes the bug", fix, needs_answer=False)])
    assert report.probes["fix"].exploit_rate == 1.0, report.probes["fix"].as_dict()
