"""Generate the bundled MathTool dataset: seeded math problems with exact, sympy-computed answers.

    python scripts/make_mathtool_data.py [--seed 0] [--out agentgym/data/mathtool]

Writes word problems in the GSM8K schema (``gsm8k_{train,test}.jsonl``) and competition-style
problems in the MATH schema (``math_{train,test}.jsonl``). Each record also carries a short
``code`` program (imports only math, fractions, itertools, sympy) that prints the gold answer:
the env's oracle runs it in the sandbox. The same seed gives byte-identical files everywhere.

Checks made here, before anything is written: every answer is an exact sympy number (no
floats); every GSM8K ``<<a=b>>`` annotation re-evaluates exactly; every ``code`` is executed
and prints exactly the gold string, usually by a different method than the one that made
the gold (brute force or a DP against a closed form); calculus golds also match an
independent mpmath evaluation; no problem text repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mpmath
import sympy as sp
from sympy.ntheory import digits as base_digits
from sympy.ntheory.modular import crt

X = sp.Symbol("x")
SIZES = {"gsm8k": (600, 200), "math": (900, 300)}  # (train, test) per schema


@dataclass
class Problem:
    text: str
    answer: sp.Expr  # exact
    steps: list[str]  # GSM8K reasoning lines, or the sentences of a MATH solution
    code: str
    topic: str
    kind: str = ""  # MATH "type"
    level: int = 0
    numeric: sp.Expr | None = None  # an independent evaluation to compare with the answer


def tex(value: sp.Expr) -> str:
    """LaTeX that math-verify parses back to the same value (``\\ln``, not sympy's base-10 ``\\log``)."""
    return sp.latex(sp.sympify(value), ln_notation=True)


def gold_of(problem: Problem, schema: str) -> str:
    return str(int(problem.answer)) if schema == "gsm8k" else tex(problem.answer)


def step(expr: str, unit: str = "") -> tuple[str, sp.Integer]:
    """A GSM8K calculator annotation, evaluated exactly: ``3*12`` -> ``3*12 = <<3*12=36>>36``."""
    value = sp.sympify(expr)
    if not value.is_Integer:
        raise ValueError(f"non-integer step {expr} = {value}")
    return f"{expr} = {unit}<<{expr}={value}>>{value}", value


def poly_tex(coeffs: list[int]) -> str:
    """Coefficients from the constant term up, as ``x^{3} - 2 x + 5``."""
    return sp.latex(sp.Poly(list(reversed(coeffs)), X).as_expr())


def signed(n: int) -> str:
    return f"+ {n}" if n >= 0 else f"- {-n}"


# ---------------------------------------------------------------- people and things
NAMES = [("Aisha", "f"), ("Ben", "m"), ("Carlos", "m"), ("Daniela", "f"), ("Elena", "f"), ("Farid", "m"),
         ("Grace", "f"), ("Hiroshi", "m"), ("Ines", "f"), ("Jamal", "m"), ("Kavya", "f"), ("Liam", "m"),
         ("Mei", "f"), ("Noah", "m"), ("Olga", "f"), ("Priya", "f"), ("Rosa", "f"), ("Samuel", "m"),
         ("Tariq", "m"), ("Uma", "f"), ("Victor", "m"), ("Wen", "f"), ("Ximena", "f"), ("Yusuf", "m"),
         ("Zoe", "f"), ("Marcus", "m"), ("Leila", "f"), ("Tomas", "m"), ("Hannah", "f"), ("Kofi", "m"),
         ("Amara", "f"), ("Diego", "m"), ("Sofia", "f"), ("Ethan", "m"), ("Nadia", "f"), ("Oliver", "m"),
         ("Chloe", "f"), ("Mateo", "m"), ("Ava", "f"), ("Ravi", "m"), ("Lucia", "f"), ("Jonah", "m"),
         ("Fatima", "f"), ("Andre", "m"), ("Maya", "f"), ("Kenji", "m"), ("Isabel", "f"), ("Owen", "m")]


@dataclass(frozen=True)
class Person:
    name: str
    she: str
    her: str  # object
    his: str  # possessive

    @property
    def She(self) -> str:
        return self.she.capitalize()

    @property
    def His(self) -> str:
        return self.his.capitalize()


def people(rng: random.Random, k: int = 1) -> list[Person]:
    out = []
    for name, sex in rng.sample(NAMES, k):
        out.append(Person(name, "she", "her", "her") if sex == "f" else Person(name, "he", "him", "his"))
    return out


STORES = {
    "bookstore": [("paperback novels", 8, 16), ("notebooks", 2, 6), ("packs of pens", 3, 9), ("wall calendars", 10, 18)],
    "hardware store": [("boxes of screws", 4, 12), ("paint brushes", 3, 11), ("gallons of paint", 24, 45),
                       ("extension cords", 9, 22)],
    "grocery store": [("bags of apples", 4, 9), ("cartons of milk", 3, 6), ("boxes of cereal", 4, 8),
                      ("pounds of coffee", 9, 16)],
    "sporting goods store": [("cans of tennis balls", 3, 7), ("water bottles", 8, 19), ("pairs of socks", 4, 12),
                             ("soccer balls", 15, 35)],
    "craft store": [("skeins of yarn", 4, 11), ("packs of beads", 3, 8), ("canvases", 7, 20), ("glue guns", 9, 17)],
}
JOBS = ["nurse's aide", "cashier", "lifeguard", "barista", "warehouse worker", "delivery driver", "tutor",
        "line cook", "bike mechanic", "receptionist"]
GOODS = ["muffins", "bagels", "croissants", "cupcakes", "cinnamon rolls", "scones", "dinner rolls"]
RELATIVES = ["grandmother", "aunt", "cousin", "brother", "sister", "best friend", "uncle"]
ITEMS_STOCK = ["printer paper", "bottled water", "canned tomatoes", "light bulbs", "dish soap", "cat food"]
GOALS = ["bicycle", "laptop", "guitar", "telescope", "camera", "gaming console", "sewing machine"]


# ---------------------------------------------------------------- GSM8K-style word problems
def w_shopping(rng: random.Random) -> Problem:
    (p,) = people(rng)
    store = rng.choice(sorted(STORES))
    (i1, lo1, hi1), (i2, lo2, hi2) = rng.sample(STORES[store], 2)
    q1, q2, c1, c2 = rng.randint(3, 25), rng.randint(2, 14), rng.randint(lo1, hi1), rng.randint(lo2, hi2)
    s1, t1 = step(f"{q1}*{c1}", "$")
    s2, t2 = step(f"{q2}*{c2}", "$")
    s3, total = step(f"{t1}+{t2}", "$")
    bill = rng.choice([20, 50, 100])
    n = int(total) // bill + rng.randint(1, 2)
    s4, paid = step(f"{n}*{bill}", "$")
    s5, change = step(f"{paid}-{total}", "$")
    text = rng.choice([
        (f"{p.name} buys {q1} {i1} at ${c1} each and {q2} {i2} at ${c2} each at the {store}. {p.She} pays with "
         f"{n} ${bill} bills. How much change, in dollars, does {p.she} get back?"),
        (f"At the {store}, {i1} cost ${c1} each and {i2} cost ${c2} each. {p.name} buys {q1} {i1} and {q2} {i2} "
         f"and hands the cashier {n} ${bill} bills. How many dollars of change should {p.she} receive?")])
    steps = [f"The {i1} cost {s1}.", f"The {i2} cost {s2}.", f"Altogether {p.she} spends {s3}.",
             f"{p.She} hands over {s4}.", f"So {p.she} gets back {s5}."]
    code = f"cost = {q1} * {c1} + {q2} * {c2}\npaid = {n} * {bill}\nprint(paid - cost)\n"
    return Problem(text, change, steps, code, "arithmetic")


def w_bakery(rng: random.Random) -> Problem:
    goods = rng.choice(GOODS)
    while True:
        b, m, pct = rng.randint(3, 14), rng.choice([12, 16, 18, 24, 30, 36]), rng.choice([25, 40, 50, 60, 75, 80, 90])
        if b * m * pct % 100 == 0:
            break
    price, days = rng.randint(2, 6), rng.randint(5, 30)
    s1, made = step(f"{b}*{m}")
    s2, sold = step(f"{made}*{pct}/100")
    head = (f"A bakery makes {b} batches of {goods} every day, with {m} {goods} in each batch. Each day it sells "
            f"{pct}% of them at ${price} each and donates the rest to a shelter.")
    steps = [f"The bakery makes {s1} {goods} a day.", f"It sells {s2} of them a day."]
    if rng.random() < 0.5:
        s3, rev = step(f"{sold}*{price}", "$")
        s4, ans = step(f"{rev}*{days}", "$")
        text = head + f" How much money, in dollars, does the bakery make from {goods} in {days} days?"
        steps += [f"That brings in {s3} a day.", f"In {days} days it makes {s4}."]
        code = f"sold = {b} * {m} * {pct} // 100\nprint(sold * {price} * {days})\n"
    else:
        s3, left = step(f"{made}-{sold}")
        s4, ans = step(f"{left}*{days}")
        text = head + f" How many {goods} does it donate over {days} days?"
        steps += [f"It donates {s3} a day.", f"Over {days} days it donates {s4} {goods}."]
        code = f"made = {b} * {m}\nsold = made * {pct} // 100\nprint((made - sold) * {days})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_overtime(rng: random.Random) -> Problem:
    (p,) = people(rng)
    rate, hours, weeks = 2 * rng.randint(7, 24), rng.randint(42, 58), rng.randint(2, 6)
    s1, reg = step(f"40*{rate}", "$")
    s2, extra = step(f"{hours}-40")
    s3, ot_rate = step(f"{rate}*3/2", "$")
    s4, ot = step(f"{extra}*{ot_rate}", "$")
    s5, week = step(f"{reg}+{ot}", "$")
    s6, ans = step(f"{week}*{weeks}", "$")
    text = rng.choice([
        (f"{p.name} works as a {rng.choice(JOBS)} and earns ${rate} an hour. Every hour over 40 in a week is paid at "
         f"1.5 times {p.his} regular rate. If {p.she} works {hours} hours a week, how much does {p.she} earn in "
         f"{weeks} weeks?"),
        (f"{p.name} is paid ${rate} per hour for the first 40 hours {p.she} works each week and time-and-a-half for "
         f"any overtime. {p.She} worked {hours} hours in each of the last {weeks} weeks. How many dollars did "
         f"{p.she} earn in total over those weeks?")])
    steps = [f"For the first 40 hours {p.she} earns {s1} a week.", f"{p.She} works {s2} overtime hours a week.",
             f"The overtime rate is {s3} an hour.", f"So {p.she} earns {s4} in overtime a week.",
             f"Each week {p.she} earns {s5}.", f"In {weeks} weeks {p.she} earns {s6}."]
    code = f"rate = {rate}\nweekly = 40 * rate + ({hours} - 40) * rate * 3 // 2\nprint(weekly * {weeks})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_eggs(rng: random.Random) -> Problem:
    (p,) = people(rng)
    while True:
        hens, per, used = rng.randint(6, 40), rng.randint(4, 7), rng.randint(6, 30)
        if hens * per > used and (hens * per - used) % 12 == 0:
            break
    price, weeks = rng.randint(3, 7), rng.randint(2, 8)
    s1, laid = step(f"{hens}*{per}")
    s2, spare = step(f"{laid}-{used}")
    s3, dozens = step(f"{spare}/12")
    s4, weekly = step(f"{dozens}*{price}", "$")
    s5, ans = step(f"{weekly}*{weeks}", "$")
    text = rng.choice([
        (f"{p.name} keeps {hens} hens, and each hen lays {per} eggs a week. {p.His} family eats {used} eggs a week, "
         f"and {p.she} sells the rest at the farmers' market for ${price} a dozen. How much money, in dollars, "
         f"does {p.she} make from eggs in {weeks} weeks?"),
        (f"Every week, each of the {hens} hens on {p.name}'s farm lays {per} eggs. {p.name}'s household uses {used} "
         f"eggs a week and the rest are sold by the dozen at ${price} per dozen. How many dollars do the egg sales "
         f"bring in over {weeks} weeks?")])
    steps = [f"The hens lay {s1} eggs a week.", f"{p.She} has {s2} eggs left to sell.",
             f"That is {s3} dozen.", f"{p.She} makes {s4} a week.", f"In {weeks} weeks {p.she} makes {s5}."]
    code = f"spare = {hens} * {per} - {used}\nprint(spare // 12 * {price} * {weeks})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_road_trip(rng: random.Random) -> Problem:
    (p,) = people(rng)
    while True:
        mpg, gallons = rng.choice([20, 24, 25, 28, 30, 32, 35, 40]), rng.randint(6, 40)
        if gallons * mpg % 2 == 0:
            break
    one_way, price, toll = gallons * mpg // 2, rng.randint(3, 5), rng.randint(2, 9)
    s1, miles = step(f"{one_way}*2")
    s2, gal = step(f"{miles}/{mpg}")
    s3, fuel = step(f"{gal}*{price}", "$")
    s4, tolls = step(f"{toll}*2", "$")
    s5, ans = step(f"{fuel}+{tolls}", "$")
    relative = rng.choice(RELATIVES)
    text = rng.choice([
        (f"{p.name} drives {one_way} miles to visit {p.his} {relative} and then drives the same way back. {p.His} car "
         f"goes {mpg} miles on a gallon of gas, gas costs ${price} per gallon, and there is a ${toll} toll each way. "
         f"How much does the round trip cost {p.her}, in dollars?"),
        (f"{p.name}'s {relative} lives {one_way} miles away. {p.name}'s car gets {mpg} miles per gallon and gas is "
         f"${price} a gallon. The highway charges a ${toll} toll in each direction. In dollars, what do gas and tolls "
         f"cost {p.her} for a visit there and back?")])
    steps = [f"The round trip is {s1} miles.", f"It uses {s2} gallons of gas.", f"The gas costs {s3}.",
             f"The tolls cost {s4}.", f"The trip costs {s5} in total."]
    code = f"gallons = 2 * {one_way} // {mpg}\nprint(gallons * {price} + 2 * {toll})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_fundraiser(rng: random.Random) -> Problem:
    while True:
        n, t, price = rng.randint(12, 40), rng.randint(5, 20), rng.randint(3, 15)
        supplies, hall = rng.randint(50, 400), rng.randint(100, 600)
        if n * t * price > supplies + hall + 100:
            break
    club = rng.choice(["drama club", "robotics team", "school band", "chess club", "debate team"])
    event = rng.choice(["spring concert", "talent show", "science fair", "school play", "trivia night"])
    s1, tickets = step(f"{n}*{t}")
    s2, revenue = step(f"{tickets}*{price}", "$")
    s3, costs = step(f"{supplies}+{hall}", "$")
    s4, ans = step(f"{revenue}-{costs}", "$")
    text = rng.choice([
        (f"The {club} is raising money with a {event}. Each of its {n} members sells {t} tickets at ${price} "
         f"apiece. The {club} spends ${supplies} on supplies and ${hall} to rent the hall. How much profit, in "
         f"dollars, does the {club} make?"),
        (f"Tickets to the {club}'s {event} cost ${price}. All {n} members of the {club} sell {t} tickets each. "
         f"Renting the hall costs ${hall} and supplies cost ${supplies}. After paying for the hall and supplies, how "
         f"many dollars does the {club} have left from ticket sales?")])
    steps = [f"The members sell {s1} tickets.", f"The tickets bring in {s2}.", f"The costs are {s3}.",
             f"The profit is {s4}."]
    code = f"revenue = {n} * {t} * {price}\nprint(revenue - {supplies} - {hall})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_discount(rng: random.Random) -> Problem:
    (p,) = people(rng)
    item = rng.choice(["jacket", "pair of boots", "backpack", "desk lamp", "blender", "rain coat", "coffee maker"])
    price, pct, qty, coupon = 20 * rng.randint(2, 25), rng.choice([10, 15, 20, 25, 30, 35, 40, 50]), \
        rng.randint(2, 6), rng.choice([5, 10, 15, 20])
    s1, off = step(f"{price}*{pct}/100", "$")
    s2, sale = step(f"{price}-{off}", "$")
    s3, sub = step(f"{qty}*{sale}", "$")
    s4, ans = step(f"{sub}-{coupon}", "$")
    text = rng.choice([
        (f"A {item} normally costs ${price}, but this week everything in the store is {pct}% off. {p.name} buys "
         f"{qty} of them as gifts and uses a ${coupon} coupon on the whole order. How much does {p.she} pay, in dollars?"),
        (f"{p.name} wants {qty} of the same {item}, which is listed at ${price}. The store takes {pct}% off the "
         f"price of each one, and then {p.she} takes ${coupon} off the total with a coupon. How many dollars does "
         f"{p.she} spend?")])
    steps = [f"The discount on each one is {s1}.", f"Each one costs {s2}.", f"{qty} of them cost {s3}.",
             f"After the coupon {p.she} pays {s4}."]
    code = f"sale = {price} - {price} * {pct} // 100\nprint({qty} * sale - {coupon})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_ratio(rng: random.Random) -> Problem:
    a, b, c = people(rng, 3)
    while True:
        r = [rng.randint(1, 9) for _ in range(3)]
        if len(set(r)) == 3:
            break
    unit = rng.randint(5, 400)
    total = unit * sum(r)
    s1, parts = step(f"{r[0]}+{r[1]}+{r[2]}")
    s2, one = step(f"{total}/{parts}", "$")
    hi, lo = max(r), min(r)
    who = {r[0]: a.name, r[1]: b.name, r[2]: c.name}
    s3, ans = step(f"({hi}-{lo})*{one}", "$")
    text = (f"{a.name}, {b.name} and {c.name} share ${total} from a summer business in the ratio "
            f"{r[0]}:{r[1]}:{r[2]}. How many more dollars does {who[hi]} get than {who[lo]}?")
    steps = [f"There are {s1} parts.", f"Each part is worth {s2}.",
             f"{who[hi]} gets {hi - lo} more parts than {who[lo]}, which is {s3}."]
    code = f"ratio = [{r[0]}, {r[1]}, {r[2]}]\npart = {total} // sum(ratio)\nprint((max(ratio) - min(ratio)) * part)\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_reading(rng: random.Random) -> Problem:
    (p,) = people(rng)
    a, b, weeks = rng.randint(10, 60), rng.randint(20, 100), rng.randint(3, 9)
    pages = weeks * (5 * a + 2 * b)
    head = (f"{p.name} is reading a {pages}-page book. {p.She} reads {a} pages each weekday and {b} pages on each "
            f"day of the weekend.")
    s1, wd = step(f"5*{a}")
    s2, we = step(f"2*{b}")
    s3, week = step(f"{wd}+{we}")
    steps = [f"On weekdays {p.she} reads {s1} pages a week.", f"On weekends {p.she} reads {s2} pages.",
             f"So {p.she} reads {s3} pages a week."]
    if rng.random() < 0.5:
        s4, ans = step(f"{pages}/{week}")
        text = head + f" If {p.she} starts on a Monday, how many weeks does it take {p.her} to finish the book?"
        steps.append(f"The book takes {p.her} {s4} weeks.")
        code = f"print({pages} // (5 * {a} + 2 * {b}))\n"
    else:
        k = rng.randint(1, weeks - 1)
        s4, done = step(f"{k}*{week}")
        s5, ans = step(f"{pages}-{done}")
        text = head + f" If {p.she} starts on a Monday, how many pages are left after {k} full weeks?"
        steps += [f"In {k} weeks {p.she} reads {s4} pages.", f"That leaves {s5} pages."]
        code = f"print({pages} - {k} * (5 * {a} + 2 * {b}))\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_garden(rng: random.Random) -> Problem:
    (p,) = people(rng)
    length, width, fence, sod, gate = rng.randint(12, 60), rng.randint(8, 40), rng.randint(3, 15), \
        rng.randint(1, 4), rng.choice([3, 4, 5, 6])
    s1, per = step(f"2*({length}+{width})")
    s2, run = step(f"{per}-{gate}")
    s3, fcost = step(f"{run}*{fence}", "$")
    s4, area = step(f"{length}*{width}")
    s5, scost = step(f"{area}*{sod}", "$")
    s6, ans = step(f"{fcost}+{scost}", "$")
    text = (f"{p.name} is turning a {length}-foot by {width}-foot rectangle of {p.his} yard into a garden. {p.She} "
            f"will put a fence all the way around it except for a {gate}-foot gap for the gate, and fencing costs "
            f"${fence} per foot. {p.She} will also cover the whole garden with sod at ${sod} per square foot. How "
            f"much will {p.she} spend in all, in dollars?")
    steps = [f"The perimeter is {s1} feet.", f"{p.She} needs {s2} feet of fence.", f"The fence costs {s3}.",
             f"The garden covers {s4} square feet.", f"The sod costs {s5}.", f"In all {p.she} spends {s6}."]
    code = (f"fence = (2 * ({length} + {width}) - {gate}) * {fence}\nsod = {length} * {width} * {sod}\n"
            "print(fence + sod)\n")
    return Problem(text, ans, steps, code, "arithmetic")


def w_inventory(rng: random.Random) -> Problem:
    item = rng.choice(ITEMS_STOCK)
    while True:
        start, received = 4 * rng.randint(50, 900), rng.randint(40, 800)
        if (3 * start // 4 + received) % 2 == 0:
            break
    s1, shipped = step(f"{start}/4")
    s2, left = step(f"{start}-{shipped}")
    s3, more = step(f"{left}+{received}")
    s4, ans = step(f"{more}/2")
    text = (f"A warehouse has {start} cases of {item}. On Monday it ships a quarter of them to stores. On Tuesday "
            f"a truck delivers {received} more cases. On Wednesday it ships half of the cases it has. How many cases "
            f"of {item} are left in the warehouse?")
    steps = [f"On Monday it ships {s1} cases.", f"That leaves {s2} cases.", f"After the delivery it has {s3} cases.",
             f"After Wednesday half remain: {s4} cases."]
    code = f"n = {start}\nn -= n // 4\nn += {received}\nn -= n // 2\nprint(n)\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_savings(rng: random.Random) -> Problem:
    (p,) = people(rng)
    thing = rng.choice(GOALS)
    weekly, weeks = rng.randint(15, 90), rng.randint(3, 30)
    saved, gift = rng.randint(20, 200), rng.choice([25, 40, 50, 75, 100])
    cost = saved + gift + weekly * weeks
    s1, have = step(f"{saved}+{gift}", "$")
    s2, need = step(f"{cost}-{have}", "$")
    s3, ans = step(f"{need}/{weekly}")
    relative = rng.choice(RELATIVES)
    text = rng.choice([
        (f"{p.name} is saving for a {thing} that costs ${cost}. {p.She} has ${saved} saved, {p.his} {relative} "
         f"gives {p.her} ${gift} for {p.his} birthday, and {p.she} earns ${weekly} a week walking dogs, all of which "
         f"{p.she} saves. How many weeks of dog walking does {p.she} need to be able to buy the {thing}?"),
        (f"A {thing} costs ${cost}. {p.name} already has ${saved}, and {p.his} {relative} promises {p.her} another "
         f"${gift}. If {p.she} puts away ${weekly} from {p.his} paycheck every week, after how many weeks will "
         f"{p.she} have exactly enough?")])
    steps = [f"{p.She} already has {s1}.", f"{p.She} still needs {s2}.", f"That takes {s3} weeks."]
    code = f"print(({cost} - {saved} - {gift}) // {weekly})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_pizza(rng: random.Random) -> Problem:
    (p,) = people(rng)
    guests, each, size, price, fee = rng.randint(8, 40), rng.randint(2, 4), rng.choice([8, 10, 12]), \
        rng.randint(9, 18), rng.randint(3, 7)
    s1, people_n = step(f"{guests}+1")
    s2, slices = step(f"{people_n}*{each}")
    pizzas = sp.ceiling(sp.Rational(slices, size))
    s3, cost = step(f"{pizzas}*{price}", "$")
    s4, ans = step(f"{cost}+{fee}", "$")
    text = (f"{p.name} is hosting a party for {guests} guests. Everyone at the party, {p.name} included, will eat "
            f"{each} slices of pizza. Each pizza is cut into {size} slices and costs ${price}, and there is a ${fee} "
            f"delivery fee. If {p.she} orders the fewest pizzas that are enough, how much does {p.she} spend, in "
            f"dollars?")
    if slices % size == 0:
        enough = f"{slices}/{size} = <<{slices}/{size}={pizzas}>>{pizzas} pizzas are exactly enough."
    else:
        enough = (f"{pizzas - 1} pizzas have only {(pizzas - 1) * size} slices, so {p.she} needs {pizzas} pizzas.")
    steps = [f"There are {s1} people.", f"They eat {s2} slices.", enough, f"The pizzas cost {s3}.",
             f"With delivery {p.she} spends {s4}."]
    code = (f"slices = ({guests} + 1) * {each}\npizzas = -(-slices // {size})\nprint(pizzas * {price} + {fee})\n")
    return Problem(text, ans, steps, code, "arithmetic")


def w_tank(rng: random.Random) -> Problem:
    fill, leak, minutes = rng.randint(8, 40), rng.randint(2, 6), rng.randint(10, 90)
    current = rng.randint(0, 20) * 10
    capacity = current + (fill - leak) * minutes
    s1, net = step(f"{fill}-{leak}")
    s2, need = step(f"{capacity}-{current}")
    s3, ans = step(f"{need}/{net}")
    text = rng.choice([
        (f"A {capacity}-liter water tank already holds {current} liters. A pump adds {fill} liters per minute, "
         f"but a crack lets {leak} liters leak out every minute. How many minutes will it take to fill the tank?"),
        (f"A farmer is filling a {capacity}-liter trough that has {current} liters in it. The hose delivers {fill} "
         f"liters a minute while {leak} liters a minute drip out through a leak. After how many minutes is the "
         f"trough full?")])
    steps = [f"The tank gains {s1} liters a minute.", f"It needs {s2} more liters.", f"That takes {s3} minutes."]
    code = f"print(({capacity} - {current}) // ({fill} - {leak}))\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_ages(rng: random.Random) -> Problem:
    a, b, c = people(rng, 3)
    young, k, extra, gap, later = rng.randint(4, 20), rng.randint(2, 3), rng.randint(1, 9), rng.randint(2, 12), \
        rng.randint(3, 15)
    s1, age_a = step(f"{k}*{young}+{extra}")
    s2, age_c = step(f"{age_a}-{gap}")
    s3, now = step(f"{young}+{age_a}+{age_c}")
    s4, ans = step(f"{now}+3*{later}")
    text = (f"{b.name} is {young} years old. {a.name} is {extra} years older than {k} times {b.name}'s age, and "
            f"{c.name} is {gap} years younger than {a.name}. What will the sum of their three ages be in {later} years?")
    steps = [f"{a.name} is {s1} years old.", f"{c.name} is {s2} years old.", f"Now their ages add up to {s3}.",
             f"In {later} years each is {later} years older, so the sum is {s4}."]
    code = f"b = {young}\na = {k} * b + {extra}\nc = a - {gap}\nprint(a + b + c + 3 * {later})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_commission(rng: random.Random) -> Problem:
    (p,) = people(rng)
    base, pct = 100 * rng.randint(15, 40), rng.randint(2, 10)
    sales = [100 * rng.randint(50, 600) for _ in range(3)]
    months = ["April", "May", "June"]
    s1, total_sales = step(f"{sales[0]}+{sales[1]}+{sales[2]}", "$")
    s2, comm = step(f"{total_sales}*{pct}/100", "$")
    s3, bases = step(f"3*{base}", "$")
    s4, ans = step(f"{bases}+{comm}", "$")
    goods = rng.choice(["furniture", "cars", "appliances", "real estate ads", "software licenses"])
    text = rng.choice([
        (f"{p.name} sells {goods}. {p.She} is paid ${base} a month plus a {pct}% commission on {p.his} sales. "
         f"{p.She} sold ${sales[0]} of {goods} in {months[0]}, ${sales[1]} in {months[1]} and ${sales[2]} in "
         f"{months[2]}. How much did {p.she} earn in those three months, in dollars?"),
        (f"A salesperson's pay is a base salary of ${base} per month plus {pct}% of the month's sales. {p.name}'s "
         f"sales were ${sales[0]}, ${sales[1]} and ${sales[2]} over three months. What was {p.his} total pay for "
         f"the three months, in dollars?")])
    steps = [f"{p.She} sold {s1} in all.", f"{p.His} commission is {s2}.", f"{p.His} base pay is {s3}.",
             f"{p.She} earned {s4}."]
    code = f"sales = {sales}\nprint(3 * {base} + sum(sales) * {pct} // 100)\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_series(rng: random.Random) -> Problem:
    (p,) = people(rng)
    while True:
        seasons, eps, minutes = rng.randint(2, 9), rng.randint(6, 24), rng.choice([22, 24, 25, 30, 42, 45, 48, 50, 55, 60])
        if seasons * eps * minutes % 60 == 0:
            break
    s1, episodes = step(f"{seasons}*{eps}")
    s2, total = step(f"{episodes}*{minutes}")
    s3, ans = step(f"{total}/60")
    show = rng.choice(["a cooking show", "a detective series", "a nature documentary series", "a sitcom",
                       "a space drama"])
    text = rng.choice([
        (f"{p.name} wants to watch every episode of {show}. It has {seasons} seasons with {eps} episodes each, "
         f"and every episode is {minutes} minutes long. How many hours will it take {p.her} to watch them all?"),
        (f"{show.capitalize()} ran for {seasons} seasons of {eps} episodes. If each episode lasts {minutes} minutes, "
         f"how many hours of viewing does the whole series add up to?")])
    steps = [f"There are {s1} episodes.", f"They run {s2} minutes.", f"That is {s3} hours."]
    code = f"print({seasons} * {eps} * {minutes} // 60)\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_interest(rng: random.Random) -> Problem:
    (p,) = people(rng)
    principal, rate, years = 100 * rng.randint(10, 300), rng.randint(2, 9), rng.randint(2, 12)
    s1, yearly = step(f"{principal}*{rate}/100", "$")
    s2, interest = step(f"{yearly}*{years}", "$")
    s3, ans = step(f"{principal}+{interest}", "$")
    text = rng.choice([
        (f"{p.name} puts ${principal} in a savings account that pays {rate}% simple interest per year. "
         f"{p.She} makes no other deposits or withdrawals. How many dollars are in the account after {years} years?"),
        (f"{p.name} lends ${principal} to a friend's business at {rate}% simple interest a year, to be repaid with "
         f"interest after {years} years. How many dollars will {p.she} get back in total?")])
    steps = [f"Each year the account earns {s1}.", f"In {years} years it earns {s2}.", f"The balance is {s3}."]
    code = f"print({principal} + {principal} * {rate} * {years} // 100)\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_phone_plan(rng: random.Random) -> Problem:
    (p,) = people(rng)
    base, included, extra = rng.randint(20, 60), rng.choice([5, 8, 10, 15, 20]), rng.randint(5, 15)
    use = [included + rng.randint(-3, 9) for _ in range(3)]
    over = [max(0, u - included) for u in use]
    s1, bases = step(f"3*{base}", "$")
    s2, gb = step(f"{over[0]}+{over[1]}+{over[2]}")
    s3, fees = step(f"{gb}*{extra}", "$")
    s4, ans = step(f"{bases}+{fees}", "$")
    text = (f"{p.name}'s phone plan costs ${base} a month and includes {included} GB of data; each extra GB costs "
            f"${extra}. {p.She} used {use[0]} GB, {use[1]} GB and {use[2]} GB in the last three months. How much did "
            f"{p.she} pay for those three months, in dollars?")
    steps = [f"The monthly fees are {s1}.",
             f"{p.She} went over by {over[0]}, {over[1]} and {over[2]} GB, {s2} GB in all.",
             f"The extra data cost {s3}.", f"{p.She} paid {s4}."]
    code = f"use = {use}\nover = sum(max(0, u - {included}) for u in use)\nprint(3 * {base} + over * {extra})\n"
    return Problem(text, ans, steps, code, "arithmetic")


def w_supplies(rng: random.Random) -> Problem:
    (p,) = people(rng)
    while True:
        students, each, pack = rng.randint(18, 34), rng.randint(2, 6), rng.choice([6, 8, 10, 12, 24])
        if students * each % pack == 0:
            break
    pack_price, books, book_price = rng.randint(2, 9), rng.randint(1, 3), rng.randint(1, 4)
    s1, pencils = step(f"{students}*{each}")
    s2, packs = step(f"{pencils}/{pack}")
    s3, pcost = step(f"{packs}*{pack_price}", "$")
    s4, notebooks = step(f"{students}*{books}")
    s5, ncost = step(f"{notebooks}*{book_price}", "$")
    s6, ans = step(f"{pcost}+{ncost}", "$")
    text = (f"{p.name}, a teacher, is buying supplies for {p.his} class of {students} students. Each student needs {each} "
            f"pencils and {books} notebook{'s' if books > 1 else ''}. Pencils come in packs of {pack} for "
            f"${pack_price} a pack, and notebooks cost ${book_price} each. How much does {p.she} spend, in dollars?")
    steps = [f"The class needs {s1} pencils.", f"That is {s2} packs.", f"The pencils cost {s3}.",
             f"The class needs {s4} notebooks.", f"The notebooks cost {s5}.", f"{p.She} spends {s6}."]
    code = (f"packs = {students} * {each} // {pack}\nprint(packs * {pack_price} + {students} * {books} * "
            f"{book_price})\n")
    return Problem(text, ans, steps, code, "arithmetic")


WORD_PROBLEMS: list[Callable[[random.Random], Problem]] = [
    w_shopping, w_bakery, w_overtime, w_eggs, w_road_trip, w_fundraiser, w_discount, w_ratio, w_reading, w_garden,
    w_inventory, w_savings, w_pizza, w_tank, w_ages, w_commission, w_series, w_interest, w_phone_plan, w_supplies]


# ---------------------------------------------------------------- MATH-style problems: shared pieces
LATEX_PRINT = "print(latex(ans))\n"
FRACTION_PRINT = "print(latex(Rational(ans.numerator, ans.denominator)))\n"


def fr(a: int | str, b: int | str) -> str:
    """An unreduced displayed fraction, as written in a problem."""
    return f"\\frac{{{a}}}{{{b}}}"


def form_hint(ans: sp.Expr) -> str:
    if ans.is_Integer:
        return ""
    if ans.is_Rational:
        return " Express your answer as a common fraction."
    if ans.has(sp.E, sp.exp, sp.log, sp.pi):
        return " Give an exact answer."
    return " Express your answer in simplest radical form."


def ratio(num: int, den: int) -> str:
    """``\\frac{num}{den}``, followed by its lowest terms when they differ."""
    value = sp.Rational(num, den)
    shown = fr(num, den)
    return shown if (value.p, value.q) == (num, den) else f"{shown} = {tex(value)}"


def fac(n: int) -> str:
    """The prime factorization of n in LaTeX: ``2^{3} \\cdot 3 \\cdot 7``."""
    return " \\cdot ".join(f"{p}^{{{e}}}" if e > 1 else str(p) for p, e in sorted(sp.factorint(n).items()))


# ---------------------------------------------------------------- Prealgebra
def m_arith_expr(rng: random.Random) -> Problem:
    a, b, c, d, e = rng.randint(1000, 9999), rng.randint(100, 999), rng.randint(1000, 9999), rng.randint(10, 99), \
        rng.randint(10000, 99999)
    ab, cd = sp.Integer(a) * b, sp.Integer(c) * d
    ans = ab - cd + e
    text = rng.choice([f"Compute ${a} \\times {b} - {c} \\times {d} + {e}$.",
                       f"What is the value of ${a} \\cdot {b} - {c} \\cdot {d} + {e}$?",
                       f"Evaluate ${e} + {a} \\cdot {b} - {c} \\cdot {d}$."])
    steps = [f"Multiplying first, ${a} \\cdot {b} = {ab}$ and ${c} \\cdot {d} = {cd}$.",
             f"Then ${ab} - {cd} + {e} = {ans}$."]
    return Problem(text, ans, steps, f"print({a} * {b} - {c} * {d} + {e})\n", "arithmetic", "Prealgebra", 1)


def m_percent(rng: random.Random) -> Problem:
    while True:
        up, down = rng.randint(5, 95), rng.randint(5, 60)
        unit = 10000 // sp.igcd((100 + up) * (100 - down), 10000)
        if unit <= 400:
            break
    price = unit * rng.randint(max(1, 200 // unit), 20000 // unit)
    raised = sp.Integer(price) * (100 + up) / 100
    ans = raised * (100 - down) / 100
    item = rng.choice(["television", "sofa", "bicycle", "refrigerator", "laptop", "piano"])
    text = (f"A store raises the price of a {item} that costs $\\${price}$ by ${up}\\%$. A month later it lowers the "
            f"new price by ${down}\\%$. What is the final price, in dollars?")
    steps = [f"After the increase the price is ${price} \\cdot {fr(100 + up, 100)} = {tex(raised)}$ dollars.",
             f"After the decrease it is ${tex(raised)} \\cdot {fr(100 - down, 100)} = {ans}$ dollars."]
    code = (f"from fractions import Fraction\nprice = Fraction({price}) * {100 + up} / 100 * {100 - down} / 100\n"
            "print(price)\n")
    return Problem(text, ans, steps, code, "arithmetic", "Prealgebra", 2)


def m_fraction_sum(rng: random.Random) -> Problem:
    while True:
        b, d, f = rng.sample(range(6, 49), 3)
        a, c, e = rng.randint(1, b - 1), rng.randint(1, d - 1), rng.randint(1, f - 1)
        ans = sp.Rational(a, b) + sp.Rational(c, d) - sp.Rational(e, f)
        if not ans.is_Integer:
            break
    lcd = sp.ilcm(b, d, f)
    num = a * (lcd // b) + c * (lcd // d) - e * (lcd // f)
    text = f"Compute ${fr(a, b)} + {fr(c, d)} - {fr(e, f)}$." + form_hint(ans)
    steps = [f"The least common denominator of ${b}$, ${d}$ and ${f}$ is ${lcd}$.",
             (f"So the sum is ${fr(a * (lcd // b), lcd)} + {fr(c * (lcd // d), lcd)} - {fr(e * (lcd // f), lcd)} = "
              f"{ratio(num, lcd)}$.")]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"ans = Fraction({a}, {b}) + Fraction({c}, {d}) - Fraction({e}, {f})\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "arithmetic", "Prealgebra", 2)


def m_mean(rng: random.Random) -> Problem:
    if rng.random() < 0.5:
        while True:
            n, mean, delta = rng.randint(6, 15), rng.randint(20, 200), rng.choice([-9, -7, -5, -4, -3, -2, 2, 3, 5, 8])
            removed = mean - (n - 1) * delta
            if removed > 0:
                break
        new_mean = mean + delta
        ans = sp.Integer(n * mean - (n - 1) * new_mean)
        text = (f"The mean of ${n}$ numbers is ${mean}$. When one of the numbers is removed, the mean of the remaining "
                f"numbers is ${new_mean}$. What number was removed?")
        steps = [f"The ${n}$ numbers add up to ${n} \\cdot {mean} = {n * mean}$.",
                 f"The remaining ${n - 1}$ add up to ${n - 1} \\cdot {new_mean} = {(n - 1) * new_mean}$.",
                 f"So the removed number is ${n * mean} - {(n - 1) * new_mean} = {ans}$."]
        code = f"print({n} * {mean} - {n - 1} * {new_mean})\n"
    else:
        while True:
            k, mean, target = rng.randint(4, 12), rng.randint(60, 90), rng.randint(61, 95)
            need = (k + 1) * target - k * mean
            if target > mean and need <= 100:
                break
        ans = sp.Integer(need)
        text = (f"{people(rng)[0].name} has an average score of ${mean}$ on ${k}$ tests. What score on the next test "
                f"would raise the average to exactly ${target}$?")
        steps = [f"The first ${k}$ scores add up to ${k} \\cdot {mean} = {k * mean}$.",
                 f"An average of ${target}$ over ${k + 1}$ tests needs a total of ${(k + 1) * target}$.",
                 f"So the next score must be ${(k + 1) * target} - {k * mean} = {need}$."]
        code = f"print({k + 1} * {target} - {k} * {mean})\n"
    return Problem(text, ans, steps, code, "arithmetic", "Prealgebra", 2)


# ---------------------------------------------------------------- Algebra
def m_linear(rng: random.Random) -> Problem:
    a, d = rng.sample(range(2, 13), 2)
    b, c, e, f = (rng.randint(1, 40) for _ in range(4))
    ans = sp.solve(sp.Eq(a * (X - b) + c, d * (X + e) - f), X)[0]
    text = f"Solve for $x$: ${a}(x - {b}) + {c} = {d}(x + {e}) - {f}$." + form_hint(ans)
    steps = [f"Expanding both sides gives ${a}x {signed(c - a * b)} = {d}x {signed(d * e - f)}$.",
             f"Collecting terms, ${sp.latex((a - d) * X)} = {d * e - f - c + a * b}$, so $x = {tex(ans)}$."]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"ans = Fraction({a} * {b} - {c} + {d} * {e} - {f}, {a} - {d})\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Algebra", 2 if ans.is_Integer else 3)


def m_quadratic(rng: random.Random) -> Problem:
    while True:
        a, b, c = rng.randint(1, 6), rng.randint(-30, 30), rng.randint(-30, 30)
        disc = b * b - 4 * a * c
        if c != 0 and disc > 0 and not sp.sqrt(disc).is_Integer:
            break
    poly = sp.latex(a * X**2 + b * X + c)
    roots = sorted(sp.solve(a * X**2 + b * X + c, X), key=lambda r: float(r))
    kind = rng.choice(["larger", "squares", "difference"])
    plus_minus, twice = f"{-b} \\pm \\sqrt{{{disc}}}", f"2\\sqrt{{{disc}}}"
    formula = f"By the quadratic formula the roots are $x = {fr(plus_minus, 2 * a)}$."
    if kind == "larger":
        ans = (-b + sp.sqrt(disc)) / (2 * a)
        text = f"Find the larger root of ${poly} = 0$." + form_hint(ans)
        steps = [formula, f"The larger one is ${tex(ans)}$."]
        code = ("from sympy import symbols, solve, latex\nx = symbols('x')\n"
                f"ans = max(solve({a}*x**2 + ({b})*x + ({c}), x), key=float)\n" + LATEX_PRINT)
        level, numeric = 3, roots[1]
    elif kind == "squares":
        ans = sp.Rational(b * b - 2 * a * c, a * a)
        text = f"Let $r$ and $s$ be the roots of ${poly} = 0$. Compute $r^2 + s^2$." + form_hint(ans)
        steps = [f"By Vieta's formulas, $r + s = {tex(sp.Rational(-b, a))}$ and $rs = {tex(sp.Rational(c, a))}$.",
                 f"So $r^2 + s^2 = (r + s)^2 - 2rs = {tex(ans)}$."]
        code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
                f"total, product = Fraction({-b}, {a}), Fraction({c}, {a})\nans = total**2 - 2 * product\n"
                + FRACTION_PRINT)
        level, numeric = 3, roots[0] ** 2 + roots[1] ** 2
    else:
        ans = sp.sqrt(disc) / a
        text = f"What is the positive difference between the two roots of ${poly} = 0$?" + form_hint(ans)
        steps = [formula, f"They differ by ${fr(twice, 2 * a)} = {tex(ans)}$."]
        code = ("from sympy import symbols, solve, latex, simplify\nx = symbols('x')\n"
                f"r, s = solve({a}*x**2 + ({b})*x + ({c}), x)\nans = simplify(abs(r - s))\n" + LATEX_PRINT)
        level, numeric = 4, roots[1] - roots[0]
    return Problem(text, ans, steps, code, "algebra", "Algebra", level, numeric=numeric)


def _equation(coeffs: list[int], names: list[sp.Symbol], rhs: int) -> str:
    return f"{sp.latex(sum(c * v for c, v in zip(coeffs, names)))} = {rhs}"


def m_system(rng: random.Random) -> Problem:
    size = rng.choice([2, 2, 3])
    names = list(sp.symbols("x y z"))[:size]
    while True:
        m = sp.Matrix(size, size, lambda i, j: rng.choice([k for k in range(-9, 10) if k]))
        if m.det() != 0:
            break
    rhs = [rng.randint(-60, 60) for _ in range(size)]
    sol = sp.solve([sp.Eq(sum(m[i, j] * names[j] for j in range(size)), rhs[i]) for i in range(size)], names)
    values = [sol[v] for v in names]
    if size == 2:
        ask, ans = rng.choice([("x + y", values[0] + values[1]), ("x - y", values[0] - values[1]),
                               ("xy", values[0] * values[1])])
    else:
        ask, ans = rng.choice([("x + y + z", sum(values)), ("xyz", values[0] * values[1] * values[2])])
    eqs = [f"${_equation(list(m.row(i)), names, rhs[i])}$" for i in range(size)]
    text = f"If {', '.join(eqs[:-1])} and {eqs[-1]}, what is the value of ${ask}$?" + form_hint(ans)
    shown = ", ".join(f"${v} = {tex(val)}$" for v, val in zip(names, values))
    steps = [f"Solving the system by elimination gives {shown}.", f"Therefore ${ask} = {tex(ans)}$."]
    expr = ask.replace("xyz", "x*y*z").replace("xy", "x*y")
    code = ("from sympy import Matrix, latex\n"
            f"A = Matrix({m.tolist()})\nb = Matrix({rhs})\n{', '.join(map(str, names))} = A.LUsolve(b)\n"
            f"ans = {expr}\n" + LATEX_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Algebra", 3 if size == 2 else 4)


def m_composition(rng: random.Random) -> Problem:
    a, b, c = rng.choice([k for k in range(-6, 7) if k]), rng.randint(-12, 12), rng.randint(-20, 20)
    d, e, k = rng.choice([k for k in range(-9, 10) if k not in (0, 1)]), rng.randint(-15, 15), rng.randint(-9, 9)

    def f(t):
        return a * t * t + b * t + c

    def g(t):
        return d * t + e

    ans = sp.Integer(f(g(k)) - g(f(k)))
    text = (f"Let $f(x) = {sp.latex(a * X**2 + b * X + c)}$ and $g(x) = {sp.latex(d * X + e)}$. "
            f"What is $f(g({k})) - g(f({k}))$?")
    steps = [f"First, $g({k}) = {g(k)}$, so $f(g({k})) = f({g(k)}) = {f(g(k))}$.",
             f"Also $f({k}) = {f(k)}$, so $g(f({k})) = g({f(k)}) = {g(f(k))}$.",
             f"The difference is ${f(g(k))} - ({g(f(k))}) = {ans}$."]
    code = (f"def f(x):\n    return {a} * x**2 + ({b}) * x + ({c})\n\ndef g(x):\n    return {d} * x + ({e})\n\n"
            f"print(f(g({k})) - g(f({k})))\n")
    return Problem(text, ans, steps, code, "algebra", "Algebra", 2)


def m_sequence(rng: random.Random) -> Problem:
    if rng.random() < 0.5:
        first, diff = rng.randint(-50, 50), rng.choice([k for k in range(-9, 16) if k])
        p, q = sorted(rng.sample(range(2, 31), 2))
        n = rng.randint(40, 200)
        tp, tq = first + (p - 1) * diff, first + (q - 1) * diff
        k = sp.Symbol("k", integer=True)
        ans = sp.summation(first + (k - 1) * diff, (k, 1, n))
        text = (f"The ${p}$th term of an arithmetic sequence is ${tp}$ and its ${q}$th term is ${tq}$. What is the "
                f"sum of the first ${n}$ terms of the sequence?")
        step_d = f"{tq} - ({tp})" if q - p == 1 else fr(f"{tq} - ({tp})", q - p)
        steps = [(f"The common difference is ${step_d} = {diff}$, so the first term is "
                 f"${tp} - {p - 1} \\cdot ({diff}) = {first}$."),
                 (f"The sum of the first ${n}$ terms is ${fr(n, 2)}\\left(2 \\cdot ({first}) + {n - 1} \\cdot ({diff})"
                  f"\\right) = {ans}$.")]
        code = (f"d = ({tq} - ({tp})) // ({q} - {p})\nfirst = {tp} - ({p} - 1) * d\n"
                f"print(sum(first + i * d for i in range({n})))\n")
        return Problem(text, ans, steps, code, "algebra", "Algebra", 3)
    a = rng.randint(1, 9)
    r = rng.choice([sp.Integer(2), sp.Integer(3), sp.Integer(-2), sp.Rational(1, 2), sp.Rational(2, 3),
                    sp.Rational(3, 2), sp.Rational(-1, 3), sp.Rational(3, 4)])
    n = rng.randint(6, 15)
    ans = sum(a * r**i for i in range(n))
    terms = ", ".join(tex(a * r**i) for i in range(3))
    text = f"What is the sum of the first ${n}$ terms of the geometric sequence ${terms}, \\ldots$?" + form_hint(ans)
    steps = [f"The first term is ${a}$ and the common ratio is ${tex(r)}$.",
             f"So the sum is ${a} \\cdot \\frac{{1 - ({tex(r)})^{{{n}}}}}{{1 - ({tex(r)})}} = {tex(ans)}$."]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"r = Fraction({r.p}, {r.q})\nans = sum({a} * r**i for i in range({n}))\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Algebra", 3)


# ---------------------------------------------------------------- Intermediate Algebra
def m_vieta(rng: random.Random) -> Problem:
    a, b, c, d = rng.randint(1, 4), rng.randint(-15, 15), rng.randint(-15, 15), rng.choice(
        [k for k in range(-15, 16) if k])
    e1, e2, e3 = sp.Rational(-b, a), sp.Rational(c, a), sp.Rational(-d, a)
    kind = rng.choice(["squares", "reciprocals", "cubes", "shifted"])
    ask, ans, how, level = {
        "squares": ("r^2 + s^2 + t^2", e1**2 - 2 * e2, "(r + s + t)^2 - 2(rs + st + tr)", 3),
        "reciprocals": ("\\frac{1}{r} + \\frac{1}{s} + \\frac{1}{t}", e2 / e3, "\\frac{rs + st + tr}{rst}", 3),
        "cubes": ("r^3 + s^3 + t^3", e1**3 - 3 * e1 * e2 + 3 * e3,
                  "(r + s + t)^3 - 3(r + s + t)(rs + st + tr) + 3rst", 4),
        "shifted": ("(1 + r)(1 + s)(1 + t)", 1 + e1 + e2 + e3, "1 + (r + s + t) + (rs + st + tr) + rst", 3),
    }[kind]
    roots = sp.Poly(a * X**3 + b * X**2 + c * X + d, X).nroots(n=30)
    r, s, t = roots
    numeric = {"squares": r**2 + s**2 + t**2, "reciprocals": 1 / r + 1 / s + 1 / t,
               "cubes": r**3 + s**3 + t**3, "shifted": (1 + r) * (1 + s) * (1 + t)}[kind]
    text = (f"Let $r$, $s$, and $t$ be the roots of ${poly_tex([d, c, b, a])} = 0$. Compute ${ask}$."
            + form_hint(ans))
    steps = [f"By Vieta's formulas, $r + s + t = {tex(e1)}$, $rs + st + tr = {tex(e2)}$, and $rst = {tex(e3)}$.",
             f"Then ${ask} = {how} = {tex(ans)}$."]
    formula = {"squares": "e1**2 - 2*e2", "reciprocals": "e2 / e3", "cubes": "e1**3 - 3*e1*e2 + 3*e3",
               "shifted": "1 + e1 + e2 + e3"}[kind]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"a, b, c, d = {a}, {b}, {c}, {d}\ne1, e2, e3 = Fraction(-b, a), Fraction(c, a), Fraction(-d, a)\n"
            f"ans = {formula}\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", level, numeric=numeric)


def m_remainder(rng: random.Random) -> Problem:
    deg = rng.randint(5, 9)
    coeffs = [rng.randint(-9, 9) for _ in range(deg)] + [rng.choice([k for k in range(-9, 10) if k])]
    poly = sp.Poly(list(reversed(coeffs)), X)
    if rng.random() < 0.4:
        a = rng.choice([k for k in range(-7, 8) if k not in (0, 1, -1)])
        ans = sp.rem(poly.as_expr(), X - a, X)
        text = f"What is the remainder when ${poly_tex(coeffs)}$ is divided by ${sp.latex(X - a)}$?"
        steps = [(f"By the Remainder Theorem, the remainder is the value of the polynomial at $x = {a}$, "
                 f"which is ${ans}$.")]
        code = f"coeffs = {coeffs}\nprint(sum(c * ({a})**i for i, c in enumerate(coeffs)))\n"
        return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", 2)
    a, b = sorted(rng.sample([k for k in range(-4, 5)], 2))
    divisor = sp.expand((X - a) * (X - b))
    ans = sp.rem(poly.as_expr(), divisor, X)
    pa, pb = poly.eval(a), poly.eval(b)
    text = f"Find the remainder when $p(x) = {poly_tex(coeffs)}$ is divided by ${sp.latex(divisor)}$."
    steps = [(f"The remainder has the form $rx + s$, and since ${sp.latex(divisor)} = {sp.latex((X - a) * (X - b))}$, "
             f"it agrees with $p$ at $x = {a}$ and $x = {b}$: $p({a}) = {pa}$ and $p({b}) = {pb}$."),
             (f"So $r = {fr(f'{pb} - ({pa})', b - a)} = {tex(sp.Rational(pb - pa, b - a))}$ and "
              f"$s = {tex(pa - sp.Rational(pb - pa, b - a) * a)}$, giving ${tex(ans)}$.")]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex, symbols\nx = symbols('x')\n"
            f"coeffs = {coeffs}\n"
            "def p(t):\n    return sum(c * t**i for i, c in enumerate(coeffs))\n\n"
            f"r = Fraction(p({b}) - p({a}), {b} - ({a}))\ns = p({a}) - r * ({a})\n"
            "ans = Rational(r.numerator, r.denominator) * x + Rational(s.numerator, s.denominator)\n" + LATEX_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", 4)


def m_telescoping(rng: random.Random) -> Problem:
    m, n = rng.randint(1, 4), rng.randint(20, 300)
    ans = sum(sp.Rational(1, k * (k + m)) for k in range(1, n + 1))
    head = sum(sp.Rational(1, j) for j in range(1, m + 1))
    tail = sum(sp.Rational(1, j) for j in range(n + 1, n + m + 1))
    if sp.Rational(1, m) * (head - tail) != ans:
        raise AssertionError("telescoping identity")
    terms = " + ".join(f"\\frac{{1}}{{{k} \\cdot {k + m}}}" for k in (1, 2, 3))
    text = f"Compute ${terms} + \\dots + \\frac{{1}}{{{n} \\cdot {n + m}}}$." + form_hint(ans)
    first = " + ".join(f"\\frac{{1}}{{{j}}}" for j in range(1, m + 1))
    last = " + ".join(f"\\frac{{1}}{{{j}}}" for j in range(n + 1, n + m + 1))
    steps = [(f"Each term splits as $\\frac{{1}}{{k(k + {m})}} = \\frac{{1}}{{{m}}}\\left(\\frac{{1}}{{k}} - "
             f"\\frac{{1}}{{k + {m}}}\\right)$, so the sum telescopes."),
             f"It equals $\\frac{{1}}{{{m}}}\\left({first} - \\left({last}\\right)\\right) = {tex(ans)}$."]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"ans = sum(Fraction(1, k * (k + {m})) for k in range(1, {n} + 1))\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", 3 if m <= 2 else 4)


def m_floor_sum(rng: random.Random) -> Problem:
    n, m = rng.randint(50, 300), rng.randint(3, 20)
    ans = sum(sp.floor(sp.Rational(k * k, m)) for k in range(1, n + 1))
    squares = n * (n + 1) * (2 * n + 1) // 6
    residues = sum(k * k % m for k in range(1, n + 1))
    text = (f"Compute $\\sum_{{k=1}}^{{{n}}} \\left\\lfloor \\frac{{k^2}}{{{m}}} \\right\\rfloor$.")
    steps = [f"Write $\\left\\lfloor \\frac{{k^2}}{{{m}}} \\right\\rfloor = \\frac{{k^2 - (k^2 \\bmod {m})}}{{{m}}}$.",
             (f"We have $\\sum_{{k=1}}^{{{n}}} k^2 = {squares}$, and since $k^2 \\bmod {m}$ repeats with period ${m}$, "
              f"the remainders add up to ${residues}$."),
             f"So the sum is $\\frac{{{squares} - {residues}}}{{{m}}} = {ans}$."]
    code = f"print(sum(k * k // {m} for k in range(1, {n} + 1)))\n"
    return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", 4)


def m_cubic_values(rng: random.Random) -> Problem:
    values = [rng.randint(-50, 50) for _ in range(3)]
    target = rng.choice([0, 4, 5, 6, -1, -2, 10])
    b, c, d = sp.symbols("b c d")
    sol = sp.solve([k**3 + b * k**2 + c * k + d - v for k, v in zip((1, 2, 3), values)], [b, c, d])
    p = X**3 + sol[b] * X**2 + sol[c] * X + sol[d]
    ans = p.subs(X, target)
    cond = ", ".join(f"p({k}) = {v}" for k, v in zip((1, 2, 3), values))
    text = f"Let $p(x)$ be a monic cubic polynomial with ${cond}$. Find $p({target})$."
    steps = [(f"Let $q(x)$ be the quadratic with $q(1) = {values[0]}$, $q(2) = {values[1]}$, $q(3) = {values[2]}$. "
             f"Then $p(x) - q(x)$ is monic of degree 3 with roots $1, 2, 3$, so $p(x) = (x-1)(x-2)(x-3) + q(x)$."),
             f"Solving for the coefficients gives $p(x) = {sp.latex(sp.expand(p))}$, so $p({target}) = {tex(ans)}$."]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"xs, ys, t = [1, 2, 3], {values}, {target}\n"
            "q = Fraction(0)\nfor i in range(3):\n    term = Fraction(ys[i])\n    for j in range(3):\n"
            "        if j != i:\n            term *= Fraction(t - xs[j], xs[i] - xs[j])\n    q += term\n"
            "ans = (t - 1) * (t - 2) * (t - 3) + q\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "algebra", "Intermediate Algebra", 4)


# ---------------------------------------------------------------- Number Theory
def m_gcd_lcm(rng: random.Random) -> Problem:
    kind = rng.choice(["gcd", "lcm", "both"])
    if kind == "lcm":
        nums = [rng.randint(100, 9999) for _ in range(3)]
        ans = sp.Integer(sp.ilcm(*nums))
        text = f"What is the least common multiple of ${nums[0]}$, ${nums[1]}$, and ${nums[2]}$?"
        steps = [f"The factorizations are {', '.join(f'${n} = {fac(n)}$' for n in nums)}.",
                 f"Taking the highest power of each prime gives ${fac(int(ans))} = {ans}$."]
        code = "from math import gcd\n" + f"ans = 1\nfor n in {nums}:\n    ans = ans * n // gcd(ans, n)\nprint(ans)\n"
        return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)
    while True:
        g, u, v = rng.randint(100, 9999), rng.randint(1000, 99999), rng.randint(1000, 99999)
        if sp.igcd(u, v) == 1 and u != v:
            break
    a, b = g * u, g * v
    ans = sp.Integer(sp.igcd(a, b) if kind == "gcd" else sp.igcd(a, b) + sp.ilcm(a, b))
    euclid, x, y = [], a, b
    while y:
        euclid.append(f"${x} = {x // y} \\cdot {y} + {x % y}$")
        x, y = y, x % y
    steps = [f"By the Euclidean algorithm: {'; '.join(euclid)}.", f"So $\\gcd({a}, {b}) = {x}$."]
    if kind == "gcd":
        text = rng.choice([f"Find the greatest common divisor of ${a}$ and ${b}$.", f"Compute $\\gcd({a}, {b})$."])
        code = f"a, b = {a}, {b}\nwhile b:\n    a, b = b, a % b\nprint(a)\n"
    else:
        text = f"Let $m = \\gcd({a}, {b})$ and $n = \\operatorname{{lcm}}({a}, {b})$. Find $m + n$."
        steps.append(f"Then $\\operatorname{{lcm}}({a}, {b}) = \\frac{{{a} \\cdot {b}}}{{{x}}} = {sp.ilcm(a, b)}$, "
                     f"and the sum is ${ans}$.")
        code = f"from math import gcd\na, b = {a}, {b}\ng = gcd(a, b)\nprint(g + a * b // g)\n"
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 2 if kind == "gcd" else 3)


def m_modpow(rng: random.Random) -> Problem:
    while True:  # no base that is 0 or 1 mod m, nor a units digit that never changes
        a, e = rng.randint(2, 999), rng.randint(100, 10**6)
        m = rng.choice([10, 100, 1000, rng.randint(7, 9999)])
        if a % m not in (0, 1) and (m != 10 or a % 10 not in (5, 6)):
            break
    ans = pow(sp.Integer(a), sp.Integer(e), sp.Integer(m))
    if m == 10 and rng.random() < 0.5:
        text = f"What is the units digit of ${a}^{{{e}}}$?"
    else:
        text = rng.choice([f"What is the remainder when ${a}^{{{e}}}$ is divided by ${m}$?",
                           f"Compute ${a}^{{{e}}} \\bmod {m}$."])
    powers, v, seen = [], 1, {}
    while v not in seen:
        seen[v] = len(powers)
        powers.append(v)
        v = v * a % m
    start, cycle = seen[v], len(powers) - seen[v]
    steps = [(f"The powers of ${a}$ modulo ${m}$ are eventually periodic: from ${a}^{{{start}}}$ on they repeat "
             f"with period ${cycle}$."),
             (f"Since ${e} \\equiv {(e - start) % cycle + start} \\pmod{{{cycle}}}$ and both exponents are at least "
              f"${start}$, ${a}^{{{e}}} \\equiv {a}^{{{(e - start) % cycle + start}}} \\equiv {ans} \\pmod{{{m}}}$.")]
    code = (f"a, e, m = {a}, {e}, {m}\npowers, seen, v = [], {{}}, 1\nwhile v not in seen:\n"
            "    seen[v] = len(powers)\n    powers.append(v)\n    v = v * a % m\n"
            "start = seen[v]\ncycle = len(powers) - start\n"
            "print(powers[e] if e < len(powers) else powers[start + (e - start) % cycle])\n")
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)


def m_congruence(rng: random.Random) -> Problem:
    while True:
        m, a = rng.randint(50, 5000), rng.randint(2, 4999)
        if a % m and sp.igcd(a, m) == 1:
            break
    inv = sp.mod_inverse(a % m, m)
    if rng.random() < 0.5:
        ans = sp.Integer(inv)
        text = f"Find the inverse of ${a}$ modulo ${m}$, as a residue between $0$ and ${m - 1}$, inclusive."
        steps = [(f"Using the extended Euclidean algorithm on ${a}$ and ${m}$, we find ${a} \\cdot {inv} \\equiv 1 "
                 f"\\pmod{{{m}}}$.")]
        code = f"a, m = {a}, {m}\nprint(next(x for x in range(m) if a * x % m == 1))\n"
        return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)
    b = rng.choice([k for k in range(1, m) if k != a % m] or [1])
    ans = sp.Integer(inv * b % m)
    text = f"What is the smallest positive integer $x$ such that ${a}x \\equiv {b} \\pmod{{{m}}}$?"
    steps = [f"Since $\\gcd({a}, {m}) = 1$, ${a}$ has an inverse modulo ${m}$, namely ${inv}$.",
             f"Multiplying both sides by ${inv}$ gives $x \\equiv {inv} \\cdot {b} \\equiv {ans} \\pmod{{{m}}}$."]
    code = f"a, b, m = {a}, {b}, {m}\nprint(next(x for x in range(1, m + 1) if (a * x - b) % m == 0))\n"
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)


def m_crt(rng: random.Random) -> Problem:
    while True:
        mods = sorted(rng.sample(range(3, 41), 3))
        if all(sp.igcd(p, q) == 1 for i, p in enumerate(mods) for q in mods[i + 1:]):
            break
    res = [rng.randint(1, m - 1) for m in mods]
    x, total = (int(v) for v in crt(mods, res))
    ans = sp.Integer(x)
    things = rng.choice(["marbles", "coins", "stamps", "seashells", "trading cards"])
    (p,) = people(rng)
    text = rng.choice([
        (f"What is the smallest positive integer that leaves a remainder of ${res[0]}$ when divided by ${mods[0]}$, "
         f"a remainder of ${res[1]}$ when divided by ${mods[1]}$, and a remainder of ${res[2]}$ when divided by "
         f"${mods[2]}$?"),
        (f"When {p.name} puts {p.his} {things} into groups of ${mods[0]}$, ${res[0]}$ are left over; in groups of "
         f"${mods[1]}$, ${res[1]}$ are left over; and in groups of ${mods[2]}$, ${res[2]}$ are left over. What is the "
         f"smallest number of {things} {p.she} could have?")])
    conds = ", ".join(f"$n \\equiv {r} \\pmod{{{m}}}$" for r, m in zip(res, mods))
    steps = [(f"We need {conds}. The moduli are pairwise relatively prime, so by the Chinese Remainder Theorem "
             f"there is exactly one solution modulo ${total}$."),
             f"Combining the congruences one at a time gives $n \\equiv {ans} \\pmod{{{total}}}$."]
    code = (f"mods, res = {mods}, {res}\n"
            "print(next(n for n in range(1, mods[0] * mods[1] * mods[2] + 1)\n"
            "           if all(n % m == r for m, r in zip(mods, res))))\n")
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 4)


PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]


def m_divisors(rng: random.Random) -> Problem:
    while True:
        primes = sorted(rng.sample(PRIMES, rng.randint(2, 4)))
        exps = [rng.randint(1, 5) for _ in primes]
        n = int(sp.prod(sp.Integer(p) ** e for p, e in zip(primes, exps)))
        if 10**4 <= n <= 10**9:
            break
    kind = rng.choice(["count", "sum", "even", "square"] if 2 in primes else ["count", "sum", "square"])
    counts = " \\cdot ".join(f"({e} + 1)" for e in exps)
    if kind == "count":
        ans, ask = sp.divisor_count(n), "How many positive divisors does"
        how = f"the number of divisors is ${counts} = {sp.divisor_count(n)}$"
        pick, level = "True", 3
    elif kind == "sum":
        ans, ask = sp.divisor_sigma(n), "What is the sum of the positive divisors of"
        parts = " \\cdot ".join(f"\\frac{{{p}^{{{e + 1}}} - 1}}{{{p} - 1}}" for p, e in zip(primes, exps))
        how = f"the sum of the divisors is ${parts} = {sp.divisor_sigma(n)}$"
        pick, level = "True", 4
    elif kind == "even":
        ans = sp.Integer(len([k for k in sp.divisors(n) if k % 2 == 0]))
        ask = "How many positive even divisors does"
        rest = " \\cdot ".join(f"({e} + 1)" for p, e in zip(primes, exps) if p != 2) or "1"
        how = (f"an even divisor takes $2$ to a power from $1$ to ${exps[0]}$, so there are "
               f"${exps[0]} \\cdot {rest} = {ans}$ of them")
        pick, level = "d % 2 == 0", 3
    else:
        ans = sp.Integer(len([k for k in sp.divisors(n) if sp.sqrt(k).is_Integer]))
        ask = "How many positive divisors that are perfect squares does"
        halves = " \\cdot ".join(f"(\\lfloor {e}/2 \\rfloor + 1)" for e in exps)
        how = f"a square divisor uses only even exponents, so there are ${halves} = {ans}$ of them"
        pick, level = "isqrt(d) ** 2 == d", 4
    total = "sum(divisors)" if kind == "sum" else f"sum(1 for d in divisors if {pick})"
    text = f"{ask} ${n}$ have?" if kind != "sum" else f"{ask} ${n}$?"
    steps = [f"The prime factorization is ${n} = {fac(n)}$.", f"So {how}."]
    code = (f"from math import isqrt\nn = {n}\ndivisors = set()\nfor k in range(1, isqrt(n) + 1):\n"
            "    if n % k == 0:\n        divisors.update((k, n // k))\n" + f"print({total})\n")
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", level)


def m_primes(rng: random.Random) -> Problem:
    kind = rng.choice(["sum", "count", "nth", "largest"])
    sieve = "from math import isqrt\n" \
            "def is_prime(n):\n    return n > 1 and all(n % p for p in range(2, isqrt(n) + 1))\n\n"
    if kind == "sum":
        lo = 2 * rng.randint(500, 50000)
        hi = lo + 2 * rng.randint(100, 1500)
        found = list(sp.primerange(lo, hi))
        ans = sp.Integer(sum(found))
        text = f"What is the sum of all prime numbers between ${lo}$ and ${hi}$?"
        steps = [f"There are ${len(found)}$ primes between ${lo}$ and ${hi}$, from ${found[0]}$ to ${found[-1]}$.",
                 f"Their sum is ${ans}$."]
        code = sieve + f"print(sum(n for n in range({lo}, {hi}) if is_prime(n)))\n"
    elif kind == "count":
        n = rng.randint(1000, 60000)
        ans = sp.Integer(sp.primepi(n - 1))
        text = f"How many prime numbers are less than ${n}$?"
        steps = [f"Counting with a sieve of Eratosthenes, there are ${ans}$ primes below ${n}$."]
        code = (f"n = {n}\nsieve = [True] * n\nsieve[0] = sieve[1] = False\nfor i in range(2, int(n**0.5) + 1):\n"
                "    if sieve[i]:\n        sieve[i*i::i] = [False] * len(sieve[i*i::i])\nprint(sum(sieve))\n")
    elif kind == "nth":
        k = rng.randint(100, 3000)
        ans = sp.Integer(sp.prime(k))
        text = f"What is the ${k}$th prime number?"
        steps = [f"Listing primes in order (for example with a sieve), the ${k}$th one is ${ans}$."]
        code = (f"k, n = {k}, 30000\nsieve = [True] * n\nsieve[0] = sieve[1] = False\nfor i in range(2, int(n**0.5) + 1):\n"
                "    if sieve[i]:\n        sieve[i*i::i] = [False] * len(sieve[i*i::i])\n"
                "print([i for i in range(n) if sieve[i]][k - 1])\n")
    else:
        found = sorted(rng.sample(list(sp.primerange(100, 5000)), 3))
        n = found[0] * found[1] * found[2] * rng.choice([1, 2, 4, 6, 9, 10])
        ans = sp.Integer(max(sp.factorint(n)))
        text = f"What is the largest prime factor of ${n}$?"
        steps = [f"Factoring, ${n} = {fac(n)}$.", f"The largest prime factor is ${ans}$."]
        code = (f"n, p, largest = {n}, 2, 1\nwhile p * p <= n:\n    while n % p == 0:\n        largest, n = p, n // p\n"
                "    p += 1\nprint(max(largest, n) if n > 1 else largest)\n")
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)


def m_digits(rng: random.Random) -> Problem:
    kind = rng.choice(["power", "factorial", "zeros", "length"])
    if kind == "power":
        base, e = rng.choice([2, 3, 7]), rng.randint(50, 400)
        value = sp.Integer(base) ** e
        ans = sp.Integer(sum(base_digits(value, 10)[1:]))
        text = f"What is the sum of the digits of ${base}^{{{e}}}$?"
        steps = [f"${base}^{{{e}}}$ has ${len(str(value))}$ digits; adding them up gives ${ans}$."]
        code = f"print(sum(int(ch) for ch in str({base} ** {e})))\n"
        level = 3
    elif kind == "factorial":
        n = rng.randint(20, 120)
        value = sp.factorial(n)
        ans = sp.Integer(sum(base_digits(value, 10)[1:]))
        text = f"What is the sum of the digits of ${n}!$?"
        steps = [f"${n}!$ has ${len(str(value))}$ digits; adding them up gives ${ans}$."]
        code = f"import math\nprint(sum(int(ch) for ch in str(math.factorial({n}))))\n"
        level = 3
    elif kind == "zeros":
        n = rng.randint(100, 1000)  # n! must stay under the 4300-digit str() limit
        terms = [sp.floor(sp.Rational(n, 5**k)) for k in range(1, 8) if 5**k <= n]
        ans = sp.Integer(sum(terms))
        text = f"How many zeros are at the end of ${n}!$ when it is written out in base $10$?"
        shown = " + ".join(f"\\left\\lfloor \\frac{{{n}}}{{{5**k}}} \\right\\rfloor" for k in range(1, len(terms) + 1))
        steps = ["Each trailing zero comes from a factor $10 = 2 \\cdot 5$, and factors of $5$ are scarcer.",
                 f"The number of factors of $5$ in ${n}!$ is ${shown} = {' + '.join(map(str, terms))} = {ans}$."]
        code = f"import math\ns = str(math.factorial({n}))\nprint(len(s) - len(s.rstrip('0')))\n"
        level = 2
    else:
        base, e = rng.randint(2, 99), rng.randint(20, 400)
        ans = sp.Integer(len(str(sp.Integer(base) ** e)))
        text = f"How many digits does ${base}^{{{e}}}$ have when written in base $10$?"
        steps = [f"The number of digits is $\\lfloor {e} \\log_{{10}} {base} \\rfloor + 1 = {ans}$."]
        code = f"print(len(str({base} ** {e})))\n"
        level = 3
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", level)


def m_base(rng: random.Random) -> Problem:
    b = rng.randint(2, 9)
    kind = rng.choice(["to", "from", "sum"])
    if kind == "to":
        n = rng.randint(300, 99999)
        digits = "".join(map(str, base_digits(n, b)[1:]))
        ans = sp.Integer(int(digits))
        text = (f"Express ${n}$ in base ${b}$. (Give just the digits, without a base subscript.)")
        steps = [(f"Repeatedly dividing by ${b}$ and reading the remainders from last to first gives "
                 f"${n} = {digits}_{{{b}}}$.")]
        code = (f"n, b, out = {n}, {b}, ''\nwhile n:\n    n, r = divmod(n, b)\n    out = str(r) + out\nprint(out)\n")
        level = 2
    elif kind == "from":
        digits = str(rng.randint(1, b - 1)) + "".join(str(rng.randint(0, b - 1)) for _ in range(rng.randint(4, 7)))
        ans = sp.Integer(sum(int(d) * sp.Integer(b) ** i for i, d in enumerate(reversed(digits))))
        text = f"What is ${digits}_{{{b}}}$ in base $10$?"
        expansion = " + ".join(f"{d} \\cdot {b}^{{{i}}}" for i, d in reversed(list(enumerate(reversed(digits)))))
        steps = [f"${digits}_{{{b}}} = {expansion} = {ans}$."]
        code = f"print(int('{digits}', {b}))\n"
        level = 2
    else:
        u, v = rng.randint(b**3, b**6), rng.randint(b**3, b**6)
        du, dv = ("".join(map(str, base_digits(k, b)[1:])) for k in (u, v))
        digits = "".join(map(str, base_digits(u + v, b)[1:]))
        ans = sp.Integer(int(digits))
        text = (f"Find ${du}_{{{b}}} + {dv}_{{{b}}}$. Express your answer in base ${b}$ (give just the digits, "
                f"without a base subscript).")
        steps = [f"In base $10$ these are ${u}$ and ${v}$, whose sum is ${u + v}$.",
                 f"Converting back, ${u + v} = {digits}_{{{b}}}$."]
        code = (f"n, b, out = int('{du}', {b}) + int('{dv}', {b}), {b}, ''\n"
                "while n:\n    n, r = divmod(n, b)\n    out = str(r) + out\nprint(out)\n")
        level = 3
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", level)


def m_totient(rng: random.Random) -> Problem:
    n = rng.randint(1000, 100000)
    ans = sp.Integer(sp.totient(n))
    parts = " \\cdot ".join(f"\\left(1 - \\frac{{1}}{{{p}}}\\right)" for p in sorted(sp.factorint(n)))
    text = rng.choice([f"How many positive integers less than or equal to ${n}$ are relatively prime to ${n}$?",
                       f"Compute $\\phi({n})$, where $\\phi$ is Euler's totient function."])
    steps = [f"Since ${n} = {fac(n)}$, $\\phi({n}) = {n} {parts} = {ans}$."]
    code = f"from math import gcd\nn = {n}\nprint(sum(1 for k in range(1, n + 1) if gcd(k, n) == 1))\n"
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 3)


def m_period(rng: random.Random) -> Problem:
    while True:
        n = rng.choice(list(sp.primerange(7, 3000))) if rng.random() < 0.7 else rng.randint(7, 3000)
        if sp.igcd(n, 10) == 1:
            break
    ans = sp.Integer(sp.n_order(10, n))
    text = f"How many digits are in the repeating block of the decimal expansion of $\\frac{{1}}{{{n}}}$?"
    steps = [(f"Since $\\gcd({n}, 10) = 1$, the decimal of $\\frac{{1}}{{{n}}}$ is purely periodic, and its period is "
             f"the order of $10$ modulo ${n}$: the least $k$ with $10^k \\equiv 1 \\pmod{{{n}}}$."),
             f"That order is ${ans}$."]
    code = f"n, r, k = {n}, 10 % {n}, 1\nwhile r != 1:\n    r, k = r * 10 % n, k + 1\nprint(k)\n"
    return Problem(text, ans, steps, code, "number_theory", "Number Theory", 4)


# ---------------------------------------------------------------- Counting & Probability: counting
def m_binomial(rng: random.Random) -> Problem:
    if rng.random() < 0.4:
        n = rng.randint(20, 60)
        k = rng.randint(3, n // 2)
        ans = sp.binomial(n, k)
        text = rng.choice([f"Compute $\\dbinom{{{n}}}{{{k}}}$.",
                           f"In how many ways can a committee of ${k}$ be chosen from a club of ${n}$ members?"])
        steps = [f"$\\dbinom{{{n}}}{{{k}}} = \\frac{{{n}!}}{{{k}!\\,{n - k}!}} = {ans}$."]
        return Problem(text, ans, steps, f"import math\nprint(math.comb({n}, {k}))\n", "combinatorics",
                       "Counting & Probability", 2)
    a, b = rng.choice([k for k in range(-5, 6) if k]), rng.choice([k for k in range(-5, 6) if k])
    n = rng.randint(6, 15)
    k = rng.randint(2, n - 2)
    ans = sp.expand((a * X + b) ** n).coeff(X, k)
    text = f"What is the coefficient of $x^{{{k}}}$ in the expansion of $({sp.latex(a * X + b)})^{{{n}}}$?"
    steps = [f"By the Binomial Theorem the $x^{{{k}}}$ term is $\\dbinom{{{n}}}{{{k}}} ({a}x)^{{{k}}} ({b})^{{{n - k}}}$.",
             f"Its coefficient is ${sp.binomial(n, k)} \\cdot ({a})^{{{k}}} \\cdot ({b})^{{{n - k}}} = {ans}$."]
    code = f"import math\nprint(math.comb({n}, {k}) * ({a}) ** {k} * ({b}) ** {n - k})\n"
    return Problem(text, ans, steps, code, "combinatorics", "Counting & Probability", 3)


def m_arrangements(rng: random.Random) -> Problem:
    n = rng.randint(5, 8)
    group = [p.name for p in people(rng, n)]
    a, b, c = group[:3]
    f, g = sp.factorial(n), sp.factorial(n - 1)
    row = f"{', '.join(group[:-1])} and {group[-1]} line up in a row for a photo."
    table = f"{', '.join(group[:-1])} and {group[-1]} sit around a round table; seatings that are rotations of " \
            "each other count as the same."
    kinds = {
        "apart": (row + f" In how many orders can they stand if {a} and {b} refuse to stand next to each other?",
                  f - 2 * g, (f"There are ${n}! = {f}$ orders in all. Gluing {a} and {b} into one block (in $2$ "
                  f"orders) gives $2 \\cdot {n - 1}! = {2 * g}$ orders with them together, so ${f} - {2 * g} = {f - 2 * g}$"
                  " orders keep them apart."), "abs(p.index(0) - p.index(1)) != 1", 3),
        "together": (row + f" In how many orders can they stand if {a} and {b} must stand next to each other?",
                     2 * g, (f"Treat {a} and {b} as one block, which can be ordered in $2$ ways; the block and the "
                     f"other ${n - 2}$ people can be arranged in ${n - 1}! = {g}$ ways, for $2 \\cdot {g} = {2 * g}$."),
                     "abs(p.index(0) - p.index(1)) == 1", 3),
        "left": (row + f" In how many orders can they stand if {a} must be somewhere to the left of {b}?",
                 f / 2, f"By symmetry exactly half of the ${n}! = {f}$ orders have {a} left of {b}: ${f / 2}$.",
                 "p.index(0) < p.index(1)", 2),
        "ends": (row + f" In how many orders can they stand if {a} may not stand at either end?",
                 (n - 2) * g, (f"{a} can take any of the ${n - 2}$ middle spots and the others can fill the rest in "
                 f"${n - 1}! = {g}$ ways, for ${(n - 2) * g}$."), f"p.index(0) not in (0, {n - 1})", 3),
        "trio": (row + f" In how many orders can they stand if {a}, {b} and {c} must stand together?",
                 6 * sp.factorial(n - 2), (f"The three form a block that can be ordered in $3! = 6$ ways; the block "
                 f"and the other ${n - 3}$ people can be arranged in ${n - 2}! = {sp.factorial(n - 2)}$ ways, for "
                 f"${6 * sp.factorial(n - 2)}$."), ("max(p.index(i) for i in range(3)) - min(p.index(i) for i in "
                 "range(3)) == 2"), 4),
        "circle": (table + f" In how many ways can they sit if {a} and {b} must sit next to each other?",
                   2 * sp.factorial(n - 2), (f"Treat {a} and {b} as a block (in $2$ orders); arranging ${n - 1}$ units "
                   f"around a circle gives $({n - 2})! = {sp.factorial(n - 2)}$ ways, for ${2 * sp.factorial(n - 2)}$."),
                   None, 4),
    }
    kind = rng.choice(sorted(kinds))
    text, ans, explain, test, level = kinds[kind]
    if test is None:  # circular: count linear orders with the pair adjacent around the circle, then divide by n
        code = (f"from itertools import permutations\nn = {n}\ncount = sum(1 for p in permutations(range(n))\n"
                "            if (p.index(0) - p.index(1)) % n in (1, n - 1))\nprint(count // n)\n")
    else:
        code = f"from itertools import permutations\nprint(sum(1 for p in permutations(range({n})) if {test}))\n"
    return Problem(text, sp.Integer(ans), [explain], code, "combinatorics", "Counting & Probability", level)


WORDS = ["BANANA", "LETTER", "COFFEE", "BALLOON", "PEPPER", "SUCCESS", "PARALLEL", "GRAMMAR", "KANGAROO", "CHEESE",
         "SEASONS", "MAMMAL", "ALABAMA", "PROPERTY", "BUBBLE", "TOMORROW", "PAPAYA", "CANNON", "COMMITTEE",
         "MISSISSIPPI", "STATISTICS", "MATHEMATICS", "ABRACADABRA", "BOOKKEEPER", "TENNESSEE", "ASSESSMENT",
         "REFERENCE", "ENGINEERING", "POSSESSES", "CINCINNATI", "INDEPENDENCE", "PROBABILITY", "BOOKSTORE"]
VOWELS = "AEIOU"


def _multiset(word: str) -> dict[str, int]:
    return {ch: word.count(ch) for ch in sorted(set(word))}


def _arrangements(counts) -> sp.Integer:
    return sp.factorial(sum(counts)) / sp.prod([sp.factorial(c) for c in counts])


def m_words(rng: random.Random) -> Problem:
    word = rng.choice(WORDS)
    counts = _multiset(word)
    kinds = ["all", "strings"] + (["vowels"] if len(word) <= 8 else [])
    kind = rng.choice(kinds)
    denom = " \\cdot ".join(f"{c}!" for c in counts.values() if c > 1) or "1"
    if kind == "all":
        ans = _arrangements(list(counts.values()))
        text = rng.choice([f"How many distinct arrangements of the letters in the word {word} are there?",
                           f"In how many distinct ways can the letters of {word} be arranged?"])
        steps = [(f"{word} has ${len(word)}$ letters with repeats "
                 f"{', '.join(f'{ch} ({c} times)' for ch, c in counts.items() if c > 1)}."),
                 f"So there are $\\frac{{{len(word)}!}}{{{denom}}} = {ans}$ arrangements."]
        code = (f"import math\nword = '{word}'\nans = math.factorial(len(word))\nfor ch in sorted(set(word)):\n"
                "    ans //= math.factorial(word.count(ch))\nprint(ans)\n")
        level = 2
    elif kind == "vowels":
        vow = [c for ch, c in counts.items() if ch in VOWELS]
        con = [c for ch, c in counts.items() if ch not in VOWELS]
        if sum(vow) < 2 or not con:
            return m_words(rng)
        ans = _arrangements(con + [1]) * _arrangements(vow)
        text = f"How many distinct arrangements of the letters of {word} have all the vowels next to each other?"
        steps = [(f"Glue the ${sum(vow)}$ vowels into one block. The block and the ${sum(con)}$ consonants can be "
                 f"arranged in ${_arrangements(con + [1])}$ distinct ways, and the vowels inside the block in "
                 f"${_arrangements(vow)}$ distinct ways."),
                 f"That gives ${_arrangements(con + [1])} \\cdot {_arrangements(vow)} = {ans}$ arrangements."]
        code = (f"from itertools import permutations\nwords = set(permutations('{word}'))\n"
                "def together(w):\n    idx = [i for i, ch in enumerate(w) if ch in 'AEIOU']\n"
                "    return idx[-1] - idx[0] == len(idx) - 1\n\nprint(sum(1 for w in words if together(w)))\n")
        level = 4
    else:
        k = rng.randint(3, 5)
        t = sp.Symbol("t")
        egf = sp.expand(sp.prod([sum(t**j / sp.factorial(j) for j in range(c + 1)) for c in counts.values()]))
        ans = sp.factorial(k) * egf.coeff(t, k)
        text = (f"How many distinct ${k}$-letter strings can be formed from the letters of {word}, using each letter "
                f"at most as many times as it appears in {word}?")
        steps = [(f"Count by the pattern of repeated letters, or equivalently take ${k}!$ times the coefficient of "
                 f"$t^{{{k}}}$ in $\\prod_{{\\text{{letters}}}} \\sum_{{j=0}}^{{m}} \\frac{{t^j}}{{j!}}$, where $m$ is "
                 f"each letter's multiplicity."), f"This gives ${ans}$."]
        code = f"from itertools import permutations\nprint(len(set(permutations('{word}', {k}))))\n"
        level = 4
    return Problem(text, sp.Integer(ans), steps, code, "combinatorics", "Counting & Probability", level)


def _paths(p: tuple[int, int], q: tuple[int, int]) -> sp.Integer:
    dx, dy = q[0] - p[0], q[1] - p[1]
    return sp.binomial(dx + dy, dx) if dx >= 0 and dy >= 0 else sp.Integer(0)


def m_lattice(rng: random.Random) -> Problem:
    a, b = rng.randint(5, 14), rng.randint(5, 14)
    start, end = (0, 0), (a, b)
    pts = [(rng.randint(1, a - 1), rng.randint(1, b - 1)) for _ in range(2)]
    kind = rng.choice(["all", "through", "avoid", "avoid2"])
    total = _paths(start, end)
    head = (f"A path from $(0,0)$ to $({a},{b})$ moves one unit at a time, either right or up. ")
    if kind == "all":
        ans, blocked = total, []
        text = head + "How many such paths are there?"
        steps = [(f"A path is a sequence of ${a}$ rights and ${b}$ ups, so there are $\\dbinom{{{a + b}}}{{{a}}} = "
                 f"{ans}$ paths.")]
        level = 2
    elif kind == "through":
        p = pts[0]
        ans, blocked = _paths(start, p) * _paths(p, end), None
        text = head + f"How many such paths pass through the point ${p}$?"
        steps = [(f"There are $\\dbinom{{{p[0] + p[1]}}}{{{p[0]}}} = {_paths(start, p)}$ paths to ${p}$ and "
                 f"$\\dbinom{{{a - p[0] + b - p[1]}}}{{{a - p[0]}}} = {_paths(p, end)}$ from there, so "
                 f"${_paths(start, p)} \\cdot {_paths(p, end)} = {ans}$.")]
        level = 3
    elif kind == "avoid" or pts[0] == pts[1]:
        p = pts[0]
        through = _paths(start, p) * _paths(p, end)
        ans, blocked = total - through, [p]
        text = head + f"How many such paths avoid the point ${p}$?"
        steps = [(f"There are $\\dbinom{{{a + b}}}{{{a}}} = {total}$ paths in all, and ${through}$ of them pass through "
                 f"${p}$."), f"So ${total} - {through} = {ans}$ avoid it."]
        level = 3
    else:
        p, q = sorted(pts)
        both = _paths(start, p) * _paths(p, q) * _paths(q, end)
        via_p, via_q = _paths(start, p) * _paths(p, end), _paths(start, q) * _paths(q, end)
        ans, blocked = total - via_p - via_q + both, [p, q]
        text = head + f"How many such paths avoid both of the points ${p}$ and ${q}$?"
        steps = [(f"There are ${total}$ paths in all; ${via_p}$ pass through ${p}$, ${via_q}$ pass through ${q}$, and "
                 f"${both}$ pass through both."),
                 f"By inclusion-exclusion, ${total} - {via_p} - {via_q} + {both} = {ans}$ avoid both."]
        level = 5
    if blocked is None:
        code = (f"def paths(x0, y0, x1, y1):\n    ways = [[0] * (y1 - y0 + 1) for _ in range(x1 - x0 + 1)]\n"
                "    for i in range(x1 - x0 + 1):\n        for j in range(y1 - y0 + 1):\n"
                "            ways[i][j] = 1 if i == 0 or j == 0 else ways[i - 1][j] + ways[i][j - 1]\n"
                f"    return ways[-1][-1]\n\nprint(paths(0, 0, {p[0]}, {p[1]}) * paths({p[0]}, {p[1]}, {a}, {b}))\n")
    else:
        code = (f"blocked = {sorted(blocked)}\nways = [[0] * ({b} + 1) for _ in range({a} + 1)]\n"
                f"for i in range({a} + 1):\n    for j in range({b} + 1):\n        if (i, j) in blocked:\n"
                "            continue\n        if i == 0 and j == 0:\n            ways[i][j] = 1\n        else:\n"
                "            ways[i][j] = (ways[i - 1][j] if i else 0) + (ways[i][j - 1] if j else 0)\n"
                f"print(ways[{a}][{b}])\n")
    return Problem(text, ans, steps, code, "combinatorics", "Counting & Probability", level)


def m_committee(rng: random.Random) -> Problem:
    men, women, size = rng.randint(5, 15), rng.randint(5, 15), rng.randint(3, 7)
    at_least = rng.randint(1, min(3, size - 1))
    terms = [(i, sp.binomial(women, i) * sp.binomial(men, size - i)) for i in range(at_least, size + 1)
             if i <= women and size - i <= men]
    ans = sum(t for _, t in terms)
    group = rng.choice(["a club", "a school board", "a volunteer group", "a department"])
    text = (f"{group.capitalize()} has ${men}$ men and ${women}$ women. In how many ways can a committee of ${size}$ "
            f"people be chosen if it must include at least ${at_least}$ wom{'a' if at_least == 1 else 'e'}n?")
    shown = " + ".join(f"\\dbinom{{{women}}}{{{i}}}\\dbinom{{{men}}}{{{size - i}}}" for i, _ in terms)
    steps = [(f"Add up the committees by their number of women, from ${terms[0][0]}$ to ${terms[-1][0]}$: "
             f"${shown} = {ans}$.")]
    code = (f"import math\nm, w, k, j = {men}, {women}, {size}, {at_least}\n"
            "too_few = sum(math.comb(w, i) * math.comb(m, k - i) for i in range(j))\n"
            "print(math.comb(m + w, k) - too_few)\n")
    return Problem(text, ans, steps, code, "combinatorics", "Counting & Probability", 3)


def m_inclusion_exclusion(rng: random.Random) -> Problem:
    n = rng.randint(1000, 100000)
    a, b, c = rng.sample(range(2, 16), 3)

    def cnt(*ds: int) -> sp.Integer:
        return sp.floor(sp.Rational(n, sp.ilcm(*ds) if len(ds) > 1 else ds[0]))

    either = cnt(a) + cnt(b) - cnt(a, b)
    with_c = cnt(a, c) + cnt(b, c) - cnt(a, b, c)
    ans = either - with_c
    text = (f"How many integers from $1$ to ${n}$, inclusive, are divisible by ${a}$ or by ${b}$ but not by ${c}$?")
    steps = [(f"By inclusion-exclusion, ${cnt(a)} + {cnt(b)} - {cnt(a, b)} = {either}$ of the numbers are divisible "
             f"by ${a}$ or ${b}$."),
             (f"Of these, ${cnt(a, c)} + {cnt(b, c)} - {cnt(a, b, c)} = {with_c}$ are also divisible by ${c}$ (count "
              f"multiples of $\\operatorname{{lcm}}({a},{c}) = {sp.ilcm(a, c)}$, $\\operatorname{{lcm}}({b},{c}) = "
              f"{sp.ilcm(b, c)}$ and $\\operatorname{{lcm}}({a},{b},{c}) = {sp.ilcm(a, b, c)}$)."),
             f"That leaves ${either} - {with_c} = {ans}$ numbers."]
    code = f"print(sum(1 for k in range(1, {n} + 1) if (k % {a} == 0 or k % {b} == 0) and k % {c} != 0))\n"
    return Problem(text, ans, steps, code, "combinatorics", "Counting & Probability", 3)


def m_bounded(rng: random.Random) -> Problem:
    while True:
        k, cap, n = rng.randint(3, 6), rng.randint(3, 12), rng.randint(10, 40)
        positive = rng.random() < 0.4
        if k * cap > n and (not positive or n >= k):
            break
    lo = 1 if positive else 0
    free, width = n - lo * k, cap - lo + 1  # shift to x_i >= 0, x_i <= cap - lo
    terms = [(j, (-1) ** j * sp.binomial(k, j) * sp.binomial(free - j * width + k - 1, k - 1))
             for j in range(k + 1) if free - j * width >= 0]
    ans = sum(t for _, t in terms)
    what = rng.choice(["identical candies", "identical pencils", "identical stickers", "identical marbles"])
    rule = f"each child gets at least $1$ and at most ${cap}$" if positive else f"no child gets more than ${cap}$"
    text = f"In how many ways can ${n}$ {what} be given to ${k}$ children so that {rule}?"
    shown = " ".join(f"{'+' if j % 2 == 0 else '-'} \\dbinom{{{k}}}{{{j}}}\\dbinom{{{free - j * width + k - 1}}}"
                     f"{{{k - 1}}}" for j, _ in terms).lstrip("+ ")
    steps = [(f"{'Give each child one first; then we' if positive else 'We'} count solutions of "
             f"$y_1 + \\cdots + y_{k} = {free}$ in nonnegative integers with each $y_i \\le {width - 1}$."),
             f"By inclusion-exclusion on the children who get more than ${width - 1}$, the count is ${shown} = {ans}$."]
    code = (f"n, k, lo, hi = {n}, {k}, {lo}, {cap}\nways = [1] + [0] * n\nfor _ in range(k):\n"
            "    ways = [sum(ways[s - x] for x in range(lo, hi + 1) if s - x >= 0) for s in range(n + 1)]\n"
            "print(ways[n])\n")
    return Problem(text, ans, steps, code, "combinatorics", "Counting & Probability", 5 if positive else 4)


# ---------------------------------------------------------------- Counting & Probability: probability
DICE = [(k, s) for k in (2, 3, 4, 5) for s in (4, 6, 8, 10, 12, 20) if s**k <= 20000]


def m_dice(rng: random.Random) -> Problem:
    k, s = rng.choice(DICE)
    total = sp.Integer(s) ** k
    gen = sp.Poly(sp.expand(sum(X**i for i in range(1, s + 1)) ** k), X)
    kind = rng.choice(["equal", "atleast", "max"])
    dice = f"${k}$ fair ${s}$-sided dice (numbered $1$ to ${s}$)"
    if kind == "max":
        m = rng.randint(2, s)
        ways = sp.Integer(m) ** k - sp.Integer(m - 1) ** k
        ans = ways / total
        text = f"If {dice} are rolled, what is the probability that the largest number rolled is ${m}$?"
        steps = [(f"All rolls are at most ${m}$ in ${m}^{k}$ of the ${s}^{k} = {total}$ outcomes, and at most ${m - 1}$ in "
                 f"${m - 1}^{k}$ of them, so ${ways}$ outcomes have maximum exactly ${m}$."),
                 f"The probability is ${ratio(ways, total)}$."]
        cond = f"max(r) == {m}"
    else:
        t = rng.randint(k + 1, k * s - 1)
        if kind == "equal":
            ways = gen.coeff_monomial(X**t)
            text = f"If {dice} are rolled, what is the probability that the sum of the numbers rolled is ${t}$?"
            cond = f"sum(r) == {t}"
        else:
            ways = sum(gen.coeff_monomial(X**j) for j in range(t, k * s + 1))
            text = f"If {dice} are rolled, what is the probability that the sum of the numbers rolled is at least ${t}$?"
            cond = f"sum(r) >= {t}"
        ans = ways / total
        steps = [(f"There are ${s}^{k} = {total}$ equally likely outcomes. The number with the required sum is a "
                 f"coefficient of $(x + x^2 + \\cdots + x^{{{s}}})^{k}$, which gives ${ways}$ outcomes."),
                 f"The probability is ${ratio(ways, total)}$."]
    text += form_hint(ans)
    code = (f"from fractions import Fraction\nfrom itertools import product\nfrom sympy import Rational, latex\n"
            f"rolls = list(product(range(1, {s} + 1), repeat={k}))\n"
            f"ans = Fraction(sum(1 for r in rolls if {cond}), len(rolls))\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 3 if kind != "atleast" else 4)


def m_coins(rng: random.Random) -> Problem:
    if rng.random() < 0.6:
        n = rng.randint(6, 16)
        k = rng.randint(1, n - 1)
        atleast = rng.random() < 0.5
        ways = sum(sp.binomial(n, j) for j in range(k, n + 1)) if atleast else sp.binomial(n, k)
        ans = ways / sp.Integer(2) ** n
        text = (f"A fair coin is flipped ${n}$ times. What is the probability of getting "
                f"{'at least' if atleast else 'exactly'} ${k}$ heads?" + form_hint(ans))
        how = (f"\\sum_{{j={k}}}^{{{n}}} \\dbinom{{{n}}}{{j}} = {ways}" if atleast
               else f"\\dbinom{{{n}}}{{{k}}} = {ways}")
        steps = [f"Each of the $2^{{{n}}} = {2**n}$ sequences is equally likely, and ${how}$ of them qualify.",
                 f"The probability is ${ratio(ways, 2**n)}$."]
        cond = f"sum(f) >= {k}" if atleast else f"sum(f) == {k}"
        code = (f"from fractions import Fraction\nfrom itertools import product\nfrom sympy import Rational, latex\n"
                f"flips = list(product((0, 1), repeat={n}))\nans = Fraction(sum(1 for f in flips if {cond}), len(flips))\n"
                + FRACTION_PRINT)
        return Problem(text, ans, steps, code, "probability", "Counting & Probability", 3)
    p = rng.choice([sp.Rational(1, 3), sp.Rational(2, 5), sp.Rational(3, 4), sp.Rational(1, 4), sp.Rational(2, 3),
                    sp.Rational(3, 5), sp.Rational(1, 6)])
    n = rng.randint(4, 10)
    k = rng.randint(1, n - 1)
    ans = sp.binomial(n, k) * p**k * (1 - p) ** (n - k)
    text = (f"A biased coin lands heads with probability ${tex(p)}$. If it is flipped ${n}$ times, what is the "
            f"probability that it lands heads exactly ${k}$ times?" + form_hint(ans))
    steps = [(f"The probability is $\\dbinom{{{n}}}{{{k}}} \\left({tex(p)}\\right)^{{{k}}} \\left({tex(1 - p)}\\right)"
             f"^{{{n - k}}} = {tex(ans)}$.")]
    code = (f"from fractions import Fraction\nfrom itertools import product\nfrom sympy import Rational, latex\n"
            f"p = Fraction({p.p}, {p.q})\nans = Fraction(0)\nfor f in product((0, 1), repeat={n}):\n"
            f"    if sum(f) == {k}:\n        ans += p ** {k} * (1 - p) ** {n - k}\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 4)


def m_urn(rng: random.Random) -> Problem:
    counts = {"red": rng.randint(2, 9), "blue": rng.randint(2, 9), "green": rng.randint(2, 9)}
    total = sum(counts.values())
    thing = rng.choice(["marbles", "balls", "socks", "beads"])
    where = {"marbles": "a bag", "balls": "an urn", "socks": "a drawer", "beads": "a jar"}[thing]
    kind = rng.choice(["exactly", "same", "each"])
    k = 3 if kind == "each" else rng.randint(2, 4)
    all_ways = sp.binomial(total, k)
    r, b, g = counts["red"], counts["blue"], counts["green"]
    if kind == "exactly":
        j = rng.randint(1, min(k, r))
        good = sp.binomial(r, j) * sp.binomial(total - r, k - j)
        ask = f"exactly ${j}$ of them are red"
        how = f"\\dbinom{{{r}}}{{{j}}}\\dbinom{{{total - r}}}{{{k - j}}} = {good}"
        cond = f"sum(1 for c in pick if c == 'red') == {j}"
    elif kind == "same":
        good = sp.binomial(r, k) + sp.binomial(b, k) + sp.binomial(g, k)
        ask = "they are all the same color"
        how = f"\\dbinom{{{r}}}{{{k}}} + \\dbinom{{{b}}}{{{k}}} + \\dbinom{{{g}}}{{{k}}} = {good}"
        cond = "len(set(pick)) == 1"
    else:
        good = sp.Integer(r * b * g)
        ask = "they are all different colors"
        how = f"{r} \\cdot {b} \\cdot {g} = {good}"
        cond = "len(set(pick)) == 3"
    ans = good / all_ways
    text = (f"{where.capitalize()} holds ${r}$ red, ${b}$ blue, and ${g}$ green {thing}. If ${k}$ {thing} are drawn "
            f"at random without replacement, what is the probability that {ask}?" + form_hint(ans))
    steps = [f"There are $\\dbinom{{{total}}}{{{k}}} = {all_ways}$ equally likely draws, and ${how}$ of them work.",
             f"The probability is ${ratio(good, all_ways)}$."]
    code = (f"from fractions import Fraction\nfrom itertools import combinations\nfrom sympy import Rational, latex\n"
            f"balls = ['red'] * {r} + ['blue'] * {b} + ['green'] * {g}\n"
            f"draws = [[balls[i] for i in c] for c in combinations(range(len(balls)), {k})]\n"
            f"ans = Fraction(sum(1 for pick in draws if {cond}), len(draws))\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 3 if kind != "same" else 4)


def m_expected_extreme(rng: random.Random) -> Problem:
    n, r = rng.randint(4, 20), rng.choice([2, 2, 3])
    largest = rng.random() < 0.6
    if largest:
        ans = sum(m * (sp.Rational(m, n) ** r - sp.Rational(m - 1, n) ** r) for m in range(1, n + 1))
        how = f"P(\\text{{max}} = m) = \\frac{{m^{r} - (m-1)^{r}}}{{{n}^{r}}}"
    else:
        ans = sum(m * (sp.Rational(n - m + 1, n) ** r - sp.Rational(n - m, n) ** r) for m in range(1, n + 1))
        how = f"P(\\text{{min}} = m) = \\frac{{({n} - m + 1)^{r} - ({n} - m)^{r}}}{{{n}^{r}}}"
    word = "largest" if largest else "smallest"
    text = (f"A fair ${n}$-sided die with faces $1$ through ${n}$ is rolled ${r}$ times. What is the expected value of "
            f"the {word} number rolled?" + form_hint(ans))
    steps = [f"For $1 \\le m \\le {n}$, ${how}$.", f"Summing $m \\cdot P$ over $m$ gives ${tex(ans)}$."]
    code = (f"from fractions import Fraction\nfrom itertools import product\nfrom sympy import Rational, latex\n"
            f"rolls = list(product(range(1, {n} + 1), repeat={r}))\n"
            f"ans = Fraction(sum({'max' if largest else 'min'}(t) for t in rolls), len(rolls))\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 4)


def m_pairs(rng: random.Random) -> Problem:
    n = rng.randint(20, 200)
    if rng.random() < 0.5:
        coprime = 2 * sum(sp.totient(k) for k in range(1, n + 1)) - 1
        ans = sp.Integer(coprime) / n**2
        text = (f"Two integers $a$ and $b$ are chosen independently and uniformly at random from $1$ to ${n}$, "
                f"inclusive. What is the probability that $\\gcd(a, b) = 1$?" + form_hint(ans))
        steps = [(f"For each $k$, the pairs with $\\max(a, b) = k$ and $\\gcd(a, b) = 1$ number $2\\phi(k)$ "
                 f"(once for $k = 1$), so there are $2\\sum_{{k=1}}^{{{n}}} \\phi(k) - 1 = {coprime}$ coprime pairs."),
                 f"The probability is ${ratio(coprime, n * n)}$."]
        cond = "gcd(a, b) == 1"
    else:
        m = rng.randint(3, 12)
        residues = [len(range(r or m, n + 1, m)) for r in range(m)]
        good = sum(residues[r] * residues[(-r) % m] for r in range(m))
        ans = sp.Integer(good) / n**2
        text = (f"Two integers $a$ and $b$ are chosen independently and uniformly at random from $1$ to ${n}$, "
                f"inclusive. What is the probability that $a + b$ is divisible by ${m}$?" + form_hint(ans))
        steps = [(f"Group the numbers by their remainder mod ${m}$; $a + b$ is divisible by ${m}$ when the remainders "
                 f"add to $0$ mod ${m}$. Counting pairs of residue classes gives ${good}$ good pairs."),
                 f"The probability is ${ratio(good, n * n)}$."]
        cond = f"(a + b) % {m} == 0"
    code = (f"from fractions import Fraction\nfrom math import gcd\nfrom sympy import Rational, latex\n"
            f"n = {n}\ngood = sum(1 for a in range(1, n + 1) for b in range(1, n + 1) if {cond})\n"
            "ans = Fraction(good, n * n)\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 4)


def m_cards(rng: random.Random) -> Problem:
    k = rng.randint(2, 5)
    kind = rng.choice(["suit", "ace", "ranks", "hearts", "faces"])
    total = sp.binomial(52, k)
    if kind == "suit":
        good, ask = 4 * sp.binomial(13, k), "all of them are of the same suit"
        how = f"4\\dbinom{{13}}{{{k}}} = {good}"
        seq = "Fraction(1) * " + " * ".join(f"Fraction({12 - i}, {51 - i})" for i in range(k - 1))
    elif kind == "ace":
        good, ask = total - sp.binomial(48, k), "they include at least one ace"
        how = f"\\dbinom{{52}}{{{k}}} - \\dbinom{{48}}{{{k}}} = {good}"
        seq = "1 - " + " * ".join(f"Fraction({48 - i}, {52 - i})" for i in range(k))
    elif kind == "ranks":
        good, ask = sp.binomial(13, k) * 4**k, "all of them have different ranks"
        how = f"\\dbinom{{13}}{{{k}}} \\cdot 4^{k} = {good}"
        seq = " * ".join(f"Fraction({52 - 4 * i}, {52 - i})" for i in range(k))
    elif kind == "faces":
        good, ask = sp.binomial(12, k), "all of them are face cards (jacks, queens or kings)"
        how = f"\\dbinom{{12}}{{{k}}} = {good}"
        seq = " * ".join(f"Fraction({12 - i}, {52 - i})" for i in range(k))
    else:
        j = rng.randint(1, k)
        good, ask = sp.binomial(13, j) * sp.binomial(39, k - j), f"exactly ${j}$ of them are hearts"
        how = f"\\dbinom{{13}}{{{j}}}\\dbinom{{39}}{{{k - j}}} = {good}"
        # one order of the deal times the number of orders in which the hearts can arrive
        seq = (f"math.comb({k}, {j}) * " + " * ".join([f"Fraction({13 - i}, {52 - i})" for i in range(j)]
                                                     + [f"Fraction({39 - i}, {52 - j - i})" for i in range(k - j)]))
    ans = good / total
    text = (f"${k}$ cards are dealt at random from a standard $52$-card deck. What is the probability that {ask}?"
            + form_hint(ans))
    steps = [f"There are $\\dbinom{{52}}{{{k}}} = {total}$ equally likely hands, and ${how}$ of them qualify.",
             f"The probability is ${ratio(good, total)}$."]
    code = (f"import math\nfrom fractions import Fraction\nfrom sympy import Rational, latex\n"
            f"ans = Fraction({seq})  # deal the cards one at a time\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "probability", "Counting & Probability", 3)


# ---------------------------------------------------------------- Calculus
def _quad(f: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> mpmath.mpf:
    with mpmath.workdps(30):
        return mpmath.quad(sp.lambdify(X, f, "mpmath"), [sp.N(lo, 30), sp.N(hi, 30)])


def m_poly_integral(rng: random.Random) -> Problem:
    deg = rng.randint(2, 4)
    coeffs = [rng.randint(-9, 9) for _ in range(deg)] + [rng.choice([k for k in range(-9, 10) if k])]
    a, b = sorted(rng.sample(range(-4, 7), 2))
    f = sp.Poly(list(reversed(coeffs)), X).as_expr()
    big_f = sp.integrate(f, X)
    ans = sp.integrate(f, (X, a, b))
    text = f"Evaluate $\\int_{{{a}}}^{{{b}}} \\left({sp.latex(f)}\\right)\\,dx$." + form_hint(ans)
    steps = [f"An antiderivative is $F(x) = {sp.latex(big_f)}$.",
             (f"So the integral is $F({b}) - F({a}) = {tex(big_f.subs(X, b))} - \\left({tex(big_f.subs(X, a))}\\right) = "
              f"{tex(ans)}$.")]
    code = (f"from fractions import Fraction\nfrom sympy import Rational, latex\ncoeffs = {coeffs}\n"
            "def F(t):\n    return sum(Fraction(c, k + 1) * Fraction(t) ** (k + 1) for k, c in enumerate(coeffs))\n\n"
            f"ans = F({b}) - F({a})\n" + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "calculus", "Calculus", 2)


def m_integral(rng: random.Random) -> Problem:
    kind = rng.choice(["exp_log", "x_exp", "x_log", "trig", "log_frac", "arctan", "power", "partial"])
    if kind == "exp_log":
        m, k = rng.randint(1, 4), rng.randint(2, 5)
        f, lo, hi, how = sp.exp(m * X), sp.Integer(0), sp.log(k), f"an antiderivative is ${tex(sp.exp(m * X) / m)}$"
    elif kind == "x_exp":
        a, c = rng.choice([-3, -2, -1, 1, 2, 3]), rng.randint(1, 3)
        f, lo, hi, how = X * sp.exp(a * X), sp.Integer(0), sp.Integer(c), "integrate by parts with $u = x$"
    elif kind == "x_log":
        m, n = rng.randint(0, 3), rng.randint(2, 6)
        f, lo, hi, how = X**m * sp.log(X), sp.Integer(1), sp.Integer(n), "integrate by parts with $u = \\ln x$"
    elif kind == "trig":
        m, a = rng.randint(1, 2), rng.randint(1, 5)
        trig = rng.choice([sp.sin, sp.cos])
        f, lo, hi = X**m * trig(a * X), sp.Integer(0), sp.pi
        how = "integrate by parts" + (" twice" if m == 2 else "")
    elif kind == "log_frac":
        b, c = rng.randint(1, 9), rng.randint(1, 6)
        f, lo, hi, how = X / (X**2 + b), sp.Integer(0), sp.Integer(c), f"substitute $u = x^2 + {b}$"
    elif kind == "arctan":
        c, top = rng.randint(1, 6), rng.choice([sp.sqrt(3), sp.Integer(1), 1 / sp.sqrt(3)])
        f, lo, hi = 1 / (X**2 + c**2), sp.Integer(0), c * top
        how = f"an antiderivative is $\\frac{{1}}{{{c}}}\\arctan\\frac{{x}}{{{c}}}$"
    elif kind == "power":
        a, b, n = rng.randint(1, 4), rng.randint(1, 5), rng.randint(3, 8)
        f, lo, hi = (a * X + b) ** n, sp.Integer(0), sp.Integer(1)
        how = f"an antiderivative is $\\frac{{({sp.latex(a * X + b)})^{{{n + 1}}}}}{{{a * (n + 1)}}}$"
    else:
        a, c = rng.randint(1, 6), rng.randint(2, 8)
        f, lo, hi = 1 / (X * (X + a)), sp.Integer(1), sp.Integer(c)
        how = f"use partial fractions: $\\frac{{1}}{{x(x + {a})}} = \\frac{{1}}{{{a}}}\\left(\\frac{{1}}{{x}} - " \
              f"\\frac{{1}}{{x + {a}}}\\right)$"
    ans = sp.integrate(f, (X, lo, hi))
    text = f"Evaluate $\\int_{{{tex(lo)}}}^{{{tex(hi)}}} {tex(f)}\\,dx$." + form_hint(ans)
    steps = [f"To evaluate the integral, {how}.", f"Evaluating between the limits gives ${tex(ans)}$."]
    code = ("from sympy import symbols, integrate, exp, log, sin, cos, pi, sqrt, latex\nx = symbols('x')\n"
            f"ans = integrate({f}, (x, {lo}, {hi}))\nprint(latex(ans, ln_notation=True))\n")
    return Problem(text, ans, steps, code, "calculus", "Calculus", 3 if kind in ("exp_log", "power") else 4,
                   numeric=_quad(f, lo, hi))


def m_derivative(rng: random.Random) -> Problem:
    kind = rng.choice(["quotient", "x_exp", "log", "product", "x_to_x", "root"])
    order = 1
    if kind == "quotient":
        a, b, n = rng.randint(1, 5), rng.randint(1, 5), rng.randint(2, 4)
        f, c = (X**2 + a) ** n / (X + b), rng.choice([k for k in range(-2, 4) if k != -b])
        how = "Use the quotient rule"
    elif kind == "x_exp":
        m, a = rng.randint(1, 4), rng.choice([-3, -2, -1, 1, 2, 3])
        f, c, how = X**m * sp.exp(a * X), rng.randint(1, 2), "Use the product rule"
    elif kind == "log":
        while True:
            a, b, c = rng.randint(-6, 6), rng.randint(1, 12), rng.randint(-3, 4)
            if c * c + a * c + b > 0:
                break
        f, how = sp.log(X**2 + a * X + b), "Use the chain rule"
    elif kind == "product":
        a, b, cc, d = rng.randint(1, 5), rng.randint(-5, 5), rng.randint(1, 5), rng.randint(-5, 5)
        f, c = (a * X + b) ** rng.randint(3, 7) * (cc * X + d) ** rng.randint(2, 5), rng.randint(-2, 3)
        how, order = "Use the product and chain rules", rng.choice([1, 1, 2])
    elif kind == "x_to_x":
        f, c, how = X**X, rng.randint(2, 5), "Write $x^x = e^{x \\ln x}$ and use the chain rule"
    else:
        a, b, c = rng.randint(1, 9), rng.randint(1, 20), rng.randint(1, 5)
        f, how = sp.sqrt(a * X**2 + b), "Use the chain rule"
    deriv = sp.diff(f, X, order)
    ans = sp.simplify(deriv.subs(X, c))
    prime = "'" * order
    text = f"Let $f(x) = {tex(f)}$. Find $f{prime}({c})$." + form_hint(ans)
    steps = [f"{how}: $f{prime}(x) = {tex(sp.simplify(deriv))}$.", f"At $x = {c}$ this is ${tex(ans)}$."]
    code = ("from sympy import symbols, diff, exp, log, sqrt, simplify, latex\nx = symbols('x')\n"
            f"f = {f}\nans = simplify(diff(f, x, {order}).subs(x, {c}))\nprint(latex(ans, ln_notation=True))\n")
    with mpmath.workdps(30):
        numeric = mpmath.diff(sp.lambdify(X, f, "mpmath"), c, order)
    return Problem(text, ans, steps, code, "calculus", "Calculus", 3 if order == 1 else 4, numeric=numeric)


def m_limit(rng: random.Random) -> Problem:
    kind = rng.choice(["sin", "cos", "exp", "power_e", "difference", "root", "log", "exponential", "tan"])
    a, b = rng.sample(range(2, 10), 2)
    point = sp.Integer(0)
    if kind == "sin":
        expr, ans = (sp.sin(a * X) - a * X) / X**3, sp.Rational(-a**3, 6)
        how = f"Since $\\sin u = u - \\frac{{u^3}}{{6}} + O(u^5)$, the numerator is $-\\frac{{({a}x)^3}}{{6}} + O(x^5)$"
    elif kind == "cos":
        expr, ans = (1 - sp.cos(a * X)) / X**2, sp.Rational(a**2, 2)
        how = f"Since $1 - \\cos u = \\frac{{u^2}}{{2}} + O(u^4)$, the numerator is $\\frac{{({a}x)^2}}{{2}} + O(x^4)$"
    elif kind == "exp":
        expr, ans = (sp.exp(a * X) - 1 - a * X) / X**2, sp.Rational(a**2, 2)
        how = f"Since $e^u = 1 + u + \\frac{{u^2}}{{2}} + O(u^3)$, the numerator is $\\frac{{({a}x)^2}}{{2}} + O(x^3)$"
    elif kind == "power_e":
        a, b = rng.randint(1, 5), rng.randint(1, 4)
        expr, ans, point = (1 + sp.Integer(a) / X) ** (b * X), sp.exp(a * b), sp.oo
        how = f"Since $\\left(1 + \\frac{{{a}}}{{x}}\\right)^{{x}} \\to e^{{{a}}}$, raising to the power ${b}$ gives the limit"
    elif kind == "difference":
        n, c = rng.randint(5, 12), rng.randint(2, 5)
        expr, ans, point = (X**n - c**n) / (X - c), sp.Integer(n * c ** (n - 1)), sp.Integer(c)
        how = f"This is the derivative of $x^{{{n}}}$ at $x = {c}$, namely ${n} \\cdot {c}^{{{n - 1}}}$"
    elif kind == "root":
        c = rng.randint(1, 20)
        expr, ans, point = sp.sqrt(X**2 + a * X + c) - X, sp.Rational(a, 2), sp.oo
        how = (f"Multiply by the conjugate: the expression equals $\\frac{{{a}x + {c}}}{{\\sqrt{{x^2 + {a}x + {c}}} + x}}$, "
               f"which tends to $\\frac{{{a}}}{{2}}$")
    elif kind == "log":
        expr, ans = sp.log(1 + a * X) / (b * X), sp.Rational(a, b)
        how = f"Since $\\ln(1 + u) = u + O(u^2)$, the numerator is ${a}x + O(x^2)$"
    elif kind == "exponential":
        a = rng.choice([2, 3, 5, 6, 7, 10])  # not a perfect power: sympy writes ln 4 as 2 ln 2
        expr, ans = (sp.Integer(a) ** X - 1) / X, sp.log(a)
        how = f"This is the derivative of ${a}^x$ at $x = 0$, which is $\\ln {a}$"
    else:
        expr, ans = sp.tan(a * X) / sp.sin(b * X), sp.Rational(a, b)
        how = f"Since $\\tan u \\sim u$ and $\\sin u \\sim u$ as $u \\to 0$, the ratio tends to $\\frac{{{a}}}{{{b}}}$"
    shown = f"\\left({tex(expr)}\\right)" if expr.is_Add else tex(expr)
    text = f"Compute $\\lim_{{x \\to {tex(point)}}} {shown}$." + form_hint(ans)
    steps = [f"{how}.", f"So the limit is ${tex(ans)}$."]
    code = ("from sympy import symbols, limit, sin, cos, tan, exp, log, sqrt, oo, latex\nx = symbols('x')\n"
            f"ans = limit({expr}, x, {point})\nprint(latex(ans, ln_notation=True))\n")
    return Problem(text, ans, steps, code, "calculus", "Calculus", 3 if kind in ("difference", "log", "tan") else 4)


def m_series(rng: random.Random) -> Problem:
    n = sp.Symbol("n", integer=True, positive=True)
    kind = rng.choice(["n", "n2", "linear", "harmonic", "telescope", "alternating"])
    r = rng.randint(2, 9)
    if kind == "n":
        term, start, formula = n / sp.Integer(r) ** n, 1, f"Fraction({r}, ({r} - 1) ** 2)"
        shown = f"\\frac{{n}}{{{r}^n}}"
        how = f"For $|y| < 1$, $\\sum_{{n \\ge 1}} n y^n = \\frac{{y}}{{(1 - y)^2}}$; take $y = \\frac{{1}}{{{r}}}$"
    elif kind == "n2":
        term, start, formula = n**2 / sp.Integer(r) ** n, 1, f"Fraction({r} * ({r} + 1), ({r} - 1) ** 3)"
        shown = f"\\frac{{n^2}}{{{r}^n}}"
        how = f"For $|y| < 1$, $\\sum_{{n \\ge 1}} n^2 y^n = \\frac{{y(1 + y)}}{{(1 - y)^3}}$; take $y = \\frac{{1}}{{{r}}}$"
    elif kind == "linear":
        c, d = rng.randint(1, 9), rng.randint(1, 9)
        term, start = (c * n + d) / sp.Integer(r) ** n, 0
        shown = f"\\frac{{{sp.latex(c * n + d)}}}{{{r}^n}}"
        formula = f"{c} * Fraction({r}, ({r} - 1) ** 2) + {d} * Fraction({r}, {r} - 1)"
        how = (f"Split the sum: $\\sum_{{n \\ge 0}} y^n = \\frac{{1}}{{1 - y}}$ and $\\sum_{{n \\ge 0}} n y^n = "
               f"\\frac{{y}}{{(1 - y)^2}}$ with $y = \\frac{{1}}{{{r}}}$")
    elif kind == "harmonic":
        m = rng.randint(2, 8)
        term, start = 1 / (n * (n + m)), 1
        shown = f"\\frac{{1}}{{n(n + {m})}}"
        formula = f"sum(Fraction(1, j) for j in range(1, {m} + 1)) / {m}"
        how = (f"Since $\\frac{{1}}{{n(n + {m})}} = \\frac{{1}}{{{m}}}\\left(\\frac{{1}}{{n}} - \\frac{{1}}{{n + {m}}}"
               f"\\right)$, the sum telescopes to $\\frac{{1}}{{{m}}}\\left(1 + \\frac{{1}}{{2}} + \\cdots + "
               f"\\frac{{1}}{{{m}}}\\right)$")
    elif kind == "telescope":
        a, b = rng.randint(2, 5), rng.randint(0, 6)
        term, start = 1 / ((a * n + b) * (a * n + a + b)), 1
        shown = f"\\frac{{1}}{{({sp.latex(a * n + b)})({sp.latex(a * n + a + b)})}}"
        formula = f"Fraction(1, {a} * ({a} + {b}))"
        how = (f"Since $\\frac{{1}}{{({sp.latex(a * n + b)})({sp.latex(a * n + a + b)})}} = \\frac{{1}}{{{a}}}"
               f"\\left(\\frac{{1}}{{{sp.latex(a * n + b)}}} - \\frac{{1}}{{{sp.latex(a * n + a + b)}}}\\right)$, the sum "
               f"telescopes to $\\frac{{1}}{{{a} \\cdot {a + b}}}$")
    else:
        q = rng.randint(3, 9)
        p = rng.randint(1, q - 1)
        term, start, formula = (-sp.Rational(p, q)) ** n, 0, f"Fraction({q}, {q} + {p})"
        shown = f"\\left(-\\frac{{{p}}}{{{q}}}\\right)^n"
        how = f"This is a geometric series with ratio $-\\frac{{{p}}}{{{q}}}$, so it sums to $\\frac{{1}}{{1 + {tex(sp.Rational(p, q))}}}$"
    ans = sp.summation(term, (n, start, sp.oo))
    text = f"Compute $\\sum_{{n={start}}}^{{\\infty}} {shown}$." + form_hint(ans)
    steps = [f"{how}.", f"The sum is ${tex(ans)}$."]
    code = f"from fractions import Fraction\nfrom sympy import Rational, latex\nans = {formula}\n" + FRACTION_PRINT
    return Problem(text, ans, steps, code, "calculus", "Intermediate Algebra", 5 if kind == "n2" else 4)


def m_area(rng: random.Random) -> Problem:
    r1, r2 = sorted(rng.sample(range(-6, 9), 2))
    slope, icpt, lead = rng.randint(-5, 5), rng.randint(-10, 10), rng.randint(1, 3)
    line = slope * X + icpt
    parabola = sp.expand(line + lead * (X - r1) * (X - r2))
    ans = sp.integrate(line - parabola, (X, r1, r2))
    text = (f"Find the area of the region bounded by the parabola $y = {sp.latex(parabola)}$ and the line "
            f"$y = {sp.latex(line)}$." + form_hint(ans))
    steps = [(f"The curves meet where ${sp.latex(parabola - line)} = 0$, that is at $x = {r1}$ and $x = {r2}$; the line "
             f"is above the parabola in between."),
             (f"The area is $\\int_{{{r1}}}^{{{r2}}} \\left({sp.latex(sp.expand(line - parabola))}\\right)\\,dx = "
              f"{tex(ans)}$.")]
    code = ("from sympy import symbols, solve, integrate, latex\nx = symbols('x')\n"
            f"parabola, line = {parabola}, {line}\na, b = sorted(solve(parabola - line, x))\n"
            "ans = integrate(line - parabola, (x, a, b))\n" + LATEX_PRINT)
    return Problem(text, ans, steps, code, "calculus", "Calculus", 3)


def m_taylor(rng: random.Random) -> Problem:
    a, n = rng.randint(1, 3), rng.randint(4, 8)
    if rng.random() < 0.5:
        b = rng.randint(1, 3)
        f = sp.exp(a * X) / (1 - b * X)
        weights = f"[Fraction({b}) ** (n - k) for k in range(n + 1)]"
        how = (f"Multiply the series ${tex(sp.exp(a * X))} = \\sum_k \\frac{{{a}^k x^k}}{{k!}}$ and "
               f"${tex(1 / (1 - b * X))} = \\sum_j {b}^j x^j$")
    else:
        m = rng.randint(2, 9)
        f = sp.exp(a * X) * (1 + X) ** m
        weights = f"[math.comb({m}, n - k) for k in range(n + 1)]"
        how = (f"Multiply the series ${tex(sp.exp(a * X))} = \\sum_k \\frac{{{a}^k x^k}}{{k!}}$ and $(1 + x)^{{{m}}} = "
               f"\\sum_j \\binom{{{m}}}{{j}} x^j$")
    coeff = sp.series(f, X, 0, n + 1).removeO().coeff(X, n)
    derivative = rng.random() < 0.4
    ans = coeff * sp.factorial(n) if derivative else coeff
    ask = f"$f^{{({n})}}(0)$" if derivative else f"the coefficient of $x^{{{n}}}$ in the Maclaurin series of $f$"
    text = f"Let $f(x) = {tex(f)}$. Find {ask}." + form_hint(ans)
    steps = [f"{how}; the coefficient of $x^{{{n}}}$ is ${tex(coeff)}$."]
    if derivative:
        steps.append(f"So $f^{{({n})}}(0) = {n}! \\cdot {tex(coeff)} = {tex(ans)}$.")
    code = (f"import math\nfrom fractions import Fraction\nfrom sympy import Rational, latex\nn, a = {n}, {a}\n"
            f"weights = {weights}\nans = sum(Fraction(a ** k, math.factorial(k)) * w for k, w in enumerate(weights))\n"
            + ("ans *= math.factorial(n)\n" if derivative else "") + FRACTION_PRINT)
    return Problem(text, ans, steps, code, "calculus", "Calculus", 5 if derivative else 4)


# ---------------------------------------------------------------- Precalculus
def m_determinant(rng: random.Random) -> Problem:
    size = rng.choice([3, 3, 4])
    lim = 9 if size == 3 else 5
    while True:
        m = sp.Matrix(size, size, lambda i, j: rng.randint(-lim, lim))
        if m.det() != 0:
            break
    ans = m.det()
    rows = " \\\\ ".join(" & ".join(str(v) for v in m.row(i)) for i in range(size))
    text = f"Compute $\\begin{{vmatrix}} {rows} \\end{{vmatrix}}$."
    minors = " ".join(f"{'+' if j % 2 == 0 else '-'} ({m[0, j]}) \\cdot ({m.minor(0, j)})" for j in range(size))
    steps = [(f"Expanding along the first row, the determinant is ${minors.lstrip('+ ')}$, where each bracket holds "
             f"the minor of that entry."), f"This gives ${ans}$."]
    code = (f"from itertools import permutations\nm = {m.tolist()}\nn = len(m)\nans = 0\n"
            "for p in permutations(range(n)):\n"
            "    sign = (-1) ** sum(1 for i in range(n) for j in range(i + 1, n) if p[i] > p[j])\n"
            "    term = sign\n    for i in range(n):\n        term *= m[i][p[i]]\n    ans += term\nprint(ans)\n")
    return Problem(text, ans, steps, code, "precalculus", "Precalculus", 2 if size == 3 else 3)


def m_complex_power(rng: random.Random) -> Problem:
    a, b = rng.choice([k for k in range(-5, 6) if k]), rng.choice([k for k in range(-5, 6) if k])
    n = rng.randint(5, 14)
    w = sp.expand((a + b * sp.I) ** n)
    re, im = sp.re(w), sp.im(w)
    kind = rng.choice(["real", "imaginary", "sum"])
    ans = {"real": re, "imaginary": im, "sum": re + im}[kind]
    z = f"{a} {'+' if b > 0 else '-'} {abs(b) if abs(b) != 1 else ''}i"
    ask = {"real": f"the real part of $z^{{{n}}}$", "imaginary": f"the imaginary part of $z^{{{n}}}$",
           "sum": f"$a + b$, where $z^{{{n}}} = a + bi$ with $a$ and $b$ real"}[kind]
    text = f"Let $z = {z}$. Find {ask}."
    steps = [(f"Multiplying out repeatedly (or using the binomial theorem with $i^2 = -1$), "
             f"$z^{{{n}}} = {re} {'+' if im >= 0 else '-'} {abs(im)}i$.")]
    pick = {"real": "re", "imaginary": "im", "sum": "re + im"}[kind]
    code = (f"re, im = 1, 0\nfor _ in range({n}):\n    re, im = re * {a} - im * ({b}), re * ({b}) + im * {a}\n"
            f"print({pick})\n")
    return Problem(text, ans, steps, code, "precalculus", "Precalculus", 3)


def m_matrix_power(rng: random.Random) -> Problem:
    while True:
        m = sp.Matrix(2, 2, lambda i, j: rng.randint(-3, 4))
        n = rng.randint(6, 20)
        power = m**n
        kind = rng.choice(["sum", "trace", "corner"])
        ans = {"sum": sum(power), "trace": power.trace(), "corner": power[0, 1]}[kind]
        if m[0, 1] and m[1, 0] and ans:
            break
    ask = {"sum": "the sum of the entries of", "trace": "the trace of", "corner": "the upper right entry of"}[kind]
    text = (f"Let $A = \\begin{{pmatrix}} {m[0, 0]} & {m[0, 1]} \\\\ {m[1, 0]} & {m[1, 1]} \\end{{pmatrix}}$. "
            f"Find {ask} $A^{{{n}}}$.")
    shown = " \\\\ ".join(" & ".join(str(v) for v in power.row(i)) for i in range(2))
    steps = [f"Computing by repeated squaring, $A^{{{n}}} = \\begin{{pmatrix}} {shown} \\end{{pmatrix}}$."]
    pick = {"sum": "sum(p[0]) + sum(p[1])", "trace": "p[0][0] + p[1][1]", "corner": "p[0][1]"}[kind]
    code = (f"a = {m.tolist()}\np = [[1, 0], [0, 1]]\nfor _ in range({n}):\n"
            "    p = [[sum(p[i][k] * a[k][j] for k in range(2)) for j in range(2)] for i in range(2)]\n"
            f"print({pick})\n")
    return Problem(text, sp.Integer(ans), steps, code, "precalculus", "Precalculus", 3)


def pmatrix(v: sp.Matrix) -> str:
    return "\\begin{pmatrix} " + " \\\\ ".join(str(t) for t in v) + " \\end{pmatrix}"


def m_vectors(rng: random.Random) -> Problem:
    def vec():
        return sp.Matrix([rng.randint(-6, 6) for _ in range(3)])

    if rng.random() < 0.5:
        while True:
            u, v = vec(), vec()
            if u.norm() and v.norm() and u.cross(v).norm() and u.dot(v):
                break
        ans = u.dot(v) / sp.sqrt(u.dot(u) * v.dot(v))
        text = (f"Find the cosine of the angle between the vectors ${pmatrix(u)}$ and ${pmatrix(v)}$."
                + form_hint(ans))
        steps = [(f"The dot product is ${u.dot(v)}$ and the lengths are $\\sqrt{{{u.dot(u)}}}$ and "
                 f"$\\sqrt{{{v.dot(v)}}}$."),
                 f"So $\\cos\\theta = \\frac{{{u.dot(v)}}}{{\\sqrt{{{u.dot(u)}}}\\sqrt{{{v.dot(v)}}}}} = {tex(ans)}$."]
        code = ("from sympy import Matrix, sqrt, latex\n"
                f"u, v = Matrix({list(u)}), Matrix({list(v)})\nans = u.dot(v) / sqrt(u.dot(u) * v.dot(v))\n"
                + LATEX_PRINT)
        return Problem(text, ans, steps, code, "precalculus", "Precalculus", 2)
    while True:
        p, q, r = vec(), vec(), vec()
        cross = (q - p).cross(r - p)
        if cross.norm():
            break
    ans = sp.sqrt(cross.dot(cross)) / 2
    pts = ", ".join(f"$({', '.join(map(str, w))})$" for w in (p, q, r))
    text = f"Find the area of the triangle with vertices {pts}." + form_hint(ans)
    steps = [(f"Two edge vectors are ${pmatrix(q - p)}$ and ${pmatrix(r - p)}$; their cross product is "
             f"${pmatrix(cross)}$, of length $\\sqrt{{{cross.dot(cross)}}}$."),
             f"The area is half of that: ${tex(ans)}$."]
    code = (f"from sympy import sqrt, latex\np, q, r = {list(p)}, {list(q)}, {list(r)}\n"
            "u = [q[i] - p[i] for i in range(3)]\nv = [r[i] - p[i] for i in range(3)]\n"
            "c = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]\n"
            "ans = sqrt(sum(t * t for t in c)) / 2\n" + LATEX_PRINT)
    return Problem(text, ans, steps, code, "precalculus", "Precalculus", 3)


MATH_PROBLEMS: list[Callable[[random.Random], Problem]] = [
    m_arith_expr, m_percent, m_fraction_sum, m_mean,
    m_linear, m_quadratic, m_system, m_composition, m_sequence,
    m_vieta, m_remainder, m_telescoping, m_floor_sum, m_cubic_values,
    m_gcd_lcm, m_modpow, m_congruence, m_crt, m_divisors, m_primes, m_digits, m_base, m_totient, m_period,
    m_binomial, m_arrangements, m_words, m_lattice, m_committee, m_inclusion_exclusion, m_bounded,
    m_dice, m_coins, m_urn, m_expected_extreme, m_pairs, m_cards,
    m_poly_integral, m_integral, m_derivative, m_limit, m_series, m_area, m_taylor,
    m_determinant, m_complex_power, m_matrix_power, m_vectors]


# ---------------------------------------------------------------- checks and assembly
ALLOWED_IMPORTS = {"math", "fractions", "itertools", "sympy"}


def run_code(code: str) -> str:
    """Run a record's program in a fresh namespace (this generator is trusted) and return its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<code>", "exec"), {"__name__": "__main__"})  # noqa: S102 - our own generated code
    return out.getvalue().strip()


def check(problem: Problem, schema: str) -> str:
    """Raise unless the problem is exact, its code prints the gold, and its numbers add up; return the gold."""
    ans = problem.answer
    if not isinstance(ans, sp.Expr) or ans.atoms(sp.Float) or not ans.free_symbols <= {X}:
        raise AssertionError(f"answer {ans!r} is not an exact sympy value: {problem.text}")
    if schema == "gsm8k" and not (ans.is_Integer and ans > 0):
        raise AssertionError(f"GSM8K answers are positive integers, got {ans}: {problem.text}")
    for expr, value in re.findall(r"<<([^=<>]+)=([^<>]+)>>", " ".join(problem.steps)):
        if sp.sympify(expr) != sp.sympify(value):
            raise AssertionError(f"bad annotation <<{expr}={value}>>")
    imports = set(re.findall(r"^(?:from|import) (\w+)", problem.code, flags=re.MULTILINE))
    if not imports <= ALLOWED_IMPORTS:
        raise AssertionError(f"code imports {sorted(imports - ALLOWED_IMPORTS)}")
    gold = gold_of(problem, schema)
    printed = run_code(problem.code)
    if printed != gold:
        raise AssertionError(f"code printed {printed!r}, gold is {gold!r}: {problem.text}\n{problem.code}")
    if problem.numeric is not None:
        error = abs(complex(sp.N(problem.numeric, 30)) - complex(sp.N(ans, 30)))
        if error > 1e-9 * max(1.0, abs(complex(sp.N(ans)))):
            raise AssertionError(f"numeric check failed ({problem.numeric} vs {ans}): {problem.text}")
    return gold


def build(gens: list[Callable[[random.Random], Problem]], total: int, schema: str,
          rng: random.Random) -> list[tuple[Problem, str]]:
    """``total`` distinct problems, taking the generators in turn so every split gets every kind."""
    out, seen, misses, i = [], set(), 0, 0
    while len(out) < total:
        problem = gens[i % len(gens)](rng)
        i += 1
        key = " ".join(problem.text.lower().split())
        if key in seen:
            misses += 1
            if misses > total:
                raise AssertionError(f"{schema}: generators repeat themselves too often")
            continue
        seen.add(key)
        out.append((problem, check(problem, schema)))
    return out


ENDINGS = ["The answer is", "Therefore, the answer is", "The final answer is"]


def record(problem: Problem, gold: str, schema: str, split: str, index: int) -> dict:
    if schema == "gsm8k":
        return {"id": f"gsm8k-{split}-{index:05d}", "question": problem.text,
                "answer": "\n".join(problem.steps) + f"\n#### {gold}", "topic": problem.topic, "code": problem.code}
    solution = " ".join(problem.steps) + f" {ENDINGS[index % len(ENDINGS)]} $\\boxed{{{gold}}}$."
    return {"id": f"math-{split}-{index:05d}", "problem": problem.text, "level": f"Level {problem.level}",
            "type": problem.kind, "solution": solution, "topic": problem.topic, "code": problem.code}


def write(out: Path, seed: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    stats: dict = {}
    sources = {"gsm8k": (WORD_PROBLEMS, random.Random(seed)), "math": (MATH_PROBLEMS, random.Random(seed + 1))}
    for schema, (gens, rng) in sources.items():
        n_train, n_test = SIZES[schema]
        problems = build(gens, n_train + n_test, schema, rng)
        # every 4th problem is a test problem: the round-robin order spreads each kind over both splits
        splits = {"train": [p for j, p in enumerate(problems) if j % 4 != 3],
                  "test": [p for j, p in enumerate(problems) if j % 4 == 3]}
        for split, items in splits.items():
            with open(out / f"{schema}_{split}.jsonl", "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(record(problem, gold, schema, split, index), ensure_ascii=False) + "\n"
                              for index, (problem, gold) in enumerate(items))
            stats[f"{schema}_{split}"] = {"total": len(items),
                                          "topic": dict(sorted(Counter(p.topic for p, _ in items).items()))}
            if schema == "math":
                stats[f"{schema}_{split}"]["type"] = dict(sorted(Counter(p.kind for p, _ in items).items()))
                stats[f"{schema}_{split}"]["level"] = dict(sorted(Counter(p.level for p, _ in items).items()))
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/mathtool")
    args = parser.parse_args(argv)
    print(json.dumps(write(args.out, args.seed), indent=2))


if __name__ == "__main__":
    main()
