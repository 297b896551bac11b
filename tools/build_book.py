"""Execute every chapter with papermill, then render the book with Jupyter Book 1.x.

    python tools/build_book.py --profile book      # what `make book` runs
    python tools/build_book.py --profile quick     # the tests' executions

Executed notebooks are cached under ``_build/executed/<profile>/``, keyed on the
notebook's own content, the profile and a hash of nhtlab's source, so a chapter
is re-run only when something it depends on changed. Jupyter Book never
executes anything itself (``execute_notebooks: off``): it renders a staging copy
of the book in which each chapter is replaced by its executed version.

``make book`` executes two chapters at a time (``--jobs 2``), **longest first**: the
chapters are queued by the seconds each took in the last measured build
(:func:`expected_seconds`), and whichever of the two kernels is free takes the next,
so the short ones fill the end instead of one long chapter running alone.
The chapters share runs through the result cache, and a run one chapter is
training is claimed (``ResultCache.claim``): a chapter running beside it that
reaches it waits and reads it, so no run is trained twice whatever the order
(the runs chapter 4 reads through a DLR probe are trained with it by whichever
chapter comes first, ``nhtlab.book.shared_probe``). The order is therefore chosen for time only.
Each chapter's kernel has one thread; a chapter's own sweep still starts its pool
of workers, so the cores stay busy while the other chapter analyses, draws or
trains in its kernel. Every training loop then holds one of the machine's CPU
slots (``NHTLAB_CPU_SLOTS``, :mod:`nhtlab.plumbing.cpu_slots`): never more loops
compute than there are cores, which time-slicing would slow by ~8%.
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
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmarks/_record: the machine's name and the build's record
BOOK = ROOT / "book"
if TYPE_CHECKING:
    from nhtlab.plumbing.ledger import LedgerSummary
# NHTLAB_BUILD_DIR moves the whole build (executed chapters, their run cache, the HTML) elsewhere:
# tools/kernel_paths.py builds a second copy of the book under another kernel path that way.
BUILD = Path(os.environ.get("NHTLAB_BUILD_DIR") or ROOT / "_build")
# What the kernel sees while a chapter is executed for the book: offline chart
# renderer and static stand-ins for widgets (NHTLAB_BOOK), and no progress output
# (NHTLAB_PROGRESS): a widget box, a bar or a "runs in N s" line is build log, not lesson.
BOOK_ENV = {"NHTLAB_BOOK": "1", "NHTLAB_PROGRESS": "none"}


def chapters(only: list[str] | None = None) -> list[Path]:
    """The chapters' .ipynb files, in table-of-contents order (``only``: a subset of stems)."""
    toc = (ROOT / "_toc.yml").read_text()
    names = [line.split("file:")[1].strip() for line in toc.splitlines() if "file:" in line]
    paths = [ROOT / f"{name}.ipynb" for name in names]
    return [p for p in paths if p.exists() and (only is None or p.stem in only)]


def source_hash() -> str:
    """Hash of nhtlab's source files (what a chapter's results depend on besides itself)."""
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


def hide_injected_parameters(path: Path) -> None:
    """Tag papermill's injected-parameters cell ``remove-cell`` so the page stays clean."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False))


def run_papermill(notebook: Path, out: Path, profile: str, env: dict[str, str]) -> float:
    """Execute ``notebook`` into ``out`` with papermill in ``profile``, the kernel seeing ``env``; return seconds."""
    import papermill

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(notebook), str(out), parameters={"profile": profile}, cwd=str(notebook.parent),
            kernel_name="python3", progress_bar=False, request_save_on_cell_execute=False,
            # the kernel's own log (its "running over TCP without encryption" warning, once per chapter) is
            # not the build's: errors only
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return time.perf_counter() - start


def children_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's finished, waited-for children and their own children.

    Papermill's kernel is such a child. A chapter's pool workers are not the kernel's children but its
    fork server's, which outlives the kernel by a moment; :func:`adopt_orphans` and
    :func:`reap_descendants` make them ours too, so the difference around one execution is everything
    that chapter computed, whichever core it ran on and whatever ran beside it.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux's child subreaper); False elsewhere."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_descendants(timeout: float = 60.0) -> bool:
    """Wait until this process has no child left (a kernel's fork server and workers, adopted when the kernel
    ended, exit within about a second of it); False when some outlive ``timeout`` seconds."""
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


def claims_file(executed: Path) -> Path:
    """Where an executed chapter's closing checks are recorded (JSON, :func:`nhtlab.book.closing_checks`)."""
    return executed.with_suffix(".claims.json")


def claims_summary(profile: str, only: list[str] | None = None) -> list[str]:
    """One line per executed chapter: how many of its claims held, how many readings it showed."""
    lines = []
    for nb in chapters(only):
        path = claims_file(BUILD / "executed" / profile / nb.name)
        if not path.exists():
            lines.append(f"  {nb.stem}: no claims recorded")
            continue
        checks = json.loads(path.read_text())["checks"]
        claims = [c for c in checks if c["claim"]]
        shown = [c for c in checks if not c["claim"]]
        lines.append(f"  {nb.stem}: {sum(c['passed'] for c in claims)} of {len(claims)} claims held"
                     + (f"; {sum(c['passed'] for c in shown)} of {len(shown)} shown readings as the paper reads"
                        if shown else ""))
    return lines


def cpu_model() -> str:
    """The machine's CPU model as ``lscpu`` names it (``/proc/cpuinfo`` where there is no lscpu): ``_record``'s."""
    from _record import cpu_model as model

    return model()


def machine_line() -> str:
    """The CPU model, torch's vector ISA and the core count: what a build's timings belong to.

    ``lscpu`` names a 2-core AVX-512 and a 2-core AVX2 machine both "AMD EPYC", whose builds' CPU differed
    (1.15× and 1.82× in two AVX2 builds an hour apart): the ISA tells them apart.
    """
    from _record import cpu_isa

    return f"{cpu_model()!r} ({cpu_isa() or 'vector ISA unknown'}, {os.cpu_count()} cores)"


def run_cache() -> Path:
    """The result cache the chapters of this build share: one per version of nhtlab's source, or the folder
    ``NHTLAB_RUN_CACHE`` names. A developer re-executing chapters after an edit of text or tables reuses a
    warm one that way: each entry's key still holds the source of the code that computes a run's numbers
    (:func:`nhtlab.training.cache_key.config_key`), so no run of other numerics is read; an edit of the
    book's DLR probes (stored with the runs) needs the per-version folder."""
    override = os.environ.get("NHTLAB_RUN_CACHE")
    return Path(override) if override else BUILD / "run-cache" / source_hash()


def ledger_lines() -> list[dict]:
    """The trainings this build's result cache has recorded so far (:mod:`nhtlab.plumbing.ledger`)."""
    from nhtlab.plumbing.ledger import read_ledger

    return read_ledger(run_cache())


def ledger_summary(since: int = 0) -> "LedgerSummary":
    """What the chapters trained into this build's result cache after its first ``since`` ledger lines
    (the quick profile's test executions share the folder)."""
    from nhtlab.plumbing.ledger import summarise

    return summarise(ledger_lines()[since:])


def build_efficiency(lines: list[dict]) -> dict[str, dict[str, float]]:
    """Per run kind, Σ steps × floor per step / training CPU seconds over the ledger ``lines``
    (:func:`nhtlab.plumbing.floor.efficiency`): the step's FLOPs counted once per shape (kept under
    ``<build>/step-flops/<source hash>``), the torch.mm rate timed here, once, on one thread."""
    from nhtlab.plumbing.floor import efficiency, floors

    return efficiency(lines, floors(lines, BUILD / "step-flops" / source_hash()))


def execute(notebook: Path, profile: str, force: bool = False) -> tuple[Path, float, bool]:
    """Execute ``notebook`` in ``profile`` (cached). Returns (output, seconds, was_cached).

    ``seconds`` is the time of the execution that produced the output, also on a cache hit.
    """
    out_dir = BUILD / "executed" / profile
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / notebook.name
    stamp = out.with_suffix(".key")
    key = cache_key(notebook, profile)
    recorded = read_stamp(out)
    if not force and out.exists() and recorded is not None and recorded[0] == key:
        # A cached chapter reports the seconds its execution took, so timing checks see real work.
        return out, recorded[1], True
    stamp.unlink(missing_ok=True)
    claims = claims_file(out)
    claims.unlink(missing_ok=True)
    # Finished runs are cached per version of nhtlab's source, so an edit never reuses stale results.
    # The chapter's closing checks write what held to its claims file (nhtlab.book.closing_checks).
    # The chapter's name: the ledger says which chapter's process trained each run (nhtlab.plumbing.ledger).
    from nhtlab.plumbing.ledger import CHAPTER_VARIABLE

    env = {**BOOK_ENV, "NHTLAB_CACHE_DIR": str(run_cache()), "NHTLAB_CLAIMS_FILE": str(claims),
           CHAPTER_VARIABLE: notebook.stem}
    # Only in a process of the build's own pool: one that runs nothing else, so that it may adopt and wait for
    # every descendant (the main process or a test's may have children of its own to wait for).
    adopted = multiprocessing.parent_process() is not None and adopt_orphans()
    cpu = children_cpu_seconds()
    seconds = run_papermill(notebook, out, profile, env)
    # The kernel and, adopted once it ended, its fork server and workers; not measured where they cannot be reaped.
    counted = adopted and reap_descendants()
    cpu = children_cpu_seconds() - cpu
    hide_injected_parameters(out)
    stamp.write_text(f"{key} {seconds:.1f}" + (f" {cpu:.1f}" if counted else ""))
    return out, seconds, False


def _execute_one(args: tuple[str, str, bool], threads: int | None = None) -> tuple[str, float, bool]:
    if threads is not None:
        # Parallel chapters: one BLAS/OpenMP thread per kernel, or the threads spin against each other.
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
        # Side by side, chapters and their pools would run more training loops than there are cores;
        # each loop holds one of the machine's slots instead (nhtlab.plumbing.cpu_slots; ~8% faster).
        os.environ.setdefault("NHTLAB_CPU_SLOTS", str(os.cpu_count() or 1))
    # a marker the build's progress lines read: this chapter runs now (a pool marks a queued task "running")
    marker = running_marker(Path(args[0]).stem, args[1])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(time.time()))
    try:
        out, seconds, cached = execute(Path(args[0]), args[1], args[2])
    finally:
        marker.unlink(missing_ok=True)
    return str(out), seconds, cached


def running_marker(stem: str, profile: str) -> Path:
    """The file that says chapter ``stem`` is executing in ``profile`` now, holding its start time."""
    return BUILD / "executed" / profile / f"{stem}.running"


def _execute_chapters(todo: list[tuple[str, str, bool]], threads: int | None = 1,
                  keep_going: bool = False) -> list[tuple[str, float, bool]]:
    """Execute chapters one after another (in a pool process: one thread per kernel).

    With ``keep_going`` a chapter that fails (a closing check that did not hold) is reported with
    seconds NaN and the next one runs: its claims file still records what held and what did not.
    """
    done = []
    for item in todo:
        try:
            out, seconds, cached = _execute_one(item, threads=threads)
        except Exception as err:  # papermill's execution error, re-raised unless keep_going
            if not keep_going:
                raise
            print(f"  {Path(item[0]).stem}: FAILED ({str(err).strip().splitlines()[-1][:200]})", flush=True)
            done.append((str(item[0]), float("nan"), False))
            continue
        done.append((out, seconds, cached))
        stamp = read_stamp(Path(out))
        cpu = f", {stamp[2]:,.0f} CPU s" if stamp and stamp[2] is not None else ""
        print(f"  {Path(item[0]).stem}: {'cached' if cached else f'{seconds:.0f} s{cpu}'}", flush=True)
    return done


def _build_records(profile: str) -> list[dict]:
    """The ``build_book`` measurements records of ``profile``: this checkout's kept ones and this machine's."""
    found = []
    for folder in (ROOT / "benchmarks" / "results", BUILD / "measurements"):
        for path in sorted(folder.glob("build_book-*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if data.get("settings", {}).get("profile") == profile:
                found.append(data)
    return found


def expected_seconds(profile: str, notebooks: list[Path]) -> tuple[dict[str, float], str]:
    """Each chapter's seconds in the last measured build of ``profile``, and where they come from.

    This build folder's own stamps (the seconds of each chapter's last execution here) where every
    chapter has one; else the newest ``build_book`` record of the profile, this machine's kind
    (CPU model, vector ISA, cores) preferred; else none (``{}``, and the chapters keep their order).
    """
    stamps = {}
    for nb in notebooks:
        stamp = read_stamp(BUILD / "executed" / profile / nb.name)
        if stamp is not None and math.isfinite(stamp[1]):
            stamps[nb.stem] = stamp[1]
    if len(stamps) == len(notebooks):
        return stamps, "this build folder's last executions"
    records = _build_records(profile)
    if not records:
        return {}, "no measured build"
    from _record import machine

    here = machine()
    same = lambda r: all(r["machine"].get(k) == here.get(k) for k in ("cpu_model", "cpu_isa", "cores"))  # noqa: E731
    newest = max(records, key=lambda r: (same(r), r["date"]))
    seconds = {row["what"].removeprefix("chapter "): float(row["value"]) for row in newest["results"]
               if row["what"].startswith("chapter ")}
    where = "this machine's" if same(newest) else f"{newest['machine'].get('cpu_model')}'s"
    return seconds, f"{where} build of {newest['date'][:16]}"


def longest_first(notebooks: list[Path], seconds: dict[str, float]) -> list[Path]:
    """``notebooks`` by expected ``seconds``, longest first; a chapter never measured goes first
    (it may be the longest), ties keep the table of contents' order."""
    order = {nb.stem: i for i, nb in enumerate(notebooks)}
    return sorted(notebooks, key=lambda nb: (-seconds.get(nb.stem, math.inf), order[nb.stem]))


class ChapterProgress:
    """A line per running chapter every ``every`` seconds while the build executes: the seconds it has run
    against the seconds it took in the last measured build (:func:`expected_seconds`), and the runs it has
    trained so far in this build (its lines in the result cache's ledger). Plain lines, so that a CI log and
    a terminal read the same; ``running()`` says which chapters run now."""

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
        """The status of each running chapter at ``now`` (``time.time()``)."""
        trained: dict[str, int] = {}
        for line in ledger_lines()[self.base:]:  # this build's trainings only
            trained[line.get("chapter", "")] = trained.get(line.get("chapter", ""), 0) + 1
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
    """Execute every chapter; ``jobs`` > 1 runs that many chapters at a time in parallel processes.

    The chapters are handed out in ``order`` (default: :func:`longest_first` by
    :func:`expected_seconds`), each to whichever process is free. Returns ``stem → (seconds,
    cached)`` in the table of contents' order; a chapter that failed under ``keep_going`` has
    seconds NaN.
    """
    notebooks = chapters(only)
    expected = expected_seconds(profile, notebooks)[0]
    if order is None:
        order = longest_first(notebooks, expected)
    results: dict[str, tuple[float, bool]] = {}
    if jobs > 1:
        # One chapter per task: a free process takes the next chapter in ``order`` (tasks start in the order given).
        with ProcessPoolExecutor(max(1, min(jobs, len(order)))) as pool:
            futures = {nb.stem: pool.submit(_execute_chapters, [(str(nb), profile, force)], 1, keep_going) for nb in order}
            # a chapter runs when its worker has written its marker (a queued task already counts as running)
            with ChapterProgress(expected, lambda: [stem for stem, f in futures.items()
                                                    if f.running() and running_marker(stem, profile).exists()]):
                for stem, future in futures.items():
                    (_, seconds, cached), = future.result()
                    results[stem] = (seconds, cached)
    else:  # every chapter in this process, with torch's default threads
        current: list[str] = []
        with ChapterProgress(expected, lambda: list(current)):
            for nb in order:
                current[:] = [nb.stem]
                (_, seconds, cached), = _execute_chapters([(str(nb), profile, force)], threads=None, keep_going=keep_going)
                results[nb.stem] = (seconds, cached)
    return {nb.stem: results[nb.stem] for nb in notebooks}


def stage(profile: str, only: list[str] | None = None) -> Path:
    """Copy the book's sources to ``_build/stage/<profile>`` with executed chapters in place, and the
    findings page written from their closing checks (``tools/findings_page.py``)."""
    target = BUILD / "stage" / profile
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", target / "_config.yml")
    built = {nb.stem for nb in chapters(only)}
    toc = [line for line in (ROOT / "_toc.yml").read_text().splitlines()
           if not re.search(r"file: book/\d\d_", line) or line.split("book/")[1].strip() in built]
    (target / "_toc.yml").write_text("\n".join(toc) + "\n")
    shutil.copytree(BOOK, target / "book", ignore=shutil.ignore_patterns("*.ipynb", "*.py", "__pycache__", ".ipynb_checkpoints"))
    from vendor_js import vendor

    shutil.copytree(vendor(), target / "_static" / "vendor")
    for nb in chapters(only):
        executed = BUILD / "executed" / profile / nb.name
        shutil.copy(executed, target / "book" / nb.name)
    import findings_page

    records = findings_page.load_records(BUILD / "executed" / profile, [nb.stem for nb in chapters(only)])
    (target / "book" / "findings.md").write_text(findings_page.render(records, profile), encoding="utf-8")
    return target


def render(profile: str, html_dir: Path | None = None, only: list[str] | None = None) -> Path:
    """Render the staged book to HTML; returns the html folder."""
    target = stage(profile, only)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tools"), os.environ.get("PYTHONPATH")]))}
    subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(target), "--path-output", str(target), "-q"],
                   check=True, cwd=ROOT, env=env)
    built = target / "_build" / "html"
    html_dir = html_dir or BUILD / "html"
    if html_dir.exists():
        shutil.rmtree(html_dir)
    shutil.copytree(built, html_dir)
    return html_dir


def look_at_pages(html: Path, screenshots: Path) -> list[str]:
    """Open every built page in headless Chromium, offline (tools/browser_check.py): save a full-page
    screenshot of each under ``screenshots`` for whoever reviews a change, and print what a reader
    would see broken (Markdown shown as text, an empty table, a chart without marks, a console
    error). Returns the broken pages' names; without Chromium, says so and checks nothing."""
    import browser_check

    if browser_check.find_chromium() is None:
        print("Pages not looked at: Chromium is not installed (apt-get install chromium); no screenshots.", flush=True)
        return []
    if screenshots.exists():
        shutil.rmtree(screenshots)
    reports = browser_check.check_book(html, screenshots=screenshots)
    browser_check.save_report(reports, screenshots)
    broken = []
    for report in reports:
        found = browser_check.problems(report)
        if found:
            broken.append(Path(report.page).stem)
            print(f"  {Path(report.page).stem}: " + "; ".join(found[:5]) + (" …" if len(found) > 5 else ""), flush=True)
    tables = sum(r.tables for r in reports)
    print(f"Pages looked at in Chromium: {len(reports)}, {tables} tables, {sum(r.drawn for r in reports)} charts drawn; "
          f"{len(broken)} with a problem; screenshots in {screenshots}", flush=True)
    return broken


def cpu_ticks(stat: str | os.PathLike = "/proc/stat") -> tuple[int, int] | None:
    """Machine-wide (busy, total) CPU clock ticks since boot, summed over cores, from ``stat``'s first line
    (``/proc/stat``: Linux; None where it is missing; ``os.sysconf("SC_CLK_TCK")`` ticks per second). Kept as
    integers so that differences are exact: busy equals total when every core was busy. The build prints how
    much of the cores its chapters kept busy: near 100%, its time is its work divided by the cores, and only
    less work or faster cores shorten it."""
    try:
        fields = Path(stat).read_text().splitlines()[0].split()
    except OSError:
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="book", choices=["quick", "book", "full"])
    parser.add_argument("--jobs", type=int, default=1, help="chapters executed at a time, longest first")
    parser.add_argument("--force", action="store_true", help="re-execute even when cached")
    parser.add_argument("--html", type=Path, default=None, help="output folder (default _build/html)")
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
    cpu = chapter_cpu(args.profile, notebooks, results)
    trained = ledger_summary(since=ledger_start)
    counted = time.perf_counter()
    efficiency = build_efficiency(ledger_lines()[ledger_start:])
    counted = time.perf_counter() - counted
    if cpu:
        print(*cpu_lines(cpu, trained.by_chapter), sep="\n", flush=True)
    print("Closing checks (nhtlab.book.closing_checks):", *claims_summary(args.profile, args.only), sep="\n", flush=True)
    print("This build's training (the result cache's ledger):", *trained.lines(), sep="\n", flush=True)
    from nhtlab.plumbing.floor import efficiency_lines

    print(f"Its training against the step's floor (matmul FLOPs at torch.mm's rate, nhtlab.plumbing.floor; "
          f"counted and timed in {counted:.1f} s):",
          *efficiency_lines(efficiency), sep="\n", flush=True)
    if failed:
        sys.exit(f"Chapters that failed: {', '.join(failed)}")
    if args.no_html:
        return
    html = render(args.profile, args.html, args.only)
    done = time.perf_counter()  # one reading, so that the total is the sum of its two parts
    print(f"Book written to {html / 'index.html'} in {done - start:.0f} s "
          f"(chapters {executed - start:.0f} s, HTML {done - executed:.0f} s)", flush=True)
    broken = look_at_pages(html, BUILD / "screenshots")
    # A whole build that executed every chapter on a cold result cache is a measurement of the book's cost:
    # recorded for the measurements page (`make measurements`; kept ones go to benchmarks/results).
    if args.only is None and cold and not any(cached for _, cached in results.values()):
        print("  recorded:", record_build(args.profile, args.jobs, results, executed - start, done - executed,
                                          busy_seconds, share, trained, cpu, efficiency), flush=True)
    if broken:
        sys.exit(f"Pages a reader would see broken: {', '.join(broken)} (_build/screenshots/report.json)")


def chapter_cpu(profile: str, notebooks: list[Path], results: dict[str, tuple[float, bool]]) -> dict[str, float]:
    """The CPU seconds of each chapter executed in this build (from its stamp; cached or older stamps: none)."""
    cpu = {}
    for nb in notebooks:
        stamp = read_stamp(BUILD / "executed" / profile / nb.name)
        if nb.stem in results and not results[nb.stem][1] and stamp is not None and stamp[2] is not None:
            cpu[nb.stem] = stamp[2]
    return cpu


def cpu_lines(cpu: dict[str, float], trained: dict[str, float]) -> list[str]:
    """Each chapter's CPU seconds, longest first, and where the ledger knows it, the part spent training runs into
    the result cache (``trained``: chapter → CPU s) against the rest: the chapter's own loops, its analysis and
    charts, its kernel's start."""
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
    """Write the build's measurements record (``benchmarks/_record``): each chapter's seconds (and CPU seconds,
    ``cpu``), the whole build, the cores' busy time, what the result cache's ledger says was trained, by kind
    and twice, and each kind's share of the step's floor (``efficiency``, :func:`build_efficiency`)."""
    from _record import record

    rows = [{"what": f"chapter {stem}", "value": round(seconds, 1), "unit": "s wall"} for stem, (seconds, _) in results.items()]
    rows += [{"what": f"CPU of chapter {stem}", "value": round(value), "unit": "CPU s (its kernel and workers)"}
             for stem, value in (cpu or {}).items()]
    rows += [{"what": f"training CPU of chapter {stem}", "value": round(trained.by_chapter.get(stem, 0.0)),
              "unit": "CPU s (its runs trained into the result cache)"} for stem in (cpu or {}) if trained.by_chapter]
    rows += [{"what": "chapters", "value": round(chapters_s, 1), "unit": f"s wall ({jobs} at a time)"},
             {"what": "HTML", "value": round(html_s, 1), "unit": "s wall"},
             {"what": "whole build (install apart)", "value": round(chapters_s + html_s, 1), "unit": "s wall"}]
    if busy_seconds is not None:
        rows += [{"what": "busy core-seconds (chapters)", "value": round(busy_seconds), "unit": "core-s"},
                 {"what": "share of the cores busy", "value": round(share, 3), "unit": "share"}]
    rows += [{"what": "runs trained", "value": trained.trainings, "unit": "runs"},
             {"what": "runs trained more than once", "value": len(trained.twice), "unit": "runs"}]
    for kind, totals in trained.by_kind.items():
        rows += [{"what": f"{kind}: steps trained", "value": int(totals["steps"]), "unit": "steps"},
                 {"what": f"{kind}: training CPU", "value": round(totals["cpu_s"]), "unit": "CPU s"}]
    for kind, totals in (efficiency or {}).items():  # the page's efficiency table reads these (EFFICIENCY_ROWS)
        rows += [{"what": f"{kind}: steps with a floor", "value": int(totals["steps"]), "unit": "steps"},
                 {"what": f"{kind}: their training CPU", "value": round(totals["cpu_s"], 1), "unit": "CPU s"},
                 {"what": f"{kind}: their floor", "value": round(totals["floor_s"], 1),
                  "unit": "s (matmul FLOPs at torch.mm's rate)"},
                 {"what": f"{kind}: efficiency", "value": round(totals["share"], 3), "unit": "floor / training CPU"}]
    return record("build_book", rows, settings={"profile": profile, "chapters at a time": jobs, "order": "longest first",
                                              "result cache": "cold"},
                  note="`make book` from a clean clone's state (every chapter executed, cold result cache): each "
                       "chapter's wall time in its process, and what the chapters trained (the cache's ledger).")


if __name__ == "__main__":
    main()
