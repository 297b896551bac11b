"""tools/build_book.py's CPU accounting: the busy core-seconds it prints after the chapters."""

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
