"""Fuzz of the math verifier: on any prediction it returns a Score, never raises and never hits its own error
boundary ("verifier error: ..."); each usable gold scores 1 against itself. Seeded, so a failure reproduces."""

import json
import random

import pytest
from helpers.gates import requires_math_verify

from agentgym.envs.code.math_data import bundled_math_files, load_math_tasks
from agentgym.errors import VerifierError
from agentgym.verifiers import Score, verify_math

pytestmark = requires_math_verify

SEED = 20_240_611
PAIRS = 1_200
GOLDS = [
    "5", "70", "-3", "0", "0.75", "0.000001", "1000000000000", r"\frac{3}{4}", r"-\frac{1}{2}", r"1\frac{1}{2}",
    r"75\%", r"90^\circ", r"2^{10}", r"\frac{\pi}{2}", r"\sqrt{2}", r"2\sqrt{3}", r"\infty", "i+1", "x + 1",
    r"\lfloor x \rfloor", r"\{1, 2\}", "(1,2)", "[1,2)", r"(-\infty, 3]", r"x \le 3", r"\text{Monday}", r"\text{(A)}",
    r"\begin{pmatrix}1\\2\end{pmatrix}", r"\log_2 8", r"\binom{10}{3}",
]
TOKENS = [
    "0", "1", "2", "5", "70", "-", "+", "*", "/", ".", ",", "=", "<", ">", "!", "^", "_", "(", ")", "[", "]", "{", "}",
    " ", "x", "y", "e", "i", "E", r"\frac{", r"\dfrac", r"\sqrt{", r"\pi", r"\infty", r"\lfloor", r"\rfloor",
    r"\lceil", r"\rceil", r"\{", r"\}", r"\left(", r"\right)", r"\le", r"\neq", r"\cdot", r"\times", r"\div", r"\pm",
    r"\text{", r"\mathrm{", r"\boxed{", r"\boxed ", r"\fbox{", r"\overline{", r"^\circ", "%", r"\%", "$", "\\$", "`",
    r"\,", r"\;", r"\quad", "\\\\", "&", r"\begin{pmatrix}", r"\end{pmatrix}", r"\sin", r"\log", r"\ln", r"\binom",
    r"\sum_{k=1}^{", r"\int", r"\mathbb{R}", r"\emptyset", r"\cup", r"\approx", "cm", " apples", " squared", " or ",
    " and ", " degrees", " percent", "five", "Answer: ", "\u03c0", "\u2212", "\u00d7", "\u00b0", "\u221e", "\u00e9",
    "\x00", "\n", "\t", "\ufeff", "10^{", "e5", "1,234", "0.\\overline{3}", "1e400", "9" * 30,
]
NUMBERS = ["{}", "-{}", "{}.{}", "{}%", "{}/{}", r"\frac{{{}}}{{{}}}", "{}e{}", r"{}\times10^{{{}}}", "{},{}",
           r"{}\frac{{{}}}{{{}}}", "{} cm", r"{}\,\text{{{}}}", "{} = {}", r"\boxed{{{}}}", "`{}`", r"{}^\circ"]


def random_latex(rng: random.Random) -> str:
    return "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 12)))


def random_number(rng: random.Random) -> str:
    form = rng.choice(NUMBERS)
    digits = [str(rng.choice([0, 1, 2, 3, 7, 10, 70, 99, 1000, 10**12, rng.randint(0, 10**6)]))
              for _ in range(form.count("{}"))]
    return form.format(*digits)


def garbage(rng: random.Random) -> str:
    return "".join(chr(rng.choice([rng.randint(0, 127), rng.randint(128, 0x2FFF)])) for _ in range(rng.randint(0, 40)))


def mutation(rng: random.Random, gold: str) -> str:
    text = gold
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(text))
        kind = rng.randrange(6)
        if kind == 0:
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + rng.randint(1, 3):]
        elif kind == 2:
            text = text[:at] + rng.choice(TOKENS) + text[at + 1:]
        elif kind == 3:
            text = rng.choice([r"\boxed{%s}", "The answer is $%s$.", "%s cm", "%s = %s", "(%s)", r"\{%s\}", "`%s`",
                               r"\text{%s}", "%s%%", "-%s", "%s or 4"]).replace("%s", text)
        elif kind == 4:
            text = text * 2
        else:
            text = text.translate(str.maketrans("()[]{}", "[]()()"))
    return text


def predictions(rng: random.Random, gold: str) -> str:
    return rng.choice([random_latex, random_number, garbage, lambda r: mutation(r, gold)])(rng)


def fuzz_golds(rng: random.Random) -> list[str]:
    tasks = list(load_math_tasks({"test": bundled_math_files()["test"]}).tasks("test"))
    real = [task.gold["answer"] for task in rng.sample(tasks, 30)]
    return GOLDS + real + [mutation(rng, gold) for gold in rng.sample(GOLDS + real, 20)]


def assert_a_score(score: Score, pred: str, gold: str) -> None:
    assert isinstance(score, Score), (pred, gold)
    assert score.reward in (0.0, 1.0) and score.correct == (score.reward == 1.0), (pred, gold, score)
    reason = score.details["reason"]
    assert isinstance(reason, str) and not reason.startswith("verifier error"), (pred, gold, score.details)
    assert json.loads(json.dumps(score.as_dict())) == score.as_dict()


def test_verify_math_never_raises_on_generated_predictions():
    rng = random.Random(SEED)
    usable = []
    for gold in fuzz_golds(rng):
        try:
            correct = verify_math(gold, gold).correct
        except VerifierError as e:  # the gold itself is unusable: a data error, raised for any prediction
            assert "gold" in str(e)
            with pytest.raises(VerifierError, match="gold"):
                verify_math(random_number(rng), gold)
            continue
        assert correct, gold
        usable.append(gold)
    assert len(usable) >= 50, usable
    for i in range(PAIRS):
        gold = usable[i % len(usable)]
        pred = predictions(rng, gold)
        assert_a_score(verify_math(pred, gold), pred, gold)


def test_non_string_predictions_score_zero():
    for pred in (5, 5.0, ["5"], {"answer": "5"}, b"5"):
        score = verify_math(pred, "5")
        assert (score.reward, score.correct) == (0.0, False)
        assert score.details["reason"].startswith("prediction must be a string")
