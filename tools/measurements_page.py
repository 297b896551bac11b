"""Render book/measurements.md and the chapters' time table (book/chapter_times.md, which the
landing page and Run a chapter include) from the benchmarks' JSON records (``benchmarks/_record``).

    python tools/measurements_page.py                 # what `make measurements` runs
    python tools/measurements_page.py --check         # exit 1 if book/measurements.md is not what the records give

Records come from ``benchmarks/results`` (kept) and ``_build/measurements`` (this machine's runs); every
number on the page stands beside its machine and date, and nothing else types a timing.
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
    """Every record in the ``sources`` folders by benchmark and date, each file name once (a published copy
    is the same run), smoke runs left out; ValueError naming a file that is not JSON or lacks a key."""
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
    return tuple(record["machine"].get(k) for k in IDENTITY)


def _machine_name(record: dict[str, Any], machines: list[tuple]) -> str:
    return f"M{machines.index(_machine_key(record)) + 1}"


def _section(title: str, intro: str, rows: list[dict[str, Any]]) -> list[str]:
    return [f"## {title}", "", intro, "", *_table(rows), ""] if rows else []


#: The rows "<kind>: <suffix>" of a ``build_book`` record (``tools/build_book.py``) the efficiency table reads.
EFFICIENCY_ROWS = {"steps with a floor": "steps", "their training CPU": "training CPU s", "their floor": "floor s",
                   "efficiency": "efficiency (floor / CPU)"}


def render_efficiency(records: list[dict[str, Any]], machines: list[tuple]) -> list[str]:
    """Each build's efficiency per run kind: Σ steps × the step's floor over the ledger's training CPU seconds."""
    rows = []
    for r in (r for r in records if r["benchmark"] == "build_book"):
        values = {row["what"]: row["value"] for row in r["results"]}
        for kind in [what.removesuffix(": efficiency") for what in values if what.endswith(": efficiency")]:
            row = {head: values.get(f"{kind}: {suffix}", "") for suffix, head in EFFICIENCY_ROWS.items()}
            steps, share = row["steps"], row["efficiency (floor / CPU)"]
            rows.append({"build": r["date"][:16], "machine": _machine_name(r, machines),
                         "profile": r.get("settings", {}).get("profile", "?"), "run kind": kind} | row
                        | {"steps": f"{steps:,}" if isinstance(steps, int) else steps,
                           "efficiency (floor / CPU)": f"{share:.0%}" if isinstance(share, float) else share})
    return _section("The book's training against the step's floor",
                    "Each run kind's share of the floor in a whole build: its steps times the floor of one step (the "
                    "step's matmul FLOPs at the machine's single-thread `torch.mm` rate on the same shapes, "
                    "`nhtlab.plumbing.floor`) over the CPU seconds its trainings took (the result cache's ledger), so "
                    "that evaluations, logging, set-up and process start-up show.", rows)


def render_step_floor(records: list[dict[str, Any]], machines: list[tuple]) -> list[str]:
    """The companion step's share of its floor, eager and compiled, one row per ``bench_grok`` record."""
    rows = []
    for r in (r for r in records if r["benchmark"] == "bench_grok"):
        values = {row["what"]: row["value"] for row in r["results"]}
        if "eager floor fraction" not in values:
            continue
        cpu, isa = _machine_key(r)[:2]
        compiled = values.get("compiled floor fraction")
        rows.append({"measured": r["date"][:16], "machine": _machine_name(r, machines),
                     "CPU (vector ISA)": f"{cpu} ({isa or 'not recorded'})",
                     "floor ms per step": values.get("floor ms", ""),
                     "eager": f"{values['eager floor fraction']:.0%}",
                     "compiled": "" if compiled is None else f"{compiled:.0%}",
                     "compiled / eager": values.get("ratio", ""),
                     "load average": r.get("load_average", "")})
    return _section("The companion step against its floor, per machine",
                    "`benchmarks/bench_grok.py`: the companion transformer's training step (batch 512, one thread) "
                    "as a share of its floor, the step's matmul FLOPs at the same machine's single-thread `torch.mm` "
                    "rate on the same shapes. Eager and compiled (`torch.compile`, inductor) are timed in alternating "
                    "blocks of one process.", rows)


def render(records: list[dict[str, Any]]) -> str:
    """The page's Markdown: one section per benchmark, one table per recorded run, each under its machine."""
    lines = [INTRO]
    if not records:
        lines.append("No benchmark has recorded a run yet: run a script in `benchmarks/`, then "
                     "`make measurements`.\n")
        return "\n".join(lines)
    # numbered in the order they first recorded a run
    machines = list(dict.fromkeys(_machine_key(r) for r in sorted(records, key=lambda r: r["date"])))
    lines += ["## Machines", ""]
    lines += _table([{"machine": f"M{i + 1}", "CPU model": cpu, "vector ISA (torch)": isa or "not recorded",
                      "cores": cores, "torch": torch} for i, (cpu, isa, cores, torch) in enumerate(machines)])
    lines.append("")
    lines += render_efficiency(records, machines)
    lines += render_step_floor(records, machines)
    for name in dict.fromkeys(r["benchmark"] for r in records):
        lines += [f"## `{name}`", ""]
        for r in (r for r in records if r["benchmark"] == name):
            settings = ", ".join(f"{k} = {v}" for k, v in r.get("settings", {}).items())
            heading = f"{r['date']}, machine {_machine_name(r, machines)}, nhtlab {r['machine'].get('nhtlab') or '?'}"
            if r.get("commit"):
                heading += f", commit {r['commit']}"
            if r.get("load_average") is not None:
                heading += f", load average {r['load_average']:g}"
            lines += [f"**{heading}**" + (f" ({settings})" if settings else ""), ""]
            if r.get("note"):
                lines += [r["note"], ""]
            lines += _table(r["results"]) + [""]
    return "\n".join(lines)


TIMES_OUT = ROOT / "book" / "chapter_times.md"
PROFILES = ("quick", "book", "full")


def build_records(records: list[dict[str, Any]], profile: str) -> list[dict[str, Any]]:
    """The ``build_book`` records (``tools/build_book.py``) of ``profile``."""
    return [r for r in records if r["benchmark"] == "build_book" and r.get("settings", {}).get("profile") == profile]


def chapter_seconds(record: dict[str, Any]) -> dict[str, float]:
    """Each chapter's wall seconds in a ``build_book`` record."""
    return {row["what"].removeprefix("chapter "): float(row["value"]) for row in record["results"]
            if row["what"].startswith("chapter ")}


def render_chapter_times(records: list[dict[str, Any]], chapters: list[str]) -> str:
    """Each chapter's wall time in the newest ``build_book`` record of each profile, and its machine: a
    Markdown fragment for the landing page and Run a chapter."""
    newest = {profile: max(builds, key=lambda r: r["date"]) for profile in PROFILES
              if (builds := build_records(records, profile))}
    seconds_by = {profile: chapter_seconds(r) for profile, r in newest.items()}
    rows = []
    for stem in chapters:
        row = {"chapter": f"{{doc}}`{stem}`"}
        for profile in PROFILES:
            seconds = seconds_by.get(profile, {}).get(stem)
            # seconds under two minutes, else whole minutes: what a reader plans with
            row[f"`{profile}`"] = ("not measured yet" if seconds is None else f"{seconds:.0f} s" if seconds < 120
                                   else f"{seconds / 60:.0f} min")
        rows.append(row)
    lines = _table(rows) + [""]
    for profile, r in newest.items():  # in PROFILES' order
        m = r["machine"]
        jobs = r.get("settings", {}).get("chapters at a time")
        lines.append(f"- `{profile}`: {m['cpu_model']} ({m.get('cpu_isa') or 'vector ISA not recorded'}), "
                     f"{m['cores']} cores, torch {m['torch']}, nhtlab {m.get('nhtlab', '?')}, {r['date'][:10]}"
                     + (f"; {jobs} chapters at a time, sharing the cores" if jobs else "") + ".")
    return "\n".join(lines) + "\n"


def chapter_stems() -> list[str]:
    import build_book

    return [notebook.stem for notebook in build_book.chapters()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not what the records give")
    parser.add_argument("--out", type=Path, default=OUT, help="the page to write (default: book/measurements.md)")
    parser.add_argument("--records", type=Path, nargs="*", default=list(SOURCES), help="folders of JSON records")
    parser.add_argument("--times-out", type=Path, default=TIMES_OUT,
                        help="the chapters' time table to write (default: book/chapter_times.md)")
    args = parser.parse_args(argv)
    records = load(args.records)
    # The chapters' times come from kept records only: a build on this machine moves the book's table
    # once its record is kept in benchmarks/results, and a test holds the table to those records.
    kept = load([SOURCES[0]]) if SOURCES[0] in args.records else records
    pages = {args.out: render(records), args.times_out: render_chapter_times(kept, chapter_stems())}
    if args.check:
        stale = [out for out, page in pages.items()
                 if (out.read_text(encoding="utf-8") if out.exists() else None) != page]
        for out in stale:
            print(f"{out} is stale: run `make measurements`", file=sys.stderr)
        return 1 if stale else 0
    for out, page in pages.items():
        out.write_text(page, encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
