"""The docs' own count: every fenced block of README.md and docs/ is run (by doc_blocks.py, through
Sybil: the tests named ``README.md::sybil:docs,line:N``), parsed, shown text, or marked as one that
cannot run here with why; and every page says how to install profwin in the same words."""

from __future__ import annotations

import collections
import re
from pathlib import Path

from .doc_blocks import DATA_LANGUAGES, DIRECTIVE, DIRECTIVES, NOT_YET, PAGES, ROOT, RUN_LANGUAGES, fences

SHOWN = ("text", "")  # outputs, messages and figures: not commands
INSTALL = 'pip install --find-links dist/ "profwin['


def census() -> dict[str, collections.Counter[str]]:
    counts: dict[str, collections.Counter[str]] = {}
    for page in PAGES:
        text = (ROOT / page).read_text()
        c: collections.Counter[str] = collections.Counter()
        for _, language, directive in fences(text):
            if page in NOT_YET:
                c["not collected yet"] += 1
            elif directive == "cannot-run-here":
                c["cannot run here"] += 1
            elif language in RUN_LANGUAGES:
                c["run"] += 1
            elif language in DATA_LANGUAGES:
                c["parsed"] += 1
            else:
                c["shown text"] += 1
        counts[page] = c
    return counts


def test_every_block_is_run_parsed_shown_or_says_why_not() -> None:
    for page in PAGES:
        text = (ROOT / page).read_text()
        for line, language, directive in fences(text):
            assert language in (*RUN_LANGUAGES, *DATA_LANGUAGES, *SHOWN), (
                f"{page}:{line}: a ```{language} block is neither run nor shown text: use python, bash or console "
                f"(run), {', '.join(DATA_LANGUAGES)} (parsed) or text"
            )
            if language in SHOWN:
                assert directive is None, f"{page}:{line}: a directive before shown text, which is never run"
        for m in DIRECTIVE.finditer(text):
            assert m.group("what") in DIRECTIVES, f"{page}: unknown directive {m.group(0)}"
            if m.group("what") == "cannot-run-here":
                assert (m.group("why") or "").strip(), f"{page}: {m.group(0)} says no why"
        assert len(DIRECTIVE.findall(text)) == sum(1 for _, _, d in fences(text) if d), (
            f"{page}: a directive with no block after it"
        )
    total = collections.Counter[str]()
    for page, c in census().items():
        total.update(c)
        print(f"{page:40} " + ", ".join(f"{k}: {v}" for k, v in sorted(c.items())))
    print(f"{'all pages':40} " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))
    assert total["run"] >= 28, total  # what runs today: a page that stops running a block says so here


def test_every_page_installs_profwin_in_the_same_words() -> None:
    """Until the first upload to the package index, ``pip install "profwin[...]"`` fails: every
    page says to build the folder (scripts/build_dists.sh) and install from it, in one form."""
    for page in PAGES:
        if page in NOT_YET:
            continue
        text = (ROOT / page).read_text()
        for m in re.finditer(r"pip install[^\n`]*", text):
            line = m.group(0)
            names_profwin = re.search(r"""["']?profwin(-[a-z]+)?(\[[a-z,]+\])?["']?(\s|$)""", line)
            if not names_profwin or " -e " in line or "--find-links dist/ " in line:
                continue
            raise AssertionError(f'{page}: {line!r}: install profwin as {INSTALL}...]" after bash scripts/build_dists.sh dist/')
        if INSTALL in text:
            assert "scripts/build_dists.sh dist/" in text or "quickstart.md#installing" in text, (
                f"{page} installs from dist/ without saying how dist/ is made"
            )
    assert "bash scripts/build_dists.sh dist/" in (ROOT / "docs" / "quickstart.md").read_text()


def test_the_pages_not_collected_yet_are_named_with_why() -> None:
    for page, why in NOT_YET.items():
        assert (ROOT / page).is_file(), page
        assert why.strip(), page


def test_pages_are_every_markdown_page() -> None:
    assert set(PAGES) == {"README.md", *(str(p.relative_to(ROOT)) for p in Path(ROOT / "docs").rglob("*.md"))}
