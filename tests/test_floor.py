"""nhtlab.plumbing.floor: the step's matmul FLOPs, its floor at torch.mm's rate, and a build's efficiency per run kind."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nhtlab
from nhtlab.plumbing import floor
from nhtlab.plumbing.ledger import read_ledger
from nhtlab.book.runs import BookCache
from nhtlab.training.cache import cached_run

RUN = nhtlab.ModularRun(p=7, model="mlp", model_kwargs={"width": 16}, steps=20, eval_every=10, batch_size=32)


def test_the_efficiency_is_steps_times_the_floor_over_the_cpu_seconds():
    lines = [{"run": "a", "kind": "ModularRun", "steps": 1000, "cpu_s": 8.0},
             {"run": "a", "kind": "ModularRun", "steps": 500, "cpu_s": 2.0},  # the same run trained again (probed)
             {"run": "b", "kind": "ShortcutRun", "steps": 200, "cpu_s": 1.0},
             {"run": "b", "kind": "ShortcutRun", "steps": 200, "cpu_s": None},  # stacked: CPU unknown, left out
             {"run": "c", "kind": "ShortcutRun", "steps": 100, "cpu_s": 5.0}]  # no floor (not rebuilt): left out
    got = floor.efficiency(lines, {"a": 0.004, "b": 0.002})
    assert got["ModularRun"] == {"trainings": 2, "steps": 1500, "cpu_s": 10.0, "floor_s": 6.0, "share": 0.6}
    assert got["ShortcutRun"]["steps"] == 200 and got["ShortcutRun"]["share"] == pytest.approx(0.4)
    assert "60% of the floor" in floor.efficiency_lines(got)[0]
    assert floor.efficiency([], {}) == {} and "no training" in floor.efficiency_lines({})[0]


def test_a_linear_step_counts_its_three_products_and_a_convolution_its_lowered_ones():
    model = nn.Sequential(nn.Linear(6, 4))
    flops, shapes = floor.count_step(model, torch.randn(5, 6), torch.randint(0, 4, (5,)))
    # forward x·Wᵀ (5×6×4), backward grad W (4×5×6); the input needs no gradient
    assert flops == 2 * (5 * 6 * 4) * 2 and sum(2 * b * m * k * n * c for (b, m, k, n), c in shapes.items()) == flops
    assert model[0].weight.grad is None  # cleared
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 6 * 6, 2))
    flops, shapes = floor.count_step(conv, torch.randn(4, 3, 6, 6), torch.randint(0, 2, (4,)))
    assert shapes[(1, 4 * 36, 27, 8)] == 2  # forward, and the weight's gradient (the input's is not needed)
    assert sum(2 * b * m * k * n * c for (b, m, k, n), c in shapes.items()) == flops  # torch's flop counter agrees


def test_runs_that_differ_in_values_only_share_one_count_kept_in_a_folder(tmp_path):
    key = floor.shape_key(RUN.to_dict(), "ModularRun")
    assert key == floor.shape_key(RUN.replace(weight_decay=0.1, seed=3, lr=1e-2).to_dict(), "ModularRun")
    assert key != floor.shape_key(RUN.replace(batch_size=64).to_dict(), "ModularRun")
    assert key != floor.shape_key(RUN.to_dict(), "ShortcutRun")
    counts = floor.step_counts("ModularRun", RUN.to_dict(), tmp_path)
    assert counts["flops"] > 0 and (tmp_path / f"{key}.json").exists()
    assert floor.step_counts("ModularRun", RUN.replace(seed=5).to_dict(), tmp_path) == counts  # read back
    assert floor.step_counts("SomeOtherRun", {}, tmp_path) is None


def test_a_build_reads_each_trained_runs_floor_from_its_ledger_line(tmp_path):
    cache = BookCache(tmp_path / "cache")  # the book's cache writes the ledger
    cached_run(RUN, cache, use_cache=True, progress="none")
    (line,) = read_ledger(cache.root)
    assert type(RUN)(**line["config"]) == RUN  # the ledger keeps the run's settings
    floors = floor.floors([line], tmp_path / "flops", seconds=0.01)
    flops = floor.step_counts("ModularRun", RUN.to_dict(), tmp_path / "flops")["flops"]
    assert 0 < floors[line["run"]] < 1 and flops / floors[line["run"]] > 1e8  # over 0.1 GFLOP/s
    got = floor.efficiency([line], floors)["ModularRun"]
    assert got["steps"] == 20 and 0 < got["share"] < 1
