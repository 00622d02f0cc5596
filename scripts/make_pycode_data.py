"""Generate the bundled PyCode dataset: HumanEval-style Python problems with hidden unit tests.

    python scripts/make_pycode_data.py [--seed 0] [--out agentgym/data/pycode]

Every problem comes from a hand-written family below: a docstring template, a
reference solution and input generators (random inputs plus edge cases), with
constants and variants drawn from the seed, so tasks of one family differ in
behaviour, not just in wording. Expected values come from running the reference
solution. Each task is validated before it is written: the solution passes its
hidden asserts, its public asserts and its own doctests, and trivial wrong
solutions (``return None``, returning the first argument, ``return 0``, ...)
fail at least one hidden assert. The same seed gives byte-identical files on
every machine and under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import argparse
import ast
import copy
import doctest
import hashlib
import json
import random
import string
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

N_HIDDEN = 10  # at least; edge cases may add more
N_RANDOM_HIDDEN = 4  # random inputs among the hidden asserts, at least
N_PUBLIC = 3
TASKS_PER_FAMILY = 4
TEST_SHARE = 0.3
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
VOCAB = ("a an the cat dog sun moon tree river stone apple banana cherry kiwi lemon mango python data code "
         "level noon radar sky blue green orange purple go run jump swim read write think quick brown fox "
         "lazy over under garden window").split()


@dataclass(frozen=True)
class Spec:
    """One concrete problem: a function and how to draw its inputs."""

    name: str  # the entry point
    sig: str  # parameters, e.g. "s: str, k: int"
    ret: str  # return annotation
    doc: str  # description (wrapped into the docstring; the >>> examples are added)
    body: str  # reference solution, unindented
    edges: list[tuple]  # edge-case argument tuples
    draw: Callable[[random.Random], tuple]  # one random argument tuple


FAMILIES: dict[str, tuple[tuple[str, ...], Callable[[random.Random, str], Spec]]] = {}


def family(name: str, *variants: str):
    def register(make: Callable[[random.Random, str], Spec]):
        FAMILIES[name] = (variants, make)
        return make
    return register


def code(*pieces: str, **subs) -> str:
    """The pieces, each dedented, one after another, with ``$NAME`` placeholders filled in (``str`` of each)."""
    source = "".join(textwrap.dedent(piece).strip("\n") + "\n" for piece in pieces)
    return string.Template(source).substitute({k: str(v) for k, v in subs.items()})


def word(r: random.Random, lo: int = 1, hi: int = 8, alphabet: str = LOWER) -> str:
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def sentence(r: random.Random, lo: int = 0, hi: int = 8, vocab=VOCAB) -> str:
    return " ".join(r.choice(vocab) for _ in range(r.randint(lo, hi)))


def ints(r: random.Random, lo: int = 0, hi: int = 8, a: int = -9, b: int = 9) -> list[int]:
    return [r.randint(a, b) for _ in range(r.randint(lo, hi))]


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ================================================================ strings
@family("rotate_string", "left", "right")
def rotate_string(r, v):
    k = r.randint(1, 7)
    if v == "left":
        doc = (f"Rotate the string s left by {k} positions: the first {k} characters move, in order, to the "
               f"end. The rotation is cyclic, so a string of length n is rotated by {k} % n; the empty "
               "string stays empty.")
        body = code("""
            if not s:
                return s
            k = $K % len(s)
            return s[k:] + s[:k]
        """, K=k)
    else:
        doc = (f"Rotate the string s right by {k} positions: the last {k} characters move, in order, to the "
               f"front. The rotation is cyclic, so a string of length n is rotated by {k} % n; the empty "
               "string stays empty.")
        body = code("""
            if not s:
                return s
            k = $K % len(s)
            return s[len(s) - k:] + s[:len(s) - k]
        """, K=k)
    return Spec(r.choice([f"rotate_{v}", f"shift_{v}"]), "s: str", "str", doc, body,
                [("",), ("a",), ("ab",), (LOWER[:k],), (LOWER[:k + 1],), ("hello world",)],
                lambda r: (word(r, 2, 12),))


@family("caesar_cipher", "encode", "decode")
def caesar_cipher(r, v):
    shift = r.randint(1, 25)
    if v == "encode":
        doc = (f"Encrypt s with a Caesar cipher: replace every ASCII letter by the letter {shift} places later "
               "in the alphabet, wrapping around from 'z' to 'a'. Letters keep their case and every other "
               "character is left unchanged.")
        names = ["caesar_encrypt", "encode_shift"]
    else:
        doc = (f"Decrypt s, a text encrypted with a Caesar cipher that moved every ASCII letter {shift} places "
               "forward in the alphabet: move each letter back by that many places, wrapping around from 'a' "
               "to 'z'. Letters keep their case and every other character is left unchanged.")
        names = ["caesar_decrypt", "decode_shift"]
    body = code("""
        out = []
        for ch in s:
            if 'a' <= ch <= 'z':
                out.append(chr((ord(ch) - ord('a') $OP $SHIFT) % 26 + ord('a')))
            elif 'A' <= ch <= 'Z':
                out.append(chr((ord(ch) - ord('A') $OP $SHIFT) % 26 + ord('A')))
            else:
                out.append(ch)
        return ''.join(out)
    """, OP="+" if v == "encode" else "-", SHIFT=shift)
    return Spec(r.choice(names), "s: str", "str", doc, body,
                [("",), ("abc",), ("xyz",), ("XYZ",), ("Hello, World!",), ("2 + 2 = 4",)],
                lambda r: (word(r, 1, 16, LOWER + UPPER + "  .,!?"),))


@family("count_words", "longer", "shorter", "exactly")
def count_words(r, v):
    k = r.randint(2, 6)
    cond, desc, name = {
        "longer": (f"len(w) > {k}", f"longer than {k} characters", "count_long_words"),
        "shorter": (f"len(w) < {k}", f"shorter than {k} characters", "count_short_words"),
        "exactly": (f"len(w) == {k}", f"exactly {k} characters long", "count_words_of_length"),
    }[v]
    doc = (f"Return how many words of s are {desc}. Words are the maximal runs of non-whitespace characters, "
           "as str.split() returns them; punctuation counts as part of a word.")
    return Spec(name, "s: str", "int", doc, code("return sum(1 for w in s.split() if $C)", C=cond),
                [("",), ("   ",), ("x" * k,), ("x" * (k + 1),), ("y" * (k - 1),),
                 (" ".join("z" * i for i in range(1, 9)),), ("\tab  cdefgh\n ijk ",)],
                lambda r: (" ".join(word(r, 1, 9) for _ in range(r.randint(1, 7))),))


@family("vowels", "count", "remove", "upper")
def vowels(r, v):
    with_y = r.random() < 0.5
    vs = "aeiouy" if with_y else "aeiou"
    which = "a, e, i, o, u and y" if with_y else "a, e, i, o and u"
    if v == "count":
        name, ret = "count_vowels", "int"
        doc = f"Count the vowels in s. The vowels are {which}, in upper or lower case."
        body = code("return sum(1 for ch in s if ch.lower() in $VS)", VS=repr(vs))
    elif v == "remove":
        name, ret = "remove_vowels", "str"
        doc = (f"Return s with every vowel removed. The vowels are {which}, in upper or lower case; all other "
               "characters are kept in order.")
        body = code("return ''.join(ch for ch in s if ch.lower() not in $VS)", VS=repr(vs))
    else:
        name, ret = "shout_vowels", "str"
        doc = f"Return s with every vowel ({which}) in upper case and every other character in lower case."
        body = code("return ''.join(ch.upper() if ch.lower() in $VS else ch.lower() for ch in s)", VS=repr(vs))
    return Spec(name, "s: str", ret, doc, body,
                [("",), ("bcd",), ("AEIOU",), ("yellow sky",), ("Python Is Fun!",), ("xyz",)],
                lambda r: (word(r, 1, 14, LOWER + UPPER + " "),))


def rle(s: str, count_first: bool, omit_ones: bool) -> str:
    """Reference run-length encoding, used only to make inputs for the decode variant."""
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        count = "" if omit_ones and j - i == 1 else str(j - i)
        out.append(count + s[i] if count_first else s[i] + count)
        i = j
    return "".join(out)


def runs(r: random.Random) -> str:
    return "".join(r.choice("abcxyz") * r.choice([1, 1, 2, 3, 5, 12]) for _ in range(r.randint(1, 5)))


@family("run_length", "encode", "decode")
def run_length(r, v):
    count_first, omit_ones = r.random() < 0.5, r.random() < 0.5
    example = rle("aaabcc", count_first, omit_ones)
    layout = "its length followed by the character" if count_first else "the character followed by its length"
    ones = (" A run of length 1 is written as the character alone." if omit_ones
            else " Runs of length 1 are written with the count 1 too.")
    if v == "encode":
        name = "rle_encode"
        doc = (f"Run-length encode s: write every maximal run of one repeated character as {layout}, in "
               f"decimal.{ones} For example 'aaabcc' becomes {example!r}. s contains no digits.")
        count = "'' if j - i == 1 else str(j - i)" if omit_ones else "str(j - i)"
        body = code("""
            out = []
            i = 0
            while i < len(s):
                j = i
                while j < len(s) and s[j] == s[i]:
                    j += 1
                count = $COUNT
                out.append($PIECE)
                i = j
            return ''.join(out)
        """, COUNT=count, PIECE="count + s[i]" if count_first else "s[i] + count")
        return Spec(name, "s: str", "str", doc, body,
                    [("",), ("a",), ("abc",), ("aaaaaaaaaaaa",), ("aabbaa",)], lambda r: (runs(r),))
    name = "rle_decode"
    doc = (f"Decode a run-length encoded string: s writes every run of one repeated character as {layout}, "
           f"in decimal (a count may have several digits).{ones} For example {example!r} stands for 'aaabcc'. "
           "Return the decoded string.")
    if count_first:
        body = code("""
            out = []
            count = ''
            for ch in s:
                if ch.isdigit():
                    count += ch
                else:
                    out.append(ch * int(count or '1'))
                    count = ''
            return ''.join(out)
        """)
    else:
        body = code("""
            out = []
            i = 0
            while i < len(s):
                j = i + 1
                while j < len(s) and s[j].isdigit():
                    j += 1
                out.append(s[i] * int(s[i + 1:j] or '1'))
                i = j
            return ''.join(out)
        """)
    edges = [(rle(t, count_first, omit_ones),) for t in ("", "a", "abc", "z" * 12, "aabbaa", "q" * 105)]
    return Spec(name, "s: str", "str", doc, body, edges, lambda r: (rle(runs(r), count_first, omit_ones),))


def bracket_text(r: random.Random, pairs: list[str]) -> str:
    out: list[str] = []
    stack: list[str] = []
    for _ in range(r.randint(1, 10)):
        if stack and r.random() < 0.45:
            out.append(stack.pop())
        else:
            pair = r.choice(pairs)
            out.append(pair[0])
            stack.append(pair[1])
    out.extend(reversed(stack))
    if r.random() < 0.4:  # break it, maybe
        out[r.randrange(len(out))] = r.choice("".join(pairs))
    noise = "".join(ch for ch in "ab ()[]{}<>" if ch not in "".join(pairs))
    for _ in range(r.choice([0, 0, 1, 2])):  # characters that must be ignored
        out.insert(r.randint(0, len(out)), r.choice(noise))
    return "".join(out)


@family("brackets", "balanced", "depth")
def brackets(r, v):
    pairs = sorted(r.sample(["()", "[]", "{}", "<>"], r.randint(1, 3)), key="()[]{}<>".index)
    opens = "".join(p[0] for p in pairs)
    match = {p[1]: p[0] for p in pairs}
    kinds = ", ".join(pairs)
    o, c = pairs[0]
    edges = [("",), ("x",), (o + c,), (c + o,), (o,), (o + o + c + c + o + c,), (o * 3 + "a" + c * 3,)]
    if len(pairs) > 1:
        edges.append((o + pairs[1][0] + c + pairs[1][1],))
    if v == "balanced":
        name = "is_balanced"
        doc = (f"Return True if the brackets in s are balanced and False otherwise. Only the bracket pairs "
               f"{kinds} count: every opening bracket must be closed by its own closing bracket, the last one "
               "opened being closed first. Every other character is ignored.")
        body = code("""
            match = $MATCH
            stack = []
            for ch in s:
                if ch in $OPENS:
                    stack.append(ch)
                elif ch in match:
                    if not stack or stack.pop() != match[ch]:
                        return False
            return not stack
        """, MATCH=repr(match), OPENS=repr(opens))
        ret = "bool"
    else:
        name = "nesting_depth"
        doc = (f"Return the maximum nesting depth of the brackets {kinds} in s (0 if there are none), or -1 "
               "if they are not balanced: every opening bracket must be closed by its own closing bracket, "
               "the last one opened being closed first. Every other character is ignored.")
        body = code("""
            match = $MATCH
            stack = []
            deepest = 0
            for ch in s:
                if ch in $OPENS:
                    stack.append(ch)
                    deepest = max(deepest, len(stack))
                elif ch in match:
                    if not stack or stack.pop() != match[ch]:
                        return -1
            return -1 if stack else deepest
        """, MATCH=repr(match), OPENS=repr(opens))
        ret = "int"
    return Spec(name, "s: str", ret, doc, body, edges, lambda r: (bracket_text(r, pairs),))


def palindromish(r: random.Random) -> str:
    if r.random() < 0.5:
        return word(r, 0, 10, LOWER[:4] + " ,")
    half = word(r, 0, 5, LOWER[:5] + " ,")
    text = half + (r.choice(LOWER[:5]) if r.random() < 0.5 else "") + half[::-1]
    return "".join(ch.upper() if r.random() < 0.2 else ch for ch in text)


@family("palindrome", "check", "count", "longest")
def palindrome(r, v):
    if v == "check":
        ignore_case, alnum_only = r.random() < 0.5, r.random() < 0.5
        rules = []
        if ignore_case:
            rules.append("ignoring the difference between upper and lower case")
        if alnum_only:
            rules.append("considering only letters and digits (characters for which str.isalnum() is true)")
        how = " and ".join(rules) if rules else "comparing characters exactly (case, spaces and punctuation count)"
        doc = f"Return True if s reads the same forwards and backwards, {how}; otherwise return False."
        body = code("""
            t = [$CH for ch in s$IF]
            return t == t[::-1]
        """, CH="ch.lower()" if ignore_case else "ch", IF=" if ch.isalnum()" if alnum_only else "")
        return Spec("is_palindrome", "s: str", "bool", doc, body,
                    [("",), ("a",), ("Aa",), ("ab",), ("a,a",), ("Race car",), ("No 'x' in Nixon",)],
                    lambda r: (palindromish(r),))
    if v == "count":
        k = r.randint(1, 4)
        doc = (f"Count the substrings of s with at least {plural(k, 'character')} that are palindromes "
               "(read the same forwards and backwards, comparing characters exactly). Substrings at different "
               "positions count separately even when they are equal.")
        body = code("""
            total = 0
            for i in range(len(s)):
                for j in range(i + $K, len(s) + 1):
                    if s[i:j] == s[i:j][::-1]:
                        total += 1
            return total
        """, K=k)
        return Spec("count_palindromes", "s: str", "int", doc, body,
                    [("",), ("a",), ("aa",), ("abc",), ("aaaa",), ("abacaba",)],
                    lambda r: (word(r, 0, 10, "abc"),))
    doc = ("Return the longest substring of s that is a palindrome (reads the same forwards and backwards, "
           "comparing characters exactly). If several have that length, return the one that starts first; "
           "the empty string gives ''.")
    body = code("""
        best = ''
        for i in range(len(s)):
            for j in range(i + len(best) + 1, len(s) + 1):
                if s[i:j] == s[i:j][::-1]:
                    best = s[i:j]
        return best
    """)
    return Spec("longest_palindrome", "s: str", "str", doc, body,
                [("",), ("a",), ("ab",), ("abba",), ("xabay",), ("abcbd racecar",)],
                lambda r: (word(r, 2, 12, "abcd"),))


@family("word_frequency", "counts", "most_common", "at_least")
def word_frequency(r, v):
    vocab = ["a", "to", "the", "cat", "dog", "sun", "tree", "river", "apple"]

    def text(r):
        return " ".join(w.capitalize() if r.random() < 0.25 else w for w in sentence(r, 0, 9, vocab).split())

    edges = [("",), ("  ",), ("The the THE",), ("a b c",), ("Dog dog cat Cat cat",), ("river",)]

    def count_loop(k: int) -> str:
        add = "counts[w] = counts.get(w, 0) + 1"
        if k > 1:
            add = f"if len(w) >= {k}:\n        {add}"
        return f"counts = {{}}\nfor w in s.lower().split():\n    {add}\n"

    if v == "counts":
        k = r.randint(1, 4)
        doc = (f"Count how often each word with at least {plural(k, 'character')} occurs in s, ignoring case. "
               "Words are separated by whitespace. Return a dict from each such word, in lower case, to its "
               "count.")
        return Spec("word_counts", "s: str", "dict[str, int]", doc, code(count_loop(k), "return counts"),
                    edges, lambda r: (text(r),))
    if v == "most_common":
        k = r.randint(1, 4)
        doc = (f"Return the most common word of s, in lower case, ignoring case and ignoring words shorter "
               f"than {plural(k, 'character')}; words are separated by whitespace. Ties go to the "
               "alphabetically first word. Return None if there is no such word.")
        body = code(count_loop(k), """
            if not counts:
                return None
            return min(counts, key=lambda w: (-counts[w], w))
        """)
        return Spec("most_common_word", "s: str", "str | None", doc, body, edges, lambda r: (text(r),))
    k = r.randint(2, 3)
    doc = (f"Return, sorted alphabetically, the words (in lower case) that occur at least {k} times in s, "
           "ignoring case. Words are separated by whitespace.")
    return Spec("repeated_words", "s: str", "list[str]", doc,
                code(count_loop(1), "return sorted(w for w, c in counts.items() if c >= $N)", N=k),
                edges, lambda r: (text(r),))


@family("case_convert", "to_camel", "to_snake")
def case_convert(r, v):
    sep = r.choice("_-")
    style = "snake_case" if sep == "_" else "kebab-case"
    if v == "to_camel":
        pascal = r.random() < 0.5
        doc = (f"Convert an identifier written in {style} to {'PascalCase' if pascal else 'camelCase'}. Split "
               f"s at every {sep!r} and drop empty parts; the first part is "
               f"{'capitalised' if pascal else 'written in lower case'} and every later part is capitalised "
               "(first character upper case, the rest lower case, as str.capitalize() does). No parts give ''.")
        body = code("""
            parts = [p for p in s.split($SEP) if p]
            if not parts:
                return ''
            return $FIRST + ''.join(p.capitalize() for p in parts[1:])
        """, SEP=repr(sep), FIRST="parts[0].capitalize()" if pascal else "parts[0].lower()")
        return Spec(f"to_{'pascal' if pascal else 'camel'}_case", "s: str", "str", doc, body,
                    [("",), (sep * 3,), ("a",), (f"hello{sep}world",), (f"{sep}lead{sep}{sep}trail{sep}",),
                     (f"MiXeD{sep}CaSe{sep}x1",)],
                    lambda r: (sep.join(word(r, 1, 6, LOWER + "AB9") for _ in range(r.randint(1, 4))),))
    upper = r.random() < 0.5
    target = "SCREAMING_" + style.upper() if upper else style
    doc = (f"Convert a camelCase or PascalCase identifier to {target}: insert {sep!r} before every upper-case "
           f"letter except the first character, and write every letter in {'upper' if upper else 'lower'} "
           "case. Other characters are kept as they are.")
    body = code("""
        out = []
        for i, ch in enumerate(s):
            if ch.isupper() and i > 0:
                out.append($SEP)
            out.append(ch.$CASE())
        return ''.join(out)
    """, SEP=repr(sep), CASE="upper" if upper else "lower")

    def camel(r):
        parts = [word(r, 1, 5) for _ in range(r.randint(1, 4))]
        first = parts[0].capitalize() if r.random() < 0.3 else parts[0]
        return first + "".join(p.capitalize() for p in parts[1:])

    return Spec(f"to_{'screaming_' if upper else ''}{'snake' if sep == '_' else 'kebab'}_case", "s: str", "str",
                doc, body, [("",), ("a",), ("A",), ("helloWorld",), ("HTTPServer",), ("version2Point0",)],
                lambda r: (camel(r),))


@family("anagrams", "check", "groups")
def anagrams(r, v):
    if v == "check":
        ignore_case, ignore_spaces = r.random() < 0.5, r.random() < 0.5
        doc = ("Return True if a and b are anagrams of each other: they contain the same characters, each the "
               "same number of times, in any order. "
               + ("Upper and lower case letters count as the same. " if ignore_case else "Case matters. ")
               + ("Spaces are ignored." if ignore_spaces else "Spaces count like any other character."))
        body = code("""
            def letters(t):
                return sorted($CH for ch in t$IF)
            return letters(a) == letters(b)
        """, CH="ch.lower()" if ignore_case else "ch", IF=" if ch != ' '" if ignore_spaces else "")

        def pair(r):
            a = word(r, 1, 9, "abcde  A")
            if r.random() < 0.6:
                b = list(a)
                r.shuffle(b)
                b = "".join(ch.upper() if r.random() < 0.2 else ch for ch in b)
                return a, b + (" " if r.random() < 0.3 else "")
            return a, word(r, 1, 9, "abcde  A")

        return Spec("are_anagrams", "a: str, b: str", "bool", doc, body,
                    [("", ""), ("a", "A"), ("ab", "ba"), ("a b", "ab"), ("abc", "abd"), ("Dormitory", "dirtyroom"),
                     ("listen", "silent")], pair)
    k = r.randint(1, 3)
    doc = (f"Group words into anagram classes (words made of the same letters, each the same number of times). "
           f"Return the classes that have at least {plural(k, 'word')}, each as a sorted list (duplicates "
           "kept), with the classes themselves in sorted order.")
    body = code("""
        groups = {}
        for w in words:
            groups.setdefault(''.join(sorted(w)), []).append(w)
        return sorted(sorted(g) for g in groups.values() if len(g) >= $K)
    """, K=k)
    pool = "listen silent enlist tinsel stone notes onset tones act cat tac dog god bird".split()
    return Spec("anagram_groups", "words: list[str]", "list[list[str]]", doc, body,
                [([],), (["a"],), (["ab", "ba", "ab"],), (["x", "y", "z"],), (["dog", "god", "odg", "cat"],)],
                lambda r: ([r.choice(pool) for _ in range(r.randint(1, 7))],))


@family("interleave", "a_first", "b_first")
def interleave(r, v):
    k = r.randint(1, 3)
    first, second = ("a", "b") if v == "a_first" else ("b", "a")
    chunk = plural(k, "character")
    doc = (f"Interleave the strings a and b in chunks of {chunk}: the first {chunk} of {first}, then the first "
           f"{chunk} of {second}, then the next {chunk} of {first}, and so on. When one string runs out, the "
           "rest of the other follows.")
    body = code("""
        out = []
        for i in range(0, max(len(a), len(b)), $K):
            out.append($FIRST[i:i + $K])
            out.append($SECOND[i:i + $K])
        return ''.join(out)
    """, K=k, FIRST=first, SECOND=second)
    return Spec("interleave", "a: str, b: str", "str", doc, body,
                [("", ""), ("abc", ""), ("", "xyz"), ("a", "b"), ("abcdefgh", "12")],
                lambda r: (word(r, 0, 7), word(r, 0, 7, "0123456789")))


@family("reverse_words", "order", "long_words", "every_kth")
def reverse_words(r, v):
    if v == "order":
        sep = r.choice([" ", "-", ", ", "/"])
        doc = (f"Return the words of s (separated by whitespace) in reverse order, joined by {sep!r}.")
        body = code("return $SEP.join(reversed(s.split()))", SEP=repr(sep))
        name = "reverse_word_order"
    elif v == "long_words":
        k = r.randint(2, 6)
        doc = (f"Reverse the letters of every word of s that has at least {k} characters and keep the other "
               "words as they are. Words are separated by whitespace; join them with single spaces.")
        body = code("return ' '.join(w[::-1] if len(w) >= $K else w for w in s.split())", K=k)
        name = "spin_words"
    else:
        k = r.randint(2, 4)
        doc = (f"Reverse the letters of every {k}-th word of s (the {k}-th, the {2 * k}-th, ...), keeping the "
               "other words as they are. Words are separated by whitespace; join them with single spaces.")
        body = code("return ' '.join(w[::-1] if i % $K == $R else w for i, w in enumerate(s.split()))", K=k, R=k - 1)
        name = "reverse_every_kth_word"
    return Spec(name, "s: str", "str", doc, body,
                [("",), ("   ",), ("word",), ("hello  world",), (" one two three four five six ",)],
                lambda r: (" ".join(word(r, 1, 7) for _ in range(r.randint(2, 7))),))


@family("acronym", "min_length", "stopwords")
def acronym(r, v):
    if v == "min_length":
        k = r.randint(1, 4)
        doc = (f"Return the acronym of the phrase s: the first letter, in upper case, of every word with at least "
               f"{plural(k, 'letter')}, in order. Words are separated by whitespace or hyphens.")
        body = code("return ''.join(w[0].upper() for w in s.replace('-', ' ').split() if len(w) >= $K)", K=k)
    else:
        stops = tuple(sorted(r.sample(["of", "the", "and", "for", "in", "a", "to", "on"], 3)))
        doc = (f"Return the acronym of the phrase s: the first letter, in upper case, of every word except "
               f"{', '.join(stops[:-1])} and {stops[-1]} (in any case), in order. Words are separated by "
               "whitespace or hyphens.")
        body = code("""
            skip = $STOPS
            return ''.join(w[0].upper() for w in s.replace('-', ' ').split() if w.lower() not in skip)
        """, STOPS=repr(stops))
    phrase_vocab = ["of", "the", "and", "for", "in", "a", "to", "on", "portable", "network", "graphics", "as",
                    "soon", "possible", "self-contained", "unit", "world", "health", "organization", "be"]
    return Spec("acronym", "s: str", "str", doc, body,
                [("",), ("a",), ("The Lord of the Rings",), ("as soon as possible",),
                 ("self-contained underwater breathing apparatus",)],
                lambda r: (sentence(r, 1, 7, phrase_vocab),))


# ================================================================ lists
@family("sum_multiples", "either", "exactly_one", "inclusive")
def sum_multiples(r, v):
    a, b = sorted(r.sample(range(2, 10), 2))
    if v == "either":
        doc = f"Return the sum of all positive integers below n that are multiples of {a} or {b} (or both)."
        cond, stop = f"i % {a} == 0 or i % {b} == 0", "n"
    elif v == "exactly_one":
        doc = (f"Return the sum of all positive integers below n that are multiples of exactly one of {a} and "
               f"{b} (multiples of both do not count).")
        cond, stop = f"(i % {a} == 0) != (i % {b} == 0)", "n"
    else:
        doc = f"Return the sum of the integers from 1 up to and including n that are multiples of {a} or {b}."
        cond, stop = f"i % {a} == 0 or i % {b} == 0", "n + 1"
    doc += " The sum is 0 when there are no such numbers."
    return Spec("sum_of_multiples", "n: int", "int", doc,
                code("return sum(i for i in range(1, $STOP) if $COND)", STOP=stop, COND=cond),
                [(0,), (1,), (-10,), (a,), (b,), (a * b,), (a * b + 1,), (100000,)],
                lambda r: (r.randint(2, 300),))


@family("kth_distinct", "largest", "smallest")
def kth_distinct(r, v):
    k = r.randint(2, 4)
    ordinal = {2: "second", 3: "third", 4: "fourth"}[k]
    doc = (f"Return the {ordinal} {v} distinct value in xs (equal values count once), or None if xs has fewer "
           f"than {k} distinct values.")
    body = code("""
        values = sorted(set(xs)$REV)
        return values[$I] if len(values) >= $K else None
    """, REV=", reverse=True" if v == "largest" else "", K=k, I=k - 1)
    return Spec(f"{ordinal}_{v}", "xs: list[int]", "int | None", doc, body,
                [([],), ([5],), ([3] * 5,), (list(range(k)),), ([-1, -2, -3, -4, -5],),
                 ([10**9, -10**9, 0, 7, 7],)],
                lambda r: (ints(r, 2, 9, -20, 20),))


@family("window_sums", "sums", "max_sum", "count_above")
def window_sums(r, v):
    k = r.randint(2, 4)
    edges = [([],), ([1],), (list(range(k)),), ([-5] * (k + 1),), ([10**9] * (k + 2),)]
    draw = lambda r: (ints(r, 0, 9, -10, 10),)  # noqa: E731
    if v == "sums":
        doc = (f"Return the sum of every window of {k} consecutive elements of xs, from left to right. A list "
               f"shorter than {k} has no windows: return [].")
        body = code("return [sum(xs[i:i + $K]) for i in range(len(xs) - $K + 1)]", K=k)
        return Spec("window_sums", "xs: list[int]", "list[int]", doc, body, edges, draw)
    if v == "max_sum":
        doc = (f"Return the largest sum of {k} consecutive elements of xs, or None if xs has fewer than "
               f"{k} elements.")
        body = code("""
            if len(xs) < $K:
                return None
            return max(sum(xs[i:i + $K]) for i in range(len(xs) - $K + 1))
        """, K=k)
        return Spec("max_window_sum", "xs: list[int]", "int | None", doc, body, edges, draw)
    k, t = r.randint(2, 3), r.randint(-5, 12)
    doc = f"Return how many windows of {k} consecutive elements of xs have a sum greater than {t}."
    body = code("return sum(1 for i in range(len(xs) - $K + 1) if sum(xs[i:i + $K]) > $T)", K=k, T=t)
    return Spec("count_heavy_windows", "xs: list[int]", "int", doc, body, edges, draw)


@family("running", "mod_sum", "extreme", "lag_diff")
def running(r, v):
    draw = lambda r: (ints(r, 1, 9, -30, 30),)  # noqa: E731
    edges = [([],), ([7],), ([0, 0, 0],), ([-5, -1, -3],), ([10**12, 1, -10**12],)]
    if v == "mod_sum":
        m = r.randint(5, 13)
        doc = (f"Return the running sums of xs modulo {m}: element i of the result is "
               f"(xs[0] + ... + xs[i]) % {m}, computed with Python's % (never negative).")
        body = code("""
            out = []
            total = 0
            for x in xs:
                total = (total + x) % $M
                out.append(total)
            return out
        """, M=m)
        return Spec("running_sums_mod", "xs: list[int]", "list[int]", doc, body, edges, draw)
    if v == "extreme":
        fn = r.choice(["max", "min"])
        what = "largest" if fn == "max" else "smallest"
        doc = f"Return the running {fn}imum of xs: element i of the result is the {what} of xs[0], ..., xs[i]."
        body = code("""
            out = []
            for x in xs:
                out.append(x if not out else $FN(out[-1], x))
            return out
        """, FN=fn)
        return Spec(f"running_{fn}", "xs: list[int]", "list[int]", doc, body, edges, draw)
    k = r.randint(1, 3)
    doc = f"Return the differences xs[i + {k}] - xs[i] for every i where both elements exist, in order of i."
    body = code("return [xs[i + $K] - xs[i] for i in range(len(xs) - $K)]", K=k)
    return Spec("lag_differences", "xs: list[int]", "list[int]", doc, body, edges, draw)


@family("chunks", "keep", "drop", "pad")
def chunks(r, v):
    k = r.randint(2, 4)
    head = f"Split xs into consecutive chunks of {k} elements, in order, and return the list of chunks (lists)."
    if v == "keep":
        doc = head + " The last chunk may be shorter."
        body = code("return [xs[i:i + $K] for i in range(0, len(xs), $K)]", K=k)
    elif v == "drop":
        doc = head + f" An incomplete last chunk (fewer than {k} elements) is dropped."
        body = code("return [xs[i:i + $K] for i in range(0, len(xs) - $K + 1, $K)]", K=k)
    else:
        fill = r.choice([0, -1, None])
        doc = head + f" An incomplete last chunk is padded at the end with {fill!r} up to {k} elements."
        body = code("""
            out = [xs[i:i + $K] for i in range(0, len(xs), $K)]
            if out and len(out[-1]) < $K:
                out[-1] = out[-1] + [$FILL] * ($K - len(out[-1]))
            return out
        """, K=k, FILL=repr(fill))
    return Spec("chunked", "xs: list[int]", "list[list[int]]", doc, body,
                [([],), ([1],), (list(range(k)),), (list(range(k + 1)),), (list(range(3 * k - 1)),)],
                lambda r: (ints(r, 1, 11, 0, 9),))


@family("dedupe", "first", "last", "exactly_k")
def dedupe(r, v):
    if v == "first":
        doc = ("Remove duplicates from xs, keeping the first occurrence of each value; the kept elements stay in "
               "their original order.")
        body = code("""
            seen = set()
            out = []
            for x in xs:
                if x not in seen:
                    seen.add(x)
                    out.append(x)
            return out
        """)
        name = "dedupe_keep_first"
    elif v == "last":
        doc = ("Remove duplicates from xs, keeping the last occurrence of each value; the kept elements stay in "
               "their original order.")
        body = code("return [x for i, x in enumerate(xs) if x not in xs[i + 1:]]")
        name = "dedupe_keep_last"
    else:
        k = r.randint(1, 3)
        doc = (f"Return the values that occur exactly {plural(k, 'time')} in xs, each once, in the order of their "
               "first occurrence.")
        body = code("return [x for i, x in enumerate(xs) if xs.count(x) == $K and x not in xs[:i]]", K=k)
        name = "values_seen_exactly" if k > 1 else "unique_values"
    return Spec(name, "xs: list[int]", "list[int]", doc, body,
                [([],), ([1],), ([2, 2, 2],), ([1, 2, 1, 3, 2, 1],), ([-1, 0, -1, 5, 0, 5, 5],)],
                lambda r: (ints(r, 2, 10, 0, 5),))


@family("sort_words", "length", "last_letter", "vowels", "letter")
def sort_words(r, v):
    desc = r.random() < 0.5
    if v == "length":
        doc = (f"Sort the words by length, {'longest' if desc else 'shortest'} first; words of equal length "
               "are in alphabetical order.")
        key = "(-len(w), w)" if desc else "(len(w), w)"
    elif v == "last_letter":
        doc = ("Sort the words by their last letter" + (", then by length" if desc else "")
               + ", then alphabetically. Every word is non-empty.")
        key = "(w[-1], len(w), w)" if desc else "(w[-1], w)"
    elif v == "vowels":
        doc = (f"Sort the words by how many vowels (a, e, i, o, u) they contain, {'most' if desc else 'fewest'} "
               "first; words with as many vowels are in alphabetical order.")
        key = f"({'-' if desc else ''}sum(ch in 'aeiou' for ch in w), w)"
    else:
        c = r.choice("aeinorst")
        doc = (f"Sort the words by how often the letter {c!r} occurs in them, {'most' if desc else 'fewest'} "
               "first; ties are in alphabetical order.")
        key = f"({'-' if desc else ''}w.count({c!r}), w)"
    return Spec("sort_words", "words: list[str]", "list[str]", doc,
                code("return sorted(words, key=lambda w: $KEY)", KEY=key),
                [([],), (["a"],), (["bb", "a", "ccc"],), (["same", "same"],), (["zeta", "alpha", "eta", "iota"],)],
                lambda r: ([word(r, 1, 7, "aeinorstbdk") for _ in range(r.randint(2, 7))],))


@family("sort_numbers", "digit_sum", "popcount", "distance", "residue")
def sort_numbers(r, v):
    desc = r.random() < 0.5
    draw = lambda r: (ints(r, 2, 8, -99, 99),)  # noqa: E731
    edges = [([],), ([5],), ([3, -3, 30, 12, 21],), ([0, 100, -1, 99],)]
    if v == "digit_sum":
        doc = (f"Sort xs by the sum of the decimal digits of each number (ignoring its sign), "
               f"{'largest' if desc else 'smallest'} digit sum first; numbers with equal digit sums are in "
               "increasing order.")
        key = f"({'-' if desc else ''}sum(int(d) for d in str(abs(x))), x)"
    elif v == "popcount":
        doc = (f"Sort the non-negative integers xs by the number of 1 bits in their binary form, "
               f"{'most' if desc else 'fewest'} first; numbers with as many 1 bits are in increasing order.")
        key = f"({'-' if desc else ''}bin(x).count('1'), x)"
        edges = [([],), ([5],), ([0, 1, 2, 3, 4, 5, 6, 7, 8],), ([1023, 1024, 1025],)]
        draw = lambda r: (ints(r, 2, 8, 0, 200),)  # noqa: E731
    elif v == "distance":
        t = r.randint(-10, 10)
        doc = f"Sort xs by distance from {t}, closest first; at equal distance the smaller number comes first."
        key = f"(abs(x - {t}), x)" if t > 0 else f"(abs(x + {-t}), x)" if t < 0 else "(abs(x), x)"
    else:
        m = r.randint(2, 9)
        doc = (f"Sort xs by the remainder of each number modulo {m} (Python's %, in 0..{m - 1}), smallest "
               "remainder first; numbers with equal remainders are in increasing order.")
        key = f"(x % {m}, x)"
    return Spec("sort_numbers", "xs: list[int]", "list[int]", doc,
                code("return sorted(xs, key=lambda x: $KEY)", KEY=key), edges, draw)


@family("pair_sum", "count", "exists", "pairs")
def pair_sum(r, v):
    t = r.randint(-4, 14)

    def draw(r):
        xs = ints(r, 0, 8, -5, 15)
        if r.random() < 0.5:
            x = r.randint(-5, 15)
            xs[r.randint(0, len(xs)):r.randint(0, len(xs))] = [x, t - x]
        return (xs,)

    edges = [([],), ([t],), ([t, 0],), ([t - 1, 1, 1],), ([0] * 4,)]
    if v == "count":
        doc = f"Return the number of index pairs i < j with xs[i] + xs[j] == {t}."
        body = code("return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[i] + xs[j] == $T)",
                    T=t)
        return Spec("count_pairs", "xs: list[int]", "int", doc, body, edges, draw)
    if v == "exists":
        doc = f"Return True if two elements of xs at different positions add up to {t}, else False."
        body = code("""
            for i in range(len(xs)):
                for j in range(i + 1, len(xs)):
                    if xs[i] + xs[j] == $T:
                        return True
            return False
        """, T=t)
        return Spec("has_pair_with_sum", "xs: list[int]", "bool", doc, body, edges, draw)
    doc = (f"Return the distinct pairs of values (a, b) with a <= b, where a and b are elements of xs at "
           f"different positions and a + b == {t}, as a sorted list of tuples.")
    body = code("""
        found = set()
        for i in range(len(xs)):
            for j in range(i + 1, len(xs)):
                if xs[i] + xs[j] == $T:
                    found.add((min(xs[i], xs[j]), max(xs[i], xs[j])))
        return sorted(found)
    """, T=t)
    return Spec("pairs_with_sum", "xs: list[int]", "list[tuple[int, int]]", doc, body, edges, draw)


@family("subarrays", "max_sum", "longest_run", "count_target")
def subarrays(r, v):
    draw = lambda r: (ints(r, 1, 9, -8, 8),)  # noqa: E731
    edges = [([],), ([4],), ([-3],), ([-2, -1, -5],), ([1, 2, 3, 4],), ([5, 5, 5],), ([3, 2, 1, 0],)]
    if v == "max_sum":
        if r.random() < 0.5:
            doc = ("Return the largest sum of a contiguous sublist of xs. The empty sublist is allowed, so the "
                   "result is never negative.")
            body = code("""
                best = current = 0
                for x in xs:
                    current = max(0, current + x)
                    best = max(best, current)
                return best
            """)
            return Spec("max_sublist_sum", "xs: list[int]", "int", doc, body, edges, draw)
        doc = "Return the largest sum of a non-empty contiguous sublist of xs, or None if xs is empty."
        body = code("""
            if not xs:
                return None
            best = current = xs[0]
            for x in xs[1:]:
                current = max(x, current + x)
                best = max(best, current)
            return best
        """)
        return Spec("max_sublist_sum", "xs: list[int]", "int | None", doc, body, edges, draw)
    if v == "longest_run":
        rel, what = r.choice([("<", "strictly greater than"), ("<=", "greater than or equal to"),
                              (">", "strictly smaller than"), (">=", "smaller than or equal to")])
        doc = (f"Return the length of the longest contiguous run of xs in which every element is {what} the one "
               "before it. A single element is a run of length 1; an empty list gives 0.")
        body = code("""
            best = current = 0
            for i, x in enumerate(xs):
                current = current + 1 if i > 0 and xs[i - 1] $REL x else 1
                best = max(best, current)
            return best
        """, REL=rel)
        return Spec("longest_run", "xs: list[int]", "int", doc, body, edges, draw)
    t = r.randint(-3, 8)
    doc = f"Return the number of non-empty contiguous sublists of xs whose elements add up to {t}."
    body = code("return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs) + 1) if sum(xs[i:j]) == $T)",
                T=t)
    return Spec("count_sublists_with_sum", "xs: list[int]", "int", doc, body, edges + [([t, 0, -t, t],)], draw)


@family("mode", "most_common", "least_common", "frequent")
def mode(r, v):
    count = """
        counts = {}
        for x in xs:
            counts[x] = counts.get(x, 0) + 1
    """
    draw = lambda r: (ints(r, 1, 10, -3, 5),)  # noqa: E731
    edges = [([],), ([7],), ([1, 2],), ([2, 1, 2, 1],), ([-1, -1, 3, 3, 3, -1, 0],)]
    if v in ("most_common", "least_common"):
        tie = r.choice(["smallest", "largest"])
        most = v == "most_common"
        doc = (f"Return the {'most' if most else 'least'} common value in xs; if several values are equally "
               f"common, return the {tie} of them. Return None for an empty list.")
        body = code(count, """
            if not counts:
                return None
            return min(counts, key=lambda x: ($C, $X))
        """, C="-counts[x]" if most else "counts[x]", X="x" if tie == "smallest" else "-x")
        return Spec(f"{'most' if most else 'least'}_common", "xs: list[int]", "int | None", doc, body, edges, draw)
    k = r.randint(2, 4)
    doc = f"Return, in increasing order, the values that occur more than len(xs) // {k} times in xs."
    body = code(count, "return sorted(x for x, c in counts.items() if c > len(xs) // $K)", K=k)
    return Spec("frequent_values", "xs: list[int]", "list[int]", doc, body, edges, draw)


@family("sorted_merge", "merge", "common", "difference")
def sorted_merge(r, v):
    unique = r.random() < 0.5
    head = "a and b are lists of integers, each sorted in increasing order. "
    if v == "merge":
        doc = head + ("Return the sorted list of the values in either list, each value once." if unique else
                      "Merge them into one sorted list that keeps every element, duplicates included.")
        body = code("return sorted(set(a) | set(b))" if unique else "return sorted(a + b)")
        name = "merge_sorted"
    elif v == "common":
        doc = head + ("Return the sorted list of the values that occur in both lists, each value once." if unique
                      else "Return the sorted list of their common elements, each value repeated as often as "
                           "it occurs in both lists (the smaller of its two counts).")
        body = code("return sorted(set(a) & set(b))") if unique else code("""
            rest = list(b)
            out = []
            for x in a:
                if x in rest:
                    rest.remove(x)
                    out.append(x)
            return out
        """)
        name = "common_elements"
    else:
        doc = head + ("Return the sorted list of the values of a that do not occur in b, each value once."
                      if unique else "Return the elements of a whose value does not occur in b, in order "
                                     "and keeping duplicates.")
        body = code("return sorted(set(a) - set(b))" if unique else "return [x for x in a if x not in b]")
        name = "sorted_difference"
    return Spec(name, "a: list[int], b: list[int]", "list[int]", doc, body,
                [([], []), ([1, 2], []), ([], [3]), ([1, 1, 2], [1, 2, 2]), ([-5, 0, 0, 9], [0, 9, 9, 10])],
                lambda r: (sorted(ints(r, 0, 7, -3, 8)), sorted(ints(r, 1, 7, -3, 8))))


# ================================================================ dicts
def small_dict(r: random.Random) -> dict[str, int]:
    return {word(r, 1, 4, "abcdef"): r.randint(0, 4) for _ in range(r.randint(1, 6))}


@family("invert_dict", "smallest", "first", "last", "groups")
def invert_dict(r, v):
    head = "Invert d, a dict from str keys to int values: map each value to the key that had it. "
    if v == "smallest":
        doc = head + "When several keys share a value, keep the alphabetically smallest key."
        update = "if value not in out or key < out[value]:\n    out[value] = key"
    elif v == "first":
        doc = head + "When several keys share a value, keep the first such key in d's order."
        update = "if value not in out:\n    out[value] = key"
    elif v == "last":
        doc = head + "When several keys share a value, keep the last such key in d's order."
        update = "out[value] = key"
    else:
        doc = ("Group the keys of d, a dict from str keys to int values, by value: return a dict from each value "
               "to the sorted list of the keys that have it.")
        return Spec("keys_by_value", "d: dict[str, int]", "dict[int, list[str]]", doc, code("""
            out = {}
            for key, value in d.items():
                out.setdefault(value, []).append(key)
            return {value: sorted(keys) for value, keys in out.items()}
        """), [({},), ({"a": 1},), ({"b": 1, "a": 1, "c": 2},)], lambda r: (small_dict(r),))
    body = "out = {}\nfor key, value in d.items():\n" + textwrap.indent(update, "    ") + "\nreturn out\n"
    return Spec("invert", "d: dict[str, int]", "dict[int, str]", doc, body,
                [({},), ({"a": 1},), ({"b": 1, "a": 1, "c": 2},), ({"x": 0, "y": 0, "z": 0},)],
                lambda r: (small_dict(r),))


@family("group_by", "first_letter", "last_letter", "length", "vowel_count")
def group_by(r, v):
    k = r.randint(1, 3)
    key, what, ret = {
        "first_letter": ("w[0]", "first letter", "dict[str, list[str]]"),
        "last_letter": ("w[-1]", "last letter", "dict[str, list[str]]"),
        "length": ("len(w)", "length", "dict[int, list[str]]"),
        "vowel_count": ("sum(ch in 'aeiou' for ch in w)", "number of vowels", "dict[int, list[str]]")}[v]
    skip = " Every word is non-empty." if k == 1 else f" Words shorter than {k} characters are left out."
    doc = (f"Group the words by their {what}: return a dict from each {what} to the list of the words that have "
           f"it, in their original order.{' The vowels are a, e, i, o and u.' if v == 'vowel_count' else ''}{skip}")
    body = code("""
        groups = {}
        for w in words:
            if len(w) >= $K:
                groups.setdefault($KEY, []).append(w)
        return groups
    """, K=k, KEY=key)
    return Spec(f"group_by_{v}", "words: list[str]", ret, doc, body,
                [([],), (["a"],), (["ab", "ba", "abc"],), (["tea", "tee", "toe", "tea"],)],
                lambda r: ([word(r, 1, 5, "abeiost") for _ in range(r.randint(1, 7))],))


@family("merge_dicts", "sum", "max", "first", "collect")
def merge_dicts(r, v):
    head = "Merge the dicts a and b (str keys, int values) into a new dict with the keys of both. "
    if v == "sum":
        drop = r.random() < 0.5
        doc = head + "A key in both gets the sum of its two values." + (
            " Keys whose merged value is 0 are left out." if drop else "")
        body = code("""
            out = dict(a)
            for key, value in b.items():
                out[key] = out.get(key, 0) + value
            return $RET
        """, RET="{key: value for key, value in out.items() if value != 0}" if drop else "out")
        ret = "dict[str, int]"
    elif v == "max":
        doc = head + "A key in both gets the larger of its two values."
        body = code("""
            out = dict(a)
            for key, value in b.items():
                out[key] = max(out[key], value) if key in out else value
            return out
        """)
        ret = "dict[str, int]"
    elif v == "first":
        doc = head + "A key in both keeps its value from a."
        body = code("""
            out = dict(a)
            for key, value in b.items():
                out.setdefault(key, value)
            return out
        """)
        ret = "dict[str, int]"
    else:
        doc = head + ("Each key maps to the list of its values: [value in a, value in b] for a key in both, "
                      "else a one-element list.")
        body = code("""
            out = {key: [value] for key, value in a.items()}
            for key, value in b.items():
                out.setdefault(key, []).append(value)
            return out
        """)
        ret = "dict[str, list[int]]"
    gen = lambda r: {word(r, 1, 2, "abc"): r.randint(-3, 9) for _ in range(r.randint(1, 4))}  # noqa: E731
    return Spec(f"merge_{v}", "a: dict[str, int], b: dict[str, int]", ret, doc, body,
                [({}, {}), ({"a": 1}, {}), ({}, {"b": 2}), ({"x": 3, "y": -3}, {"y": 3, "z": 0})],
                lambda r: (gen(r), gen(r)))


@family("inventory", "capped", "low_stock")
def inventory(r, v):
    items = ["apple", "pear", "fig", "kiwi", "plum"]
    draw = lambda r: ([(r.choice(items), r.randint(-6, 12)) for _ in range(r.randint(1, 7))],)  # noqa: E731
    edges = [([],), ([("fig", 0)],), ([("fig", 3), ("fig", -3)],), ([("kiwi", 100)],), ([("pear", -2)],)]
    if v == "capped":
        c = r.randint(5, 20)
        doc = (f"Apply ops, a list of (item, change) pairs, in order to an empty inventory and return it as a "
               f"dict from item to count. A count never exceeds {c}: a larger total is cut to {c}. An item whose "
               "count drops to 0 or below is removed (a later update starts it from 0 again).")
        body = code("""
            stock = {}
            for item, change in ops:
                count = min(stock.get(item, 0) + change, $C)
                if count > 0:
                    stock[item] = count
                else:
                    stock.pop(item, None)
            return stock
        """, C=c)
        return Spec("apply_stock_updates", "ops: list[tuple[str, int]]", "dict[str, int]", doc, body, edges, draw)
    t = r.randint(1, 5)
    doc = (f"Apply ops, a list of (item, change) pairs, in order to an empty inventory (counts may go negative) "
           f"and return, sorted alphabetically, the items mentioned in ops whose final count is below {t}.")
    body = code("""
        stock = {}
        for item, change in ops:
            stock[item] = stock.get(item, 0) + change
        return sorted(item for item, count in stock.items() if count < $T)
    """, T=t)
    return Spec("low_stock", "ops: list[tuple[str, int]]", "list[str]", doc, body, edges, draw)


# ================================================================ numbers
PRIME_HELPER = """
    def is_prime(m):
        if m < 2:
            return False
        d = 2
        while d * d <= m:
            if m % d == 0:
                return False
            d += 1
        return True
"""


@family("primes", "is_prime", "count_mod", "nth_after", "twins")
def primes(r, v):
    if v == "is_prime":
        doc = "Return True if n is a prime number (an integer greater than 1 with no divisors but 1 and itself)."
        body = code("""
            if n < 2:
                return False
            d = 2
            while d * d <= n:
                if n % d == 0:
                    return False
                d += 1
            return True
        """)
        return Spec("is_prime", "n: int", "bool", doc, body,
                    [(-7,), (0,), (1,), (2,), (4,), (97,), (7919,), (1000003,), (999999,)],
                    lambda r: (r.randint(2, 200),))
    if v == "count_mod":
        m = r.choice([3, 4, 5, 6, 8])
        rem = r.choice([x for x in range(1, m) if all(x % p or m % p for p in (2, 3, 5))])
        doc = f"Count the prime numbers p < n with p % {m} == {rem}."
        body = code(PRIME_HELPER, "return sum(1 for p in range(2, n) if p % $M == $R and is_prime(p))", M=m, R=rem)
        return Spec("count_primes_in_class", "n: int", "int", doc, body,
                    [(0,), (1,), (2,), (3,), (-5,), (10,), (5000,)], lambda r: (r.randint(2, 300),))
    if v == "nth_after":
        k = r.randint(1, 60)
        doc = (f"Return the n-th smallest prime number greater than {k}, for n >= 1 (n = 1 gives the first prime "
               f"above {k}).")
        body = code(PRIME_HELPER, """
            count = 0
            m = $K
            while count < n:
                m += 1
                if is_prime(m):
                    count += 1
            return m
        """, K=k)
        return Spec("nth_prime_after", "n: int", "int", doc, body, [(1,), (2,), (3,), (10,), (100,)],
                    lambda r: (r.randint(1, 40),))
    g = r.choice([2, 4, 6])
    doc = f"Count the pairs of prime numbers (p, p + {g}) with p + {g} <= n."
    body = code(PRIME_HELPER, "return sum(1 for p in range(2, n - $G + 1) if is_prime(p) and is_prime(p + $G))",
                G=g)
    return Spec("count_prime_pairs", "n: int", "int", doc, body, [(0,), (5,), (7,), (11,), (13,), (3000,)],
                lambda r: (r.randint(2, 400),))


@family("gcd_lcm", "gcd", "lcm", "coprime")
def gcd_lcm(r, v):
    if v == "gcd":
        doc = ("Return the greatest common divisor of the integers in xs, ignoring their signs. The gcd of an "
               "empty list, or of zeros only, is 0.")
        body = code("""
            g = 0
            for x in xs:
                a, b = g, abs(x)
                while b:
                    a, b = b, a % b
                g = a
            return g
        """)
        return Spec("gcd_of_list", "xs: list[int]", "int", doc, body,
                    [([],), ([0],), ([0, 0],), ([-12],), ([12, 18],), ([7, 13],), ([2**40, 2**35 * 3],)],
                    lambda r: ([r.randint(1, 12) * r.choice([1, 2, 6, 12]) for _ in range(r.randint(1, 5))],))
    if v == "lcm":
        doc = "Return the least common multiple of the positive integers in xs; 1 for an empty list."
        body = code("""
            result = 1
            for x in xs:
                a, b = result, x
                while b:
                    a, b = b, a % b
                result = result * x // a
            return result
        """)
        return Spec("lcm_of_list", "xs: list[int]", "int", doc, body,
                    [([],), ([1],), ([6],), ([4, 6],), ([5, 7, 11],), (list(range(1, 21)),)],
                    lambda r: ([r.randint(1, 15) for _ in range(r.randint(1, 5))],))
    m = r.choice([6, 10, 12, 14, 15, 18, 20, 21, 30, 36, 42, 60])
    doc = f"Return how many integers k with 1 <= k <= n have no common divisor greater than 1 with {m}."
    body = code("""
        def gcd(a, b):
            while b:
                a, b = b, a % b
            return a
        return sum(1 for k in range(1, n + 1) if gcd(k, $M) == 1)
    """, M=m)
    return Spec("count_coprime", "n: int", "int", doc, body, [(0,), (1,), (-4,), (m,), (10000,)],
                lambda r: (r.randint(2, 200),))


@family("digits", "sum_base", "root", "count_digit", "parity_product")
def digits(r, v):
    draw = lambda r: (r.choice([1, -1]) * r.randint(0, 10**r.randint(1, 7)),)  # noqa: E731
    edges = [(0,), (7,), (-305,), (10**18,), (99999999999,)]
    if v in ("sum_base", "root"):
        b = r.randint(2, 10)
        if v == "sum_base":
            doc = f"Return the sum of the digits of abs(n) written in base {b}."
            body = code("""
                n = abs(n)
                total = 0
                while n:
                    total += n % $B
                    n //= $B
                return total
            """, B=b)
            return Spec("digit_sum" if b == 10 else f"digit_sum_base_{b}", "n: int", "int", doc, body, edges, draw)
        doc = (f"Return the digital root of abs(n) in base {b}: while the number has more than one base-{b} "
               f"digit, replace it by the sum of its base-{b} digits.")
        body = code("""
            n = abs(n)
            while n >= $B:
                total = 0
                while n:
                    total += n % $B
                    n //= $B
                n = total
            return n
        """, B=b)
        return Spec("digital_root", "n: int", "int", doc, body, edges, draw)
    if v == "count_digit":
        d = r.randint(0, 9)
        doc = f"Return how many times the digit {d} occurs in the decimal form of n (without its sign)."
        return Spec(f"count_digit_{d}", "n: int", "int", doc, code("return str(abs(n)).count($D)", D=repr(str(d))),
                    edges + [(int(str(d) * 5),)], draw)
    parity = r.choice(["odd", "even"])
    doc = f"Return the product of the {parity} decimal digits of abs(n), or 0 if it has none."
    body = code("""
        product = 1
        found = False
        for ch in str(abs(n)):
            if int(ch) % 2 == $P:
                product *= int(ch)
                found = True
        return product if found else 0
    """, P=1 if parity == "odd" else 0)
    return Spec(f"{parity}_digit_product", "n: int", "int", doc, body, edges + [(2468,), (1357,)], draw)


DIGITS = "0123456789abcdef"


def to_base(n: int, b: int) -> str:
    if n == 0:
        return "0"
    out, m = [], abs(n)
    while m:
        out.append(DIGITS[m % b])
        m //= b
    return ("-" if n < 0 else "") + "".join(reversed(out))


@family("base_convert", "to_base", "from_base")
def base_convert(r, v):
    b = r.choice([2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 16])
    alphabet = DIGITS[:b]
    numbers = [0, 1, -1, b - 1, b, -b * b, 10**15 + 7]
    draw = lambda r: (r.choice([1, 1, -1]) * r.randint(0, 10**r.randint(1, 6)),)  # noqa: E731
    if v == "to_base":
        doc = (f"Write the integer n in base {b} with the digits {alphabet!r}, most significant first and with "
               "a leading '-' for negative numbers; 0 is '0'.")
        body = code("""
            digits = $ALPHABET
            if n == 0:
                return '0'
            sign = '-' if n < 0 else ''
            n = abs(n)
            out = []
            while n:
                out.append(digits[n % $B])
                n //= $B
            return sign + ''.join(reversed(out))
        """, ALPHABET=repr(alphabet), B=b)
        return Spec(f"to_base_{b}", "n: int", "str", doc, body, [(x,) for x in numbers], draw)
    doc = (f"Return the value of s, an integer written in base {b} with the digits {alphabet!r} (most significant "
           "first) and an optional leading '-'.")
    body = code("""
        digits = $ALPHABET
        value = 0
        for ch in s.lstrip('-'):
            value = value * $B + digits.index(ch)
        return -value if s.startswith('-') else value
    """, ALPHABET=repr(alphabet), B=b)
    return Spec(f"from_base_{b}", "s: str", "int", doc, body, [(to_base(x, b),) for x in numbers],
                lambda r: (to_base(draw(r)[0], b),))


@family("collatz", "steps", "peak", "terms")
def collatz(r, v):
    shortcut = r.random() < 0.5
    odd = "(3 * n + 1) // 2" if shortcut else "3 * n + 1"
    rule = (f"one step maps an even number m to m // 2 and an odd number m to "
            f"{'(3 * m + 1) // 2' if shortcut else '3 * m + 1'}")
    edges = [(1,), (2,), (3,), (7,), (27,), (2**20,), (10**6 + 1,)]
    draw = lambda r: (r.randint(1, 300),)  # noqa: E731
    if v == "steps":
        doc = f"Return how many steps the sequence starting at n (n >= 1) takes to reach 1, where {rule}."
        body = code("""
            steps = 0
            while n != 1:
                n = n // 2 if n % 2 == 0 else $ODD
                steps += 1
            return steps
        """, ODD=odd)
        return Spec("collatz_steps", "n: int", "int", doc, body, edges, draw)
    if v == "peak":
        doc = (f"Return the largest number the sequence starting at n (n >= 1) reaches on its way to 1 (n itself "
               f"included), where {rule}.")
        body = code("""
            peak = n
            while n != 1:
                n = n // 2 if n % 2 == 0 else $ODD
                peak = max(peak, n)
            return peak
        """, ODD=odd)
        return Spec("collatz_peak", "n: int", "int", doc, body, edges, draw)
    k = r.randint(3, 8)
    doc = (f"Return the first {k} terms of the sequence that starts at n (n >= 1), where {rule}. The sequence goes "
           "on after reaching 1.")
    body = code("""
        out = []
        for _ in range($K):
            out.append(n)
            n = n // 2 if n % 2 == 0 else $ODD
        return out
    """, K=k, ODD=odd)
    return Spec("collatz_terms", "n: int", "list[int]", doc, body, edges, draw)


@family("recurrence", "nth", "sum_first")
def recurrence(r, v):
    a0, a1 = r.randint(-2, 4), r.randint(1, 5)
    p, q = r.randint(1, 3), r.choice([-1, 1, 2])
    rhs = (f"{p} * a(i-1)" if p > 1 else "a(i-1)") + (f" + {q} * a(i-2)" if q > 1 else " + a(i-2)" if q == 1
                                                      else " - a(i-2)")
    head = f"The sequence a is defined by a(0) = {a0}, a(1) = {a1} and a(i) = {rhs} for i >= 2. "
    step = ("b" if p == 1 else f"{p} * b") + (" + a" if q == 1 else f" + {q} * a" if q > 1 else " - a")
    if v == "nth":
        doc = head + "Return a(n) for n >= 0."
        body = code("""
            a, b = $A0, $A1
            for _ in range(n):
                a, b = b, $STEP
            return a
        """, A0=a0, A1=a1, STEP=step)
        return Spec("sequence_term", "n: int", "int", doc, body, [(0,), (1,), (2,), (3,), (60,)],
                    lambda r: (r.randint(2, 25),))
    doc = head + "Return a(0) + a(1) + ... + a(n-1), the sum of the first n terms (0 when n <= 0)."
    body = code("""
        total = 0
        a, b = $A0, $A1
        for _ in range(n):
            total += a
            a, b = b, $STEP
        return total
    """, A0=a0, A1=a1, STEP=step)
    return Spec("sequence_sum", "n: int", "int", doc, body, [(0,), (-3,), (1,), (2,), (3,), (60,)],
                lambda r: (r.randint(2, 25),))


@family("divisors", "proper_sum", "count", "classify", "above")
def divisors(r, v):
    edges = [(1,), (2,), (6,), (12,), (28,), (97,), (496,), (10**4,)]
    draw = lambda r: (r.randint(2, 400),)  # noqa: E731
    if v == "proper_sum":
        doc = "Return the sum of the proper divisors of n >= 1 (its divisors smaller than n); 1 has none."
        return Spec("proper_divisor_sum", "n: int", "int", doc,
                    code("return sum(d for d in range(1, n) if n % d == 0)"), edges, draw)
    if v == "count":
        doc = "Return the number of positive divisors of n >= 1, including 1 and n."
        return Spec("divisor_count", "n: int", "int", doc,
                    code("return sum(1 for d in range(1, n + 1) if n % d == 0)"), edges, draw)
    if v == "classify":
        doc = ("Classify n >= 1 by the sum s of its proper divisors (divisors smaller than n): return 'perfect' "
               "if s == n, 'abundant' if s > n and 'deficient' if s < n.")
        body = code("""
            s = sum(d for d in range(1, n) if n % d == 0)
            if s == n:
                return 'perfect'
            return 'abundant' if s > n else 'deficient'
        """)
        return Spec("classify_number", "n: int", "str", doc, body, edges + [(18,), (8128,)], draw)
    k = r.randint(1, 12)
    doc = f"Return the divisors of n >= 1 that are greater than {k}, in increasing order."
    return Spec("large_divisors", "n: int", "list[int]", doc,
                code("return [d for d in range(1, n + 1) if n % d == 0 and d > $K]", K=k), edges, draw)


@family("prime_factors", "all", "distinct", "largest", "count")
def prime_factors(r, v):
    loop = """
        factors = []
        d = 2
        while d * d <= n:
            while n % d == 0:
                factors.append(d)
                n //= d
            d += 1
        if n > 1:
            factors.append(n)
    """
    doc, ret, tail = {
        "all": (("Return the prime factors of n in increasing order, each repeated as often as it divides n "
                 "(12 gives [2, 2, 3]); n < 2 gives []."),
                "list[int]", "return factors"),
        "distinct": ("Return the distinct prime factors of n in increasing order; n < 2 gives [].", "list[int]",
                     "return sorted(set(factors))"),
        "largest": ("Return the largest prime factor of n, or None if n < 2.", "int | None",
                    "return factors[-1] if factors else None"),
        "count": (("Return how many prime factors n has, counted with multiplicity (12 = 2 * 2 * 3 has 3); "
                   "n < 2 has none."),
                  "int", "return len(factors)"),
    }[v]
    return Spec(f"prime_factors_{v}", "n: int", ret, doc, code(loop, tail),
                [(0,), (1,), (2,), (12,), (97,), (2**20,), (600851475143,)], lambda r: (r.randint(2, 5000),))


@family("powers", "isqrt", "is_kth_power", "nearest_square")
def powers(r, v):
    newton = """
        x = n
        y = (x + 1) // 2
        while y < x:
            x = y
            y = (x + n // x) // 2
    """
    draw = lambda r: (r.randint(0, 40) ** 2 if r.random() < 0.3 else r.randint(0, 10**6),)  # noqa: E731
    if v == "isqrt":
        doc = "Return the integer square root of n >= 0: the largest integer r with r * r <= n."
        return Spec("integer_sqrt", "n: int", "int", doc, code(newton, "return x"),
                    [(0,), (1,), (2,), (3,), (4,), (99,), (10**30,), (10**30 - 1,)], draw)
    if v == "nearest_square":
        doc = "Return the perfect square (0, 1, 4, 9, ...) closest to n >= 0."
        body = code(newton, """
            low, high = x * x, (x + 1) * (x + 1)
            return low if n - low < high - n else high
        """)
        return Spec("nearest_square", "n: int", "int", doc, body, [(0,), (1,), (2,), (3,), (12,), (13,), (10**12 + 1,)],
                    draw)
    k = r.randint(2, 5)
    doc = f"Return True if n is the {k}-th power of a non-negative integer (0 and 1 are), else False."
    body = code("""
        if n < 0:
            return False
        low, high = 0, n
        while low < high:
            mid = (low + high + 1) // 2
            if mid ** $K <= n:
                low = mid
            else:
                high = mid - 1
        return low ** $K == n
    """, K=k)
    return Spec("is_perfect_power", "n: int", "bool", doc, body,
                [(-8,), (0,), (1,), (2,), (2**k,), (3**k + 1,), (10**(2 * k),), (7**k,)],
                lambda r: (r.randint(0, 30) ** k + r.choice([0, 0, 1, -1]),))


@family("pascal", "row", "binom_mod", "odd_count")
def pascal(r, v):
    if v == "row":
        m = r.choice([None, 2, 3, 5, 7, 10])
        doc = "Return row n (n >= 0) of Pascal's triangle: row 0 is [1] and row 1 is [1, 1]." + (
            f" Take every entry modulo {m}." if m else "")
        body = code("""
            row = [1]
            for _ in range(n):
                row = [a + b for a, b in zip([0] + row, row + [0])]
            return $RET
        """, RET=f"[x % {m} for x in row]" if m else "row")
        return Spec("pascal_row", "n: int", "list[int]", doc, body, [(0,), (1,), (2,), (5,), (12,)],
                    lambda r: (r.randint(3, 14),))
    if v == "binom_mod":
        def draw_nk(r):
            n = r.randint(4, 40)
            return (n, r.randint(0, n))

        m = r.choice([7, 10, 13, 97, 100, 1000, 10**9 + 7])
        doc = (f"Return the binomial coefficient C(n, k), the number of ways to choose k of n items, modulo {m}; "
               "it is 0 when k < 0 or k > n.")
        body = code("""
            if k < 0 or k > n:
                return 0
            c = 1
            for i in range(k):
                c = c * (n - i) // (i + 1)
            return c % $M
        """, M=m)
        return Spec("binomial_mod", "n: int, k: int", "int", doc, body,
                    [(0, 0), (5, 0), (5, 5), (5, 6), (5, -1), (10, 3), (60, 30)],
                    draw_nk)
    doc = "Return how many entries of row n (n >= 0) of Pascal's triangle are odd (row 0 is [1])."
    body = code("""
        row = [1]
        for _ in range(n):
            row = [a + b for a, b in zip([0] + row, row + [0])]
        return sum(1 for x in row if x % 2 == 1)
    """)
    return Spec("odd_pascal_entries", "n: int", "int", doc, body, [(0,), (1,), (2,), (7,), (8,), (100,)],
                lambda r: (r.randint(3, 60),))


ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
         (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n: int) -> str:
    out = []
    for value, letters in ROMAN:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


@family("roman", "to_roman", "from_roman")
def roman(r, v):
    draw = lambda r: (r.randint(1, 3999),)  # noqa: E731
    if v == "to_roman":
        subtractive, lower = r.random() < 0.5, r.random() < 0.5
        values = ROMAN if subtractive else [(n, s) for n, s in ROMAN if len(s) == 1]
        doc = (f"Write n (1 <= n <= 3999) in Roman numerals{', in lower case' if lower else ''}. "
               + ("Use the standard subtractive forms (IV = 4, IX = 9, XL = 40, XC = 90, CD = 400, CM = 900)."
                  if subtractive else "Use the old additive form, with no subtraction: 4 is IIII and 9 is VIIII."))
        body = code("""
            values = $VALUES
            out = []
            for value, letters in values:
                while n >= value:
                    out.append(letters)
                    n -= value
            return ''.join(out)$LOWER
        """, VALUES=repr(values), LOWER=".lower()" if lower else "")
        return Spec("to_roman", "n: int", "str", doc, body, [(1,), (4,), (9,), (14,), (40,), (1994,), (3999,)],
                    draw)
    any_case = r.random() < 0.5
    doc = ("Return the value of the Roman numeral s" + (", given in upper or lower case" if any_case else "")
           + ". A letter worth less than the letter after it is subtracted (IV = 4, CM = 900); otherwise it is "
             "added.")
    body = code("""
        values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
        $UPPER
        total = 0
        for i, ch in enumerate(s):
            if i + 1 < len(s) and values[s[i + 1]] > values[ch]:
                total -= values[ch]
            else:
                total += values[ch]
        return total
    """, UPPER="s = s.upper()" if any_case else "")
    body = body.replace("\n\n", "\n")

    def case(s: str, r: random.Random) -> str:
        return s.lower() if any_case and r.random() < 0.5 else s

    return Spec("from_roman", "s: str", "int", doc, body,
                [("",), ("I",), ("IV",), ("IX",), ("MCMXCIV",), (case("MMMCMXCIX", random.Random(1)),)]
                + ([("xlii",)] if any_case else []),
                lambda r: (case(to_roman(r.randint(1, 3999)), r),))


# ================================================================ dates and times
def days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def random_date(r: random.Random, fmt: str) -> str:
    y, m = r.randint(1600, 2100), r.randint(1, 12)
    d = r.randint(1, days_in_month(y, m))
    return f"{y:04d}-{m:02d}-{d:02d}" if fmt == "iso" else f"{d:02d}/{m:02d}/{y:04d}"


def fmt_date(y: int, m: int, d: int, fmt: str) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}" if fmt == "iso" else f"{d:02d}/{m:02d}/{y:04d}"


ORDINAL = """
    def ordinal(text):
        $PARSE
        leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
        days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        y -= 1
        return y * 365 + y // 4 - y // 100 + y // 400 + sum(days[:m - 1]) + d
"""


@family("dates", "day_of_year", "days_between", "add_days", "weekday")
def dates(r, v):
    fmt = r.choice(["iso", "dmy"])
    layout = "'YYYY-MM-DD'" if fmt == "iso" else "'DD/MM/YYYY'"
    parse = ("y, m, d = (int(p) for p in text.split('-'))" if fmt == "iso"
             else "d, m, y = (int(p) for p in text.split('/'))")
    greg = "Leap years follow the Gregorian calendar."
    special = [fmt_date(*ymd, fmt) for ymd in [(2000, 2, 29), (1900, 3, 1), (2024, 12, 31), (2023, 1, 1),
                                                (1600, 1, 1)]]
    draw = lambda r: (random_date(r, fmt),)  # noqa: E731
    if v == "day_of_year":
        doc = f"Return the day of the year of the date s, written {layout}: 1 January is day 1. {greg}"
        body = code("""
            $PARSE
            leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
            days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
            return sum(days[:m - 1]) + d
        """, PARSE=parse.replace("text", "s"))
        return Spec("day_of_year", "s: str", "int", doc, body, [(s,) for s in special], draw)
    if v == "days_between":
        doc = f"Return the number of days between the dates a and b, written {layout}, as a non-negative number. {greg}"
        body = code(ORDINAL, "return abs(ordinal(a) - ordinal(b))", PARSE=parse)
        pairs = [(special[0], special[0]), (special[0], special[1]), (special[2], special[3]),
                 (special[4], special[2])]
        return Spec("days_between", "a: str, b: str", "int", doc, body, pairs,
                    lambda r: (random_date(r, fmt), random_date(r, fmt)))
    if v == "weekday":
        doc = (f"Return the English name of the weekday of the date s, written {layout} (1 January 2000 was a "
               f"Saturday). {greg}")
        body = code(ORDINAL, """
            names = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
            return names[ordinal(s) % 7]
        """, PARSE=parse)
        return Spec("weekday", "s: str", "str", doc, body, [(s,) for s in special], draw)
    k = r.choice([-1, 1]) * r.randint(1, 400)
    doc = (f"Return the date {abs(k)} days {'after' if k > 0 else 'before'} the date s, both written {layout}. "
           f"{greg}")
    step = """
        for _ in range($N):
            d += 1
            if d > month_days(y, m):
                d, m = 1, m + 1
                if m > 12:
                    m, y = 1, y + 1
    """ if k > 0 else """
        for _ in range($N):
            d -= 1
            if d == 0:
                m -= 1
                if m == 0:
                    m, y = 12, y - 1
                d = month_days(y, m)
    """
    out = "f'{y:04d}-{m:02d}-{d:02d}'" if fmt == "iso" else "f'{d:02d}/{m:02d}/{y:04d}'"
    body = code("""
        def month_days(y, m):
            if m == 2:
                return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
            return 30 if m in (4, 6, 9, 11) else 31
        $PARSE
    """, step, "return $OUT", PARSE=parse.replace("text", "s"), N=abs(k), OUT=out)
    return Spec("shift_date", "s: str", "str", doc, body, [(s,) for s in special], draw)


@family("clock", "add_minutes", "minutes_until", "to_12h")
def clock(r, v):
    def hhmm(r):
        return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"

    if v == "add_minutes":
        k = r.choice([-1, 1]) * r.randint(1, 1500)
        doc = (f"s is a time of day 'HH:MM' on a 24-hour clock. Return the time {abs(k)} minutes "
               f"{'later' if k > 0 else 'earlier'}, in the same format, wrapping around midnight.")
        body = code("""
            h, m = (int(p) for p in s.split(':'))
            total = (h * 60 + m + $K) % (24 * 60)
            return f'{total // 60:02d}:{total % 60:02d}'
        """, K=k)
        return Spec("add_minutes", "s: str", "str", doc, body, [("00:00",), ("23:59",), ("12:00",), ("07:05",)],
                    lambda r: (hhmm(r),))
    if v == "minutes_until":
        doc = ("a and b are times of day 'HH:MM' on a 24-hour clock. Return how many minutes pass from a until the "
               "clock next shows b (0 if a == b).")
        body = code("""
            ha, ma = (int(p) for p in a.split(':'))
            hb, mb = (int(p) for p in b.split(':'))
            return (hb * 60 + mb - ha * 60 - ma) % (24 * 60)
        """)
        return Spec("minutes_until", "a: str, b: str", "int", doc, body,
                    [("00:00", "00:00"), ("23:59", "00:00"), ("00:00", "23:59"), ("12:30", "12:29")],
                    lambda r: (hhmm(r), hhmm(r)))
    lower = r.random() < 0.5
    am, pm = ("am", "pm") if lower else ("AM", "PM")
    doc = (f"Convert s, a time 'HH:MM' on a 24-hour clock, to the 12-hour form 'h:MM {am}' or 'h:MM {pm}', with "
           f"no leading zero on the hour: 00:MM is 12:MM {am} and 12:MM is 12:MM {pm}.")
    body = code("""
        h, m = (int(p) for p in s.split(':'))
        suffix = $AM if h < 12 else $PM
        return f'{(h - 1) % 12 + 1}:{m:02d} {suffix}'
    """, AM=repr(am), PM=repr(pm))
    return Spec("to_12_hour", "s: str", "str", doc, body,
                [("00:00",), ("00:59",), ("01:05",), ("11:59",), ("12:00",), ("13:01",), ("23:59",)],
                lambda r: (hhmm(r),))


# ================================================================ parsing
@family("key_values", "parse", "total")
def key_values(r, v):
    pair, kv = r.choice(";,&|"), r.choice("=:")
    keys = ["a", "b", "x", "id", "cost", "qty", "n"]

    def text(r):
        parts = []
        for _ in range(r.randint(0, 5)):
            key = r.choice(keys)
            parts.append(f"{' ' if r.random() < 0.2 else ''}{key}{kv}{r.randint(-20, 99)}")
            if r.random() < 0.1:
                parts.append("junk")
        return pair.join(parts)

    edges = [("",), (f"a{kv}1",), (f"a{kv}1{pair}a{kv}2",), (f"{pair}{pair}b{kv}-7{pair}",), (f" id {kv}5",)]
    head = (f"s is a list of key{kv}value pairs separated by {pair!r}, such as 'a{kv}1{pair}b{kv}-2', where every "
            f"value is an integer. Keys are stripped of surrounding spaces and pieces without {kv!r} are ignored.")
    if v == "parse":
        doc = head + " Return a dict from key to value; a repeated key keeps its last value."
        body = code("""
            out = {}
            for part in s.split($PAIR):
                if $KV in part:
                    key, value = part.split($KV, 1)
                    out[key.strip()] = int(value)
            return out
        """, PAIR=repr(pair), KV=repr(kv))
        return Spec("parse_pairs", "s: str", "dict[str, int]", doc, body, edges, lambda r: (text(r),))
    letter = r.choice("abcinqx")
    doc = head + f" Return the sum of the values of all pairs whose key starts with {letter!r}."
    body = code("""
        total = 0
        for part in s.split($PAIR):
            if $KV in part:
                key, value = part.split($KV, 1)
                if key.strip().startswith($LETTER):
                    total += int(value)
        return total
    """, PAIR=repr(pair), KV=repr(kv), LETTER=repr(letter))
    return Spec("sum_pairs", "s: str", "int", doc, body, edges + [(f"{letter}{kv}4{pair}{letter}z{kv}6",)],
                lambda r: (text(r),))


def rpn_text(r: random.Random, depth: int = 0) -> str:
    if depth > 2 or r.random() < 0.3:
        return str(r.randint(0, 12))
    return f"{rpn_text(r, depth + 1)} {rpn_text(r, depth + 1)} {r.choice('+-*')}"


@family("expressions", "rpn", "left_to_right", "precedence")
def expressions(r, v):
    times = r.choice(["*", "x"])
    ops = f"'+', '-' and {times!r} (multiplication)"

    def infix(r):
        tokens = [str(r.randint(0, 12))]
        for _ in range(r.randint(0, 4)):
            tokens += [r.choice(["+", "-", times]), str(r.randint(0, 12))]
        return " ".join(tokens)

    if v == "rpn":
        doc = (f"Evaluate s, an expression in reverse Polish notation: integers and the operators {ops}, "
               "separated by single spaces. Return its value.")
        body = code("""
            stack = []
            for token in s.split():
                if token in ('+', '-', $TIMES):
                    b = stack.pop()
                    a = stack.pop()
                    stack.append(a + b if token == '+' else a - b if token == '-' else a * b)
                else:
                    stack.append(int(token))
            return stack[-1]
        """, TIMES=repr(times))
        return Spec("eval_rpn", "s: str", "int", doc, body,
                    [("7",), ("1 2 +",), ("5 9 -",), (f"2 3 4 {times} +",), (f"2 3 + 4 {times}",)],
                    lambda r: (rpn_text(r).replace("*", times),))
    if v == "left_to_right":
        doc = (f"Evaluate s: integers and the operators {ops}, separated by single spaces. Ignore the usual "
               f"precedence and apply the operators strictly from left to right, so '2 + 3 {times} 4' is 20.")
        body = code("""
            tokens = s.split()
            value = int(tokens[0])
            for i in range(1, len(tokens), 2):
                op, n = tokens[i], int(tokens[i + 1])
                value = value + n if op == '+' else value - n if op == '-' else value * n
            return value
        """)
        return Spec("eval_left_to_right", "s: str", "int", doc, body,
                    [("7",), ("1 + 2",), (f"2 + 3 {times} 4",), (f"10 - 2 - 3 {times} 0",)], lambda r: (infix(r),))
    doc = (f"Evaluate s: integers and the operators {ops}, separated by single spaces, with the usual precedence "
           f"({times!r} before '+' and '-', which go from left to right), so '2 + 3 {times} 4' is 14.")
    body = code("""
        tokens = s.split()
        terms = []
        sign = 1
        product = int(tokens[0])
        for i in range(1, len(tokens), 2):
            op, n = tokens[i], int(tokens[i + 1])
            if op == $TIMES:
                product *= n
            else:
                terms.append(sign * product)
                sign = 1 if op == '+' else -1
                product = n
        terms.append(sign * product)
        return sum(terms)
    """, TIMES=repr(times))
    return Spec("eval_expression", "s: str", "int", doc, body,
                [("7",), ("1 + 2",), (f"2 + 3 {times} 4",), (f"10 - 2 {times} 3 - 1",), (f"2 {times} 3 {times} 4",)],
                lambda r: (infix(r),))


@family("ranges", "expand", "compress")
def ranges(r, v):
    item, dash = r.choice([",", ";", "|"]), r.choice(["-", "..", ":"])

    def numbers(r):
        xs, x = [], r.randint(0, 5)
        for _ in range(r.randint(0, 8)):
            xs.append(x)
            x += r.choice([1, 1, 1, 2, 3])
        return xs

    if v == "expand":
        doc = (f"Expand s, a list of items separated by {item!r}, into the list of integers it stands for, in order. "
               f"An item is a non-negative integer or a range 'a{dash}b' (a <= b) standing for every integer from "
               "a to b inclusive. Empty items are ignored.")
        body = code("""
            out = []
            for part in s.split($ITEM):
                if not part:
                    continue
                if $DASH in part:
                    a, b = part.split($DASH)
                    out.extend(range(int(a), int(b) + 1))
                else:
                    out.append(int(part))
            return out
        """, ITEM=repr(item), DASH=repr(dash))

        def text(r):
            return item.join(f"{a}{dash}{a + r.randint(0, 4)}" if r.random() < 0.5 else str(a)
                             for a in (r.randint(0, 30) for _ in range(r.randint(1, 4))))

        return Spec("expand_ranges", "s: str", "list[int]", doc, body,
                    [("",), ("5",), (f"0{dash}0",), (f"1{dash}3{item}{item}7",), (f"10{dash}12{item}3",)],
                    lambda r: (text(r),))
    run = r.choice([2, 3])
    doc = (f"xs is a strictly increasing list of non-negative integers. Write it compactly: every maximal run of "
           f"at least {run} consecutive integers becomes 'first{dash}last', every other number is written alone, "
           f"and the items are joined by {item!r}.")
    body = code("""
        items = []
        i = 0
        while i < len(xs):
            j = i
            while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
                j += 1
            if j - i + 1 >= $RUN:
                items.append(str(xs[i]) + $DASH + str(xs[j]))
                i = j + 1
            else:
                items.append(str(xs[i]))
                i += 1
        return $ITEM.join(items)
    """, RUN=run, DASH=repr(dash), ITEM=repr(item))
    return Spec("compress_ranges", "xs: list[int]", "str", doc, body,
                [([],), ([4],), ([1, 2],), ([1, 2, 3],), ([0, 2, 4],), ([1, 2, 3, 5, 6, 8, 9, 10, 11],)],
                lambda r: (numbers(r),))


@family("validate", "hex_color", "ipv4", "password", "username")
def validity(r, v):
    def mutate(r, s, alphabet):
        s = list(s)
        action = r.randrange(3)
        if action == 0 and s:
            del s[r.randrange(len(s))]
        elif action == 1:
            s.insert(r.randint(0, len(s)), r.choice(alphabet))
        elif s:
            s[r.randrange(len(s))] = r.choice(alphabet)
        return "".join(s)

    if v == "hex_color":
        short, lower_only = r.random() < 0.5, r.random() < 0.5
        hexd = "0123456789abcdef" + ("" if lower_only else "ABCDEF")
        doc = (f"Return True if s is a hex colour: '#' followed by exactly {'3 or 6' if short else '6'} hexadecimal "
               f"digits ({'0-9 and a-f, lower case only' if lower_only else '0-9, a-f or A-F'}); else False.")
        body = code("""
            return s.startswith('#') and len(s) in $LENGTHS and all(ch in $HEXD for ch in s[1:])
        """, LENGTHS=(4, 7) if short else (7,), HEXD=repr(hexd))

        def draw(r):
            n = 3 if short and r.random() < 0.4 else 6
            s = "#" + word(r, n, n, "0123456789abcdefABCDEF")
            return (mutate(r, s, "#0aFgz") if r.random() < 0.4 else s,)

        return Spec("is_hex_color", "s: str", "bool", doc, body,
                    [("",), ("#",), ("#abc",), ("#ABCDEF",), ("#12345g",), ("123456",), ("#1234567",), ("#a1b2c3",)],
                    draw)
    if v == "ipv4":
        zeros = r.random() < 0.5
        doc = ("Return True if s is an IPv4 address: four decimal numbers from 0 to 255 separated by dots, with "
               "nothing else. " + ("Leading zeros are allowed ('01' is 1)." if zeros else
                                   "A number may not have leading zeros ('01' is invalid, '0' is fine)."))
        body = code("""
            parts = s.split('.')
            if len(parts) != 4:
                return False
            for p in parts:
                if not p or not all('0' <= ch <= '9' for ch in p) or int(p) > 255:
                    return False$ZEROS
            return True
        """, ZEROS="" if zeros else "\n    if len(p) > 1 and p[0] == '0':\n        return False")

        def draw(r):
            s = ".".join(str(r.choice([r.randint(0, 255), r.randint(0, 9)])) for _ in range(4))
            if r.random() < 0.2:
                s = s.replace(".", ".0", 1)
            return (mutate(r, s, "0.9a") if r.random() < 0.4 else s,)

        return Spec("is_ipv4", "s: str", "bool", doc, body,
                    [("",), ("0.0.0.0",), ("255.255.255.255",), ("256.1.1.1",), ("1.2.3",), ("1.2.3.4.5",),
                     ("01.2.3.4",), ("1..3.4",), ("a.b.c.d",), ("192.168.1.10",)], draw)
    if v == "password":
        k, special = r.randint(6, 12), r.random() < 0.5
        doc = (f"Return True if s is a strong password: at least {k} characters, with at least one lower-case "
               "letter, one upper-case letter and one digit"
               + (", and at least one of the characters !@#%&." if special else "."))
        body = code("""
            return (len(s) >= $K and any(ch.islower() for ch in s) and any(ch.isupper() for ch in s)
                    and any(ch.isdigit() for ch in s)$SPECIAL)
        """, K=k, SPECIAL=" and any(ch in '!@#%&' for ch in s)" if special else "")
        alphabet = "abcxyzABCXYZ0129!@#%&"

        def draw(r):
            s = "".join(r.choice(["a", "B", "3", "#", word(r, 1, 3, alphabet)]) for _ in range(r.randint(2, 8)))
            return (s,)

        return Spec("is_strong_password", "s: str", "bool", doc, body,
                    [("",), ("a" * 20,), ("Ab1" + "!" * (k - 3),), ("Ab1!",), ("ABCDEFGH1!x",), ("abcdefgh1!X" * 2,)],
                    draw)
    lo, hi = r.randint(3, 5), r.randint(8, 16)
    doc = (f"Return True if s is a valid username: between {lo} and {hi} characters long, starting with a lower-case "
           "ASCII letter, and using only lower-case ASCII letters, digits and underscores.")
    body = code("""
        allowed = 'abcdefghijklmnopqrstuvwxyz0123456789_'
        return $LO <= len(s) <= $HI and 'a' <= s[0] <= 'z' and all(ch in allowed for ch in s)
    """, LO=lo, HI=hi)

    def draw(r):
        s = word(r, 1, 1) + word(r, lo - 1, hi - 1, LOWER + "0123456789_")
        return (mutate(r, s, "_A9 -z") if r.random() < 0.5 else s,)

    return Spec("is_valid_username", "s: str", "bool", doc, body,
                [("",), ("a" * lo,), ("a" * (lo - 1),), ("a" * hi,), ("a" * (hi + 1),), ("_" + "a" * lo,),
                 ("9" + "a" * lo,), ("ab_1" + "c" * lo,), ("abC" + "d" * lo,)], draw)


@family("extract_numbers", "sum", "max", "count_above")
def extract_numbers(r, v):
    signed = r.random() < 0.5
    what = ("Integers in s are its maximal runs of decimal digits" + (
        ", each negative if a '-' stands directly before it." if signed else "; a '-' before one is ignored."))
    scan = """
        numbers = []
        i = 0
        while i < len(s):
            if $START:
                j = i + 1
                while j < len(s) and s[j].isdigit():
                    j += 1
                numbers.append(int(s[i:j]))
                i = j
            else:
                i += 1
    """
    start = ("s[i].isdigit() or (s[i] == '-' and i + 1 < len(s) and s[i + 1].isdigit())" if signed
             else "s[i].isdigit()")

    def text(r):
        return "".join(r.choice(["ab", " ", "-", "x-", str(r.randint(0, 500)), "7", "--3", "."])
                       for _ in range(r.randint(1, 8)))

    edges = [("",), ("no digits",), ("007",), ("a-5b",), ("1-2-3",), ("x 12 y 30 z",)]
    if v == "sum":
        doc = f"Return the sum of the integers in s. {what}"
        return Spec("sum_numbers_in_text", "s: str", "int", doc, code(scan, "return sum(numbers)", START=start),
                    edges, lambda r: (text(r),))
    if v == "max":
        doc = f"Return the largest integer in s, or None if there is none. {what}"
        return Spec("max_number_in_text", "s: str", "int | None", doc,
                    code(scan, "return max(numbers) if numbers else None", START=start), edges, lambda r: (text(r),))
    t = r.randint(-5, 20)
    doc = f"Return how many integers in s are greater than {t}. {what}"
    return Spec("count_numbers_above", "s: str", "int", doc,
                code(scan, "return sum(1 for x in numbers if x > $T)", START=start, T=t), edges, lambda r: (text(r),))


# ================================================================ simulation
@family("robot", "final", "distance", "visited", "returns")
def robot(r, v):
    up, down, left, right = r.choice(["UDLR", "NSWE"])
    moves = {up: (0, 1), down: (0, -1), left: (-1, 0), right: (1, 0)}
    head = (f"A robot starts at (0, 0) and follows the moves in s one by one: {up!r} moves it to y + 1, {down!r} to "
            f"y - 1, {right!r} to x + 1 and {left!r} to x - 1; every other character is ignored. ")
    walk = """
        moves = $MOVES
        x = y = 0
    """
    edges = [("",), ("?",), (up + down,), (up * 3 + right * 4,), (left + down + right + up + "x" + left,)]
    draw = lambda r: (word(r, 0, 14, up + down + left + right + "x "),)  # noqa: E731
    if v == "final":
        doc = head + "Return its final position as a tuple (x, y)."
        body = code(walk, """
            for ch in s:
                if ch in moves:
                    x, y = x + moves[ch][0], y + moves[ch][1]
            return (x, y)
        """, MOVES=repr(moves))
        return Spec("final_position", "s: str", "tuple[int, int]", doc, body, edges, draw)
    if v == "distance":
        farthest = r.random() < 0.5
        doc = head + ("Return the largest Manhattan distance |x| + |y| from (0, 0) it ever reaches." if farthest
                      else "Return its Manhattan distance |x| + |y| from (0, 0) at the end.")
        body = code(walk, """
            best = 0
            for ch in s:
                if ch in moves:
                    x, y = x + moves[ch][0], y + moves[ch][1]
                    best = max(best, abs(x) + abs(y))
            return $RET
        """, MOVES=repr(moves), RET="best" if farthest else "abs(x) + abs(y)")
        return Spec("farthest_distance" if farthest else "final_distance", "s: str", "int", doc, body, edges, draw)
    if v == "visited":
        doc = head + "Return how many distinct positions it occupies, the start included."
        body = code(walk, """
            seen = {(0, 0)}
            for ch in s:
                if ch in moves:
                    x, y = x + moves[ch][0], y + moves[ch][1]
                    seen.add((x, y))
            return len(seen)
        """, MOVES=repr(moves))
        return Spec("cells_visited", "s: str", "int", doc, body, edges, draw)
    doc = head + "Return how many of its moves bring it back to (0, 0)."
    body = code(walk, """
        count = 0
        for ch in s:
            if ch in moves:
                x, y = x + moves[ch][0], y + moves[ch][1]
                if x == 0 and y == 0:
                    count += 1
        return count
    """, MOVES=repr(moves))
    return Spec("returns_to_origin", "s: str", "int", doc, body, edges + [(up + down + "x" + left + right,)], draw)


@family("bank", "goes_negative", "lowest", "first_overdraft", "fees")
def bank(r, v):
    start = r.choice([0, 0, r.randint(1, 100)])
    head = (f"A bank account starts with a balance of {start}. ops lists deposits (positive) and withdrawals "
            "(negative), applied in order. ")
    draw = lambda r: (ints(r, 1, 8, -60, 50),)  # noqa: E731
    edges = [([],), ([0],), ([-start - 1],), ([-start],), ([10, -5, -10, 100],), ([-10**9, 10**9],)]
    if v == "goes_negative":
        doc = head + "Return True if the balance is ever below zero, else False."
        body = code("""
            balance = $S
            for op in ops:
                balance += op
                if balance < 0:
                    return True
            return False
        """, S=start)
        return Spec("goes_negative", "ops: list[int]", "bool", doc, body, edges, draw)
    if v == "lowest":
        doc = head + "Return the lowest balance the account ever has, the starting balance included."
        body = code("""
            balance = lowest = $S
            for op in ops:
                balance += op
                lowest = min(lowest, balance)
            return lowest
        """, S=start)
        return Spec("lowest_balance", "ops: list[int]", "int", doc, body, edges, draw)
    if v == "first_overdraft":
        doc = head + "Return the index of the first operation after which the balance is below zero, or -1 if none."
        body = code("""
            balance = $S
            for i, op in enumerate(ops):
                balance += op
                if balance < 0:
                    return i
            return -1
        """, S=start)
        return Spec("first_overdraft", "ops: list[int]", "int", doc, body, edges, draw)
    fee = r.randint(1, 10)
    doc = head + (f"Every withdrawal after which the balance is below zero also costs a fee of {fee}. Return the "
                  "final balance.")
    body = code("""
        balance = $S
        for op in ops:
            balance += op
            if op < 0 and balance < 0:
                balance -= $FEE
        return balance
    """, S=start, FEE=fee)
    return Spec("balance_with_fees", "ops: list[int]", "int", doc, body, edges, draw)


@family("stack_machine", "final_stack", "top")
def stack_machine(r, v):
    strict = r.random() < 0.5
    arith = r.choice(["mul", "sub"])
    arith_doc = ("'mul' replaces the two top values by their product" if arith == "mul" else
                 "'sub' replaces the two top values by the second-from-top minus the top")
    arith_code = ("stack.append(stack.pop() * stack.pop())" if arith == "mul" else
                  "b, a = stack.pop(), stack.pop()\n        stack.append(a - b)")
    result = "the final stack as a list, bottom first" if v == "final_stack" else \
        "the value on top of the final stack, or None if it is empty"
    doc = (f"Run the commands in order on an empty stack and return {result}. 'push N' pushes the integer N, "
           f"'pop' removes the top value, 'add' replaces the two top values by their sum, {arith_doc}, 'dup' "
           "pushes a copy of the top value and 'swap' exchanges the two top values. "
           + ("If a command finds too few values on the stack, return None." if strict
              else "A command that finds too few values on the stack is skipped."))
    body = code("""
        need = {'push': 0, 'pop': 1, 'add': 2, $ARITH: 2, 'dup': 1, 'swap': 2}
        stack = []
        for command in commands:
            parts = command.split()
            if len(stack) < need[parts[0]]:
                $FAIL
            if parts[0] == 'push':
                stack.append(int(parts[1]))
            elif parts[0] == 'pop':
                stack.pop()
            elif parts[0] == 'add':
                stack.append(stack.pop() + stack.pop())
            elif parts[0] == $ARITH:
                $ARITH_CODE
            elif parts[0] == 'dup':
                stack.append(stack[-1])
            else:
                stack[-1], stack[-2] = stack[-2], stack[-1]
        return $RET
    """, ARITH=repr(arith), FAIL="return None" if strict else "continue", ARITH_CODE=arith_code,
                RET="stack" if v == "final_stack" else "stack[-1] if stack else None")

    def draw(r):
        commands = []
        for _ in range(r.randint(1, 7)):
            op = r.choice(["push", "push", "push", "pop", "add", arith, "dup", "swap"])
            commands.append(f"push {r.randint(-9, 20)}" if op == "push" else op)
        return (commands,)

    return Spec("run_stack_machine", "commands: list[str]", "list[int] | None" if v == "final_stack" else "int | None",
                doc, body, [([],), (["pop"],), (["push 3", "dup", arith],), (["push 1", "push 2", "swap"],),
                            (["push 5", "add", "push -4"],)], draw)


@family("automaton", "step", "steps")
def automaton(r, v):
    rule = r.choice([30, 54, 60, 90, 102, 110, 150, 184])
    wrap = r.random() < 0.5
    k = 1 if v == "step" else r.randint(2, 4)
    doc = (f"cells is a row of 0/1 cells of the elementary cellular automaton with rule {rule}: a cell's next "
           f"state is bit number 4 * left + 2 * centre + right of {rule} (bit 0 is the lowest), from the current "
           "states of its left neighbour, itself and its right neighbour. "
           + ("The row wraps around: the first and last cells are neighbours. " if wrap
              else "Cells beyond the ends count as 0. ")
           + ("Return the next row." if k == 1 else f"Return the row after {k} steps."))
    left = "cells[i - 1]" if wrap else "(cells[i - 1] if i > 0 else 0)"
    right = "cells[(i + 1) % n]" if wrap else "(cells[i + 1] if i < n - 1 else 0)"
    step = "[($RULE >> (4 * $LEFT + 2 * cells[i] + $RIGHT)) & 1 for i in range(n)]"
    body = code("n = len(cells)", f"return {step}" if k == 1 else f"""
        for _ in range($K):
            cells = {step}
        return cells
    """, K=k, RULE=rule, LEFT=left, RIGHT=right)
    return Spec("automaton_step" if k == 1 else "automaton_run", "cells: list[int]", "list[int]", doc, body,
                [([],), ([1],), ([0, 0, 0],), ([1, 1, 1],), ([0, 0, 0, 1, 0, 0, 0],)],
                lambda r: ([r.randint(0, 1) for _ in range(r.randint(3, 10))],))


@family("josephus", "survivor", "order")
def josephus(r, v):
    k = r.randint(2, 5)
    head = (f"n people stand in a circle, numbered 1 to n. Counting starts at person 1, and every {k}-th person "
            "counted leaves the circle; counting goes on with the next person. ")
    if v == "survivor":
        doc = head + "Return the number of the last person left, for n >= 1."
        body = code("""
            people = list(range(1, n + 1))
            i = 0
            while len(people) > 1:
                i = (i + $K - 1) % len(people)
                people.pop(i)
            return people[0]
        """, K=k)
        return Spec("josephus_survivor", "n: int", "int", doc, body, [(1,), (2,), (k,), (k + 1,), (500,)],
                    lambda r: (r.randint(3, 40),))
    doc = head + "Return the numbers of all n people in the order they leave."
    body = code("""
        people = list(range(1, n + 1))
        out = []
        i = 0
        while people:
            i = (i + $K - 1) % len(people)
            out.append(people.pop(i))
        return out
    """, K=k)
    return Spec("elimination_order", "n: int", "list[int]", doc, body, [(0,), (1,), (2,), (k,), (12,)],
                lambda r: (r.randint(3, 12),))


@family("intervals", "merge", "covered", "max_overlap")
def intervals(r, v):
    def draw(r):
        out = []
        for _ in range(r.randint(1, 5)):
            a = r.randint(-5, 20)
            out.append((a, a + r.randint(0, 6)))
        return (out,)

    head = "intervals is a list of (start, end) pairs of integers with start <= end, in any order. "
    edges = [([],), ([(1, 1)],), ([(1, 3), (3, 5)],), ([(1, 3), (4, 6)],), ([(5, 9), (1, 2), (2, 10)],),
             ([(0, 10**9), (5, 6)],)]
    if v == "merge":
        adjacent = r.random() < 0.5
        doc = head + ("Merge every group of overlapping intervals (sharing at least one point, so (1, 3) and (3, 5) "
                      "merge" + (", and also intervals of adjacent integers such as (1, 3) and (4, 6)" if adjacent
                                 else "; (1, 3) and (4, 6) stay apart")
                      + ") and return the merged intervals as tuples, sorted by start.")
        body = code("""
            out = []
            for start, end in sorted(intervals):
                if out and start <= out[-1][1]$PLUS:
                    out[-1] = (out[-1][0], max(out[-1][1], end))
                else:
                    out.append((start, end))
            return out
        """, PLUS=" + 1" if adjacent else "")
        return Spec("merge_intervals", "intervals: list[tuple[int, int]]", "list[tuple[int, int]]", doc, body, edges,
                    draw)
    if v == "covered":
        doc = head + ("Each (start, end) covers the real line from start to end, a length of end - start. Return the "
                      "total length covered by their union.")
        body = code("""
            total = 0
            current = None
            for start, end in sorted(intervals):
                if current is None or start > current[1]:
                    if current is not None:
                        total += current[1] - current[0]
                    current = [start, end]
                else:
                    current[1] = max(current[1], end)
            if current is not None:
                total += current[1] - current[0]
            return total
        """)
        return Spec("covered_length", "intervals: list[tuple[int, int]]", "int", doc, body, edges, draw)
    closed = r.random() < 0.5
    doc = head + ("Return the largest number of intervals that contain one common point. "
                  + ("Intervals are closed: (1, 3) and (3, 5) share the point 3." if closed else
                     "Intervals are half-open, [start, end): (1, 3) and (3, 5) share no point, and (2, 2) is empty."))
    body = code("""
        best = 0
        for p, _ in intervals:
            best = max(best, sum(1 for a, b in intervals if a <= p $REL b))
        return best
    """, REL="<=" if closed else "<")
    return Spec("max_overlap", "intervals: list[tuple[int, int]]", "int", doc, body, edges + [([(2, 2), (2, 2)],)],
                draw)


# ================================================================ matrices and grids
@family("matrix", "rotate", "spiral", "diagonal", "transpose")
def matrix(r, v):
    def draw(r):
        rows, cols = r.randint(1, 4), r.randint(1, 4)
        return ([[r.randint(-9, 9) for _ in range(cols)] for _ in range(rows)],)

    edges = [([],), ([[5]],), ([[1, 2, 3]],), ([[1], [2]],), ([[1, 2], [3, 4]],), ([[1, 2, 3], [4, 5, 6]],)]
    if v == "rotate":
        how = r.choice(["clockwise", "counterclockwise", "half"])
        doc = ("Return the matrix m (a list of rows, all the same length) rotated "
               + {"clockwise": "90 degrees clockwise", "counterclockwise": "90 degrees counterclockwise",
                  "half": "by 180 degrees"}[how] + ", as a new list of lists.")
        body = {"clockwise": "return [list(row) for row in zip(*m[::-1])]\n",
                "counterclockwise": "return [list(row) for row in zip(*m)][::-1]\n",
                "half": "return [row[::-1] for row in m[::-1]]\n"}[how]
        return Spec("rotate_matrix", "m: list[list[int]]", "list[list[int]]", doc, body, edges, draw)
    if v == "spiral":
        ccw = r.random() < 0.5
        doc = ("Return the elements of the matrix m (a list of rows, all the same length) in spiral order, starting "
               "at the top-left corner and going " + ("down the first column first, then counterclockwise, "
                                                      if ccw else "along the first row first, then clockwise, ")
               + "inwards.")
        body = code("""
            m = [list(row) for row in $START]
            out = []
            while m:
                out.extend(m.pop(0))
                m = [list(row) for row in zip(*m)][::-1]
            return out
        """, START="zip(*m)" if ccw else "m")
        return Spec("spiral_order", "m: list[list[int]]", "list[int]", doc, body,
                    edges + [([[1, 2, 3], [4, 5, 6], [7, 8, 9]],)], draw)
    if v == "diagonal":
        which = r.choice(["main", "anti", "both"])
        doc = "m is a square matrix (a list of n rows of n integers). Return the sum of " + {
            "main": "its main diagonal, m[0][0] + m[1][1] + ... .",
            "anti": "its anti-diagonal, m[0][n-1] + m[1][n-2] + ... .",
            "both": "both its diagonals; the centre of an odd-sized matrix is counted once."}[which]
        body = {"main": "return sum(m[i][i] for i in range(len(m)))\n",
                "anti": "return sum(m[i][len(m) - 1 - i] for i in range(len(m)))\n",
                "both": code("""
                    n = len(m)
                    total = sum(m[i][i] + m[i][n - 1 - i] for i in range(n))
                    if n % 2 == 1:
                        total -= m[n // 2][n // 2]
                    return total
                """)}[which]

        def square(r):
            n = r.randint(1, 4)
            return ([[r.randint(-9, 9) for _ in range(n)] for _ in range(n)],)

        return Spec("diagonal_sum", "m: list[list[int]]", "int", doc, body,
                    [([],), ([[5]],), ([[1, 2], [3, 4]],), ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],)], square)
    doc = ("Return the transpose of the matrix m (a list of rows, all the same length): row i of the result is "
           "column i of m.")
    return Spec("transpose", "m: list[list[int]]", "list[list[int]]", doc,
                code("return [[row[j] for row in m] for j in range(len(m[0]))] if m else []"), edges, draw)


@family("grid", "islands", "largest", "perimeter")
def grid(r, v):
    def draw(r):
        rows, cols = r.randint(1, 5), r.randint(1, 6)
        return (["".join(r.choice("#..") for _ in range(cols)) for _ in range(rows)],)

    edges = [([],), (["."],), (["#"],), (["#.#", ".#.", "#.#"],), (["##.", "#..", "..#"],), (["####", "#..#", "####"],)]
    if v == "perimeter":
        doc = ("grid is a list of equal-length strings where '#' is land and '.' is water; cells outside the grid are "
               "water. Return the total perimeter of the land: the number of land-cell sides that touch water.")
        body = code("""
            total = 0
            for r, row in enumerate(grid):
                for c, ch in enumerate(row):
                    if ch != '#':
                        continue
                    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                        nr, nc = r + dr, c + dc
                        if not (0 <= nr < len(grid) and 0 <= nc < len(row) and grid[nr][nc] == '#'):
                            total += 1
            return total
        """)
        return Spec("land_perimeter", "grid: list[str]", "int", doc, body, edges, draw)
    diagonal = r.random() < 0.5
    steps = [(-1, 0), (1, 0), (0, -1), (0, 1)] + ([(-1, -1), (-1, 1), (1, -1), (1, 1)] if diagonal else [])
    doc = ("grid is a list of equal-length strings where '#' is land and '.' is water. An island is a group of land "
           "cells connected " + ("horizontally, vertically or diagonally. " if diagonal else
                                 "horizontally or vertically (not diagonally). ")
           + ("Return the number of islands." if v == "islands" else
              "Return the number of cells in the largest island, or 0 if there is no land."))
    body = code("""
        steps = $STEPS
        seen = set()
        sizes = []
        for r0 in range(len(grid)):
            for c0 in range(len(grid[r0])):
                if grid[r0][c0] != '#' or (r0, c0) in seen:
                    continue
                seen.add((r0, c0))
                stack = [(r0, c0)]
                size = 0
                while stack:
                    r, c = stack.pop()
                    size += 1
                    for dr, dc in steps:
                        nr, nc = r + dr, c + dc
                        if (0 <= nr < len(grid) and 0 <= nc < len(grid[nr]) and grid[nr][nc] == '#'
                                and (nr, nc) not in seen):
                            seen.add((nr, nc))
                            stack.append((nr, nc))
                sizes.append(size)
        return $RET
    """, STEPS=repr(steps), RET="len(sizes)" if v == "islands" else "max(sizes, default=0)")
    return Spec("count_islands" if v == "islands" else "largest_island", "grid: list[str]", "int", doc, body, edges,
                draw)


# ================================================================ bits, counting, checksums, text
@family("bits", "popcount", "hamming", "reverse", "power_of")
def bits(r, v):
    if v == "popcount":
        doc = "Return the number of 1 bits in the binary form of the non-negative integer n."
        return Spec("count_set_bits", "n: int", "int", doc, code("return bin(n).count('1')"),
                    [(0,), (1,), (255,), (256,), (2**64 - 1,)], lambda r: (r.randint(0, 10**6),))
    if v == "hamming":
        doc = ("Return the Hamming distance of the non-negative integers a and b: the number of bit positions "
               "where they differ.")
        return Spec("hamming_distance", "a: int, b: int", "int", doc, code("return bin(a ^ b).count('1')"),
                    [(0, 0), (1, 0), (7, 7), (2**40, 0), (255, 256)],
                    lambda r: (r.randint(0, 1000), r.randint(0, 1000)))
    if v == "reverse":
        w = r.randint(4, 16)
        doc = (f"Reverse the order of the lowest {w} bits of n (0 <= n < 2**{w}), so bit 0 becomes bit {w - 1}, "
               "and return the resulting number.")
        body = code("""
            out = 0
            for _ in range($W):
                out = (out << 1) | (n & 1)
                n >>= 1
            return out
        """, W=w)
        return Spec("reverse_bits", "n: int", "int", doc, body, [(0,), (1,), (2**w - 1,), (2**(w - 1),), (6,)],
                    lambda r: (r.randint(0, 2**w - 1),))
    k = r.randint(2, 7)
    doc = f"Return True if n is a power of {k} ({k}**0 = 1 counts), else False. n <= 0 gives False."
    body = code("""
        if n <= 0:
            return False
        while n % $K == 0:
            n //= $K
        return n == 1
    """, K=k)
    return Spec(f"is_power_of_{k}", "n: int", "bool", doc, body,
                [(-k,), (0,), (1,), (k,), (k * k,), (k ** 20,), (k ** 20 + 1,), (2 * k + 1,)],
                lambda r: (r.choice([k ** r.randint(0, 8), r.randint(-5, 500)]),))


@family("coins", "min_coins", "ways")
def coins(r, v):
    values = r.choice([(1, 5, 10, 25), (1, 3, 4), (2, 5), (3, 7), (1, 6, 10), (4, 9, 15), (2, 3, 7), (5, 12)])
    edges = [(0,), (-3,), (1,), (values[0],), (11,), (1000,)]
    draw = lambda r: (r.randint(2, 60),)  # noqa: E731
    if v == "min_coins":
        doc = (f"Return the smallest number of coins with values {values} (each usable any number of times) that add "
               "up to exactly amount, or None if no combination does. amount 0 needs 0 coins; a negative amount "
               "cannot be made.")
        body = code("""
            if amount < 0:
                return None
            best = [0] + [None] * amount
            for a in range(1, amount + 1):
                options = [best[a - c] for c in $COINS if c <= a and best[a - c] is not None]
                best[a] = min(options) + 1 if options else None
            return best[amount]
        """, COINS=repr(values))
        return Spec("min_coins", "amount: int", "int | None", doc, body, edges, draw)
    doc = (f"Return the number of ways to make amount from coins with values {values}, each usable any number of "
           "times, where the order of the coins does not matter. amount 0 has one way (no coins); a negative amount "
           "has none.")
    body = code("""
        if amount < 0:
            return 0
        ways = [1] + [0] * amount
        for c in $COINS:
            for a in range(c, amount + 1):
                ways[a] += ways[a - c]
        return ways[amount]
    """, COINS=repr(values))
    return Spec("coin_combinations", "amount: int", "int", doc, body, edges, draw)


LUHN = """
    def luhn_ok(t):
        total = 0
        for i, ch in enumerate(reversed(t)):
            d = int(ch)
            if i % 2 == 1:
                d = d * 2 - 9 if d > 4 else d * 2
            total += d
        return total % 10 == 0
"""
LUHN_RULE = ("the Luhn check: from the rightmost digit leftwards, double every second digit (subtracting 9 "
             "when the double exceeds 9) and the total of all digits must be a multiple of 10")


@family("checksum", "luhn_valid", "luhn_digit", "isbn10", "weighted")
def checksum(r, v):
    def digits(r):
        return word(r, 1, 16, "0123456789")

    if v == "luhn_valid":
        doc = f"Return True if s is a non-empty string of decimal digits that passes {LUHN_RULE}; else False."
        body = code(LUHN, "return s.isdigit() and s.isascii() and luhn_ok(s)")
        return Spec("luhn_valid", "s: str", "bool", doc, body,
                    [("",), ("0",), ("79927398713",), ("79927398710",), ("4539 1488 0343 6467",), ("12a4",)],
                    lambda r: (digits(r),))
    if v == "luhn_digit":
        doc = (f"s is a non-empty string of decimal digits. Return the digit d (a one-character string) for which "
               f"s + d passes {LUHN_RULE}.")
        body = code(LUHN, """
            for d in '0123456789':
                if luhn_ok(s + d):
                    return d
        """)
        return Spec("luhn_check_digit", "s: str", "str", doc, body, [("0",), ("7992739871",), ("9" * 15,)],
                    lambda r: (digits(r),))
    if v == "isbn10":
        doc = ("Return True if s is a valid ISBN-10, else False. Hyphens are ignored; what is left must be 9 digits "
               "and a last character that is a digit or 'X' (worth 10), with values v1..v10 such that "
               "10*v1 + 9*v2 + ... + 1*v10 is a multiple of 11.")
        body = code("""
            s = s.replace('-', '')
            if len(s) != 10 or not all('0' <= ch <= '9' for ch in s[:9]):
                return False
            if not ('0' <= s[9] <= '9' or s[9] == 'X'):
                return False
            values = [int(ch) for ch in s[:9]] + [10 if s[9] == 'X' else int(s[9])]
            return sum((10 - i) * x for i, x in enumerate(values)) % 11 == 0
        """)

        def isbn(r):
            head = word(r, 9, 9, "0123456789")
            check = (11 - sum((10 - i) * int(ch) for i, ch in enumerate(head)) % 11) % 11
            s = head + ("X" if check == 10 else str(check))
            if r.random() < 0.5:
                s = s[:-1] + r.choice("0123456789X")
            return (s[:1] + "-" + s[1:4] + "-" + s[4:] if r.random() < 0.3 else s,)

        return Spec("is_isbn10", "s: str", "bool", doc, body,
                    [("",), ("0-306-40615-2",), ("0306406152",), ("0306406153",), ("080442957X",), ("X123456789",),
                     ("12345",)], isbn)
    weights = r.choice([(3, 1), (1, 3), (2, 1), (1, 2, 3), (7, 3, 1)])
    m = r.choice([7, 10, 11])
    doc = (f"Return the check value of the digit string s: the sum of int(s[i]) * w[i % {len(weights)}] over all i, "
           f"with weights w = {weights}, taken modulo {m}.")
    body = code("return sum(int(ch) * $W[i % $N] for i, ch in enumerate(s)) % $M", W=repr(weights),
                N=len(weights), M=m)
    return Spec("weighted_check", "s: str", "int", doc, body, [("",), ("0",), ("9",), ("123456789",), ("9" * 30,)],
                lambda r: (digits(r),))


@family("text_wrap", "lines", "count")
def text_wrap(r, v):
    w = r.randint(6, 20)
    doc = (f"Wrap the words of s (separated by whitespace) greedily into lines of at most {w} characters: each line "
           f"takes as many words as fit, separated by single spaces, and a word longer than {w} characters stands "
           "alone on its own line. " + ("Return the list of lines ([] if s has no words)." if v == "lines"
                                        else "Return the number of lines (0 if s has no words)."))
    body = code("""
        lines = []
        current = ''
        for w in s.split():
            if current and len(current) + 1 + len(w) <= $W:
                current += ' ' + w
            else:
                if current:
                    lines.append(current)
                current = w
        if current:
            lines.append(current)
        return $RET
    """, W=w, RET="lines" if v == "lines" else "len(lines)")
    return Spec("wrap_text" if v == "lines" else "count_wrapped_lines", "s: str",
                "list[str]" if v == "lines" else "int", doc, body,
                [("",), ("   ",), ("x" * (w + 3),), ("a " * w,), ("one two three four five six seven",)],
                lambda r: (" ".join(word(r, 1, 9) for _ in range(r.randint(1, 9))),))


@family("statistics", "median", "trimmed_range")
def statistics(r, v):
    draw = lambda r: (ints(r, 1, 9, -20, 40),)  # noqa: E731
    if v == "median":
        doc = ("Return the median of xs: the middle value of the sorted list, or for an even length the mean of the "
               "two middle values (a float such as 2.5, or a whole number). Return None for an empty list.")
        body = code("""
            if not xs:
                return None
            s = sorted(xs)
            mid = len(s) // 2
            return s[mid] if len(s) % 2 == 1 else (s[mid - 1] + s[mid]) / 2
        """)
        return Spec("median", "xs: list[int]", "float | None", doc, body,
                    [([],), ([3],), ([1, 2],), ([5, 1, 3],), ([-4, -1, 2, 10],), ([7, 7, 7, 7],)], draw)
    k = r.randint(1, 3)
    drop = "the smallest and the largest element" if k == 1 else f"the {k} smallest and the {k} largest elements"
    doc = (f"Drop {drop} of xs and return the largest minus the smallest of the elements left, or None if fewer "
           f"than {2 * k + 1} elements are given.")
    body = code("""
        if len(xs) < $MIN:
            return None
        s = sorted(xs)[$K:len(xs) - $K]
        return s[-1] - s[0]
    """, K=k, MIN=2 * k + 1)
    return Spec("trimmed_range", "xs: list[int]", "int | None", doc, body,
                [([],), ([1] * (2 * k),), ([1] * (2 * k + 1),), (list(range(10)),), ([100, -100, 3, 4, 5, 6],)], draw)


# ================================================================ assembly
def lit(value) -> str:
    """A Python literal for ``value``, the same on every run (sets are written sorted)."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if not (value * 64).is_integer():
            raise ValueError(f"{value!r} is not an exact float literal")
        return repr(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(lit(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(lit(v) for v in value)) + "}" if value else "set()"
    raise TypeError(f"not a plain literal: {type(value).__name__}")


def make_prompt(spec: Spec, examples: list[tuple[str, str]]) -> str:
    doc = "\n".join("    " + line for line in textwrap.wrap('"""' + spec.doc, 76))
    shown = "".join(f"    >>> {call}\n    {want}\n" for call, want in examples)
    return f'def {spec.name}({spec.sig}) -> {spec.ret}:\n{doc}\n\n{shown}    """\n'


def seed_of(*parts) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


class Degenerate(Exception):
    """The drawn problem is too easy to fake (a trivial solution passes); draw another."""


def build_task(spec: Spec, r: random.Random) -> dict:
    ns: dict = {}
    exec(f"def {spec.name}({spec.sig}):\n" + textwrap.indent(spec.body, "    "), ns)
    fn = ns[spec.name]

    def call(args: tuple):
        return fn(*copy.deepcopy(args))

    public: list[tuple[tuple, object]] = []
    seen: set[str] = set()
    for attempt in range(60):
        args = spec.draw(r)
        key, expected = lit(args), call(args)
        shown = f">>> {spec.name}({key[1:-1].rstrip(',')})  {lit(expected)}"
        if key in seen or expected is None or "\\" in shown or len(shown) > 90:
            continue
        if attempt < 40 and lit(expected) in {lit(e) for _, e in public}:
            continue  # prefer examples with different answers
        seen.add(key)
        public.append((args, expected))
        if len(public) == N_PUBLIC:
            break
    if len(public) < 2:
        raise ValueError(f"{spec.name}: could not draw two public examples")
    hidden: list[tuple[tuple, object]] = []
    for args in spec.edges:
        if lit(args) not in seen:
            seen.add(lit(args))
            hidden.append((args, call(args)))
    drawn = 0
    for _ in range(300):
        if drawn >= N_RANDOM_HIDDEN and len(hidden) >= N_HIDDEN:
            break
        args = spec.draw(r)
        if lit(args) not in seen:
            seen.add(lit(args))
            hidden.append((args, call(args)))
            drawn += 1
    if len(hidden) < 8:
        raise ValueError(f"{spec.name}: only {len(hidden)} hidden cases")

    def arglist(args: tuple) -> str:
        return ", ".join(lit(a) for a in args)

    prompt = make_prompt(spec, [(f"{spec.name}({arglist(a)})", lit(e)) for a, e in public])
    return {
        "prompt": prompt,
        "canonical_solution": textwrap.indent(spec.body, "    "),
        "test": "def check(candidate):\n" + "".join(f"    assert candidate({arglist(a)}) == {lit(e)}\n"
                                                    for a, e in hidden),
        "entry_point": spec.name,
        "public_tests": [f"assert {spec.name}({arglist(a)}) == {lit(e)}" for a, e in public],
    }


def trivial_bodies(sig: str) -> list[str]:
    first = sig.split(",", 1)[0].split(":", 1)[0].strip()
    return [f"    return {x}\n" for x in ("None", first, "0", "''", "[]", "True", "False")]


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def validate(task: dict) -> None:
    """Raise if the reference fails any of its tests; raise ``Degenerate`` if a trivial solution passes."""
    entry = task["entry_point"]
    ns: dict = {}
    exec(task["prompt"] + task["canonical_solution"], ns)
    tests: dict = {}
    exec(task["test"], tests)
    tests["check"](ns[entry])
    for statement in task["public_tests"]:
        exec(statement, dict(ns))
    hidden = task["test"].splitlines()[1:]
    public = {s.replace(entry + "(", "candidate(", 1) for s in task["public_tests"]}
    require(not {s.strip() for s in hidden} & public, f"{entry}: a public test is also hidden")
    for line in hidden:
        node = ast.parse(line.strip()).body[0]
        require(isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare), line)
        call, (op,), (expected,) = node.test.left, node.test.ops, node.test.comparators
        require(isinstance(op, ast.Eq) and isinstance(call, ast.Call) and call.func.id == "candidate", line)
        for arg in [*call.args, expected]:
            ast.literal_eval(arg)
    docstring = ast.get_docstring(ast.parse(task["prompt"]).body[0])
    examples = doctest.DocTestParser().get_doctest(docstring, dict(ns), entry, None, 0)
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(examples, out=lambda text: None)
    require(not runner.failures and len(examples.examples) == len(task["public_tests"]),
            f"{entry}: the docstring examples do not pass as doctests")
    params = task["prompt"].split("(", 1)[1].split(")")[0]
    for body in trivial_bodies(params):
        bad: dict = {}
        exec(task["prompt"] + body, bad)
        try:
            tests["check"](bad[entry])
        except Exception:  # noqa: BLE001 - any failure is what we want
            continue
        raise Degenerate(f"{entry}: {body.strip()!r} passes every hidden test")


def build(seed: int) -> tuple[list[dict], Counter]:
    tasks, rejected = [], Counter()
    for name, (variants, make) in FAMILIES.items():
        bodies: set[str] = set()
        made = 0
        for attempt in range(80):
            if made == TASKS_PER_FAMILY:
                break
            variant = variants[attempt % len(variants)]
            r = random.Random(seed_of(seed, name, attempt))
            spec = make(r, variant)
            if spec.body in bodies:
                continue  # same behaviour as a task already made
            task = build_task(spec, r)
            try:
                validate(task)
            except Degenerate:
                rejected[name] += 1
                continue
            bodies.add(spec.body)
            tasks.append({**task, "family": name, "variant": variant})
            made += 1
    require(len({t["prompt"] for t in tasks}) == len(tasks), "two tasks have the same prompt")
    return tasks, rejected


def assign_splits(tasks: list[dict], seed: int) -> None:
    """About ``TEST_SHARE`` of the tasks go to test, whole (family, variant) units at a time."""
    sizes = Counter(f"{t['family']}/{t['variant']}" for t in tasks)
    order = sorted(sizes, key=lambda unit: hashlib.sha256(f"{seed}/{unit}".encode()).hexdigest())
    test_units, test_size = set(), 0
    for unit in order:
        if test_size + sizes[unit] <= TEST_SHARE * len(tasks):
            test_units.add(unit)
            test_size += sizes[unit]
    for t in tasks:
        t["split"] = "test" if f"{t['family']}/{t['variant']}" in test_units else "train"


def write(out: Path, tasks: list[dict]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    keys = ("task_id", "prompt", "canonical_solution", "test", "entry_point", "public_tests", "split", "family",
            "variant")
    stats = {}
    for split in ("train", "test"):
        rows = [t for t in tasks if t["split"] == split]
        with open(out / f"{split}.jsonl", "w", encoding="utf-8", newline="\n") as fh:
            for t in rows:
                fh.write(json.dumps({k: t[k] for k in keys}, ensure_ascii=False) + "\n")
        stats[split] = len(rows)
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/pycode")
    args = parser.parse_args(argv)
    tasks, rejected = build(args.seed)
    random.Random(args.seed).shuffle(tasks)  # mixed families in file order
    for i, task in enumerate(tasks):
        task["task_id"] = f"PyCode/{i}"
    assign_splits(tasks, args.seed)
    stats = write(args.out, tasks)
    stats.update(families=len(FAMILIES), rejected_as_degenerate=sum(rejected.values()),
                 hidden_asserts=sum(t["test"].count("\n    assert ") for t in tasks))
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
