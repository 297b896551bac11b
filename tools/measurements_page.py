"""Render book/measurements.md from the benchmarks' JSON records (``benchmarks/_record``).

    python tools/measurements_page.py                 # what `make measurements` runs
    python tools/measurements_page.py --check         # exit 1 if book/measurements.md is not what the records give

Records are read from ``benchmarks/results/*.json`` (kept in the repository) and
``_build/measurements/*.json`` (this machine's runs). Every number on the page comes from a record,
next to the machine it was measured on (CPU model, cores, torch version) and its date: the README
and the chapters type no timing of their own.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (ROOT / "benchmarks" / "results", ROOT / "_build" / "measurements")
OUT = ROOT / "book" / "measurements.md"
REQUIRED = ("benchmark", "date", "machine", "results")
MACHINE = ("cpu_model", "cores", "torch")
# What tells machines apart on the page: the required keys and the vector ISA torch ran on (records
# before it was kept lack it; "AMD EPYC" has named both an AVX-512 and an AVX2 machine).
IDENTITY = ("cpu_model", "cpu_isa", "cores", "torch")

INTRO = """\
# Measurements

How fast the book's code runs, as measured by the scripts in `benchmarks/`, and the companion
paper's Table 3 as `make reproduce` trained it (`scripts/reproduce_table3.py`). This page is
generated: each script writes a JSON record of its numbers together with the machine they
were measured on (`benchmarks/_record`), and `make measurements` renders the records into
this page (`tools/measurements_page.py`). A number holds for the machine, the torch version and
the load of its run; compare ratios within one run rather than times across machines.
"""


def load(sources: tuple[Path, ...] | list[Path] = SOURCES) -> list[dict[str, Any]]:
    """Every record in the ``sources`` folders, oldest first; a folder that does not exist is skipped,
    and so is a ``--smoke`` run's record (its numbers mean nothing). A record is one run, named by its
    file: a local record copied into ``benchmarks/results`` to publish it is listed once.

    Raises
    ------
    ValueError
        Naming the file, when a record is not JSON or lacks a required key.
    """
    records, seen = [], set()
    for folder in sources:
        for path in sorted(Path(folder).glob("*.json")):
            if path.name in seen:
                continue
            seen.add(path.name)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}: not JSON ({error})") from None
            missing = [k for k in REQUIRED if k not in data] + [f"machine.{k}" for k in MACHINE
                                                                 if k not in data.get("machine", {})]
            if missing:
                raise ValueError(f"{path}: the record lacks {', '.join(missing)}")
            if not data["results"]:
                raise ValueError(f"{path}: the record has no results")
            if not data.get("smoke"):
                records.append(data)
    return sorted(records, key=lambda r: (r["benchmark"], r["date"]))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: list[dict[str, Any]]) -> list[str]:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return lines


def _machine_key(record: dict[str, Any]) -> tuple:
    """The record's machine as the page tells machines apart (:data:`IDENTITY`; a missing key reads None)."""
    return tuple(record["machine"].get(k) for k in IDENTITY)


def render(records: list[dict[str, Any]]) -> str:
    """The page's Markdown: one section per benchmark, one table per recorded run, each under its machine.

    Parameters
    ----------
    records : list of dict
        As :func:`load` returns them.

    Returns
    -------
    str
        MyST Markdown for Jupyter Book.
    """
    lines = [INTRO]
    if not records:
        lines.append("No benchmark has recorded a run yet: run a script in `benchmarks/`, then "
                     "`make measurements`.\n")
        return "\n".join(lines)
    machines = []  # numbered in the order they first recorded a run
    for r in sorted(records, key=lambda r: r["date"]):
        key = _machine_key(r)
        if key not in machines:
            machines.append(key)
    lines += ["## Machines", ""]
    lines += _table([{"machine": f"M{i + 1}", "CPU model": cpu, "vector ISA (torch)": isa or "not recorded",
                      "cores": cores, "torch": torch} for i, (cpu, isa, cores, torch) in enumerate(machines)])
    lines.append("")
    for name in dict.fromkeys(r["benchmark"] for r in records):
        lines += [f"## `{name}`", ""]
        for r in (r for r in records if r["benchmark"] == name):
            key = _machine_key(r)
            settings = ", ".join(f"{k} = {v}" for k, v in r.get("settings", {}).items())
            heading = f"{r['date']}, machine M{machines.index(key) + 1}, nhtlab {r['machine'].get('nhtlab') or '?'}"
            if r.get("commit"):
                heading += f", commit {r['commit']}"
            if r.get("load_average") is not None:
                heading += f", load average {r['load_average']:g}"
            lines += [f"**{heading}**" + (f" ({settings})" if settings else ""), ""]
            if r.get("note"):
                lines += [r["note"], ""]
            lines += _table(r["results"]) + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not what the records give")
    parser.add_argument("--out", type=Path, default=OUT, help="the page to write (default: book/measurements.md)")
    parser.add_argument("--records", type=Path, nargs="*", default=list(SOURCES), help="folders of JSON records")
    args = parser.parse_args(argv)
    page = render(load(args.records))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != page:
            print(f"{args.out} is stale: run `make measurements`", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
