"""The findings page: each paper claim beside what the chapters' own closing checks found.

The page is generated at build time from the records each chapter writes; these tests hold it
to those records (every check appears once, under its claim or among the book's own) and keep
the claim → check patterns from going stale when a check is renamed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import findings_page  # tools/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parent.parent


def book_checks() -> dict[str, list[str]]:
    """The check names of the last recorded `book` builds (book/data/kernel_paths.json)."""
    data = json.loads((ROOT / "book" / "data" / "kernel_paths.json").read_text())
    return {stem: [c["check"] for c in checks] for stem, checks in data["chapters"].items()}


def test_every_claim_pattern_names_a_check_the_chapters_make(executed_chapters):
    import build_book

    records = findings_page.load_records(build_book.BUILD / "executed" / "quick", list(executed_chapters))
    quick = {stem: [c["check"] for c in r["checks"]] for stem, r in records.items()}
    book = book_checks()
    for claim in findings_page.CLAIMS:
        for stem, pattern in claim.checks:
            names = quick.get(stem, []) + book.get(stem, [])
            assert any(re.search(pattern, n) for n in names), f"{claim.claim!r}: no check of {stem} matches {pattern!r}"


def test_the_staged_page_is_the_records_and_lists_every_check_once(executed_chapters):
    import build_book

    stage = build_book.stage("quick")
    page = (stage / "book" / "findings.md").read_text()
    records = findings_page.load_records(build_book.BUILD / "executed" / "quick", list(executed_chapters))
    assert page == findings_page.render(records, "quick")
    assert len(records) == len(executed_chapters)
    for stem, record in records.items():
        for check in record["checks"]:
            cell = findings_page._cell(check["detail"])
            assert page.count(f"{findings_page._cell(check['check'])}: {cell}") == 1, (stem, check["check"])
    assert "profile `quick`" in page


def test_a_failing_claim_reads_as_failing_and_an_untested_one_says_so():
    records = {"05_layerwise": {"checks": [
        {"check": "layer order at λ = 1", "passed": False, "claim": False,
         "detail": "backward in 0 of 3 seeds (seed 0: forward, seed 1: forward, seed 2: forward); rule: majority"}]}}
    page = findings_page.render(records, "book")
    row = next(line for line in page.splitlines() if "backward order (P4)" in line)
    assert "✗ fails (shown), layer order at λ = 1: backward in 0 of 3 seeds" in row
    assert "{doc}`5 <05_layerwise>`" in row
    untested = next(line for line in page.splitlines() if "Three regimes in λ" in line)
    assert "not tested in this profile" in untested
    assert "## The book's own checks" not in page
