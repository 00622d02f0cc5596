"""Canary tests of the SWE grader, written into the test files just before the tests run.

Usage: ``python3 -I canaries.py FILE...`` in the repository, after the test patch is applied and before any
repository code runs. For each file it inserts tests under names made from the file's own test names, at random
places among its top-level tests: two that must fail (a copy of one of the file's tests, ending in an assertion
that cannot hold) and one that must pass. The outcomes they must have are printed as one line,
``AGENTGYM-CANARIES <json>``, to the log, which code that runs later cannot rewrite; nothing else records which
tests are canaries. Standard library only; Python 3.6 and newer.
"""

import ast
import json
import os
import random
import re
import sys

_DEF = re.compile(r"^def (test_\w+)\s*\((.*)\)\s*:\s*$")  # a one-line signature: renamed in place
_ANY_TEST = re.compile(r"^\s*(?:async\s+)?def (test_\w+)\s*\(", re.M)
_LITERAL = re.compile(r"(?<![\w.])(\d{1,6})(?![\w.])|'([A-Za-z][\w ]{0,20})'|\"([A-Za-z][\w ]{0,20})\"")
_UNSAFE = re.compile(r"\b(return|yield|skip|xfail|importorskip|exit)\b")


def _blocks(tree, lines):
    """(start, end, name, decorated) of each top-level ``def test_*``: lines ``start:end`` are its source."""
    nodes = [n for n in tree.body]
    out = []
    for k, node in enumerate(nodes):
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        end = getattr(node, "end_lineno", None)
        if end is None:  # Python < 3.8: up to the next top-level statement
            end = nodes[k + 1].lineno - 1 if k + 1 < len(nodes) else len(lines)
            if k + 1 < len(nodes):
                end = min([end + 1] + [d.lineno for d in getattr(nodes[k + 1], "decorator_list", [])]) - 1
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        out.append((start, end, node.name, bool(node.decorator_list)))
    return out


def _literals(text, rng):
    found = []
    for number, single, double in _LITERAL.findall(text):
        found.append(int(number) if number else (single or double))
    return found or [rng.randrange(2, 500)]


def _wrong(value, rng):
    if isinstance(value, int):
        return value + rng.randrange(1, 9)
    return value + rng.choice(["s", "x", " "])


def _name(taken, words, rng):
    for _ in range(200):
        name = "test_" + "_".join(rng.sample(words, min(len(words), rng.randrange(2, 4))))
        if name not in taken:
            taken.add(name)
            return name
    name = "test_%s_%d" % ("_".join(words[:2]), len(taken))
    taken.add(name)
    return name


def canaries(path, text, rng):
    """``text`` with the canaries inserted, and their (node id, must-pass) pairs."""
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    taken = set(_ANY_TEST.findall(text))
    words = sorted({w for name in taken for w in name[5:].split("_") if w.isalpha()}) or ["value", "case", "works"]
    if len(words) < 3:
        words += ["value", "case", "input"]
    try:
        blocks = _blocks(ast.parse(text), lines)
    except (SyntaxError, ValueError):
        return text, []  # a file that does not compile fails its tests anyway
    templates = [b for b in blocks if not b[3] and _DEF.match(lines[b[0]])
                 and not _UNSAFE.search("".join(lines[b[0] + 1:b[1]]))]
    made, inserts = [], []
    for must_pass in (False, False, True):
        name = _name(taken, words, rng)
        if must_pass or not templates:
            value = rng.choice(_literals(text, rng))
            body = ["def %s():\n" % name, "    expected = %r\n" % (value,), "    assert expected == %r\n" % (value,)]
            if not must_pass:
                body[-1] = "    assert expected == %r\n" % (_wrong(value, rng),)
        else:
            start, end, template, _ = rng.choice(templates)
            source = lines[start:end]
            indent = re.match(r"[ \t]*", next((l for l in source[1:] if l.strip()), "    ")).group(0) or "    "
            value = rng.choice(_literals("".join(source[1:]), rng))
            body = [source[0].replace(template, name, 1)] + source[1:] + [
                "%sassert %r == %r\n" % (indent, value, _wrong(value, rng))]
        made.append(("%s::%s" % (path, name), must_pass))
        spots = [b[0] for b in blocks] or [len(lines)]
        inserts.append((rng.choice(spots), body))
    for spot, body in sorted(inserts, key=lambda item: -item[0]):
        lines[spot:spot] = body + ["\n", "\n"]
    out = "".join(lines)
    try:
        compile(out, path, "exec")
    except (SyntaxError, ValueError):
        return text, []  # never break a file: it would fail an honest patch's tests
    return out, made


def main(paths):
    rng = random.SystemRandom()
    manifest = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            text, made = canaries(path, text, rng)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except Exception as e:  # a file it cannot read or write gets none; its tests fail on their own
            print("no canaries in %s: %s" % (path, e), file=sys.stderr)
            continue
        manifest += [{"test": test, "must_pass": must_pass} for test, must_pass in made]
    # the grader's nonce for this run, from a file it wrote for this one read: the tests, which start later, can
    # find neither; a manifest line without it (a path printed earlier, text the tests print) counts for nothing
    nonce_file = os.environ.get("AGENTGYM_NONCE_FILE", "")
    nonce = "-"
    if nonce_file:
        try:
            with open(nonce_file) as f:
                nonce = f.read().strip() or "-"
            os.remove(nonce_file)
        except OSError:
            pass
    print("AGENTGYM-CANARIES " + nonce + " " + json.dumps(manifest, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
