"""The adversarial verifier corpus (issues 19 and 23): inputs crafted to be slow, each answered within its
budget, and inputs crafted to be wrong-but-accepted, each scoring 0; the right answers still score 1."""

import json
import time

import pytest
from helpers.gates import requires_extra, requires_math_verify

from agentgym.errors import VerifierError
from agentgym.verifiers import verify_math, verify_qa, verify_webshop
from agentgym.verifiers.budget import DEFAULT_BUDGET_S

SLACK_S = 10.0  # a loaded CI machine; the budget itself is DEFAULT_BUDGET_S (5 s)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    score = fn(*args, **kwargs)
    elapsed = time.perf_counter() - start
    assert elapsed < DEFAULT_BUDGET_S + SLACK_S, f"{elapsed:.1f} s"
    return score


# ---- math: slow -----------------------------------------------------------------------------------------------------

SLOW_MATH = [
    # nested powers, huge exponents
    "2^{2^{2^{2^{2^{2}}}}}", "10^{10^{10}}", "9^{9^{9}}", "(x+1)^{9000}", "2^{40000}", r"e^{10^{10^{4}}}",
    "0^{10^{10^{10}}}", r"\left(1+\sqrt{2}\right)^{300}",
    # long factorials and products
    "1000000!", "(10^{6})!", r"\prod_{i=1}^{10^9} i", r"\sum_{k=1}^{9000} k^{k}", r"\binom{10^{9}}{10^{5}}",
    # deep LaTeX nesting
    r"\frac{" * 40 + "1" + "}{2}" * 40, r"\sqrt{" * 300 + "2" + "}" * 300, "(" * 500 + "1" + ")" * 500,
    "{" * 2000 + "1" + "}" * 2000,
    # many boxes, same and different contents
    r"\boxed{4}" * 10_000, "".join(rf"\boxed{{{i}}}" for i in range(10_000)), r"\boxed{" * 5000 + "4" + "}" * 5000,
    # megabyte answers
    "1" * 2**20, "x+" * 500_000 + "1", "9" * 99_999, r"\frac{1}{2}" * 90_000,
    # expressions that stall sympy's simplify, and sets and tuples of them (260 s and 179 s unbudgeted)
    "(a+b+c+d)^{40}", r"\sin^{100}(x)+\cos^{100}(x)", r"\{(a+b+c+d)^{40}, 1\}", r"((a+b+c+d)^{40}, 1)",
]
GOLDS = ["5", "x + 1", r"\{(a+b+c+d+1)^{40}, 1\}", r"((a+b+c+d+1)^{40}, 1)"]


@requires_math_verify
@pytest.mark.parametrize("gold", GOLDS)
@pytest.mark.parametrize("pred", SLOW_MATH, ids=lambda p: p[:40])
def test_slow_math_inputs_answer_within_the_budget(pred, gold):
    score = timed(verify_math, pred, gold)
    assert score.reward == 0.0, score.details


# ---- math: wrong but once accepted -------------------------------------------------------------------------------------

WRONG_MATH = [
    # juxtaposed numbers (summed by the parser), for 27 + 43 = 70 and 38 + 46 = 84
    ("38 46", "84"), (r"27\;43", "70"), (r"27\quad 43", "70"), (r"27\,\,43", "70"), ("27~43", "70"),
    (r"\boxed{27}\boxed{43}", "70"),
    # free symbols that cancel
    ("27 + 43 + 0x", "70"), ("0x + 70", "70"), ("70 + 0y", "70"), ("x - x + 70", "70"), ("70x/x", "70"),
    ("27 + 43 + 0", "70"), (r"70 \cdot 1", "70"),
    # unevaluated operations, fractions not in lowest terms
    (r"\frac{140}{2}", "70"), ("140/2", "70"), (r"140 \div 2", "70"), ("-(-2884/103)", "28"), ("2884/103", "28"),
    ("27 + 43", "70"), ("43+27", "70"), (r"\sqrt{4900}", "70"), ("7 \\times 10", "70"), ("70^1", "70"),
    ("2/4", r"\frac{1}{2}"), (r"\frac{6}{8}", "0.75"), ("70/1", "70"),
    # hedges after the first value, several answers, ranges
    ("3 but possibly four", "3"), ("3 unless four", "3"), (r"3 \text{ (or maybe 4)}", "3"), (r"3 \approx 4", "3"),
    ("3 or 4", "3"), ("3, 4", "3"), ("3; 4", "3"), ("3 to 4", "3"), (r"3 \pm 1", "3"), ("x = 3 = 4", "3"),
    (r"3 \text{ or } 4", "3"), ("3 and 4", "3"), ("either 3", "3"), (r"3 \lor 4", "3"), ("3 \\le x", "3"),
    ("x < 4", "3"), ("x <= 3", "3"), ("x >= 3", "3"),
    # nested boxes: the inner one is part of the outer one's content
    (r"\boxed{4 \boxed{3}}", "3"), (r"\boxed{3 \boxed{4}}", "3"),
    # absolute rounding: relative tolerance now
    ("0.0000014", "0.000001"), ("3.141593", r"\pi"), ("3.1415927", r"\pi"), ("0.333333", r"\frac13"),
    ("1000000.4", "1000000"),
    # a constant gold is not answered by an expression with variables
    (r"\sqrt{2} + 0x", r"\sqrt{2}"), (r"\pi + x - x", r"\pi"),
    # an answer that made the verifier raise (a 500 over HTTP, the session closed): now it scores 0
    (r"\lfloor x \rfloor", "x+1"), (r"\lceil x \rceil", "x+1"),
    # integers and exact fractions compare exactly, not to a relative 1e-9
    ("1000000000999", "1000000000000"), ("100000000001", "100000000000"),
    (r"\frac{1000000001}{3}", r"\frac{1000000000}{3}"), (r"1000000000999\sqrt{2}", r"1000000000000\sqrt{2}"),
    ("0.3333333333", r"\frac{1}{4}"), ("0.25000000001", r"\frac{1}{4}"),
    # words after a number are units only from the list of units
    ("5 squared", "5"), ("5 factorial", "5"), ("5 dozen", "5"), ("5 is wrong", "5"), (r"5 \text{ squared}", "5"),
    (r"\text{5 dozen}", "5"), ("5 cubed cm", "5"), ("5 square", "5"),
    # one percent reading per gold: "p%" is p/100 against a gold from -1 to 1
    ("0.5%", "0.5"), ("7.5%", "75"),
    # sets, tuples and intervals are told apart by their brackets
    ("(1,2)", r"\{1,2\}"), (r"\{1,2\}", "(1,2)"), (r"\{1,2\}", "[1,2]"), ("[1,2]", r"\{1,2\}"),
    # an equation states its number side, and its other sides must equal it
    ("70 = 27 + 44", "70"), (r"70 = \pi", "70"),
    # a mixed number's fraction is proper
    (r"1\frac{3}{2}", "2.5"),
]


@requires_math_verify
@pytest.mark.parametrize("pred, gold", WRONG_MATH)
def test_wrong_math_answers_score_zero(pred, gold):
    score = timed(verify_math, pred, gold)
    assert (score.reward, score.correct) == (0.0, False), score.details


RIGHT_MATH = [
    ("70", "70"), (r"\boxed{70}", "70"), ("27 + 43 = 70", "70"), ("x = 70", "70"), ("70.0", "70"), ("+70", "70"),
    (r"\frac{1}{2}", "0.5"), ("1/2", "0.5"), ("0.5", r"\frac{1}{2}"), (r"-\frac{3}{4}", "-0.75"), (r"\dfrac34", "0.75"),
    # scientific notation
    (r"1.2\times10^{4}", "12000"), ("1.2e4", "12000"), ("1.2E4", "12000"), (r"1.2 \cdot 10^{4}", "12000"),
    ("10^{-7}", "0.0000001"), ("1e-7", "0.0000001"), ("12000", r"1.2\times10^{4}"),
    # inequalities and intervals
    (r"x\le 2", r"(-\infty,2]"), (r"(-\infty,2]", r"x\le 2"), ("2 < x < 5", "(2, 5)"), (r"x > 3", r"(3, \infty)"),
    # relative tolerance: a long enough expansion
    ("3.14159265358979", r"\pi"), ("0.333333333333", r"\frac13"),
    # units, percent, degrees, thousands
    (r"70\text{ cm}", "70"), ("70 apples", "70"), ("75%", "0.75"), (r"90^\circ", "90"), ("1,234", "1234"),
    # the gold written as the gold
    ("2^{10}", "2^{10}"), (r"\frac{6}{8}", r"\frac{6}{8}"), ("1024", "2^{10}"),
    # once rejected: units in and after \text{}, mixed numbers, a brace-less box, a code span, repeating decimals,
    # degrees for a radian gold, an equation whose left side is the number
    (r"\text{5 apples}", "5"), (r"5\,\text{cm}", "5"), (r"1\frac{1}{2}", "1.5"), (r"-2\frac{1}{4}", "-2.25"),
    (r"\boxed 2", "2"), (r"so $\boxed 2$.", "2"), ("`5`", "5"), ("The answer is `5`.", "5"),
    (r"0.\overline{3}", r"\frac{1}{3}"), (r"0.1\overline{6}", r"\frac{1}{6}"), (r"90^\circ", r"\frac{\pi}{2}"),
    ("45 degrees", r"\frac{\pi}{4}"), ("70 = 27 + 43", "70"), ("5 square feet", "5"), ("5 miles per hour", "5"),
    # one percent reading per gold, and exactness where the gold is exact
    ("0.5%", "0.005"), ("1000000000000", "1000000000000.0"), ("0.6666666667", r"\frac{2}{3}"), ("3", r"\log_2 8"),
    # sets against sets, intervals against intervals
    (r"\{2,1\}", r"\{1,2\}"), ("1, 2", r"\{1,2\}"), (r"\left(1,2\right)", "(1,2)"),
]


@requires_math_verify
@pytest.mark.parametrize("pred, gold", RIGHT_MATH)
def test_right_math_answers_score_one(pred, gold):
    score = verify_math(pred, gold)
    assert (score.reward, score.correct) == (1.0, True), score.details


@requires_math_verify
def test_the_echo_hacks_of_the_arithmetic_recipe_score_zero_on_its_tasks():
    """The README recipe's tasks (chain_sum, 2 terms of 2 digits): every echo variant of the question scores 0,
    the sum scores 1 (150/150 tasks were hackable with " + 0x" before)."""
    import gymnasium as gym

    env = gym.make("agentgym/MathTool-v0", reasoning_gym=["chain_sum"], reasoning_gym_size=50,
                   reasoning_gym_config={"chain_sum": {"min_terms": 2, "max_terms": 2, "max_digits": 2}}).unwrapped
    tasks = env.tasks.tasks("test")
    env.close()
    hacked = right = 0
    for task in tasks:
        expression = task.prompt.rsplit(":", 1)[-1].strip().rstrip("=").strip()
        numbers = [t for t in expression.split() if t.isdigit()]
        echoes = [expression, f"{expression} + 0x", " ".join(numbers), r"\;".join(numbers),
                  rf"\frac{{{2 * int(task.gold['answer'])}}}{{2}}", f"{expression} = {task.gold['answer']} or 0"]
        hacked += sum(verify_math(e, task.gold["answer"]).correct for e in echoes)
        right += verify_math(task.gold["answer"], task.gold["answer"]).correct
    assert (hacked, right) == (0, len(tasks))


# ---- QA -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pred, golds", [
    ("Lima or Quito", ["Lima"]), ("Lima, Quito, Bogota", ["Lima"]), ("?!", ["..."]), ("the", ["a"]),
    ("", ["Lima"]), ("Lima" * 30_000, ["Lima"]), ("not Lima", ["Lima"]),
])
def test_wrong_qa_answers_score_zero(pred, golds):
    score = timed(verify_qa, pred, golds)
    assert (score.reward, score.correct) == (0.0, False), score.details


# short ids: pytest puts the test's id in the environment (PYTEST_CURRENT_TEST), which a verifier worker started
# during the test inherits, and an id this long is past what exec takes
@pytest.mark.parametrize("pred", ["x" * 2**20, "the " * 2**18, "\u00e9" * 99_999, "Lima " * 19_999],
                         ids=lambda p: p[:20])
def test_slow_qa_inputs_answer_within_the_budget(pred):
    assert timed(verify_qa, pred, ["Lima"] * 1000, metric="f1").reward < 1.0


def test_oversized_qa_gold_is_a_data_error():
    with pytest.raises(VerifierError, match="gold"):
        verify_qa("Lima", ["Lima"] * 1001)
    with pytest.raises(VerifierError, match="gold"):
        verify_qa("Lima", ["x" * 10_001])


# ---- WebShop ----------------------------------------------------------------------------------------------------------

GOAL = {"query": "lipstick", "name": "Rouge Matte Lipstick", "product_category": "Beauty › Lips",
        "attributes": ["long lasting"], "goal_options": ["red"], "price_upper": 20.0}
PRODUCT = {"query": "lipstick", "name": "Rouge Matte Lipstick", "product_category": "Beauty › Lips",
           "attributes": ["long lasting"]}


def words(n: int) -> list[str]:
    return [f"attribute number {i} with some words" for i in range(n)]


@requires_extra("webshop", system=False)
@pytest.mark.parametrize("purchase", [
    {"product": {**PRODUCT, "attributes": words(3000)}, "options": {"color": "red"}, "price": 1.0},
    {"product": {**PRODUCT, "description": "long lasting " * 100_000}, "options": {}, "price": 1.0},
    {"product": PRODUCT, "options": {f"o{i}": "red" for i in range(3000)}, "price": 1.0},
    {"product": PRODUCT, "options": ["red"], "price": 1.0},
    {"product": PRODUCT, "options": {"color": "red"}, "price": "cheap"},
    {"product": "Rouge Matte Lipstick", "options": {"color": "red"}, "price": 1.0},
    ["Rouge Matte Lipstick"],
    "not json",
])
def test_malformed_or_huge_purchases_score_zero_quickly(purchase):
    prediction = purchase if isinstance(purchase, str) else json.dumps(purchase)
    score = timed(verify_webshop, prediction, {"goal": GOAL})
    assert score.reward == 0.0 and score.details["reason"], score.details


@requires_extra("webshop", system=False)
def test_a_purchase_at_the_size_bounds_is_scored_within_the_budget():
    goal = {**GOAL, "attributes": words(100)}
    purchase = {"product": {**PRODUCT, "attributes": words(500)}, "options": {"color": "red"}, "price": 1.0}
    assert timed(verify_webshop, purchase, {"goal": goal}).reward > 0.9


@requires_extra("webshop", system=False)
def test_a_huge_goal_is_a_data_error():
    with pytest.raises(VerifierError, match="too large"):
        verify_webshop(json.dumps({"product": PRODUCT, "price": 1.0}), {"goal": {**GOAL, "attributes": words(3000)}})
