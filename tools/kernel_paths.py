"""The book's claims under two kernel paths of one CPU: do they survive another rounding?

    python tools/kernel_paths.py            # build under ATEN_CPU_CAPABILITY=default, compare, write the page
    python tools/kernel_paths.py --render   # only re-render book/across_machines.md from the saved record
    python tools/kernel_paths.py --check    # exit 1 if book/across_machines.md is not what the record gives
    python tools/kernel_paths.py --add-native   # add this machine's native build (make book) as a column

Another CPU rounds differently, and training amplifies it until an event moves. One machine can show
what that does: ``ATEN_CPU_CAPABILITY=default`` makes PyTorch take its plain kernels instead of its
AVX-512 or AVX2 ones. The chapters are executed (``book`` profile) a second time that way, in their
own build folder with a cold result cache, and their closing checks compared with the native build's.
The comparison is saved (``book/data/kernel_paths.json``) and rendered into ``book/across_machines.md``:
a release's check, not CI's. ``--add-native`` adds another machine's own ``make book`` as a column (one
per CPU model and path), compared with the record's native build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from nhtlab.book.report import table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402  (tools/ is not a package)
from findings_page import load_records  # noqa: E402

RECORD = ROOT / "book" / "data" / "kernel_paths.json"
PAGE = ROOT / "book" / "across_machines.md"
PROFILE = "book"
OTHER = "default"  # the ATEN_CPU_CAPABILITY of the second build


def capability(env: dict[str, str] | None = None) -> str:
    """The CPU kernel path PyTorch takes in a fresh process with ``env``."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})})
    return out.stdout.strip()


def verdicts(chapters: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{stem: {check: {passed, detail}}}`` of a build's claims records."""
    return {stem: {c["check"]: {"passed": c["passed"], "detail": c["detail"]} for c in rec.get("checks", [])}
            for stem, rec in chapters.items()}


def compare(native: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each chapter's checks side by side, ``{stem: [{check, claim, native, other}]}``; None on a side that
    lacks the check (a chapter that failed under one path records nothing)."""
    mine, theirs = verdicts(native), verdicts(other)
    claim = {(stem, c["check"]): c["claim"] for build in (other, native) for stem, rec in build.items()
             for c in rec.get("checks", [])}  # native's word wins where both have the check
    return {stem: [{"check": n, "claim": claim[stem, n], "native": mine.get(stem, {}).get(n),
                    "other": theirs.get(stem, {}).get(n)}
                   for n in dict.fromkeys([*mine.get(stem, {}), *theirs.get(stem, {})])]
            for stem in sorted(set(native) | set(other))}


def add_machine(record: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """``record`` with another CPU's native build in its ``more`` list, replacing one of the same CPU and path."""
    same = (machine["machine"]["cpu_model"], machine["path"])
    kept = [m for m in record.get("more", []) if (m["machine"]["cpu_model"], m["path"]) != same]
    return {**record, "more": kept + [machine]}


def _mark(side: dict[str, Any] | None) -> str:
    return "—" if side is None else ("✓" if side["passed"] else "✗")



def _against_native(pairs: list[tuple[dict[str, Any], dict[str, Any] | None]], label: str) -> tuple[int, str]:
    """How many of ``pairs`` (a check, another build's side) measured otherwise than native; the turned ones."""
    both = [(r, t) for r, t in pairs if r["native"] and t]
    moved = sum(t["detail"] != r["native"]["detail"] for r, t in both)
    turned = [(r, t) for r, t in both if t["passed"] != r["native"]["passed"]]
    names = "; ".join(f"{r['check']} ({_mark(r['native'])} native, {_mark(t)} {label})" for r, t in turned)
    return moved, f"{len(turned)} of {len(pairs)} came out the other way" + (f": {names}" if turned else "")


def render(record: dict[str, Any]) -> str:
    """The How to run fragment: a summary built from the record, then one table per chapter."""
    rows = [r for checks in record["chapters"].values() for r in checks]
    claims_ = [r for r in rows if r["claim"]]
    both = [r for r in claims_ if r["native"] and r["other"] and r["native"]["passed"] and r["other"]["passed"]]
    moved, flipped = _against_native([(r, r["other"]) for r in rows], OTHER)
    machine, paths = record["machine"], record["paths"]
    lines = [
        f"Measured on {record['date']} on one machine ({machine['cpu_model']}, {machine['cores']} cores, "
        f"torch {machine['torch']}), nhtlab {record['nhtlab']}, profile `{record['profile']}`: the book "
        f"built twice, with PyTorch's native CPU kernels (`{paths['native']}`) and with "
        f"`ATEN_CPU_CAPABILITY={OTHER}` (`{paths['other']}`), each with a cold result cache. Chapters "
        f"compared: {', '.join(record['chapters'])}.",
        "",
        f"- **{len(both)} of {len(claims_)}** claims the chapters assert held under both kernel paths.",
        f"- {moved} of {len(rows)} checks and shown readings measured something different under the "
        "two paths (the rounding did move the runs);",
        f"- {flipped}.",
        "",
    ]
    more = record.get("more", [])
    for m in more:  # another CPU's own native build, against the record's native one
        theirs = [(r, m["chapters"].get(stem, {}).get(r["check"])) for stem, checks in record["chapters"].items()
                  for r in checks]
        held = [r for r, t in theirs if r["claim"] and t and t["passed"]]
        differ, turned = _against_native(theirs, m["label"])
        absent = [r for r, t in theirs if t is None]
        lines += [
            f"Another machine: {m['machine']['cpu_model']} ({m['path']}, {m['machine']['cores']} cores, torch "
            f"{m['machine']['torch']}), its own `make book` on {m['date']} (commit `{m['commit']}`, nhtlab "
            f"{m['nhtlab']}), column `{m['label']}`:",
            "",
            f"- **{len(held)} of {len(claims_)}** claims held there;",
            f"- {differ} of {len(rows)} checks and shown readings measured something different from the "
            f"native (`{paths['native']}`) build;",
            f"- {turned}" + (f"; {len(absent)} not recorded there" if absent else "") + ".",
            "",
        ]
    heads = ["native", OTHER] + [m["label"] for m in more]
    for stem, checks in record["chapters"].items():
        rows = [{"check": r["check"], "kind": "claim" if r["claim"] else "shown"}
                | {head: f"{_mark(side)} {side['detail'] if side else ''}".strip() for head, side in
                   zip(heads, [r["native"], r["other"], *(m["chapters"].get(stem, {}).get(r["check"]) for m in more)])}
                for r in checks]
        lines += [f"**{stem}**", "", table(rows), ""]
    return "\n".join(lines).rstrip() + "\n"


def execute_book(only: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    """Execute the chapters in the ``book`` profile, no HTML; the exit status. A claim that fails under a
    kernel path is what the comparison reports, not a reason to stop (``--keep-going``)."""
    return subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--profile", PROFILE, "--jobs", "2",
                           "--no-html", "--keep-going", *(["--only", *only] if only else [])],
                          check=False, cwd=ROOT, env=env).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", action="store_true", help="re-render the page from the saved record")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not what the record gives")
    parser.add_argument("--only", nargs="*", default=None, help="chapter stems to compare (default: all)")
    parser.add_argument("--add-native", action="store_true",
                        help="add this machine's own book build (make book first) to the record as a column")
    args = parser.parse_args()
    if args.check:
        ok = PAGE.exists() and PAGE.read_text(encoding="utf-8") == render(json.loads(RECORD.read_text()))
        print("book/across_machines.md is " + ("up to date" if ok else "out of date: run tools/kernel_paths.py --render"))
        return 0 if ok else 1
    if args.add_native or not args.render:
        import torch

        import nhtlab

        from _record import commit, cpu_model  # benchmarks/_record, on the path build_book sets

        machine = {"cpu_model": cpu_model(), "cores": os.cpu_count(), "torch": torch.__version__}
        native_dir = build_book.BUILD / "executed" / PROFILE
        if args.add_native:
            record = json.loads(RECORD.read_text(encoding="utf-8"))
            built = load_records(native_dir)
            missing = sorted(set(record["chapters"]) - set(built))
            if missing:
                sys.exit(f"--add-native needs this machine's whole `make book` first; no claims for {', '.join(missing)}")
            path = capability()
            record = add_machine(record, {
                "label": f"{path.lower()} ({machine['cpu_model']})", "machine": machine, "path": path,
                "date": dt.date.today().isoformat(), "commit": commit() or "unknown", "nhtlab": nhtlab.__version__,
                "chapters": verdicts(built)})
        else:
            wanted = [nb.stem for nb in build_book.chapters(args.only)]
            if len(load_records(native_dir, wanted)) < len(wanted):
                execute_book(args.only)
            other = ROOT / "_build" / "kernel-paths" / OTHER  # the second build's own folder
            if execute_book(args.only, env={**os.environ, "NHTLAB_BUILD_DIR": str(other), "ATEN_CPU_CAPABILITY": OTHER}):
                print(f"some chapters failed under ATEN_CPU_CAPABILITY={OTHER}: compared as recorded", flush=True)
            record = {
                "date": dt.date.today().isoformat(), "nhtlab": nhtlab.__version__, "profile": PROFILE, "machine": machine,
                "paths": {"native": capability(), "other": capability({"ATEN_CPU_CAPABILITY": OTHER})},
                "chapters": compare(load_records(native_dir, wanted), load_records(other / "executed" / PROFILE, wanted)),
            }
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    PAGE.write_text(render(json.loads(RECORD.read_text(encoding="utf-8"))), encoding="utf-8")
    print(PAGE.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
