"""A sweep on a real Dask distributed cluster (worker processes on loopback) equals the local sweep."""

from __future__ import annotations

import math
import warnings

import pytest

import nhtlab
from nhtlab.training.modular_run import ModularRun
from nhtlab.training.sweeps import sweep

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install 'nhtlab[test]')")

BASE = ModularRun(p=11, model_kwargs=dict(width=16), steps=60, eval_every=10, batch_size=16, device="cpu")
# Four ordinary runs and one that diverges (an absurd learning rate): the sweep must carry on past it.
RUNS = [BASE.replace(weight_decay=wd, seed=seed) for wd in (0.1, 1.0) for seed in (0, 1)] + [BASE.replace(lr=1e30)]


def _rows_equal(a: list[dict], b: list[dict]) -> bool:
    """Exact equality, with NaN equal to NaN (a diverged run's last row may hold NaN)."""
    def same(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
    return len(a) == len(b) and all(r.keys() == s.keys() and all(same(r[k], s[k]) for k in r) for r, s in zip(a, b))


def test_sweep_on_a_local_dask_cluster_equals_the_local_sweep(tmp_path):
    local = sweep(RUNS, strategy="sequential", progress="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dask's shutdown chatter (e.g. "worker process still alive") is not ours
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            remote = sweep(RUNS, strategy="parallel", executor=client.get_executor(), progress="none")
            workers_used = {w for w in client.run(lambda: __import__("os").getpid()).values()}
    assert len(workers_used) == 2
    assert remote.runs == local.runs == RUNS  # same order as given
    for a, b in zip(remote, local):
        assert a.status == b.status
        assert _rows_equal(a.history.rows, b.history.rows), a.run
        assert a.record()["t_mem"] == b.record()["t_mem"]
    assert remote.diverged == local.diverged == [RUNS[-1]]
    assert [r.status for r in remote] == ["completed"] * 4 + ["diverged"]
    assert "non-finite" in remote[-1].history.message


def test_a_dask_sweep_fills_and_reuses_the_result_cache(tmp_path):
    cache = nhtlab.training.cache.ResultCache(tmp_path / "cache")
    first = sweep(RUNS[:2], strategy="sequential", cache=cache, progress="none")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        again = sweep(RUNS[:3], strategy="parallel", executor=client.get_executor(), cache=cache, progress="none")
    assert [r.source for r in again] == ["cache", "cache", "computed"]
    assert [r.history.rows for r in again[:2]] == [r.history.rows for r in first]
    assert len(cache) == 3
