"""The documentation's shape: every relative link in README.md and docs/**/*.md leads to a file of the
repository, the README stays a short entry point (the rest lives in docs/), and docs/serving.md's /v1/verify
examples get the answers they show."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 400

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1)(?!\n\s*\n).)+?\1", re.DOTALL)  # a code span never crosses a blank line
# [text](target) and ![alt](target); the text may hold one level of brackets and line breaks
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _targets(text: str) -> list[str]:
    """The targets of the markdown links in ``text``, outside code blocks and code spans."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", text))
    found = [m.group(1) for m in _INLINE.finditer(text)] + [m.group(1) for m in _REFERENCE.finditer(text)]
    return [t[1:-1] if t.startswith("<") else t for t in found]


def _broken_links(document: Path, root: Path) -> list[str]:
    """The relative links of ``document`` that do not lead to an existing path inside ``root``."""
    broken = []
    for target in _targets(document.read_text(encoding="utf-8")):
        if _SCHEME.match(target) or target.startswith(("#", "//")):
            continue  # a URL, or an anchor in the same page
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (root / path.lstrip("/")) if path.startswith("/") else (document.parent / path)
        resolved = resolved.resolve()
        if not resolved.exists() or not resolved.is_relative_to(root.resolve()):
            broken.append(f"{document.relative_to(root)}: {target}")
    return broken


def test_the_checks_find_a_broken_link_and_a_long_readme(tmp_path):
    """The checks below can fail: made-up documents with one broken link of each kind are caught."""
    root = tmp_path / "repo"
    (root / "docs" / "envs").mkdir(parents=True)
    (root / "docs" / "envs" / "a.md").write_text("# A\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("", encoding="utf-8")  # exists, but outside the repository
    (root / "README.md").write_text(
        "See [A](docs/envs/a.md#top), [the web](https://example.org/x.md), [here](#install),\n"
        "[gone](docs/envs/gone.md), ![image](docs/missing.png \"a title\") and [`code`\ntext](docs/nope/).\n"
        "```bash\necho [not a link](nowhere.md)\n```\n"
        "`[not a link either](nowhere.md)` and [ref]: docs/ref-missing.md\n\n[ref2]: docs/ref2-missing.md\n"
        + "line\n" * README_MAX_LINES, encoding="utf-8")
    (root / "docs" / "b.md").write_text(
        "[up](../README.md), [sibling](envs/a.md), [wrong level](envs/../../docs/b.md),\n"
        "[not from docs/](docs/envs/a.md), [escape](../../outside.md)\n", encoding="utf-8")
    broken = [link for doc in _documents(root) for link in _broken_links(doc, root)]
    assert broken == ["README.md: docs/envs/gone.md", "README.md: docs/missing.png", "README.md: docs/nope/",
                      "README.md: docs/ref2-missing.md", "docs/b.md: docs/envs/a.md", "docs/b.md: ../../outside.md"]
    assert len((root / "README.md").read_text(encoding="utf-8").splitlines()) > README_MAX_LINES


@pytest.mark.parametrize("document", _documents(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_existing_files(document):
    assert _broken_links(document, ROOT) == []


def test_the_docs_are_linked_and_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; keep it at most {README_MAX_LINES} and move detail to docs/")
    assert len(_documents(ROOT)) > 10  # README.md and the docs/ pages were found


def _verify_examples(text: str) -> list[tuple[dict, int, str]]:
    """docs/serving.md's ``curl ... /v1/verify -d '<body>'`` examples: (body, status, the answer shown after ``#``)."""
    lines, examples = text.splitlines(), []
    for i, line in enumerate(lines):
        if not line.startswith('curl -s $U/v1/verify -H "$J" -d \''):
            continue
        j, command = i, line
        while not command.rstrip().endswith("'"):  # the body goes on over indented lines
            j += 1
            command += "\n" + lines[j]
        shown = []
        while lines[j + 1].startswith("#"):
            j += 1
            shown.append(lines[j].lstrip("#").strip())
        status, _, answer = " ".join(shown).partition(" ") if shown[0][:3].isdigit() else ("200", "", " ".join(shown))
        examples.append((json.loads(command.split(" -d '", 1)[1].rstrip()[:-1]), int(status), answer))
    return examples


def test_the_verify_examples_answer_as_shown():
    """Each curl example of POST /v1/verify gets the answer the page shows (``...`` stands for left-out text)."""
    from helpers.gates import import_or_skip

    import_or_skip("fastapi", "server")
    import_or_skip("math_verify", "code")
    from fastapi.testclient import TestClient

    from agentgym.server import create_app

    examples = _verify_examples((ROOT / "docs" / "serving.md").read_text(encoding="utf-8"))
    assert {body["verifier"] for body, _, _ in examples} >= {"math", "qa_em", "qa_f1", "qa_cover_em", "tags_format"}
    with TestClient(create_app(["agentgym/SearchQA-v0"])) as client:
        for body, status, answer in examples:
            response = client.post("/v1/verify", json=body)
            assert response.status_code == status, (body, response.text)
            at = 0
            for piece in answer.split("..."):
                found = response.text.find(piece, at)
                assert found >= 0, f"{body}: the page shows {answer}, the server answers {response.text}"
                at = found + len(piece)


def test_the_rubric_example_runs_as_written_and_prints_what_the_page_says():
    """docs/verifiers.md's rubric example, run verbatim: its printed rewards are the ones the page states."""
    import contextlib
    import io

    text = (ROOT / "docs" / "verifiers.md").read_text(encoding="utf-8")
    section = text.split("## Rubrics and judges", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 22  # the "20-line example"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/verifiers.md", "exec"), {"__name__": "docs_example"})  # noqa: S102 - our own docs
    rewards = [line.split()[0] for line in out.getvalue().splitlines()]
    assert rewards == ["1.00", "0.75", "0.00"]
    after = section.split("```", 2)[2]
    assert all(f"`{r}`" in after.split("**A part a model scores**")[0] for r in rewards)
