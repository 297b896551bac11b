"""Chapters: text form and .ipynb in sync, papermill parameters, Colab cell; executed in quick."""

import ast
import json
import re
from pathlib import Path

import jupytext
import pytest

import nhtlab

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "book").glob("[0-9][0-9]_*.py"))


def test_every_chapter_is_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text()
    assert SOURCES, "no chapter found"
    for src in SOURCES:
        assert f"file: book/{src.stem}" in toc, src.name


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_text_form_and_ipynb_are_in_sync(src):
    ipynb = src.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `jupytext --sync {src.relative_to(ROOT)}`"
    text_cells = jupytext.read(src).cells
    nb_cells = jupytext.read(ipynb).cells
    assert [(c.cell_type, c.source) for c in text_cells] == [(c.cell_type, c.source) for c in nb_cells], (
        f"{src.name} and {ipynb.name} drifted: run `jupytext --sync {src.relative_to(ROOT)}`")
    assert all(not c.get("outputs") for c in json.loads(ipynb.read_text())["cells"] if c["cell_type"] == "code"), \
        f"{ipynb.name} has committed outputs"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_parameters_cell_and_colab_install(src):
    cells = jupytext.read(src).cells
    params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    assert re.search(r'^profile = "book"', params[0].source, re.M), "the parameters cell sets profile = \"book\""
    first_code = next(c for c in cells if c.cell_type == "code")
    assert "google.colab" in first_code.source, "first code cell installs nhtlab in Colab only"
    import sync_repo  # tools/ is on sys.path (tests/conftest.py)

    assert sync_repo.repository().install_requirement in first_code.source, (
        "Colab installs the ref the launch button opens (_config.yml's repository.branch): run tools/sync_repo.py")
    last = ast.parse(cells[-1].source)
    calls = [node for node in ast.walk(last) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
    assert any(c.func.attr == "closing_checks" and len(c.args) >= 2 for c in calls), (
        "the last cell asserts the chapter's claims: nhtlab.book.closing_checks(checks, cfg)")


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_chapter_executes_in_quick_profile(src, executed_chapters):
    # papermill raises when a cell fails, so a chapter in the fixture's results executed to its last cell
    # (the closing asserts included). How long it took is reported by tools/build_book.py, never asserted:
    # a time depends on the machine and its load, not on the chapter.
    assert src.stem in executed_chapters, f"{src.stem} was not executed in the quick profile"
    import build_book  # tools/ is on sys.path (tests/conftest.py)

    out = build_book.BUILD / "executed" / "quick" / src.with_suffix(".ipynb").name
    assert out.exists(), f"{src.stem}: no executed notebook at {out}"
    cells = [c for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "code"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{src.stem}: a cell raised {errors[0].get('ename')}: {errors[0].get('evalue')}"
