"""Execute every chapter with papermill, then render the book with Jupyter Book 1.x.

    python tools/build_book.py --profile book      # what `make book` runs
    python tools/build_book.py --profile quick     # the tests' executions

Executed notebooks are cached under ``_build/executed/<profile>/``, keyed on the notebook, the
profile and nhtlab's source; Jupyter Book only renders (``execute_notebooks: off``) a staging copy
of the book holding the executed chapters.

``--jobs 2`` executes two chapters at a time, longest first by the last measured build
(:func:`expected_seconds`), so that the short ones fill the end. The chapters share runs through
the result cache, whose claims make a chapter wait for a run another is training: the order only
decides the time. Each kernel has one thread, and every training loop holds one of the machine's
CPU slots (``NHTLAB_CPU_SLOTS``): time-slicing more loops than cores costs time (``benchmarks/bench_slots.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmarks/_record: the machine's name and the build's record
BOOK = ROOT / "book"
if TYPE_CHECKING:
    from nhtlab.plumbing.ledger import LedgerSummary
# Moves the whole build elsewhere: tools/kernel_paths.py builds a second copy under another kernel path.
BUILD = Path(os.environ.get("NHTLAB_BUILD_DIR") or ROOT / "_build")
# The kernel renders charts offline, widgets as static stand-ins, and prints no progress: build log is no lesson.
BOOK_ENV = {"NHTLAB_BOOK": "1", "NHTLAB_PROGRESS": "none"}


def chapters(only: list[str] | None = None) -> list[Path]:
    """The chapters' .ipynb files in table-of-contents order (``only``: a subset of stems)."""
    toc = (ROOT / "_toc.yml").read_text()
    names = [line.split("file:")[1].strip() for line in toc.splitlines() if "file:" in line]
    paths = [ROOT / f"{name}.ipynb" for name in names]
    return [p for p in paths if p.exists() and (only is None or p.stem in only)]


def source_hash() -> str:
    """Hash of nhtlab's source: what a chapter's results depend on besides itself."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "nhtlab").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(notebook: Path, profile: str) -> str:
    digest = hashlib.sha256(notebook.read_bytes())
    digest.update(profile.encode())
    digest.update(source_hash().encode())
    return digest.hexdigest()[:16]


def run_papermill(notebook: Path, out: Path, profile: str, env: dict[str, str]) -> float:
    """Execute ``notebook`` into ``out`` in ``profile``, the kernel seeing ``env``; return seconds."""
    import papermill

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(notebook), str(out), parameters={"profile": profile}, cwd=str(notebook.parent),
            kernel_name="python3", progress_bar=False, request_save_on_cell_execute=False,
            # the kernel's own log is not the build's: an unencrypted-TCP warning per chapter, and an ERROR line
            # when the shutdown's interrupt finds it idle; a failing cell or a dead kernel is papermill's to raise
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    finally:  # only env's keys: a whole-environment restore would blank it for the progress thread a moment
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return time.perf_counter() - start


def children_cpu_seconds() -> float:
    """CPU seconds of this process's waited-for descendants.

    A chapter's pool workers belong to its kernel's fork server, which outlives the kernel:
    :func:`adopt_orphans` and :func:`reap_descendants` make them counted here too.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False elsewhere."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_descendants(timeout: float = 60.0) -> bool:
    """Wait until no child is left; False when some outlive ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # no child at all: everything this chapter started has been counted
            return True
        if pid == 0:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def read_stamp(executed: Path) -> tuple[str, float, float | None] | None:
    """An executed chapter's stamp: (cache key, wall seconds, CPU seconds or None for older stamps)."""
    stamp = executed.with_suffix(".key")
    parts = stamp.read_text().split() if stamp.exists() else []
    if len(parts) not in (2, 3):
        return None
    return parts[0], float(parts[1]), float(parts[2]) if len(parts) == 3 else None


def claims_summary(profile: str, only: list[str] | None = None) -> list[str]:
    """One line per executed chapter: how many of its claims held, how many readings it showed."""
    from findings_page import load_records

    lines, records = [], load_records(BUILD / "executed" / profile, [nb.stem for nb in chapters(only)])
    for nb in chapters(only):
        if nb.stem not in records:
            lines.append(f"  {nb.stem}: no claims recorded")
            continue
        checks = records[nb.stem]["checks"]
        claims = [c for c in checks if c["claim"]]
        shown = [c for c in checks if not c["claim"]]
        lines.append(f"  {nb.stem}: {sum(c['passed'] for c in claims)} of {len(claims)} claims held"
                     + (f"; {sum(c['passed'] for c in shown)} of {len(shown)} shown readings as the paper reads"
                        if shown else ""))
    return lines


def machine_line() -> str:
    """CPU model, torch's vector ISA and cores: lscpu names an AVX-512 and an AVX2 machine both "AMD EPYC"."""
    from _record import cpu_isa, cpu_model

    return f"{cpu_model()!r} ({cpu_isa()}, {os.cpu_count()} cores)"


def run_cache() -> Path:
    """The chapters' shared result cache: one per version of nhtlab's source, or ``NHTLAB_RUN_CACHE``.

    A warm override is safe: each entry's key holds the source of the code that computes its numbers.
    """
    override = os.environ.get("NHTLAB_RUN_CACHE")
    return Path(override) if override else BUILD / "run-cache" / source_hash()


def ledger_lines() -> list[dict]:
    """The trainings this build's result cache has recorded so far (:mod:`nhtlab.plumbing.ledger`)."""
    from nhtlab.plumbing.ledger import read_ledger

    return read_ledger(run_cache())


def execute(notebook: Path, profile: str, force: bool = False) -> tuple[Path, float, bool]:
    """Execute ``notebook`` in ``profile`` (cached): (output, seconds of the execution that made it, was_cached)."""
    out_dir = BUILD / "executed" / profile
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / notebook.name
    stamp = out.with_suffix(".key")
    key = cache_key(notebook, profile)
    recorded = read_stamp(out)
    if not force and out.exists() and recorded is not None and recorded[0] == key:
        return out, recorded[1], True
    stamp.unlink(missing_ok=True)
    claims = out.with_suffix(".claims.json")
    claims.unlink(missing_ok=True)
    from nhtlab.plumbing.ledger import CHAPTER_VARIABLE

    # the chapter's name tells the ledger which chapter trained each run
    env = {**BOOK_ENV, "NHTLAB_CACHE_DIR": str(run_cache()), "NHTLAB_CLAIMS_FILE": str(claims),
           CHAPTER_VARIABLE: notebook.stem}
    # Only a process of the build's own pool runs nothing else, so only it may adopt and wait for every descendant.
    adopted = multiprocessing.parent_process() is not None and adopt_orphans()
    cpu = children_cpu_seconds()
    seconds = run_papermill(notebook, out, profile, env)
    counted = adopted and reap_descendants()
    cpu = children_cpu_seconds() - cpu
    nb = json.loads(out.read_text())  # papermill's injected-parameters cell is no part of the page
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    out.write_text(json.dumps(nb, indent=1, ensure_ascii=False))
    stamp.write_text(f"{key} {seconds:.1f}" + (f" {cpu:.1f}" if counted else ""))
    return out, seconds, False


def execute_chapter(notebook: Path, profile: str, force: bool, threads: int | None = None,
                    keep_going: bool = False) -> tuple[float, bool]:
    """:func:`execute` in a build's pool (``threads``: one per kernel), printing its line: (seconds, cached);
    with ``keep_going`` a failed chapter gets seconds NaN instead of raising."""
    if threads is not None:
        # Parallel chapters: one BLAS/OpenMP thread per kernel, or the threads spin against each other.
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
        # Side by side, chapters and pools run more loops than cores: each loop holds a slot instead.
        os.environ.setdefault("NHTLAB_CPU_SLOTS", str(os.cpu_count() or 1))
    # the progress lines read it (execute_all)
    marker = running_marker(notebook.stem, profile)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(time.time()))
    try:
        out, seconds, cached = execute(notebook, profile, force)
    except Exception as err:  # papermill's execution error, re-raised unless keep_going
        if not keep_going:
            raise
        print(f"  {notebook.stem}: FAILED ({str(err).strip().splitlines()[-1][:200]})", flush=True)
        return float("nan"), False
    finally:
        marker.unlink(missing_ok=True)
    stamp = read_stamp(out)
    cpu = f", {stamp[2]:,.0f} CPU s" if stamp and stamp[2] is not None else ""
    print(f"  {notebook.stem}: {'cached' if cached else f'{seconds:.0f} s{cpu}'}", flush=True)
    return seconds, cached


def running_marker(stem: str, profile: str) -> Path:
    """The file that says chapter ``stem`` is executing in ``profile`` now."""
    return BUILD / "executed" / profile / f"{stem}.running"


def expected_seconds(profile: str, notebooks: list[Path]) -> tuple[dict[str, float], str]:
    """Each chapter's seconds in the last measured build of ``profile``, and where they come from.

    This folder's stamps where every chapter has one; else the newest ``build_book`` record, this
    machine's kind preferred; else none.
    """
    stamps = {nb.stem: stamp[1] for nb in notebooks
              if (stamp := read_stamp(BUILD / "executed" / profile / nb.name)) and math.isfinite(stamp[1])}
    if len(stamps) == len(notebooks):
        return stamps, "this build folder's last executions"
    import measurements_page

    # this checkout's kept build records of the profile, and this machine's
    records = measurements_page.build_records(measurements_page.load([ROOT / "benchmarks" / "results",
                                                                       BUILD / "measurements"]), profile)
    if not records:
        return {}, "no measured build"
    from _record import machine

    here = machine()
    same = lambda r: all(r["machine"].get(k) == here.get(k) for k in ("cpu_model", "cpu_isa", "cores"))  # noqa: E731
    newest = max(records, key=lambda r: (same(r), r["date"]))
    seconds = measurements_page.chapter_seconds(newest)
    where = "this machine's" if same(newest) else f"{newest['machine'].get('cpu_model')}'s"
    return seconds, f"{where} build of {newest['date'][:16]}"


def longest_first(notebooks: list[Path], seconds: dict[str, float]) -> list[Path]:
    """Longest expected first; a chapter never measured first (it may be the longest); ties in toc order."""
    order = {nb.stem: i for i, nb in enumerate(notebooks)}
    return sorted(notebooks, key=lambda nb: (-seconds.get(nb.stem, math.inf), order[nb.stem]))


class ChapterProgress:
    """Every ``every`` seconds, a plain line per running chapter: its seconds against the last build's,
    and the runs it has trained (the ledger); ``running()`` names the chapters running now."""

    def __init__(self, expected: dict[str, float], running, every: float = 60.0):
        import threading

        self.expected, self.running, self.every = expected, running, every
        self.started: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "ChapterProgress":
        self.base = len(ledger_lines())
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def lines(self, now: float) -> list[str]:
        trained = Counter(line.get("chapter", "") for line in ledger_lines()[self.base:])  # this build's only
        out = []
        for stem in self.running():
            elapsed = now - self.started.setdefault(stem, now)
            expected = self.expected.get(stem)
            out.append(f"  … {stem}: {elapsed:,.0f} s" + (f" of ~{expected:,.0f} s expected" if expected else "")
                       + f", {trained.get(stem, 0)} runs trained")
        return out

    def _loop(self) -> None:
        self.lines(time.time())  # each running chapter's start
        while not self.stop.wait(self.every):
            for line in self.lines(time.time()):
                print(line, flush=True)


def execute_all(profile: str, jobs: int = 1, force: bool = False, only: list[str] | None = None,
                keep_going: bool = False, order: list[Path] | None = None) -> dict[str, tuple[float, bool]]:
    """Execute every chapter, ``jobs`` at a time, handed out in ``order`` (default :func:`longest_first`).

    Returns ``stem → (seconds, cached)`` in toc order; a chapter failed under ``keep_going`` has NaN.
    """
    notebooks = chapters(only)
    expected = expected_seconds(profile, notebooks)[0]
    order = longest_first(notebooks, expected) if order is None else order
    for nb in order:  # a marker a killed build left behind is no running chapter
        running_marker(nb.stem, profile).unlink(missing_ok=True)
    # a chapter runs once its process has written its marker, so a task still queued in the pool is not shown
    with ChapterProgress(expected, lambda: [nb.stem for nb in order if running_marker(nb.stem, profile).exists()]):
        if jobs > 1:  # one chapter per task: a free process takes the next chapter in ``order``
            with ProcessPoolExecutor(max(1, min(jobs, len(order)))) as pool:
                futures = {nb.stem: pool.submit(execute_chapter, nb, profile, force, 1, keep_going) for nb in order}
                results = {stem: future.result() for stem, future in futures.items()}
        else:  # every chapter in this process, with torch's default threads
            results = {nb.stem: execute_chapter(nb, profile, force, keep_going=keep_going) for nb in order}
    return {nb.stem: results[nb.stem] for nb in notebooks}


def stage(profile: str, only: list[str] | None = None) -> Path:
    """Copy the book to ``_build/stage/<profile>`` with the executed chapters and the findings page."""
    target = BUILD / "stage" / profile
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", target / "_config.yml")
    notebooks = chapters(only)
    built = [nb.stem for nb in notebooks]
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    for part in toc["parts"]:  # chapters left out by --only leave the toc, and a part left empty goes with them
        part["chapters"] = [c for c in part["chapters"]
                            if not re.match(r"book/\d\d_", c["file"]) or c["file"].split("/")[1] in built]
    toc["parts"] = [part for part in toc["parts"] if part["chapters"]]
    (target / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    shutil.copytree(BOOK, target / "book",
                    ignore=shutil.ignore_patterns("*.ipynb", "*.py", "__pycache__", ".ipynb_checkpoints"))
    from vendor_js import vendor

    shutil.copytree(vendor(), target / "_static" / "vendor")
    for nb in notebooks:
        shutil.copy(BUILD / "executed" / profile / nb.name, target / "book" / nb.name)
    import findings_page

    records = findings_page.load_records(BUILD / "executed" / profile, built)
    (target / "book" / "findings.md").write_text(findings_page.render(records, profile), encoding="utf-8")
    return target


def render(profile: str, html_dir: Path | None = None, only: list[str] | None = None) -> Path:
    """Render the staged book to HTML; returns the html folder."""
    target = stage(profile, only)
    path = os.pathsep.join(filter(None, [str(ROOT / "tools"), os.environ.get("PYTHONPATH")]))
    subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(target), "--path-output",
                    str(target), "-q"], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": path})
    html_dir = html_dir or BUILD / "html"
    if html_dir.exists():
        shutil.rmtree(html_dir)
    shutil.copytree(target / "_build" / "html", html_dir)
    return html_dir


def look_at_pages(html: Path, screenshots: Path) -> list[str]:
    """Open every page in headless Chromium (tools/browser_check.py), screenshot it and print what a reader
    would see broken; returns the broken pages. Without Chromium, says so and checks nothing."""
    import browser_check

    if browser_check.find_chromium() is None:
        print("Pages not looked at: Chromium is not installed (apt-get install chromium); no screenshots.", flush=True)
        return []
    if screenshots.exists():
        shutil.rmtree(screenshots)
    reports = browser_check.check_book(html, screenshots=screenshots)
    browser_check.save_report(reports, screenshots)
    broken = [(Path(r.page).stem, found) for r in reports if (found := browser_check.problems(r))]
    for stem, found in broken:
        print(f"  {stem}: " + "; ".join(found[:5]) + (" …" if len(found) > 5 else ""), flush=True)
    print(f"Pages looked at in Chromium: {len(reports)}, {sum(r.tables for r in reports)} tables, "
          f"{sum(r.drawn for r in reports)} charts drawn; "
          f"{len(broken)} with a problem; screenshots in {screenshots}", flush=True)
    return [stem for stem, _ in broken]


def cpu_ticks(stat: str | os.PathLike = "/proc/stat") -> tuple[int, int] | None:
    """Machine-wide (busy, total) CPU ticks since boot from ``/proc/stat`` (None where it is missing).

    Integers, so differences are exact: busy equals total when every core was busy.
    """
    try:
        fields = Path(stat).read_text().splitlines()[0].split()
    except OSError:
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


#: The book's time budget (issue 59): `make book` in 12 minutes, install included, on a 2-core machine. The terms
#: are those of the clean-clone `book` build of d344624 (AMD EPYC, AVX-512), the first with chapter 05's
#: real-image runs. Each chapter's share is the median of its CPU seconds in those terms over three clean-clone
#: builds of the same runs (cf4486f, 9b3f170, e2a577a): d344624's own seconds, the first shares, sat below what
#: chapters 01, 02 and 07 cost in every build since, and failed e2a577a's unchanged chapters. A build converts its
#: own CPU seconds into those terms by the machines' speed: the torch.mm rate times the share of the floor their
#: training reached (REFERENCE_RATE and REFERENCE_EFFICIENCY, d344624's). The same EPYC trains up to a fifth
#: slower on some days while its torch.mm rate moves less, so the rate alone failed an unchanged book; the budget
#: counts work, not a machine's day. A chapter more than BUDGET_SLACK over its share fails the build there: a new
#: run must fit in the budget or replace one. Another CPU kind is shown its figures, not held to them: kinds differ
#: in what share of their torch.mm rate the CNNs reach (27% against 64% of the floor, issue 59), which no
#: conversion follows.
BUDGET_MINUTES = 12
CHAPTER_BUDGET = {"01_grokking": 125, "02_regimes": 194, "03_delay_law": 419, "04_dlr": 245, "05_layerwise": 926,
                  "06_shortcuts": 563, "07_emergence": 192, "08_own_model": 150, "08_evidence": 7}
#: Chapters that share runs through the result cache: whichever executes a shared run first pays for it (03 and 05
#: traded 300 CPU s between builds), so each pool is held to the sum of its shares
BUDGET_POOLS = (("03_delay_law", "05_layerwise", "06_shortcuts"),)
BUDGET_SLACK = 1.25
MIN_SHARE = 20.0  #: CPU seconds: a kernel's start and imports vary by this much, so no share is held below it
RATE_SHAPES = {(1, 512, 128, 512): 1, (1, 512, 512, 128): 1}  # the companion's largest matmuls
REFERENCE_RATE = 93.0  #: GFLOP per CPU second of torch.mm on RATE_SHAPES, one thread, at the end of that build
REFERENCE_EFFICIENCY = 0.425  #: that build's training floor over its training CPU (ModularRun 39%, ShortcutRun 51%)
BUDGET_MACHINE = {"cpu_model": "AMD EPYC", "cpu_isa": "AVX512"}  # where the shares were measured and are held


def budget_check(cpu: dict[str, float], rate: float, efficiency: float, budget: dict[str, float] | None = None,
                 pools: tuple[tuple[str, ...], ...] = BUDGET_POOLS, slack: float = BUDGET_SLACK,
                 reference: tuple[float, float] = (REFERENCE_RATE, REFERENCE_EFFICIENCY)) -> tuple[list[str], list[str]]:
    """Each executed chapter's CPU seconds in the budget build's (× this machine's torch.mm ``rate`` × the share of
    the floor its training reached, ``efficiency``, over the same two of the budget's build) against its share:
    the lines to print, and the chapters (or pools) over ``slack`` × their share, or with none."""
    budget = CHAPTER_BUDGET if budget is None else budget
    if not (rate > 0 and efficiency > 0):
        raise ValueError(f"rate and efficiency must be positive, got {rate!r} and {efficiency!r}")
    speed = rate * efficiency / (reference[0] * reference[1])
    scaled = {stem: seconds * speed for stem, seconds in cpu.items()}
    pooled = {stem for pool in pools for stem in pool}
    held = {stem: (cost, max(budget[stem], MIN_SHARE)) for stem, cost in scaled.items()
            if stem in budget and stem not in pooled}
    held |= {" + ".join(p[:2] for p in pool): (sum(scaled.get(stem, 0.0) for stem in pool),
                                                sum(budget[stem] for stem in pool if stem in scaled))
             for pool in pools if any(stem in scaled for stem in pool)}
    over = [stem for stem in scaled if stem not in budget] + [name for name, (cost, share) in held.items()
                                                                if cost > slack * share]
    cores_s = BUDGET_MINUTES * 60 * 2
    lines = [f"The book's budget: {BUDGET_MINUTES} min for `make book` on 2 cores ({cores_s:,} CPU s); each chapter's "
             f"CPU seconds in the budget build's (× {speed:.2f}: torch.mm {rate:.0f} GFLOP/s and training at "
             f"{efficiency:.0%} of the floor here, {reference[0]:.0f} and {reference[1]:.0%} there) against its share, "
             f"failing above ×{slack:g}:",
             "  " + ", ".join(f"{stem[:2]} {cost:,.0f} of {budget[stem]:,.0f}" if stem in budget
                              else f"{stem} {cost:,.0f} of no share" for stem, cost in scaled.items()),
             *(f"  pooled (they share runs): {name} {cost:,.0f} of {share:,.0f}"
               for name, (cost, share) in held.items() if "+" in name),
             f"  all chapters: {sum(scaled.values()):,.0f} of {sum(budget.values()):,.0f} shared out; the "
             f"{BUDGET_MINUTES}-minute book needs {cores_s:,} at most, install and HTML included"]
    return lines, over


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="book", choices=["quick", "book", "full"])
    parser.add_argument("--jobs", type=int, default=1, help="chapters executed at a time, longest first")
    parser.add_argument("--force", action="store_true", help="re-execute even when cached")
    parser.add_argument("--only", nargs="*", default=None, help="chapter stems to build (default: all)")
    parser.add_argument("--no-html", action="store_true", help="execute the chapters only (tools/kernel_paths.py)")
    parser.add_argument("--keep-going", action="store_true",
                        help="execute every chapter even when one fails; exit 1 at the end naming them")
    args = parser.parse_args()
    start = time.perf_counter()
    notebooks = chapters(args.only)
    seconds, source = expected_seconds(args.profile, notebooks)
    order = longest_first(notebooks, seconds)
    print(f"Executing {len(notebooks)} chapters in profile {args.profile!r} on {machine_line()}, "
          f"{args.jobs} at a time…", flush=True)
    print(f"  longest first, by {source}: " + (", ".join(nb.stem[:2] for nb in order) if seconds
                                                 else "none, so in the table of contents' order"), flush=True)
    cold = not any(run_cache().glob("*/*.json"))  # no finished run to read: the build trains everything it needs
    ledger_start = len(ledger_lines())
    cpu_start = cpu_ticks()
    results = execute_all(args.profile, jobs=args.jobs, force=args.force, only=args.only,
                          keep_going=args.keep_going, order=order)
    failed = [stem for stem, (seconds, _) in results.items() if math.isnan(seconds)]
    executed = time.perf_counter()
    cpu_end = cpu_ticks()
    busy_seconds = share = None
    if cpu_start is not None and cpu_end is not None:
        busy, total = (b - a for a, b in zip(cpu_start, cpu_end))
        busy_seconds, share = busy / os.sysconf("SC_CLK_TCK"), busy / max(total, 1)
        print(f"Chapters: {busy_seconds:,.0f} busy core-seconds in {executed - start:,.0f} s, "
              f"{share:.0%} of the machine's {os.cpu_count()} cores", flush=True)
    stamps = {nb.stem: read_stamp(BUILD / "executed" / args.profile / nb.name) for nb in notebooks}
    # the CPU seconds of each chapter executed (not read from the cache) in this build
    cpu = {stem: s[2] for stem, s in stamps.items() if not results[stem][1] and s is not None and s[2] is not None}
    from nhtlab.plumbing.floor import efficiency, efficiency_lines, floors
    from nhtlab.plumbing.ledger import summarise

    built = ledger_lines()[ledger_start:]  # the quick profile's test executions share the folder
    trained = summarise(built)
    counted = time.perf_counter()
    # Σ steps × the step's floor (its FLOPs counted once per shape and kept) over the training CPU seconds
    kinds = efficiency(built, floors(built, BUILD / "step-flops" / source_hash()))
    counted = time.perf_counter() - counted
    if cpu:
        print(*cpu_lines(cpu, trained.by_chapter), sep="\n", flush=True)
    print("Closing checks (nhtlab.book.closing_checks):", *claims_summary(args.profile, args.only), sep="\n", flush=True)
    print("This build's training (the result cache's ledger):", *trained.lines(), sep="\n", flush=True)
    print(f"Its training against the step's floor (matmul FLOPs at torch.mm's rate, nhtlab.plumbing.floor; "
          f"counted and timed in {counted:.1f} s):", *efficiency_lines(kinds), sep="\n", flush=True)
    if failed:
        sys.exit(f"Chapters that failed: {', '.join(failed)}")
    if args.profile == "book" and args.only is None and cold and cpu:  # a whole build's cost: every chapter trains its own
        from nhtlab.plumbing.floor import matmul_rate

        from _record import cpu_isa, cpu_model

        trained_cpu = sum(t["cpu_s"] for t in kinds.values())
        efficiency_here = sum(t["floor_s"] for t in kinds.values()) / trained_cpu if trained_cpu else REFERENCE_EFFICIENCY
        lines, over = budget_check(cpu, matmul_rate(RATE_SHAPES), efficiency_here)
        print(*lines, sep="\n", flush=True)
        if {"cpu_model": cpu_model(), "cpu_isa": cpu_isa()} != BUDGET_MACHINE:
            print(f"  shown, not held: the shares were measured on {BUDGET_MACHINE['cpu_model']} "
                  f"({BUDGET_MACHINE['cpu_isa']})", flush=True)
        elif over:
            sys.exit(f"Chapters over their share of the book's budget (×{BUDGET_SLACK:g}, CHAPTER_BUDGET): "
                     + ", ".join(over))
    if args.no_html:
        return
    html = render(args.profile, only=args.only)
    done = time.perf_counter()  # one reading, so that the total is the sum of its two parts
    print(f"Book written to {html / 'index.html'} in {done - start:.0f} s "
          f"(chapters {executed - start:.0f} s, HTML {done - executed:.0f} s)", flush=True)
    broken = look_at_pages(html, BUILD / "screenshots")
    # A whole build of every chapter on a cold result cache measures the book's cost (`make measurements`).
    if args.only is None and cold and not any(cached for _, cached in results.values()):
        print("  recorded:", record_build(args.profile, args.jobs, results, executed - start, done - executed,
                                          busy_seconds, share, trained, cpu, kinds), flush=True)
    if broken:
        sys.exit(f"Pages a reader would see broken: {', '.join(broken)} (_build/screenshots/report.json)")


def cpu_lines(cpu: dict[str, float], trained: dict[str, float]) -> list[str]:
    """Each chapter's CPU seconds, longest first, and where the ledger knows (``trained``: chapter → CPU s),
    the part spent training runs into the result cache against the rest."""
    order = sorted(cpu, key=lambda stem: -cpu[stem])
    lines = [f"Each chapter's own CPU seconds (its kernel and workers; {sum(cpu.values()):,.0f} in all): "
             + ", ".join(f"{stem[:2]} {cpu[stem]:,.0f}" for stem in order)]
    if trained:
        cached = {stem: trained.get(stem, 0.0) for stem in order}
        lines.append(f"  of which training runs into the result cache ({sum(cached.values()):,.0f}): "
                     + ", ".join(f"{stem[:2]} {cached[stem]:,.0f}" for stem in order))
        lines.append(f"  the rest: own loops, analysis, charts, kernel ({sum(cpu[s] - cached[s] for s in order):,.0f}): "
                     + ", ".join(f"{stem[:2]} {cpu[stem] - cached[stem]:,.0f}" for stem in order))
    return lines


def record_build(profile: str, jobs: int, results: dict[str, tuple[float, bool]], chapters_s: float, html_s: float,
                 busy_seconds: float | None, share: float | None, trained: "LedgerSummary",
                 cpu: dict[str, float] | None = None, efficiency: dict[str, dict[str, float]] | None = None) -> Path:
    """Write the build's measurements record (``benchmarks/_record``): chapters' wall and CPU seconds, the
    whole build, the cores' busy time, what the ledger says was trained, and each kind's share of the floor."""
    from _record import record

    cpu = cpu or {}
    rows = [(f"chapter {stem}", round(seconds, 1), "s wall") for stem, (seconds, _) in results.items()]
    rows += [(f"CPU of chapter {stem}", round(value), "CPU s (its kernel and workers)") for stem, value in cpu.items()]
    rows += [(f"training CPU of chapter {stem}", round(trained.by_chapter.get(stem, 0.0)),
              "CPU s (its runs trained into the result cache)") for stem in cpu if trained.by_chapter]
    rows += [("chapters", round(chapters_s, 1), f"s wall ({jobs} at a time)"), ("HTML", round(html_s, 1), "s wall"),
             ("whole build (install apart)", round(chapters_s + html_s, 1), "s wall")]
    if busy_seconds is not None:
        rows += [("busy core-seconds (chapters)", round(busy_seconds), "core-s"),
                 ("share of the cores busy", round(share, 3), "share")]
    rows += [("runs trained", trained.trainings, "runs"), ("runs trained more than once", len(trained.twice), "runs")]
    for kind, totals in trained.by_kind.items():
        rows += [(f"{kind}: steps trained", int(totals["steps"]), "steps"),
                 (f"{kind}: training CPU", round(totals["cpu_s"]), "CPU s")]
    for kind, totals in (efficiency or {}).items():  # the page's efficiency table reads these (EFFICIENCY_ROWS)
        rows += [(f"{kind}: steps with a floor", int(totals["steps"]), "steps"),
                 (f"{kind}: their training CPU", round(totals["cpu_s"], 1), "CPU s"),
                 (f"{kind}: their floor", round(totals["floor_s"], 1), "s (matmul FLOPs at torch.mm's rate)"),
                 (f"{kind}: efficiency", round(totals["share"], 3), "floor / training CPU")]
    return record("build_book", [{"what": what, "value": value, "unit": unit} for what, value, unit in rows],
                  settings={"profile": profile, "chapters at a time": jobs, "order": "longest first",
                            "result cache": "cold"},
                  note="`make book` from a clean clone's state (every chapter executed, cold result cache): each "
                       "chapter's wall time in its process, and what the chapters trained (the cache's ledger).")


if __name__ == "__main__":
    main()
