"""The shape of each chapter: code outside PROFILES, file length, blocks repeated across chapters,
and numbers typed into Markdown that are neither a paper's value nor a setting.

    .venv/bin/python tools/chapter_shape.py            # the table, then every unlisted number

Prose must stay true on every CPU and profile, so a number in a chapter's Markdown must be a paper's
value (:mod:`nhtlab.papers`), a setting (a literal of the chapter's PROFILES cell or of
:data:`SETTING_SOURCES`), a count from 0 to 10, a year, or an entry of :data:`ALLOWED`; anything else is
a measurement, which belongs in a cell built from the run. Citations, links and code are not prose.
tests/test_chapter_shape.py holds the chapters to the targets.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.py"))
SETTING_SOURCES = ["nhtlab/training/presets.py", "nhtlab/training/modular_run.py", "nhtlab/training/shortcut_run.py",
                   "nhtlab/analysis/events.py", "nhtlab/analysis/delay.py", "nhtlab/thresholds.py"]

#: Targets of the issue on chapters that are narrative and calls.
MAX_CODE_LINES = 180
MAX_FILE_LINES = 550
REPEAT_WINDOW = 6

#: (chapter stem, number as typed) → why it may stand in prose. Keep it short (at most 20).
ALLOWED: dict[tuple[str, str], str] = {
    ("01_grokking", "9,409"): "97² pairs: the size of the task's table, a setting squared",
}

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
# a number not glued to a word (P4, d_model, ResNet18, CIFAR-10, x2); optional thousands, decimals,
# ×10ⁿ or 10⁻ⁿ forms, and a percent sign
_NUMBER = re.compile(
    r"(?<![\w.\-−/^{])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?:\s*[×x]\s*10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?"
    r"(?:(?<=10)([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?(\s*%)?(?![\w]|\.\d)"
)
_STRIP = [
    re.compile(r"\{(?:cite|ref|doc|numref|eq|download)[^}]*\}`[^`]*`"),  # MyST roles
    re.compile(r"`[^`]*`"),                                            # inline code
    re.compile(r"\]\([^)]*\)"),                                         # link targets
    re.compile(r"https?://\S+"),
    re.compile(r"arXiv[: ]\s*\d{4}\.\d{4,5}", re.I),
    re.compile(r"^```.*?^```", re.S | re.M),                            # fenced blocks (directives are re-scanned below)
]
_DIRECTIVE_BODY = re.compile(r"^```\{(?:admonition|note|warning|tip|dropdown|important)\}[^\n]*\n(.*?)^```", re.S | re.M)


def _numbers_in(obj: object, out: set[float]) -> None:
    """Every finite number in ``obj``, keys and values, nested, into ``out``."""
    if isinstance(obj, dict):
        obj = [*obj.keys(), *obj.values()]
    if isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _numbers_in(v, out)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and math.isfinite(obj):
        out.add(float(obj))


def paper_values() -> set[float]:
    """Every number held by :mod:`nhtlab.papers` (values and keys, nested)."""
    sys.path.insert(0, str(ROOT))
    import nhtlab.papers as papers

    out: set[float] = set()
    for name in dir(papers):
        if not name.startswith("_"):
            _numbers_in(getattr(papers, name), out)
    return out


def literals(source: str) -> set[float]:
    """Numeric literals of Python source (``-x`` included, and ``10**k`` evaluated)."""
    out: set[float] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            out.add(float(node.value))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            try:
                out.add(float(ast.literal_eval(node)))
            except (ValueError, TypeError, SyntaxError, OverflowError):
                pass
    return out


def shared_settings() -> set[float]:
    """Numeric literals of :data:`SETTING_SOURCES`."""
    return set().union(*(literals((ROOT / rel).read_text()) for rel in SETTING_SOURCES if (ROOT / rel).exists()))


def _profiles_cell(cells) -> int | None:
    return next((i for i, c in enumerate(cells) if c.cell_type == "code" and re.search(r"^PROFILES\s*=", c.source, re.M)),
                None)


def _is_code_line(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def parse_number(match: re.Match) -> list[float]:
    """The values a typed number may stand for: itself, and /100 when it carries a percent sign."""
    mantissa, times_exp, bare_exp, percent = match.groups()
    text = mantissa.replace(",", "")
    if times_exp or bare_exp:
        exp = int((times_exp or bare_exp).translate(_SUPERSCRIPT))
        value = float(text) * 10.0 ** exp if times_exp else 10.0 ** exp
    else:
        value = float(text)
    return [value, value / 100] if percent else [value]


def prose(markdown: str) -> str:
    """Markdown with citations, code, links and fenced blocks removed (directive bodies kept)."""
    bodies = "\n".join(m.group(1) for m in _DIRECTIVE_BODY.finditer(markdown))
    text = markdown + "\n" + bodies
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    return text.replace("{,}", ",").replace("\\,", "").replace("\\!", "")


def unlisted_numbers(path: Path, papers: set[float], shared: set[float]) -> list[str]:
    """Numbers typed into the chapter's Markdown that no paper, setting or allowlist entry explains."""
    cells = jupytext.read(path).cells
    p = _profiles_cell(cells)
    known = papers | shared | (literals(cells[p].source) if p is not None else set())
    found = []
    for c in cells:
        if c.cell_type != "markdown":
            continue
        for m in _NUMBER.finditer(prose(c.source)):
            typed = m.group(0).strip()
            if (path.stem, typed) in ALLOWED or (path.stem, m.group(1)) in ALLOWED:
                continue
            values = parse_number(m)
            if any(v.is_integer() and 0 <= v <= 10 for v in values) and not m.group(4):
                continue
            if re.fullmatch(r"(19|20)\d\d", typed):  # a year (a paper's, a venue's)
                continue
            if any(math.isclose(v, k, rel_tol=1e-9, abs_tol=1e-12) for v in values for k in known):
                continue
            found.append(typed)
    return found


def _code_windows(path: Path) -> dict[tuple[str, ...], int]:
    """Windows of REPEAT_WINDOW consecutive code lines, outside the install and parameters cells."""
    cells = jupytext.read(path).cells
    code = [c for c in cells if c.cell_type == "code"]
    skip = {id(code[0])} if code else set()
    skip |= {id(c) for c in code if "parameters" in c.metadata.get("tags", [])}
    windows: dict[tuple[str, ...], int] = {}
    for c in code:
        if id(c) in skip:
            continue
        lines = [line.strip() for line in c.source.splitlines() if _is_code_line(line)]
        for i in range(len(lines) - REPEAT_WINDOW + 1):
            windows.setdefault(tuple(lines[i:i + REPEAT_WINDOW]), i)
    return windows


def repeated_blocks(paths: list[Path]) -> list[tuple[str, str, str]]:
    """(chapter, chapter, first line) for each pair of chapters sharing a block of code lines."""
    windows = {p.stem: _code_windows(p) for p in paths}
    found = []
    for a, b in itertools.combinations(sorted(windows), 2):
        if shared := set(windows[a]) & set(windows[b]):
            found.append((a, b, min(shared)[0]))
    return found


def shape(path: Path) -> dict:
    """Code lines outside PROFILES (comments and blanks not counted) and file lines of one chapter."""
    cells = jupytext.read(path).cells
    p = _profiles_cell(cells)
    code = sum(_is_code_line(line) for i, c in enumerate(cells) if c.cell_type == "code" and i != p
               for line in c.source.splitlines())
    return {"chapter": path.stem, "code_lines": code, "file_lines": len(path.read_text().splitlines())}


#: The one way a chapter imports nhtlab: the core by its top-level names, the chapter's reports through the book.
IMPORT_LINES = ("import nhtlab", "from nhtlab import book as nb")


def import_style(source: str, exported: Iterable[str], book: Iterable[str] = ()) -> list[str]:
    """Where chapter code leaves :data:`IMPORT_LINES`: another import of nhtlab, ``nhtlab.X`` not in
    ``exported`` or ``nb.X`` not in ``book`` (deep paths included), and a module bound to an alias, which
    hides where a name comes from."""
    import nhtlab

    exported, book = set(exported), set(book)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nhtlab":
            names = [(a.name, a.asname) for a in node.names]
            if node.module != "nhtlab" or names != [("book", "nb")]:
                found.append(f"line {node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nhtlab" and (alias.name != "nhtlab" or alias.asname):
                    found.append(f"line {node.lineno}: import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "nhtlab" and node.attr not in exported:
                found.append(f"line {node.lineno}: nhtlab.{node.attr} is not a top-level name")
            elif node.value.id == "nb" and node.attr not in book:
                found.append(f"line {node.lineno}: nb.{node.attr} is not a name of nhtlab.book")
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "nhtlab"
                and isinstance(getattr(nhtlab, node.value.attr, None), types.ModuleType)):
            found.append(f"line {node.lineno}: module nhtlab.{node.value.attr} bound to an alias")
    return found


def chapter_imports(path: Path) -> list[str]:
    """:func:`import_style` over a chapter's code cells (IPython magics and shell lines dropped)."""
    import nhtlab
    from nhtlab import book as nb

    cells = jupytext.read(path).cells
    code = "\n".join(
        "\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for c in cells if c.cell_type == "code"
    )
    found = import_style(code, nhtlab.__all__, nb.__all__)
    missing = [line for line in IMPORT_LINES if not re.search(rf"^{re.escape(line)}$", code, re.M)]
    return found + [f"missing: {line}" for line in missing]


def report() -> dict:
    """Per-chapter shape, unlisted numbers and repeated blocks of every chapter."""
    papers, shared = paper_values(), shared_settings()
    rows = []
    for path in CHAPTERS:
        row = shape(path)
        row["unlisted_numbers"] = unlisted_numbers(path, papers, shared)
        row["import_style"] = chapter_imports(path)
        rows.append(row)
    return {"chapters": rows, "repeated_blocks": repeated_blocks(CHAPTERS), "allowed": len(ALLOWED)}


def main() -> int:
    result = report()
    print(f"{'chapter':<16}{'code lines':>11}{'file lines':>11}{'unlisted numbers':>18}")
    for row in result["chapters"]:
        print(f"{row['chapter']:<16}{row['code_lines']:>11}{row['file_lines']:>11}{len(row['unlisted_numbers']):>18}")
    print(f"targets: code lines ≤ {MAX_CODE_LINES}, file lines ≤ {MAX_FILE_LINES}, no unlisted number, "
          f"no block of {REPEAT_WINDOW} code lines repeated across chapters; allowlist {result['allowed']}/20")
    for a, b, line in result["repeated_blocks"]:
        print(f"repeated block: {a} and {b}, starting {line!r}")
    for row in result["chapters"]:
        if row["unlisted_numbers"]:
            print(f"{row['chapter']}: {', '.join(row['unlisted_numbers'])}")
        for where in row["import_style"]:
            print(f"{row['chapter']}: import style, {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
