"""tools/build_book.py: the busy core-seconds it prints after the chapters, and the build's measurements record."""

import json
import math
import os
import time
from pathlib import Path

import build_book  # tools/ is on sys.path (conftest.py)
import pytest


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux only")
def test_cpu_ticks_count_a_busy_loop_as_busy():
    before, start = build_book.cpu_ticks(), time.perf_counter()
    end = start + 0.5
    while time.perf_counter() < end:  # one core busy for half a second
        pass
    after, wall = build_book.cpu_ticks(), time.perf_counter() - start
    hz = os.sysconf("SC_CLK_TCK")
    busy, total = ((b - a) / hz for a, b in zip(before, after))
    assert busy >= 0.4  # this loop's own 0.5 s (other processes may add to it, never subtract)
    assert all(isinstance(t, int) for t in before + after)  # exact differences: busy == total when all cores are busy
    assert busy <= total
    cores = sum(line.split()[0][3:].isdigit() for line in Path("/proc/stat").read_text().splitlines() if line.startswith("cpu"))
    assert total == pytest.approx(wall * cores, rel=0.3)  # every core's clock ticks, in seconds


def test_a_lane_keeps_going_past_a_failed_chapter_only_when_asked(monkeypatch):
    def execute_one(item, threads=None):
        if item[0].endswith("02_regimes.ipynb"):
            raise RuntimeError("closing checks: regime: λ = 5 read weak")
        return item[0] + ".out", 12.0, False

    monkeypatch.setattr(build_book, "_execute_one", execute_one)
    todo = [("book/02_regimes.ipynb", "quick", False), ("book/08_own_model.ipynb", "quick", False)]
    with pytest.raises(RuntimeError, match="λ = 5"):
        build_book._execute_lane(todo)
    done = build_book._execute_lane(todo, keep_going=True)
    assert [seconds for _, seconds, _ in done][1] == 12.0
    assert math.isnan(done[0][1])  # the failed chapter, and the lane went on to the next one


def test_the_build_record_names_each_chapter_and_what_the_ledger_says(tmp_path, monkeypatch):
    from nhtlab.training.ledger import summarise

    monkeypatch.setenv("NHTLAB_MEASUREMENTS_DIR", str(tmp_path))
    trained = summarise([{"run": "a", "kind": "ModularRun", "label": "A", "steps": 400, "cpu_s": 5.0},
                         {"run": "a", "kind": "ModularRun", "label": "A probed", "steps": 400, "cpu_s": 6.0},
                         {"run": "b", "kind": "ShortcutRun", "label": "B", "steps": 100, "cpu_s": 2.0}])
    path = build_book.record_build("book", 2, {"01_grokking": (30.0, False), "02_regimes": (50.0, False)}, 80.0, 10.0,
                                   150.0, 0.94, trained)
    data = json.loads(path.read_text())
    values = {row["what"]: row["value"] for row in data["results"]}
    assert values["chapter 01_grokking"] == 30.0 and values["chapter 02_regimes"] == 50.0
    assert values["whole build (install apart)"] == 90.0 and values["busy core-seconds (chapters)"] == 150
    assert values["runs trained"] == 3 and values["runs trained more than once"] == 1
    assert values["ModularRun: steps trained"] == 800 and values["ShortcutRun: training CPU"] == 2
    assert data["benchmark"] == "build_book" and data["settings"]["result cache"] == "cold"
    assert data["machine"]["cpu_isa"]  # which of two machines that lscpu names alike
    assert "(" in build_book.machine_line() and "cores)" in build_book.machine_line()
