"""tools/build_book.py: the busy core-seconds it prints after the chapters, and the build's measurements record."""

import json
import math
import os
import time
from pathlib import Path

import build_book  # tools/ is on sys.path (conftest.py)
import pytest


def test_cpu_ticks_read_the_machine_line_busy_and_idle_columns(tmp_path):
    # user nice system idle iowait irq softirq steal, then guest and guest_nice, which user and nice already hold
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 20 30 400 50 6 7 8 900 1000\n"
                    "cpu0 60 10 20 150 25 3 4 4 500 600\ncpu1 40 10 10 250 25 3 3 4 400 400\nintr 12345 0 1\n")
    busy, total = build_book.cpu_ticks(stat)
    assert busy == 100 + 20 + 30 + 6 + 7 + 8  # idle and iowait are not busy; steal is time the core was not ours
    assert total == busy + 400 + 50  # every core's clock: busy and idle together, the guest columns not twice
    assert all(isinstance(t, int) for t in (busy, total))  # exact differences: busy == total when all cores are busy
    assert build_book.cpu_ticks(tmp_path / "missing") is None  # no /proc/stat (not Linux): nothing to print


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_cpu_ticks_count_this_process_busy_loop_as_busy():
    hz = os.sysconf("SC_CLK_TCK")
    before, cpu = build_book.cpu_ticks(), time.process_time()
    while time.process_time() - cpu < 0.5:  # half a second of this process's own CPU, however long a busy machine takes
        pass
    after, burned = build_book.cpu_ticks(), time.process_time() - cpu
    busy, total = ((b - a) / hz for a, b in zip(before, after))
    assert busy >= burned - 0.1  # this loop's CPU, to a few ticks (other processes may add to it, never subtract)
    assert busy <= total


def test_the_build_keeps_going_past_a_failed_chapter_only_when_asked(tmp_path, monkeypatch):
    def execute(notebook, profile, force):
        if notebook.stem == "02_regimes":
            raise RuntimeError("closing checks: regime: λ = 5 read weak")
        return notebook.with_suffix(".out"), 12.0, False

    monkeypatch.setattr(build_book, "execute", execute)
    monkeypatch.setattr(build_book, "BUILD", tmp_path)  # the running markers
    only = ["02_regimes", "08_own_model"]
    with pytest.raises(RuntimeError, match="λ = 5"):
        build_book.execute_all("quick", only=only)
    done = build_book.execute_all("quick", only=only, keep_going=True)
    assert done["08_own_model"] == (12.0, False)
    assert math.isnan(done["02_regimes"][0])  # the failed chapter, and the build went on to the next one
    assert not list(tmp_path.rglob("*.running"))  # a failed chapter's marker is gone too


def test_the_build_record_names_each_chapter_and_what_the_ledger_says(tmp_path, monkeypatch):
    from nhtlab.plumbing.ledger import summarise

    monkeypatch.setenv("NHTLAB_MEASUREMENTS_DIR", str(tmp_path))
    trained = summarise([{"run": "a", "kind": "ModularRun", "label": "A", "steps": 400, "cpu_s": 5.0},
                         {"run": "a", "kind": "ModularRun", "label": "A probed", "steps": 400, "cpu_s": 6.0},
                         {"run": "b", "kind": "ShortcutRun", "label": "B", "steps": 100, "cpu_s": 2.0}])
    efficiency = {"ModularRun": {"trainings": 2, "steps": 800, "cpu_s": 11.0, "floor_s": 4.4, "share": 0.4}}
    path = build_book.record_build("book", 2, {"01_grokking": (30.0, False), "02_regimes": (50.0, False)}, 80.0, 10.0,
                                   150.0, 0.94, trained, {"01_grokking": 41.2, "02_regimes": 97.6}, efficiency)
    data = json.loads(path.read_text())
    values = {row["what"]: row["value"] for row in data["results"]}
    assert values["chapter 01_grokking"] == 30.0 and values["chapter 02_regimes"] == 50.0
    assert values["CPU of chapter 01_grokking"] == 41 and values["CPU of chapter 02_regimes"] == 98
    assert values["whole build (install apart)"] == 90.0 and values["busy core-seconds (chapters)"] == 150
    assert values["runs trained"] == 3 and values["runs trained more than once"] == 1
    assert values["ModularRun: steps trained"] == 800 and values["ShortcutRun: training CPU"] == 2
    assert values["ModularRun: efficiency"] == 0.4 and values["ModularRun: their floor"] == 4.4  # the page's table
    assert data["benchmark"] == "build_book" and data["settings"]["result cache"] == "cold"
    assert data["machine"]["cpu_isa"]  # which of two machines that lscpu names alike
    assert "(" in build_book.machine_line() and "cores)" in build_book.machine_line()


def _notebooks(*stems):
    return [Path(f"book/{stem}.ipynb") for stem in stems]


def test_longest_first_puts_a_never_measured_chapter_first_and_keeps_ties_in_order():
    books = _notebooks("01_a", "02_b", "03_c", "04_d", "05_new")
    order = build_book.longest_first(books, {"01_a": 140.0, "02_b": 250.0, "03_c": 390.0, "04_d": 250.0})
    assert [nb.stem for nb in order] == ["05_new", "03_c", "02_b", "04_d", "01_a"]
    assert build_book.longest_first(books, {}) == books  # nothing measured: the table of contents' order


def _build_record(folder, name, cpu_model, date, seconds):
    from _record import machine

    folder.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": "build_book", "date": date, "machine": {**machine(), "cpu_model": cpu_model},
            "settings": {"profile": "book"},
            "results": [{"what": f"chapter {stem}", "value": s, "unit": "s wall"} for stem, s in seconds.items()]
            + [{"what": "chapters", "value": 1.0, "unit": "s wall"}]}
    (folder / f"build_book-{name}.json").write_text(json.dumps(data))


def test_expected_seconds_come_from_this_folders_stamps_else_this_machines_newest_build(tmp_path, monkeypatch):
    from _record import machine

    monkeypatch.setattr(build_book, "ROOT", tmp_path / "repo")
    monkeypatch.setattr(build_book, "BUILD", tmp_path / "build")
    books = _notebooks("01_a", "02_b")
    assert build_book.expected_seconds("book", books) == ({}, "no measured build")
    _build_record(tmp_path / "repo" / "benchmarks" / "results", "1", machine()["cpu_model"], "2026-12-01T10:00:00+00:00",
                  {"01_a": 10.0, "02_b": 20.0})
    _build_record(tmp_path / "build" / "measurements", "2", "another CPU", "2026-12-02T10:00:00+00:00",
                  {"01_a": 30.0, "02_b": 5.0})
    seconds, source = build_book.expected_seconds("book", books)
    assert seconds == {"01_a": 10.0, "02_b": 20.0} and source.startswith("this machine's build of 2026-12-01")
    assert build_book.expected_seconds("quick", books) == ({}, "no measured build")  # another profile's records
    stamps = tmp_path / "build" / "executed" / "book"
    stamps.mkdir(parents=True)
    (stamps / "01_a.key").write_text("abc 7.5")
    assert build_book.expected_seconds("book", books)[0] == {"01_a": 10.0, "02_b": 20.0}  # one stamp is not all
    (stamps / "02_b.key").write_text("def 3.0")
    assert build_book.expected_seconds("book", books) == ({"01_a": 7.5, "02_b": 3.0}, "this build folder's last executions")


def test_one_process_executes_the_chapters_in_the_order_given(tmp_path, monkeypatch):
    seen = []

    def execute(notebook, profile, force):
        seen.append(notebook.stem)
        return notebook.with_suffix(".out"), float(len(seen)), False

    monkeypatch.setattr(build_book, "execute", execute)
    monkeypatch.setattr(build_book, "BUILD", tmp_path)  # the running markers
    books = build_book.chapters()
    results = build_book.execute_all("quick", jobs=1, order=books[::-1])
    assert seen == [nb.stem for nb in books[::-1]]
    assert list(results) == [nb.stem for nb in books]  # reported in the table of contents' order
    assert results[books[-1].stem] == (1.0, False)


def test_a_chapters_cpu_counts_its_kernel_and_the_kernels_own_workers():
    # papermill's kernel is the build process's child and a chapter's pool workers are the kernel's:
    # a grandchild's CPU must count once the child has waited for it.
    import subprocess
    import sys

    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.4: pass')"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}], check=True); {burn}"
    before = build_book.children_cpu_seconds()
    subprocess.run([sys.executable, "-c", child], check=True)
    assert build_book.children_cpu_seconds() - before >= 0.75  # 0.4 s in the child, 0.4 s in its child


def test_a_stamp_reads_with_or_without_its_cpu_seconds(tmp_path):
    out = tmp_path / "01_a.ipynb"
    out.with_suffix(".key").write_text("abc 12.5 30.2")
    assert build_book.read_stamp(out) == ("abc", 12.5, 30.2)
    out.with_suffix(".key").write_text("abc 12.5")  # written before the CPU was recorded
    assert build_book.read_stamp(out) == ("abc", 12.5, None)
    out.with_suffix(".key").write_text("")
    assert build_book.read_stamp(out) is None and build_book.read_stamp(tmp_path / "none.ipynb") is None


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="Linux only (child subreaper)")
def test_a_chapters_cpu_counts_the_workers_its_kernel_left_behind():
    # A chapter's pool workers belong to the kernel's fork server, which outlives the kernel: the build adopts
    # such orphans and waits for them, or their CPU would be lost. Run apart, so pytest adopts nothing.
    import subprocess
    import sys

    script = f"""
import subprocess, sys
sys.path.insert(0, {str(Path(build_book.__file__).parent)!r})
import build_book
burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.5: pass')"
leave = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {{burn!r}}])"  # exits at once, unwaited
assert build_book.adopt_orphans()
before = build_book.children_cpu_seconds()
subprocess.run([sys.executable, "-c", leave], check=True)
assert build_book.reap_descendants(timeout=30)
print(build_book.children_cpu_seconds() - before)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert float(out.stdout) >= 0.45  # the orphan's 0.5 s, counted once it was adopted and reaped


def test_each_chapters_cpu_splits_into_its_cache_training_and_the_rest(tmp_path, monkeypatch):
    from nhtlab.plumbing.ledger import summarise

    monkeypatch.setenv("NHTLAB_MEASUREMENTS_DIR", str(tmp_path))
    trained = summarise([{"run": "a", "kind": "ModularRun", "steps": 400, "cpu_s": 30.0, "chapter": "03_delay_law"},
                         {"run": "b", "kind": "ModularRun", "steps": 400, "cpu_s": 12.5, "chapter": "03_delay_law"},
                         {"run": "c", "kind": "ShortcutRun", "steps": 100, "cpu_s": 2.0}])  # no chapter named
    assert trained.by_chapter == {"03_delay_law": 42.5}
    cpu = {"01_grokking": 20.0, "03_delay_law": 50.0}
    total, cached, rest = build_book.cpu_lines(cpu, trained.by_chapter)
    assert total.endswith("03 50, 01 20")  # longest first
    assert cached.endswith("(42): 03 42, 01 0") and rest.endswith("(28): 03 8, 01 20")
    path = build_book.record_build("book", 2, {"01_grokking": (30.0, False), "03_delay_law": (50.0, False)}, 80.0,
                                   10.0, 150.0, 0.94, trained, cpu)
    values = {row["what"]: row["value"] for row in json.loads(path.read_text())["results"]}
    assert values["training CPU of chapter 03_delay_law"] == 42 and values["training CPU of chapter 01_grokking"] == 0
    assert build_book.cpu_lines(cpu, {}) == total.split("\n")  # a ledger without chapters: the totals only


def test_the_progress_line_names_each_running_chapter_its_time_and_its_runs(tmp_path, monkeypatch):
    """The build's live line: seconds run against the last build's, and the runs this build trained for it."""
    monkeypatch.setenv("NHTLAB_RUN_CACHE", str(tmp_path))
    ledger = tmp_path / "trained.jsonl"
    ledger.write_text(json.dumps({"run": "old", "kind": "ModularRun", "chapter": "04_dlr"}) + "\n")
    running = ["04_dlr", "07_emergence"]
    progress = build_book.ChapterProgress({"04_dlr": 530.0}, lambda: list(running))
    progress.base = len(build_book.ledger_lines())  # what __enter__ counts: the lines before this build
    with open(ledger, "a") as handle:
        for run in ("a", "b"):
            handle.write(json.dumps({"run": run, "kind": "ModularRun", "chapter": "04_dlr"}) + "\n")
    assert progress.lines(1000.0) == ["  … 04_dlr: 0 s of ~530 s expected, 2 runs trained",
                                      "  … 07_emergence: 0 s, 0 runs trained"]
    running.pop()
    assert progress.lines(1090.0) == ["  … 04_dlr: 90 s of ~530 s expected, 2 runs trained"]


def test_the_budget_scales_cpu_by_the_machines_speed_pools_shared_runs_and_names_the_chapters_over_their_share():
    budget = {"01_a": 100.0, "02_b": 200.0, "03_c": 4.0, "04_d": 100.0, "05_e": 100.0}
    same = (86.0, 0.5)  # the budget build's torch.mm rate and training efficiency
    # a machine whose torch.mm is as fast but whose training reaches half the floor's share: 120 s here are 60 s
    # there, within 100; 300 s here are 150 of 200
    lines, over = build_book.budget_check({"01_a": 120.0, "02_b": 300.0}, 86.0, 0.25, budget, (), reference=same)
    assert over == [] and "01 60 of 100" in lines[1] and "02 150 of 200" in lines[1] and "× 0.50" in lines[0]
    # half the torch.mm rate counts the same as half the efficiency
    assert build_book.budget_check({"01_a": 120.0, "02_b": 300.0}, 43.0, 0.5, budget, (), reference=same)[1] == []
    # the same CPU on an equally fast machine: 01 at ×1.2 of its share passes, 02 at ×1.5 fails
    assert build_book.budget_check({"01_a": 120.0, "02_b": 300.0}, 86.0, 0.5, budget, (), reference=same)[1] == ["02_b"]
    # a tiny share is held to MIN_SHARE, so a kernel's start does not fail it; a chapter with no share fails
    assert build_book.budget_check({"03_c": build_book.MIN_SHARE}, 86.0, 0.5, budget, (), reference=same)[1] == []
    assert build_book.budget_check({"09_new": 1.0}, 86.0, 0.5, budget, (), reference=same)[1] == ["09_new"]
    # two chapters that share runs trade them between builds: their pool is held to the sum of their shares
    traded = {"04_d": 160.0, "05_e": 40.0}  # 04 alone is ×1.6, the pool ×1.0
    assert build_book.budget_check(traded, 86.0, 0.5, budget, (), reference=same)[1] == ["04_d"]
    lines, over = build_book.budget_check(traded, 86.0, 0.5, budget, (("04_d", "05_e"),), reference=same)
    assert over == [] and "  pooled (they share runs): 04 + 05 200 of 200" in lines
    assert build_book.budget_check({"04_d": 200.0, "05_e": 60.0}, 86.0, 0.5, budget, (("04_d", "05_e"),),
                                   reference=same)[1] == ["04 + 05"]  # 260 of 200: ×1.3
    with pytest.raises(ValueError, match="rate and efficiency"):
        build_book.budget_check({"01_a": 1.0}, 0.0, 0.5, budget)


def test_every_chapter_has_a_share_of_the_budget():
    assert {nb.stem for nb in build_book.chapters()} == set(build_book.CHAPTER_BUDGET)
