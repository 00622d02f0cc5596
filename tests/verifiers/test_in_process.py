"""Verdicts computed in process are the worker's: QA, plain-number math and WebShop verdicts, each computed both
ways on a few thousand generated and corpus pairs (this directory's fuzz and adversarial corpora among them);
hostile inputs either stay in process within a bound on their cost, or go to the worker. Seeded, so a failure
reproduces."""

from __future__ import annotations

import random
import re
import string
import time
import unicodedata

import pytest
from helpers.gates import requires_extra, requires_math_verify
from test_adversarial import GOAL, PRODUCT, RIGHT_MATH, SLOW_MATH, WRONG_MATH, words
from test_math_fuzz import GOLDS as FUZZ_GOLDS
from test_math_fuzz import fuzz_golds, predictions

from agentgym.envs.search.data import bundled_qa_files, load_qa_tasks
from agentgym.errors import VerifierError
from agentgym.verifiers import cover_exact_match, exact_match, f1_score, normalize_answer, qa, verify_qa
from agentgym.verifiers.budget import run_budgeted
from agentgym.verifiers.score import Score

SEED = 20_261_127
BOUNDED_S = 0.25  # an in-process verdict at its size bounds takes ~1-5 ms; room for a machine 5x slower and loaded


def in_worker(func, *args) -> Score:
    """``func(*args)`` in a verifier worker (a budget, so never in this process)."""
    return run_budgeted(func, *args, budget_s=60)


def spy_on_workers(monkeypatch, module) -> list[tuple]:
    """The verifications ``module`` sends to a worker from now on (they still run there)."""
    sent: list[tuple] = []

    def recording(func, *args, **kwargs):
        sent.append(args)
        return run_budgeted(func, *args, **kwargs)

    monkeypatch.setattr(module, "run_budgeted", recording)
    return sent


# ---- QA ---------------------------------------------------------------------------------------------------------

# Text that normalisation changes: case, punctuation, articles, whitespace, NFKC forms (full-width digits,
# ligatures, U+FDFA's 18 characters), a dotted capital I (two characters lower-cased), combining marks, accents.
QA_PIECES = ["Lima", "lima", "LIMA", "the", "The", "a", "an", "of", "Peru", "Republic", "India", "1947", "yes", "no",
             "noanswer", "Yes.", "No!", "-", ",", ".", "'s", "(", ")", "?!", " ", "  ", "\t", "\n", "\u00a0", "\u3000",
             "\uff11\uff19\uff14\uff17", "\ufb01", "\ufdfa", "\u0130", "e\u0301", "\u00e9", "Z\u00fcrich", "\u200b",
             "\u2014", "\u00bd", "\u2460", "\u1e9e", "S\u00e3o Paulo", "\u5317\u4eac", "\u0645\u0635\u0631", "x"]


def qa_golds(rng: random.Random, real: list[list[str]]) -> list[str]:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(real)
    if kind == 1:
        return [rng.choice(["yes", "no", "noanswer", "Yes", "no."])]
    golds = ["".join(rng.choice(QA_PIECES) for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 4))]
    return [g for g in golds if g.strip()] or ["Lima"]


def qa_prediction(rng: random.Random, golds: list[str]) -> str | None:
    gold = rng.choice(golds)
    kind = rng.randrange(8)
    if kind == 0:
        return gold
    if kind == 1:
        return rng.choice(["The ", "the ", "a ", "", "  "]) + gold.upper() + rng.choice(["", ".", "!", " ,"])
    if kind == 2:  # a partial answer: F1 between 0 and 1
        return gold + " " + " ".join(rng.choice(QA_PIECES) for _ in range(rng.randint(1, 4)))
    if kind == 3:
        at = rng.randint(0, len(gold))
        return gold[:at] + rng.choice(QA_PIECES) + gold[at + 1:]
    if kind == 4:
        return "".join(rng.choice(QA_PIECES) for _ in range(rng.randint(0, 12)))
    if kind == 5:
        return rng.choice([None, "", " ", "\n", "?!", "the", "a an the", "...", "\u200b"])
    if kind == 6:  # around the in-process bounds: 8,000 ASCII characters, 222 of other text
        size, unit = rng.choice([(7_990, "Lima "), (8_000, "a"), (8_001, "x y "), (8_100, "Lima "), (220, "\u00e9"),
                                 (222, "\ufdfa"), (223, "\u00e9 "), (222, "\u0130")])
        return (unit * (size // len(unit) + 1))[:size]
    characters = [rng.choice([rng.randint(32, 126), rng.randint(0xa0, 0x2fff)]) for _ in range(rng.randint(1, 30))]
    return "".join(map(chr, characters))


def reference_normalize(text: str) -> str:
    """``normalize_answer`` as it was written before the in-process path (str.translate, no shortcut)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.translate(str.maketrans("", "", string.punctuation))
    text = qa._ARTICLES.sub(" ", text)
    return " ".join(text.split())


def reference_verdict(prediction: str | None, golds: list[str], metric: str) -> Score:
    """The QA verdict as it was computed before the in-process path: the public functions, composed."""
    if prediction is None or not prediction.strip():
        return qa._empty(prediction, "empty answer")
    normalized = reference_normalize(prediction)
    if not normalized:
        return qa._empty(prediction, "nothing is left of the answer after normalisation")
    scores = {"em": exact_match(prediction, golds), "f1": f1_score(prediction, golds),
              "cover_em": cover_exact_match(prediction, golds)}
    return Score(scores[metric], scores["em"] == 1.0, {**scores, "prediction": prediction,
                                                       "normalized_prediction": normalized})


def test_qa_verdicts_in_process_are_the_workers_and_the_old_ones(monkeypatch):
    rng = random.Random(SEED)
    real = [t.gold["golden_answers"] for t in load_qa_tasks(bundled_qa_files()).tasks("test")]
    sent = spy_on_workers(monkeypatch, qa)
    in_process = 0
    for i in range(2_500):
        golds = qa_golds(rng, real)
        prediction = qa_prediction(rng, golds)
        metric = ("em", "f1", "cover_em")[i % 3]
        before = len(sent)
        score = verify_qa(prediction, golds, metric=metric)
        in_process += len(sent) == before
        assert score == in_worker(qa._verify_qa, prediction, golds, metric), (prediction, golds, metric)
        assert score == reference_verdict(prediction, golds, metric), (prediction, golds, metric)
        if prediction is not None:
            assert normalize_answer(prediction) == reference_normalize(prediction), prediction
    assert in_process >= 2_000, in_process  # most pairs took the in-process path: the comparison means something


@pytest.mark.parametrize("prediction, golds", [
    ("x" * 8_001, ["Lima"]),  # past the answer's bound
    ("\u00e9" * 223, ["Lima"]), ("\ufdfa" * 300, ["Lima"]),  # non-ASCII past it: NFKC may expand 18-fold
    ("Lima", ["Lima"] * 65),  # too many gold answers
    ("Lima", ["x" * 5_000, "y" * 3_001]), ("Lima", ["\u00e9" * 223]),  # gold answers past their bound
    ("a" * 8_000, ["a" * 98 + "ba"]),  # cover-EM's substring tests past their bound (800,000 character pairs)
    ("Lima " * 19_999, ["Lima"] * 1000), ("\u00e9" * 99_999, ["Lima"]),  # the adversarial corpus's
], ids=lambda v: repr(v)[:30])
def test_qa_inputs_past_the_bounds_go_to_a_worker(monkeypatch, prediction, golds):
    sent = spy_on_workers(monkeypatch, qa)
    score = verify_qa(prediction, golds, metric="f1")
    assert len(sent) == 1
    assert score == reference_verdict(prediction, golds, "f1")


@pytest.mark.parametrize("prediction, golds", [
    ("\ufdfa" * 222, ["\ufdfa" * 6]),  # 18-fold NFKC on both sides, at the bound
    ("\u0130" * 222, ["x"]), ("e\u0301" * 111, ["e"]),  # lower-casing that lengthens, combining marks
    ("a" * 5_000, ["a" * 98 + "ba"]),  # a worst case of the substring search, at 490,000 pairs
    ("a " * 4_000, ["a b"] * 64), ("the " * 2_000, ["the"] * 64), ("x y " * 2_000, ["x"] * 64),
    (" ".join(map(str, range(1_700))), [" ".join(map(str, range(20)))] * 3),
], ids=lambda v: repr(v)[:30])
def test_hostile_qa_inputs_within_the_bounds_are_cheap(monkeypatch, prediction, golds):
    sent = spy_on_workers(monkeypatch, qa)
    start = time.perf_counter()
    score = verify_qa(prediction, golds, metric="f1")
    elapsed = time.perf_counter() - start
    if not sent:  # the pairs bound may send it on; what stays here is cheap
        assert elapsed < BOUNDED_S, elapsed
    assert score == reference_verdict(prediction, golds, "f1")


def test_unusable_gold_answers_still_raise_with_their_own_description():
    for golds in ([], [" "], ["Lima", 3], ("Lima", None), [["Lima"]]):
        with pytest.raises(VerifierError, match="golden_answers must be") as caught:
            verify_qa("Lima", golds)
        assert repr(golds)[:20] in str(caught.value)


# ---- math -------------------------------------------------------------------------------------------------------

def is_plain(gold: str) -> bool:
    """Whether ``gold`` is a plain-number gold that ``_verify_here`` reads (short ASCII, a plain number)."""
    from agentgym.verifiers import math as math_verifier

    return (len(gold) <= math_verifier._IN_PROCESS_CHARS and gold.isascii()
            and math_verifier._plain_gold(gold) is not None)


def plain_number_golds(rng: random.Random) -> list[str]:
    """Gold answers whose number needs no sympy (some of them written around: a box, dollars, a full stop)."""
    numbers = ["0", "-0", "1", "-1", "5", "70", "-3", "0.5", "0.75", "-0.75", "3.50", "0.000001", "100",
               "1000000000000", "999999999999999", "123456789012345.123456789012345", "0.0", "10.10"]
    numbers += [str(rng.randint(-10**rng.randint(1, 15), 10**rng.randint(1, 15))) for _ in range(40)]
    numbers += [f"{rng.randint(0, 10**6)}.{rng.randint(0, 10**6)}" for _ in range(20)]
    wrapped = [rng.choice([r"\boxed{%s}", "$%s$", "%s.", " %s ", "Answer: %s"]) % n for n in rng.sample(numbers, 15)]
    return numbers + wrapped


def math_predictions(rng: random.Random, gold: str) -> list[str | None]:
    """The fuzz corpus's generators, and numbers written every way the number reader knows."""
    value = gold.strip().strip("$.").removeprefix(r"\boxed{").removesuffix("}").removeprefix("Answer: ")
    forms = [value, f"{value}.0", f"{value}0" if "." in value else f"{value}.00", f"-{value}", f"{value}%",
             f"{value} cm", rf"\boxed{{{value}}}", f"The answer is ${value}$.", f"x = {value}", f"{value} = 27 + 43",
             f"27 + 43 = {value}", rf"\frac{{{value}}}{{2}}", f"{value}/3", f"{value} or 4", f"{value}e0",
             rf"{value}\times10^{{0}}", rf"\text{{{value} apples}}", f"`{value}`", f"{value} dozen", "", None, "  "]
    return forms + [predictions(rng, gold) for _ in range(12)]


@requires_math_verify
def test_plain_number_math_verdicts_in_process_are_the_workers():
    from agentgym.verifiers import math as math_verifier

    rng = random.Random(SEED)
    golds = plain_number_golds(rng) + [g for g in FUZZ_GOLDS + fuzz_golds(rng) if is_plain(g)]
    golds = list(dict.fromkeys(golds))
    pairs = [(p, g) for g in golds for p in math_predictions(rng, g)]
    pairs += [(p, g) for p, g in WRONG_MATH + RIGHT_MATH if is_plain(g)]
    pairs += [(p, g) for p in SLOW_MATH for g in ("5", "70")]
    compared = 0
    for prediction, gold in pairs:
        here = math_verifier._verify_here(prediction, gold)
        if here is None:  # goes to a worker, where it always went
            continue
        assert here == in_worker(math_verifier._verify_math, prediction, gold), (prediction, gold)
        compared += 1
    assert compared >= 1_000, compared


@requires_math_verify
def test_only_plain_number_golds_that_a_worker_reads_are_read_in_process():
    from agentgym.verifiers import math as math_verifier

    rng = random.Random(SEED)
    for gold in dict.fromkeys(plain_number_golds(rng) + FUZZ_GOLDS + fuzz_golds(rng) + ["1e5", "1,000", "007", "+5",
                                                                                       "5%", ".5", "\uff15", "5 cm"]):
        try:
            worker = in_worker(math_verifier._verify_math, None, gold)
        except VerifierError:  # an unusable gold must not get a verdict here
            assert not is_plain(gold), gold
            continue
        if is_plain(gold):
            assert math_verifier._verify_here(None, gold) == worker, gold


@requires_math_verify
@pytest.mark.parametrize("prediction", [
    r"\boxed{" * 20 + "5" + "}" * 20, "(" * 199 + "5", "{" * 100 + "}" * 100, " " * 199 + "5", "5" + " ." * 99,
    "1," * 99 + "1", "9" * 200, "1e400", "10^{400}", "10^{401}", r"0.\overline{" + "9" * 186 + "}", "5 " * 100,
    "a " * 100, r"\text{" * 25 + "5" + "}" * 25, "=" * 200, "5 = " * 50, "27 + 43 = " * 18 + "70", "-" * 199 + "5",
    r"\frac{1}{2}" * 18, r"5\,\text{cm}" * 15, "the answer is " * 14, r"\boxed 5" * 25, "$" * 200, "`" * 200,
], ids=lambda p: p[:30])
def test_hostile_short_math_answers_in_process_are_cheap_and_the_workers(prediction):
    from agentgym.verifiers import math as math_verifier

    assert len(prediction) <= math_verifier._IN_PROCESS_CHARS
    start = time.perf_counter()
    here = math_verifier._verify_here(prediction, "5")
    assert time.perf_counter() - start < BOUNDED_S
    if here is not None:
        assert here == in_worker(math_verifier._verify_math, prediction, "5")


@requires_math_verify
@pytest.mark.parametrize("prediction, gold", [
    ("5" * 201, "5"), ("\u2212" + "5", "-5"), ("5\u00b0", "5"), ("\uff15", "5"),  # long, or not ASCII
    ("5 = \\sqrt{25}", "5"), (r"\frac{10}{2} = 5", "5"),  # an equation's other side: sympy evaluates it
    ("5", r"\frac{10}{2}"), ("5", "x + 1"), ("5", "5" * 201), ("5", "1,000"), ("5", "1e5"),  # not a plain-number gold
])
def test_math_that_needs_sympy_or_is_not_small_goes_to_a_worker(prediction, gold):
    from agentgym.verifiers import math as math_verifier

    assert math_verifier._verify_here(prediction, gold) is None


# ---- WebShop ----------------------------------------------------------------------------------------------------

def webshop_pairs(rng: random.Random) -> list[tuple[object, dict]]:
    """Purchases of the bundled shop against its goals: the target, other products, random options and prices,
    goals with attributes and options moved between them."""
    from agentgym.envs.webshop.env import WebShopEnv
    from agentgym.verifiers.webshop import Purchase

    env = WebShopEnv()
    products = list(env.catalog.products.values())
    pairs = []
    for task in env.tasks.tasks("test"):
        goal = dict(task.gold)
        for product in (env.catalog.products[goal["asin"]], rng.choice(products), rng.choice(products)):
            record = product.reward_record()
            options = {kind: rng.choice(values) for kind, values in product.options.items() if rng.random() < 0.8}
            if rng.random() < 0.2:
                options["color"] = rng.choice(["Navy Blue", "light pink", "RED", "multicolor stripe"])
            mutated = dict(goal)
            if rng.random() < 0.3:
                mutated["attributes"] = list(goal["attributes"]) + rng.sample(record.get("attributes") or ["x"], 1)
            if rng.random() < 0.2:
                mutated["goal_options"] = {f"o{i}": o for i, o in enumerate(goal["goal_options"])}
            price = rng.choice([None, 0.0, 1.0, float(goal.get("price_upper") or 10) + 0.01, 9.99])
            pairs.append((Purchase(record, options, price, product.asin), mutated))
    env.close()
    return pairs


@requires_extra("webshop", system=False)
def test_webshop_verdicts_in_process_are_the_workers(monkeypatch):
    from agentgym.verifiers import webshop
    from agentgym.verifiers.webshop import Purchase, verify_purchase

    rng = random.Random(SEED)
    pairs = webshop_pairs(rng)
    pairs.append((Purchase(PRODUCT, {"color": "red"}, 1.0), GOAL))
    sent = spy_on_workers(monkeypatch, webshop)
    for purchase, goal in pairs:
        score = verify_purchase(purchase, goal)
        assert score == in_worker(webshop._verify_purchase, purchase.as_record(), dict(goal)), (purchase, goal)
    assert not sent and len(pairs) >= 900  # real records are all scored in process


@requires_extra("webshop", system=False)
@pytest.mark.parametrize("product, options, goal", [
    ({**PRODUCT, "attributes": words(500)}, {"color": "red"}, {**GOAL, "attributes": words(100)}),  # many pairs
    ({**PRODUCT, "description": "a" * 100_000}, {}, {**GOAL, "attributes": ["a" * 98 + "ba"] * 3}),  # long texts
    ({**PRODUCT, "description": ["long lasting"]}, {}, GOAL),  # not text: its str() could be anything
    ({**PRODUCT, "name": {"a": 1}}, {}, GOAL), ({**PRODUCT, "attributes": "long lasting"}, {}, GOAL),
    (PRODUCT, {"color": ["red"]}, GOAL),
], ids=lambda v: repr(v)[:30])
def test_webshop_records_past_the_bounds_go_to_a_worker(monkeypatch, product, options, goal):
    from agentgym.verifiers import webshop
    from agentgym.verifiers.webshop import Purchase, verify_purchase

    sent = spy_on_workers(monkeypatch, webshop)
    score = verify_purchase(Purchase(product, options, 1.0), goal)
    assert len(sent) == 1 and isinstance(score, Score)


@requires_extra("webshop", system=False)
@pytest.mark.parametrize("goal, why", [
    ({**GOAL, "price_upper": "20"}, "'price_upper' must be a number, got str"),
    ({**GOAL, "goal_options": [["red"]]}, "'goal_options' must be a list of text"),
    ({**GOAL, "attributes": 1}, "'attributes' must be a list of text"),
    ({**GOAL, "name": ["a"]}, "'name' must be text, got list"),
    ({}, "it names nothing wanted"), ({"price_upper": 50.0}, "it names nothing wanted"),
    # a query and no usable name once scored any purchase 0.5 (the type reward matches the name's nouns)
    ({"query": "lipstick"}, "its 'name' has no word"), ({"query": "lipstick", "name": "!! ?"}, "its 'name' has no word"),
])
def test_a_goal_webshops_reward_is_not_defined_on_is_an_error_not_a_score(monkeypatch, goal, why):
    """An empty goal once scored any purchase 0.5 (its type and title parts), a list-valued one raised a TypeError
    from inside the reward: the task's data is wrong, which the caller (a /v1/verify client) must hear."""
    from agentgym.errors import VerifierError
    from agentgym.verifiers import webshop
    from agentgym.verifiers.webshop import Purchase, verify_purchase, verify_webshop

    sent = spy_on_workers(monkeypatch, webshop)
    with pytest.raises(VerifierError, match=re.escape(why)):
        verify_purchase(Purchase(PRODUCT, {"color": "red"}, 1.0), goal)
    with pytest.raises(VerifierError, match="fix the task data"):
        verify_webshop(Purchase(PRODUCT, {}, 1.0).as_answer(), {"goal": goal})
    assert not sent


@requires_extra("webshop", system=False)
def test_webshop_records_at_the_bound_are_cheap(monkeypatch):
    """Records built to cost the most the bound allows: the fuzzy matches, then the substring tests."""
    from agentgym.verifiers import webshop
    from agentgym.verifiers.webshop import Purchase, verify_purchase

    many = [f"w{i} x{i}" for i in range(25)]
    cases = [
        (Purchase({**PRODUCT, "attributes": many}, {f"o{i}": f"c{i} navy" for i in range(5)}, 1.0),
         {**GOAL, "attributes": many, "goal_options": [f"c{i} blue" for i in range(5)]}),
        (Purchase({**PRODUCT, "description": "a" * 20_000}, {}, 1.0), {**GOAL, "attributes": ["a" * 30 + "ba"]}),
    ]
    sent = spy_on_workers(monkeypatch, webshop)
    for purchase, goal in cases:
        assert webshop._work(purchase.as_record(), goal) <= webshop._IN_PROCESS_WORK
        start = time.perf_counter()
        score = verify_purchase(purchase, goal)
        assert time.perf_counter() - start < BOUNDED_S
        assert score == in_worker(webshop._verify_purchase, purchase.as_record(), dict(goal))
    assert not sent
