"""Chapters are narrative and calls, and their prose types no measured number (tools/chapter_shape.py)."""

from __future__ import annotations

import re

import pytest

import chapter_shape  # tools/ is on sys.path (tests/conftest.py)

STEMS = [p.stem for p in chapter_shape.CHAPTERS]


@pytest.fixture(scope="module")
def report():
    return {row["chapter"]: row for row in chapter_shape.report()["chapters"]}


def _scan(markdown: str, profiles: str = "PROFILES = {'book': dict(lr=1e-3, lams=[0.3, 1.0])}") -> list[str]:
    class Path:  # the one attribute unlisted_numbers reads besides the cells
        stem = "99_test"

    import jupytext

    nb = jupytext.reads(f"# %% [markdown]\n{_comment(markdown)}\n\n# %%\n{profiles}\n", fmt="py:percent")
    original = jupytext.read
    try:
        jupytext.read = lambda _path: nb
        return chapter_shape.unlisted_numbers(Path, chapter_shape.paper_values(), chapter_shape.shared_settings())
    finally:
        jupytext.read = original


def _comment(markdown: str) -> str:
    return "\n".join("# " + line if line else "#" for line in markdown.splitlines())


def test_a_measured_number_in_prose_is_flagged():
    assert _scan("The run groks at step 2,137 with DLR 0.043.") == ["2,137", "0.043"]
    assert _scan("It falls by 37% between the two.") == ["37%"]


def test_settings_papers_counts_and_citations_are_not_flagged():
    # η and λ from the PROFILES cell, p = 97 from the presets, the companion's T_grok 2,100 from nhtlab.papers,
    # a count, a year, a citation, inline code and an arXiv identifier
    text = ("With η = 10⁻³ and λ = 0.3 on (a + b) mod 97, the companion reports 2,100 steps; "
            "two of 3 seeds {cite}`power2022grokking` in 2022, `steps=12345`, arXiv 2603.13331.")
    assert _scan(text) == []


def test_versions_and_glued_numbers_are_not_prose_numbers():
    assert _scan("torch 2.14.1 on CIFAR-10 with ResNet18, prediction P4, d_model") == []


def test_a_percent_matches_a_setting_as_a_fraction():
    assert _scan("30% of the pairs", profiles="PROFILES = {'book': dict(frac=0.3)}") == []


def test_allowlist_is_short_and_every_entry_has_a_reason():
    assert len(chapter_shape.ALLOWED) <= 20
    for (stem, number), reason in chapter_shape.ALLOWED.items():
        assert stem in STEMS, f"allowlist names no chapter: {stem}"
        assert re.search(r"\d", number) and len(reason) > 10, (stem, number, reason)


@pytest.mark.parametrize("stem", STEMS)
def test_no_unlisted_number_in_a_chapters_markdown(stem, report):
    numbers = report[stem]["unlisted_numbers"]
    assert not numbers, (f"{stem} types measured numbers into its Markdown: {numbers}. Build the sentence from "
                         "the run (nhtlab.book.md) or, for a paper's value, add it to nhtlab.papers")


@pytest.mark.parametrize("stem", STEMS)
def test_chapter_is_narrative_and_calls(stem, report):
    row = report[stem]
    assert row["code_lines"] <= chapter_shape.MAX_CODE_LINES, (
        f"{stem}: {row['code_lines']} code lines outside PROFILES; move computation into nhtlab")
    assert row["file_lines"] <= chapter_shape.MAX_FILE_LINES, f"{stem}: {row['file_lines']} lines"


def test_no_block_repeated_across_chapters():
    assert chapter_shape.repeated_blocks(chapter_shape.CHAPTERS) == []


@pytest.mark.parametrize("stem", STEMS)
def test_chapters_use_one_import_style(report, stem):
    """`import nhtlab` for the core's top-level names and `from nhtlab import book as nb` for the chapter's
    reports: no other import of nhtlab, no deep paths, no aliases."""
    assert report[stem]["import_style"] == []


@pytest.mark.parametrize("source, flagged", [
    ("import nhtlab\nnhtlab.charts.training_curves(h)\nnhtlab.papers.NHT_PAPER", False),
    ("import nhtlab\nfrom nhtlab import book as nb\nnb.events_evidence(h, 1e-3)", False),
    ("import nhtlab\nrun = nhtlab.companion(lam=1.0)", False),
    ("from nhtlab import charts", True),
    ("from nhtlab import book", True),
    ("from nhtlab import book as reports", True),
    ("from nhtlab.book import table", True),
    ("from nhtlab.papers import NHT_LAYER_ORDER", True),
    ("import nhtlab.analysis", True),
    ("import nhtlab as nl", True),
    ("import nhtlab\nnhtlab.analysis.layers.CONTRACTION_SHARE", True),
    ("import nhtlab\nnhtlab.book.table(rows)", True),
    ("import nhtlab\nnhtlab.table(rows)", True),
    ("from nhtlab import book as nb\nnb.train(run)", True),
    ("import nhtlab\nreport = nhtlab.charts", True),
])
def test_import_style_scanner_flags_what_it_should(source, flagged):
    import nhtlab
    from nhtlab import book as nb

    assert bool(chapter_shape.import_style(source, nhtlab.__all__, nb.__all__)) is flagged
