"""The chapters read cleanly in the page: their code fits the column, presets fold away, and the
profile note lives once, in How to run.

The style is book/ruff.toml (`make format` applies it). That the .ipynb cells equal the .py
cells is tests/test_notebooks.py::test_text_form_and_ipynb_are_in_sync; that nothing overflows
in the rendered page is tests/test_browser.py::test_code_fits_the_page_column.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
SOURCES = sorted(BOOK.glob("[0-9][0-9]_*.py"))
LINE_LENGTH = int(re.search(r"(?m)^line-length = (\d+)", (BOOK / "ruff.toml").read_text()).group(1))


def ruff() -> str:
    """The ruff executable installed by the test extra (next to this Python, else on PATH)."""
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    if not found:
        pytest.fail("ruff is not installed; it comes with the test extra: pip install -e '.[test]'")
    return found


def run_ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ruff(), *args, *(str(p.relative_to(ROOT)) for p in SOURCES)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_line_length_fits_the_page_column():
    # At a 1280-pixel window a code cell holds 77 characters, one folded with hide-input 75
    # (book/ruff.toml).
    assert LINE_LENGTH <= 75


def test_chapters_are_formatted():
    result = run_ruff("format", "--check", "--diff")
    assert result.returncode == 0, "run `make format`:\n" + (result.stdout + result.stderr)[-4000:]


def test_no_line_too_long():
    """ruff's E501 with the book's config (markdown cells and comments included), and the brief's 88."""
    for extra in ([], ["--line-length", "88"]):
        result = run_ruff("check", "--select", "E501", "--output-format", "concise", *extra)
        assert result.returncode == 0, result.stdout[-4000:]


def test_every_line_fits_including_single_words():
    """E501 lets a line without spaces run long (a URL, an f-string of fields); the page does not."""
    # The Colab install line is the exception: a removed cell, as long as _config.yml's repository URL.
    long = [f"{src.name}:{n}: {len(line)} characters" for src in SOURCES
            for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > LINE_LENGTH and not line.lstrip().startswith("# %pip install")]
    assert not long, long


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_presets_fold_away(src):
    """The PROFILES presets sit in a cell of their own, collapsed in the page (hide-input)."""
    cells = [c for c in jupytext.read(src).cells if c.cell_type == "code"]
    presets = [c for c in cells if re.search(r"(?m)^PROFILES = \{", c.source)]
    assert len(presets) == 1, "exactly one cell defines PROFILES"
    assert "hide-input" in presets[0].metadata.get("tags", []), "the PROFILES cell is tagged hide-input"
    assert not re.search(r"(?m)^(import|from) ", presets[0].source), "imports stay visible, in a cell of their own"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_profile_note_is_a_link_to_run_a_chapter(src):
    markdown = "\n".join(c.source for c in jupytext.read(src).cells if c.cell_type == "markdown")
    assert "{note} Profiles" not in markdown, "the profiles note lives in run_a_chapter.md, not in each chapter"
    assert "{ref}`Run a chapter <profiles>`" in markdown, "one line links the chapter to Run a chapter's profiles"


def test_run_a_chapter_has_the_profiles_target_and_every_chapter():
    text = (BOOK / "run_a_chapter.md").read_text()
    assert "(profiles)=\n## Profiles" in text
    section = text.split("(profiles)=", 1)[1].split("\n## ", 2)[1]
    lessons = [src for src in SOURCES if "evidence" not in src.stem]  # an evidence page is no chapter of its own
    for number in range(1, len(lessons) + 1):
        assert re.search(rf"(?m)^\| {number} \|", section), f"chapter {number} missing from the full-profile table"
