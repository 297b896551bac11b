"""The findings page: each paper claim beside what the chapters' own closing checks found.

The page is generated at build time from the records each chapter writes; these tests hold it
to those records (every check appears, under its claim or among the book's own), keep the
claim → check patterns from going stale when a check is renamed, and pin the verdicts the
issue asked for: a run that did not memorise gives no layer order, a shortcut dropped without
the norm falling is not weight decay's drop, and a reading on one run says "1 seed".
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


def check(name: str, passed: bool, detail: str, claim: bool = False) -> dict:
    return {"check": name, "passed": passed, "detail": detail, "claim": claim}


def seeds(k: int, n: int = 3, word: str = "holds") -> str:
    return f"{word} in {k} of {n} seeds (seed 0: …); rule: majority"


def row(page: str, claim: str) -> list[str]:
    """The cells of the table row whose claim starts with ``claim``."""
    line = next(line for line in page.splitlines() if line.startswith(f"| {claim}"))
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def block(page: str, claim: str) -> str:
    """The closed "How we know" block of a claim."""
    start = page.index(f"<summary>How we know: {claim}")
    return page[start:page.index("</details>", start)]


def test_every_claim_pattern_names_a_check_the_chapters_make(executed_chapters):
    import build_book

    records = findings_page.load_records(build_book.BUILD / "executed" / "quick", list(executed_chapters))
    quick = {stem: [c["check"] for c in r["checks"]] for stem, r in records.items()}
    book = book_checks()
    named = set()
    for claim in findings_page.CLAIMS:
        for item in (*claim.phrases, *claim.context):
            named.add((item.stem, item.pattern))
            if (item.stem, item.pattern) in findings_page.PENDING:
                continue
            names = quick.get(item.stem, []) + book.get(item.stem, [])
            assert any(re.search(item.pattern, n) for n in names), f"{claim.claim!r}: no check of {item.stem} " \
                                                                    f"matches {item.pattern!r}"
    assert set(findings_page.PENDING) <= named, "a pending pattern no claim names"


def test_the_staged_page_is_the_records_and_lists_every_check(executed_chapters):
    import build_book

    stage = build_book.stage("quick")
    page = (stage / "book" / "findings.md").read_text()
    records = findings_page.load_records(build_book.BUILD / "executed" / "quick", list(executed_chapters))
    assert page == findings_page.render(records, "quick")
    assert len(records) == len(executed_chapters)
    for stem, record in records.items():
        for c in record["checks"]:
            said = f"{c['check']}: {c['detail']}"
            assert said in page or findings_page.cell(said) in page, (stem, c["check"])
    assert "profile `quick`" in page


def test_a_failing_claim_reads_as_failing_and_an_untested_one_says_so():
    records = {"05_layerwise": {"checks": [
        check("layer order at λ = 1", False,
              "backward in 0 of 3 seeds (seed 0: forward, seed 1: forward, seed 2: forward); rule: majority")]}}
    page = findings_page.render(records, "book")
    cells = row(page, "The output layer leaves the shortcut first")
    assert cells[1:4] == ["**✗**", "3 of 3 seeds", "The read-out did not contract before the first layer."], cells
    assert cells[5] == "{doc}`5 <05_layerwise>`"
    assert "✗ fails (shown), layer order at λ = 1: backward in 0 of 3 seeds" in block(page, "The output layer")
    untested = row(page, "Three regimes in λ")
    assert untested[1] == "**—**" and "not tested in this profile" in untested[3]
    assert "## The book's own checks" not in page


def test_a_run_that_did_not_memorise_gives_no_layer_order():
    """Chapter 08's read-out 'turn' is listed under P4 but not counted: the row stays ✗ on chapter 05's runs."""
    records = {"05_layerwise": {"checks": [check("layer order at λ = 1", False, seeds(0, word="backward"))]},
               "08_own_model": {"checks": [check("which contracts first on the shown run", True,
                                                 seeds(3, word="read-out first"))]}}
    page = findings_page.render(records, "book")
    cells = row(page, "The output layer leaves the shortcut first")
    assert cells[1] == "**✗**" and "8" not in cells[5], cells
    evidence = block(page, "The output layer")
    assert "which contracts first on the shown run" in evidence and "*Not counted:*" in evidence
    assert "## The book's own checks" not in page  # listed under its claim, once


def test_a_shortcut_dropped_while_the_norm_grows_is_not_weight_decays_drop():
    dropped = check("the border is fitted, then dropped", True, seeds(2, word="dropped"), claim=True)
    control = check("control: border", True, seeds(2, word="kept"), claim=True)

    def drop_row(p1: bool, p5: bool) -> list[str]:
        records = {"05_layerwise": {"checks": [control]},
                   "06_shortcuts": {"checks": [dropped, check("P1 norm ordering", p1, seeds(3 if p1 else 0, word="✓")),
                                               check("P5 clean separation", p5, seeds(3 if p5 else 0, word="✓"))]}}
        return row(findings_page.render(records, "book"), "Weight decay makes a network drop")

    cells = drop_row(False, False)
    assert cells[1] == "**mixed**", cells
    assert "not larger on the border than after it (P1, 3 of 3 seeds)" in cells[3]
    assert "credits the 5% exceptions, not the decay" in cells[3]
    assert drop_row(True, True)[1] == "**✓**"
    alone = row(findings_page.render({"05_layerwise": {"checks": [check("main: border", True, seeds(2, word="dropped"))]}},
                                     "book"), "Weight decay makes a network drop")
    assert alone[1] == "**—**" and "whether weight decay drives the drop" in alone[3], alone


def test_readings_on_one_run_say_one_seed_and_a_sweep_prediction_joins_its_row():
    records = {"04_dlr": {"checks": [check("BatchNorm gives the richer and better-generalising CNN", True,
                                           "DLR 0.029 vs 0.340, test acc 0.993 vs 0.954", claim=True)]},
               "02_regimes": {"checks": [check("λ = 1 is intermediate", True, seeds(3, word="intermediate"), True)]},
               "06_shortcuts": {"checks": [check("P2 three regimes (one sweep)", False,
                                                 "one sweep, 1 seed: weak → intermediate")]}}
    page = findings_page.render(records, "book")
    assert row(page, "BatchNorm gives richer features")[1:3] == ["**✓**", "1 seed"]
    regimes = row(page, "Three regimes in λ")
    assert regimes[1:3] == ["**mixed**", "3 of 3 seeds; 1 seed"], regimes
    assert "did not read all three (one sweep, 1 seed)" in regimes[3]
    assert "{doc}`6 <06_shortcuts>`" in regimes[5]


def test_unrecorded_readings_keep_their_row_and_the_two_paper_values_are_explained():
    page = findings_page.render({}, "book")
    assert "Not recorded by this build: chapter 07" in block(page, "The norm gap shrinks as a model grows")
    assert "Not recorded by this build: chapter 06 scores P6" in block(page, "On the border images the delay")
    records = {"07_emergence": {"checks": [check("the norm gap shrinks with width", False,
                                                 "grows; shrinks in 0 of 3 seeds (seed 0: grows)")]}}
    gap = row(findings_page.render(records, "book"), "The norm gap shrinks as a model grows")
    assert gap[1:4] == ["**✗**", "3 of 3 seeds", "The norm gap did not shrink as the width grew."], gap
    note = next(line for line in page.splitlines() if line.startswith("¹"))
    assert "2,100 ± 374" in note and "1,760 ± 150" in note and "λ sweep" in note and "η sweep" in note
    ran = findings_page.render({"07_emergence": {"checks": []}}, "book")
    assert "not recorded by this build's closing checks" in row(ran, "The norm gap shrinks as a model grows")[3]
