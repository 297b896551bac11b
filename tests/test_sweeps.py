"""Sweeps: one call, three strategies giving the same histories, a cache hook, divergence kept."""

import multiprocessing
import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.training import sweeps
from nhtlab.training.sweeps import default_executor, grid, sweep

BASE = nhtlab.ModularRun(p=11, model_kwargs=dict(width=32, embed_std=0.5), steps=20, eval_every=5, lr=3e-3, device="cpu")


def test_grid_is_the_cartesian_product_last_axis_fastest():
    runs = grid(BASE, weight_decay=[0.0, 1.0], seed=[0, 1, 2])
    assert [(r.weight_decay, r.seed) for r in runs] == [(w, s) for w in (0.0, 1.0) for s in (0, 1, 2)]
    assert all(r.p == 11 for r in runs)
    with pytest.raises(ValueError, match="'weight_dcay' of grid is not a field"):
        grid(BASE, weight_dcay=[1.0])
    with pytest.raises(ValueError, match="at least one value"):
        grid(BASE, seed=[])


def test_strategies_agree_and_results_are_tidy():
    runs = grid(BASE, weight_decay=[0.0, 2.0], seed=[0, 1])
    seq = sweep(runs, strategy="sequential", progress="none")
    par = sweep(runs, strategy="parallel", workers=2, progress="none")
    bat = sweep(runs, strategy="batched", progress="none")
    bat2 = sweep(runs, strategy="batched", workers=2, progress="none")  # two stacks in two processes
    assert [r.history.rows for r in bat2] == [r.history.rows for r in sweep(runs[:2], strategy="batched", progress="none")] + \
        [r.history.rows for r in sweep(runs[2:], strategy="batched", progress="none")]
    for a, b, c, run in zip(seq, par, bat, runs):
        assert a.run == b.run == c.run == run
        assert a.history.rows == b.history.rows  # separate processes, same seeds: bit-identical
        np.testing.assert_allclose(c.history["norm"], a.history["norm"], rtol=1e-6)
        np.testing.assert_allclose(c.history["train_loss"], a.history["train_loss"], rtol=1e-5)
    records = seq.records()
    assert len(records) == 4
    for key in ("weight_decay", "seed", "model.width", "t_mem", "t_grok", "delay", "peak_norm", "status", "final_test_acc"):
        assert key in records[0]
    assert [r["weight_decay"] for r in records] == [0.0, 0.0, 2.0, 2.0]
    assert seq.diverged == []


def test_any_executor_can_run_the_sweep():
    runs = grid(BASE, weight_decay=[0.5, 1.0])
    with ThreadPoolExecutor(2) as pool:
        result = sweep(runs, strategy="parallel", executor=pool, progress="none")
    ref = sweep(runs, strategy="sequential", progress="none")
    assert [r.history.rows for r in result] == [r.history.rows for r in ref]


def _module_imported_in_this_process(_: int) -> bool:
    return sweeps._IMPORTED_IN == os.getpid()


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver")
def test_pool_workers_fork_from_a_server_that_imported_nhtlab():
    # The fork server preloads nhtlab.training.sweeps (and so torch): a worker inherits the module
    # instead of importing it, so the module was imported in another process than the worker's.
    with default_executor(workers=2) as pool:
        # torch._dynamo too, which a fresh process imports when it builds its first optimiser. Asked first,
        # by a builtin: a function of this module would import the module, which builds runs, in the worker.
        assert all(pool.map(eval, ["'torch._dynamo' in __import__('sys').modules"] * 2))
        assert not any(pool.map(_module_imported_in_this_process, range(2)))


class FakeCache:
    """The cache interface in memory: get(config) -> History | None, put(config, history)."""

    def __init__(self):
        self.store, self.gets, self.puts = {}, 0, 0

    @staticmethod
    def key(config):
        return repr(sorted(config.items()))

    def get(self, config):
        self.gets += 1
        return self.store.get(self.key(config))

    def put(self, config, history):
        self.puts += 1
        self.store[self.key(config)] = history


@pytest.mark.parametrize("strategy", ["sequential", "batched"])
def test_cache_hook_skips_runs_it_holds(strategy):
    cache = FakeCache()
    runs = grid(BASE, weight_decay=[0.0, 1.0])
    first = sweep(runs, strategy=strategy, cache=cache, progress="none")
    assert cache.puts == 2 and [r.source for r in first] == ["computed", "computed"]
    more = runs + [BASE.replace(weight_decay=3.0)]
    second = sweep(more, strategy=strategy, cache=cache, progress="none")
    assert cache.puts == 3, "only the new run is trained and stored"
    assert [r.source for r in second] == ["cache", "cache", "computed"]
    assert [r.cached for r in second] == [True, True, False]
    assert second[0].history is first[0].history
    with pytest.raises(TypeError, match="'cache' parameter of sweep"):
        sweep(runs, cache=object())


@pytest.mark.parametrize("strategy", ["sequential", "batched"])
def test_a_diverging_run_is_reported_and_the_sweep_carries_on(strategy):
    bad = BASE.replace(lr=10.0, weight_decay=100.0)  # θ ← θ·(1 − 1000) every step
    runs = [BASE, bad, BASE.replace(seed=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sweep(runs, strategy=strategy, progress="none")
    assert result.diverged == [bad]
    assert [r["status"] for r in result.records()] == ["completed", "diverged", "completed"]
    assert result[2].history.column("step")[-1] == 20
    assert "1 diverged" in repr(result)


def test_auto_stacks_modular_runs_on_a_gpu_and_runs_processes_elsewhere(monkeypatch):
    shortcut = nhtlab.ShortcutRun(device="cpu")
    assert sweeps.resolve_strategy([BASE, BASE.replace(seed=1)]) == "parallel"  # a CPU: processes win
    assert sweeps.resolve_strategy([BASE], workers=1) == "sequential"
    assert sweeps.resolve_strategy([BASE], "sequential") == "sequential"  # any other strategy is kept
    cpu_sweep = sweep([BASE, shortcut.replace(steps=4, eval_every=2)], workers=1, progress="none")
    assert cpu_sweep.strategy == "sequential" and "stacked" not in cpu_sweep[0].history.config
    monkeypatch.setattr(sweeps, "pick_device", lambda device: torch.device("cuda"))
    assert sweeps.resolve_strategy([BASE, BASE.replace(seed=1)]) == "batched"
    assert sweeps.resolve_strategy([BASE, shortcut]) == "batched + parallel"  # only modular runs stack
    assert sweeps.resolve_strategy([BASE, shortcut], workers=1) == "batched + sequential"
    with pytest.raises(ValueError, match="'strategy' parameter of sweep must be one of"):
        sweeps.resolve_strategy([BASE], "stacked")


def test_auto_with_both_kinds_stacks_the_modular_runs_and_keeps_the_order(monkeypatch):
    """A sweep of modular and image runs on a GPU: the modular ones stacked, the others alone, rows in order.

    The GPU is pretended (a CPU stack is the same code): pick_device says cuda to the strategy only.
    """
    monkeypatch.setattr(sweeps, "_stacks_on_gpu", lambda run: isinstance(run, nhtlab.ModularRun))
    shortcut = nhtlab.ShortcutRun(steps=4, eval_every=2, device="cpu")
    runs = [BASE, shortcut, BASE.replace(seed=1)]
    result = sweep(runs, workers=1, progress="none")
    assert result.strategy == "batched + sequential" and result.runs == runs
    assert [row.history.config.get("stacked", False) for row in result] == [True, False, True]
    alone = sweep(runs[1:2], strategy="sequential", progress="none")
    assert result[1].history.rows == alone[0].history.rows


def test_a_stacked_run_is_cached_apart_from_the_run_trained_alone():
    cache = FakeCache()
    runs = grid(BASE, weight_decay=[0.0, 1.0])
    stacked = sweep(runs, strategy="batched", cache=cache, progress="none")
    assert all(row.history.config["stacked"] is True for row in stacked)
    alone = sweep(runs, strategy="sequential", cache=cache, progress="none")
    assert [row.source for row in alone] == ["computed", "computed"], "a stacked history does not stand in for the run alone"
    assert "stacked" not in alone[0].history.config and cache.puts == 4
    again = sweep(runs, strategy="batched", cache=cache, progress="none")
    assert [row.source for row in again] == ["cache", "cache"] and again[0].history is stacked[0].history


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="'strategy' parameter of sweep must be one of"):
        sweep([BASE], strategy="threads")
    with pytest.raises(TypeError, match="'runs' parameter of sweep"):
        sweep([BASE, {"p": 11}])
    with pytest.raises(TypeError, match="'executor' parameter of sweep"):
        sweep([BASE], executor="pool")
    with pytest.raises(ValueError, match="'workers' parameter of sweep"):
        sweep([BASE], workers=0)
