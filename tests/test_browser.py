"""The rendered book in a real browser, offline: charts draw, formulas typeset, tables render as
tables (no Markdown shown as text, no empty table), no console errors, Colab links right, each
chapter's executed notebook downloadable, code fits the page column.

Builds the book from the quick-profile executions, opens every page in headless
Chromium with the network off, and saves a screenshot per page under
``_build/screenshots/`` (with ``report.json``). Skips when Chromium is missing,
unless ``NHTLAB_REQUIRE_BROWSER=1`` (set by ``.ci/run``) demands it.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def page_reports(executed_chapters):
    import browser_check
    import build_book
    from conftest import Background

    require_chromium()
    rendered = Background.result("html")  # the book rendered beside the other tests, else here
    html = Path(rendered["html"]) if rendered else build_book.render("quick", build_book.BUILD / "html-quick")
    shots = build_book.BUILD / "screenshots"
    reports = browser_check.check_book(html, screenshots=shots)
    browser_check.save_report(reports, shots)
    return {Path(r.page).stem: r for r in reports}


def require_chromium():
    import browser_check

    if browser_check.find_chromium() is None:
        if os.environ.get("NHTLAB_REQUIRE_BROWSER") == "1":
            pytest.fail("NHTLAB_REQUIRE_BROWSER=1 but Chromium is not installed (Debian package 'chromium').")
        pytest.skip("Chromium is not installed (apt-get install chromium); .ci/run installs it and sets NHTLAB_REQUIRE_BROWSER=1.")


def test_nothing_a_reader_would_see_broken(page_reports):
    """No page shows Markdown as text (a pipe-table row, ``**``, ``$…$``) or a table without rows:
    the failure of a book whose text/markdown outputs are parsed as CommonMark, which has no tables."""
    import browser_check

    broken = {page: browser_check.problems(r) for page, r in page_reports.items()}
    broken = {page: found for page, found in broken.items() if found}
    assert not broken, broken


def markdown_tables(notebook: dict) -> int:
    """Pipe tables in a notebook: in its Markdown cells and in its text/markdown outputs."""
    texts = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    texts += ["".join(o["data"]["text/markdown"]) for c in notebook["cells"] if c["cell_type"] == "code"
              for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    separator = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", re.MULTILINE)
    return sum(len(separator.findall(t)) for t in texts)


def test_every_table_of_the_run_renders_as_a_table(page_reports, executed_chapters):
    """Each chapter page holds at least as many HTML tables as its executed notebook has pipe tables
    (the report tables nhtlab.table builds from the run, and the prose's own)."""
    import build_book

    for stem in executed_chapters:
        notebook = json.loads((build_book.BUILD / "executed" / "quick" / f"{stem}.ipynb").read_text())
        expected = markdown_tables(notebook)
        assert expected > 0, f"{stem}: no table in the executed notebook"
        assert page_reports[stem].tables >= expected, (
            f"{stem}: {page_reports[stem].tables} HTML tables on the page for {expected} pipe tables in the notebook")


def test_the_check_sees_what_a_reader_would_see(tmp_path):
    """The page probe itself: a page with a pipe table left as a paragraph, bold markers, dollar math
    and an empty table is reported for each; the same content rendered is not."""
    import browser_check

    require_chromium()
    broken = tmp_path / "html" / "broken.html"
    broken.parent.mkdir()
    broken.write_text("""<html><body><article><div class="cell_output">
<p>| λ | T_grok |\n|---|---|\n| 1 | 900 |</p>
<p>the delay is **short** here</p>
<p>the norm $V_{mem}$ falls</p>
<table><thead><tr><th>λ</th></tr></thead><tbody></tbody></table>
<p><em>(no rows)</em></p>
</div></article></body></html>""")
    fine = tmp_path / "html" / "fine.html"
    fine.write_text("""<html><body><article><div class="cell_output">
<table><thead><tr><th>λ</th><th>T_grok</th></tr></thead><tbody><tr><td>1</td><td>900</td></tr></tbody></table>
<p>the delay is <strong>short</strong>; <code>f(**kwargs)</code> costs $5 in <code>$x$</code></p>
</div></article></body></html>""")
    reports = {Path(r.page).stem: r for r in browser_check.check_book(tmp_path / "html", settle=0.2)}
    kinds = [text.split(":")[0] for text in reports["broken"].raw_markdown]
    assert kinds == ["pipe table", "**", "$…$"], reports["broken"].raw_markdown
    assert len(reports["broken"].empty_tables) == 2, reports["broken"].empty_tables
    assert len(browser_check.problems(reports["broken"])) == 5
    assert reports["fine"].tables == 1 and not browser_check.problems(reports["fine"]), reports["fine"]


def test_console_errors_and_exceptions_are_reported_on_their_page(tmp_path):
    """A ``console.error``, an uncaught exception thrown after the page loaded and a file that fails
    to load are each reported on the page that made them, and not on the page opened after it."""
    import browser_check

    require_chromium()
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "a_broken.html").write_text("""<html><body><article><img src="missing.png">
<script>console.error("boom", 3); setTimeout(() => { throw new Error("late"); }, 10);</script>
</article></body></html>""")
    (tmp_path / "html" / "b_fine.html").write_text("<html><body><article><p>fine</p></article></body></html>")
    reports = {Path(r.page).stem: r for r in browser_check.check_book(tmp_path / "html", settle=0.2)}
    errors = reports["a_broken"].errors
    # each kind at least once: Chromium may log the failed file a second time, at a moment of its own
    assert {e.split(":")[0] for e in errors} == {"console.error", "exception", "log"}, errors
    assert "console.error: boom 3" in errors and any("late" in e for e in errors), errors
    assert any("missing.png" in e for e in errors if e.startswith("log")), errors
    assert [p for p in browser_check.problems(reports["a_broken"]) if p.startswith("console: ")] == [
        f"console: {e}" for e in errors]
    assert reports["b_fine"].errors == [], reports["b_fine"].errors


def test_a_lesson_page_is_held_to_its_budget(tmp_path):
    """On a chapter's page: more than six tables in view, a long or too-wide visible table, log text
    and a missing "What we found" box are each reported; the same content with the evidence closed
    under "How we know" and a takeaway box is not. A reference page is not held to it."""
    import browser_check

    require_chromium()
    row = "<tr><td>1</td><td>900</td></tr>"
    small = f"<table><thead><tr><th>λ</th><th>T_grok</th></tr></thead><tbody>{row}</tbody></table>"
    long_table = f"<table><thead><tr><th>seed</th></tr></thead><tbody>{row * 13}</tbody></table>"
    wide = ("<table><thead><tr>" + "".join(f"<th>column {i}</th>" for i in range(40))
            + "</tr></thead><tbody><tr>" + "".join(f"<td>{i}</td>" for i in range(40)) + "</tr></tbody></table>")
    crowded = (small * 6 + long_table + f"<div style='width:600px;overflow:auto'>{wide}</div>"
               + "<p>6/6 runs in 95.1 s, both read from the cache; 107 CPU s on the ledger</p>")
    (tmp_path / "html").mkdir()
    for stem in ("01_crowded", "findings"):
        (tmp_path / "html" / f"{stem}.html").write_text(
            f"<html><body><article style='width:600px'><div class='cell_output'>{crowded}</div></article></body></html>")
    (tmp_path / "html" / "02_lesson.html").write_text(
        "<html><body><article style='width:600px'><div class='cell_output'>" + small * 2
        + f"<details class='nhtlab-evidence'><summary>How we know: the runs</summary>{crowded}</details>"
        + "<div class='admonition tip nhtlab-found'><p>What we found</p><ul><li>3 of 3</li></ul></div>"
        + "</div></article></body></html>")
    reports = {Path(r.page).stem: r for r in browser_check.check_book(tmp_path / "html", settle=0.2)}
    found = browser_check.problems(reports["01_crowded"])
    assert any(p.startswith("8 tables visible") for p in found), found
    assert any("13 rows" in p for p in found) and any("wider than its column" in p for p in found), found
    kinds = {p.split(": ")[1] for p in found if p.startswith("log text")}
    assert {"run time", "cache", "CPU seconds", "ledger"} <= kinds, found
    assert "no 'What we found' box" in found
    assert not browser_check.problems(reports["02_lesson"]), browser_check.problems(reports["02_lesson"])
    assert not browser_check.problems(reports["findings"])
    assert reports["02_lesson"].found == 1 and len(reports["02_lesson"].visible_tables) == 2


def test_no_console_errors_offline(page_reports):
    assert page_reports, "no page checked"
    bad = {page: r.errors for page, r in page_reports.items() if r.errors}
    assert not bad, bad


def test_every_chart_draws_and_chapters_have_charts(page_reports, executed_chapters):
    import browser_check

    for stem in executed_chapters:
        report = page_reports[stem]
        # a lesson shows its figures; an evidence page may be tables alone
        assert report.charts > 0 or not browser_check.is_lesson(stem), f"{stem}: no chart on the page"
        assert report.drawn == report.charts, f"{stem}: {report.drawn} of {report.charts} charts drew marks"
    for page, report in page_reports.items():
        assert report.drawn == report.charts, f"{page}: {report.drawn} of {report.charts} charts drew marks"


def test_interactive_controls_and_no_dead_widgets(page_reports):
    assert sum(r.controls for r in page_reports.values()) > 0, "no Vega-Lite slider or dropdown anywhere in the book"
    dead = {page: r.widgets for page, r in page_reports.items() if r.widgets}
    assert not dead, f"widget outputs in the static book: {dead}"


def test_colab_links_open_the_chapter_notebook(page_reports, executed_chapters):
    import sync_repo

    repo = sync_repo.repository()  # _config.yml's repository section, the one place that names it
    for stem in executed_chapters:
        assert repo.colab_url(stem) in page_reports[stem].colab, (stem, page_reports[stem].colab)


def test_formulas_typeset_offline(page_reports):
    assert sum(r.math for r in page_reports.values()) > 0, "no formula anywhere in the book"
    untypeset = {page: (r.formulas, r.math) for page, r in page_reports.items() if r.formulas < r.math}
    assert not untypeset, f"formulas MathJax did not typeset (typeset, found): {untypeset}"


def test_download_offers_the_executed_notebook(page_reports, executed_chapters):
    """The page's download menu links the .ipynb with the outputs shown on the page."""
    import browser_check

    for stem in executed_chapters:
        links = [u for u in page_reports[stem].downloads if u.endswith(f"/{stem}.ipynb")]
        assert links, f"{stem}: no .ipynb download link, found {page_reports[stem].downloads}"
        assert links[0].startswith("file://"), links[0]
        notebook = json.loads(Path(urllib.parse.unquote(urllib.parse.urlparse(links[0]).path)).read_text())
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        outputs = [o for c in code for o in c.get("outputs", [])]
        charts = [o for o in outputs if "nhtlab-chart" in "".join(o.get("data", {}).get("text/html", []))]
        # every page's download has its outputs; a lesson's has its charts too (an evidence page may be tables)
        assert outputs and (charts or not browser_check.is_lesson(stem)), (
            f"{stem}: the downloadable notebook has {len(outputs)} outputs, {len(charts)} charts")
        assert notebook["metadata"].get("papermill", {}).get("parameters", {}).get("profile") == "quick", (
            f"{stem}: the download is not the notebook executed for this page")


def test_code_fits_the_page_column(page_reports, executed_chapters):
    """No code cell or code block scrolls sideways in a 1280-pixel window (book/ruff.toml keeps the
    chapters' lines short enough). The API reference is left out: its examples are nhtlab's
    docstrings, written in the package's own style."""
    for stem in executed_chapters:
        assert stem in page_reports, f"{stem}: page not checked"
    wide = {page: r.overflow for page, r in page_reports.items() if r.overflow and page != "api"}
    assert not wide, f"code wider than its column (scrollWidth>clientWidth: widest line): {wide}"


def test_screenshots_saved(page_reports):
    for page, report in page_reports.items():
        assert Path(report.screenshot).stat().st_size > 10_000, page
