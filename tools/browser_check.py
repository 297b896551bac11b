"""Open every page of the built book in headless Chromium with the network off and check it.

Per page: console errors, charts drawn, controls, the Colab and download links, formulas typeset,
Markdown shown as text, empty tables, code wider than its column, and a screenshot. ``make book`` fails on
:func:`problems`. Playwright drives the system's Chromium: no browser is ever downloaded.
"""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace
from pathlib import Path

from playwright.sync_api import BrowserContext, ConsoleMessage, Error, Page, sync_playwright

WINDOW = {"width": 1280, "height": 900}  # CSS px, at one device pixel each
TABS = 6  #: pages loading at once, each in its own tab
# Beside Playwright's own flags: no name resolves, so a page that reaches for any host fails loudly.
CHROMIUM_FLAGS = ["--disable-gpu", "--disable-quic", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]

PROBE = """() => {
  const charts = Array.from(document.querySelectorAll('.nhtlab-chart'));
  const drawn = charts.filter(c => c.querySelector('svg.marks [class^="mark-"], svg.marks .mark-line, canvas.marks, svg.marks path'));
  const controls = document.querySelectorAll('.vega-bindings input, .vega-bindings select').length;
  const colab = Array.from(document.querySelectorAll('a[href*="colab.research.google.com"]')).map(a => a.href);
  const downloads = Array.from(document.querySelectorAll('a[href$=".ipynb"]')).filter(a => !a.href.includes('colab.research'))
                         .map(a => a.href);
  const math = document.querySelectorAll('.math').length;
  const formulas = document.querySelectorAll('.math mjx-container').length;
  // Code that does not fit the page's column scrolls sideways: a code cell's input or a code
  // block whose content is wider than its box (a cell's printed output is not code, and is left
  // out). Reported by the first characters of its widest line.
  const overflow = Array.from(document.querySelectorAll('div.cell_input pre, .highlight pre'))
                        .filter(pre => !pre.closest('.cell_output'))
                        .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
                        .map(pre => {
                          const lines = pre.textContent.split('\\n');
                          const widest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
                          return `${pre.scrollWidth}>${pre.clientWidth}px: ${widest.trim().slice(0, 80)}`;
                        });
  // Markdown that reached the page as text: a pipe-table row, '**' bold markers or '$…$' math
  // left in a paragraph, list item, table cell or heading (code, formulas and charts left out).
  // A chapter's generated tables render this way when the book parses text/markdown outputs as
  // CommonMark, which has no tables.
  const rawMarkdown = [];
  const article = document.querySelector('article') || document.body;
  for (const block of article.querySelectorAll('p, li, td, th, dd, dt, h1, h2, h3, h4, h5, h6')) {
    if (block.closest('pre, code, .math, mjx-container, .nhtlab-chart, script, style, .highlight, .sig, dl.py')) continue;
    const copy = block.cloneNode(true);
    copy.querySelectorAll('pre, code, .math, mjx-container, .nhtlab-chart, script, style, p, li, table, ul, ol')
        .forEach(n => n.remove());
    const text = copy.textContent;
    const kind = /(^|\\n)\\s*\\|[^\\n]*\\|\\s*($|\\n)/.test(text) || /\\|\\s*:?-{3,}:?\\s*\\|/.test(text) ? 'pipe table'
               : /\\*\\*\\S/.test(text) ? '**'
               : /(^|[^\\\\$])\\$[^$\\s][^$\\n]*\\$/.test(text) ? '$…$' : null;
    if (kind) rawMarkdown.push(`${kind}: ${text.trim().replace(/\\s+/g, ' ').slice(0, 100)}`);
  }
  const tables = Array.from(article.querySelectorAll('table')).filter(t => !t.closest('.nhtlab-chart'));
  const emptyTables = tables.filter(t => !Array.from(t.querySelectorAll('tbody tr, tr'))
                                           .some(tr => tr.querySelector('td')))
                            .map(t => t.textContent.trim().replace(/\\s+/g, ' ').slice(0, 80) || '(no text)');
  const noRows = Array.from(article.querySelectorAll('.cell_output em'))
                      .filter(e => e.textContent.trim() === '(no rows)').length;
  // A lesson's budget (issue: each chapter a lesson): what a reader sees without opening a closed
  // block. Evidence sits in <details> ("How we know", a cell's hidden output, a dropdown).
  const closed = el => !!el.closest('details:not([open])');
  const visible = tables.filter(t => !closed(t));
  const column = (article.querySelector('main') || article).clientWidth;
  const visibleTables = visible.map(t => ({
    rows: t.querySelectorAll('tbody tr').length,
    width: Math.round(t.scrollWidth), column: Math.round((t.closest('.cell_output, section, article') || article).clientWidth),
    head: Array.from(t.querySelectorAll('th')).map(th => th.textContent.trim()).slice(0, 4).join(' | ').slice(0, 60)}));
  const open = article.cloneNode(true);
  open.querySelectorAll('details:not([open]), div.cell_input, .highlight, script, style, .math, mjx-container')
      .forEach(n => n.remove());
  const openText = open.textContent.replace(/\\s+/g, ' ');
  const LOG = [['CPU seconds', /\\bCPU[ -]s(econds)?\\b/], ['cache', /\\bcach(e|ed|es|ing)\\b/i],
               ['ledger', /\\bledger\\b/i], ['commit hash', /\\bcommit\\s+[0-9a-f]{7,40}\\b/i],
               ['earlier version', /\\bearlier version\\b/i], ['sweep repr', /SweepResult\\(|\\bsweep \\(parallel/],
               ['run time', /\\bin \\d[\\d,]*(\\.\\d+)? ?s\\b/], ['machine', /\\bdevelopment machine\\b/i]];
  const logText = LOG.map(([kind, re]) => { const m = openText.match(re);
                                           if (!m) return null;
                                           const at = Math.max(0, m.index - 40);
                                           return `${kind}: …${openText.slice(at, m.index + m[0].length + 40).trim()}…`; })
                     .filter(x => x);
  const found = document.querySelectorAll('.nhtlab-found').length;
  const widgets = document.querySelectorAll('.jupyter-widgets, [data-mime-type="application/vnd.jupyter.widget-view+json"], script[type="application/vnd.jupyter.widget-view+json"]').length;
  return {charts: charts.length, drawn: drawn.length, controls: controls, colab: colab, widgets: widgets,
          downloads: downloads, math: math, formulas: formulas, overflow: overflow,
          raw_markdown: rawMarkdown, tables: tables.length, visible_tables: visibleTables,
          log_text: logText, found: found, height: Math.round(document.documentElement.scrollHeight),
          empty_tables: emptyTables.concat(Array(noRows).fill('*(no rows)*')),
          title: document.title};
}"""


class PageReport(SimpleNamespace):
    """One page: its path (``page``), what it logged (``errors``), its ``screenshot``, and :data:`PROBE`'s keys
    (charts drawn, tables, formulas, Markdown shown as text, …) as attributes."""


def find_chromium() -> str | None:
    """The system Chromium's path, or None."""
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "chrome"))), None)


def _error(message: ConsoleMessage) -> str | None:
    """``console.error`` and ``console.assert``, and the browser's own error log (a resource that failed to
    load), which Playwright hands over as a message without arguments."""
    if message.type not in ("error", "assert"):
        return None
    if message.args:
        return "console.error: " + message.text[:300]
    return f"log: {message.text[:200]} {message.location.get('url', '')}"


def _open(context: BrowserContext, html: Path) -> tuple[Page, Path, list[str]]:
    """A new tab loading ``html``, with listeners that put what the page logs in the list returned."""
    page, errors = context.new_page(), []
    page.on("pageerror", lambda e: errors.append("exception: " + (e.stack or e.message)[:300]))
    page.on("console", lambda m: errors.extend(filter(None, [_error(m)])))
    page.goto(html.resolve().as_uri(), wait_until="commit")
    return page, html, errors


def _check(page: Page, html: Path, errors: list[str], shots: Path | None) -> PageReport:
    """Probe ``html``, loaded in ``page``, once it is complete and its charts and formulas are drawn."""
    page.bring_to_front()  # a background tab's animation frames are throttled: charts would draw late
    # a blank page would pass for one without charts: probe once loaded, up to a minute on a busy machine
    page.wait_for_function("document.readyState == 'complete' && !!document.body", timeout=60_000)
    # charts draw and MathJax typesets asynchronously
    for _ in range(120):  # up to 30 s on a busy machine
        try:
            probe = page.evaluate(PROBE)
        except Error as e:
            raise RuntimeError(f"the page probe failed on {html}: {e}") from e
        if probe["drawn"] >= probe["charts"] and probe["formulas"] >= probe["math"]:
            break
        page.wait_for_timeout(250)
    report = PageReport(page=str(html), errors=list(errors), screenshot="", **probe)
    if shots is not None:
        # a window as tall as the page (at most 16,000 px), so that its sticky sidebars run along it
        page.set_viewport_size({"width": 1280, "height": min(page.evaluate("document.documentElement.scrollHeight"), 16000)})
        report.screenshot = str(shots / (html.stem + ".png"))
        page.screenshot(path=report.screenshot)
    page.close()
    return report


def check_book(html_dir: Path, screenshots: Path | None = None, settle: float = 1.5) -> list[PageReport]:
    """Check every ``*.html`` page under ``html_dir`` (search and genindex excluded), :data:`TABS` pages at a time,
    each given ``settle`` seconds after it starts loading to log what it logs late."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("Chromium is not installed (Debian package 'chromium').")
    pages = sorted(p for p in html_dir.rglob("*.html") if p.name not in ("search.html", "genindex.html", "py-modindex.html")
                   and "_static" not in p.parts and "_sources" not in p.parts)
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    reports: list[PageReport] = []
    with sync_playwright() as playwright, playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS) as browser:
        context = browser.new_context(viewport=WINDOW, device_scale_factor=1, offline=True)
        for start in range(0, len(pages), TABS):  # the pages of a batch settle at the same time, not one after another
            opened = [_open(context, html) for html in pages[start:start + TABS]]
            opened[0][0].wait_for_timeout(settle * 1000)
            reports += [_check(*tab, screenshots) for tab in opened]
    return reports


#: A lesson page's budget: tables a reader sees without opening a block, and rows in each.
LESSON_TABLES, LESSON_ROWS = 6, 12


def is_lesson(page: str | Path) -> bool:
    """A chapter's page (``book/NN_name.html``), not an evidence or reference page."""
    stem = Path(page).stem
    return bool(re.fullmatch(r"\d\d_[a-z0-9_]+", stem)) and "evidence" not in stem


def problems(report: PageReport) -> list[str]:
    """What a reader would see broken: console errors, undrawn charts, untypeset formulas, raw Markdown,
    empty tables, a crowded lesson. (Code wider than its column is the tests' business, not the build's.)"""
    out = [f"console: {e}" for e in report.errors]
    if is_lesson(report.page):  # what crowds a lesson
        if len(report.visible_tables) > LESSON_TABLES:
            out.append(f"{len(report.visible_tables)} tables visible (at most {LESSON_TABLES}; put evidence in 'How we know')")
        for t in report.visible_tables:
            if t["rows"] > LESSON_ROWS:
                out.append(f"a visible table of {t['rows']} rows (at most {LESSON_ROWS}): {t['head']}")
            if t["width"] > t["column"] + 1:
                out.append(f"a visible table wider than its column ({t['width']} > {t['column']} px): {t['head']}")
        out += [f"log text on a lesson page: {text}" for text in report.log_text]
        if not report.found:
            out.append("no 'What we found' box")
    if report.drawn < report.charts:
        out.append(f"{report.charts - report.drawn} of {report.charts} charts drew no marks")
    if report.formulas < report.math:
        out.append(f"{report.math - report.formulas} of {report.math} formulas not typeset")
    out += [f"raw Markdown: {text}" for text in report.raw_markdown]
    out += [f"empty table: {text}" for text in report.empty_tables]
    return out


def save_report(reports: list[PageReport], screenshots: Path) -> Path:
    """``report.json`` beside the screenshots: every page's probe, for a reviewer or a test."""
    path = screenshots / "report.json"
    path.write_text(json.dumps([vars(r) for r in reports], indent=1))
    return path
