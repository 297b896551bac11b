"""When a run, a worker, a disk or an input goes wrong: no verdict on a broken run, nothing lost, named errors.

Each test is built on an input nhtlab once got wrong: a diverged run called "strong", a NaN norm
called "weak", DLR of 1.0 for features scaled by 1e80, sweep workers left running after their parent
was killed, a failed checkpoint write that lost the run, a damaged run.json that raised
JSONDecodeError, bare TypeErrors from deep inside torch.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
import torch

import nhtlab
from nhtlab.analysis.regimes import DIVERGED, UNJUDGED, diagnose_regime, is_diverged, regime_order_ok
from nhtlab.history import History
from nhtlab.measures.dlr import dlr
from nhtlab.models import EmbeddingMLP
from nhtlab.training.monitor import Monitor, online_regime

ROOT = Path(__file__).resolve().parent.parent
TINY = nhtlab.ModularRun(p=7, steps=4, eval_every=2, model_kwargs=dict(width=8), device="cpu")


# -- no verdict on a broken run ---------------------------------------------------------------------
def _never_fits(status: str = "completed", last_norm: float = 5.0) -> History:
    rows = [{"step": s, "train_acc": 0.1, "test_acc": 0.0, "norm": n, "train_loss": 2.0}
            for s, n in ((0, 10.0), (100, 8.0), (200, last_norm))]
    return History(rows=rows, status=status, message="loss is nan at step 201" if status == "diverged" else "")


def test_diagnose_regime_calls_a_diverged_run_diverged_not_strong():
    assert diagnose_regime(_never_fits()).regime == "strong"  # the same curve, finished: a real verdict
    broken = diagnose_regime(_never_fits(status="diverged"))
    assert broken.regime == DIVERGED and "loss is nan" in broken.reason
    nan_norm = diagnose_regime(_never_fits(last_norm=math.nan))  # recorded by another loop, status unknown
    assert nan_norm.regime == DIVERGED and "not finite from step 200" in nan_norm.reason
    assert DIVERGED in UNJUDGED and regime_order_ok([0.0, 1.0, 2.0], ["weak", DIVERGED, "strong"])
    assert is_diverged(_never_fits()) is None


def test_a_diverged_sweep_run_is_diagnosed_diverged():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        history = nhtlab.run_modular(TINY.replace(lr=1e5, steps=20), progress="none")
    assert history.status == "diverged"
    assert diagnose_regime(history).regime == DIVERGED


def test_monitor_reports_diverged_on_a_nan_norm_and_warns_once():
    model = EmbeddingMLP(7, width=8)
    monitor = Monitor(model, every=1)
    for step in range(1, 6):
        monitor(step, train_acc=0.5, test_acc=0.1)
    with torch.no_grad():
        model.readout.weight.fill_(math.nan)
    with pytest.warns(RuntimeWarning, match="diverged") as caught:
        monitor(6, train_acc=0.5, test_acc=0.1)
        monitor(7, train_acc=0.5, test_acc=0.1)
    assert len([w for w in caught if "diverged" in str(w.message)]) == 1, "one warning, not one per record"
    assert monitor.regime() == DIVERGED and monitor.diverged_step == 6
    assert online_regime([1.0, 2.0, math.nan]) == DIVERGED  # even too early to judge otherwise
    assert monitor.diagnose().regime == DIVERGED


# -- DLR refuses or warns with the reason, and ignores a global scale --------------------------------
def _pair(dtype):
    g = torch.Generator().manual_seed(0)
    phi = torch.randn(300, 20, generator=g, dtype=torch.float64)
    out = phi @ torch.randn(20, 5, generator=g, dtype=torch.float64) + 0.1 * torch.randn(300, 5, generator=g,
                                                                                          dtype=torch.float64)
    return phi.to(dtype), out.to(dtype)


@pytest.mark.parametrize("dtype, scales", [(torch.float64, (1e80, 1e-80)), (torch.float32, (1e30, 1e-30))])
def test_dlr_is_unchanged_by_a_global_scale(dtype, scales):
    phi, out = _pair(dtype)
    base = dlr(phi, out)
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    for s in scales:
        assert dlr(phi * s, out) == pytest.approx(base, abs=tol), f"features × {s:g}"
        assert dlr(phi, out * s) == pytest.approx(base, abs=tol), f"outputs × {s:g}"
        assert dlr(phi * s, out * s) == pytest.approx(base, abs=tol), f"both × {s:g}"


def test_dlr_names_features_without_columns():
    _, out = _pair(torch.float64)
    with pytest.raises(ValueError, match="'features' parameter of dlr must have at least one column"):
        dlr(torch.zeros(300, 0), out)
    with pytest.raises(ValueError, match="'outputs' parameter of dlr must have at least one column"):
        dlr(out, torch.zeros(300, 0))


def test_dlr_warns_when_n_is_not_above_p_or_the_output_rank_is_rounding():
    phi, out = _pair(torch.float64)
    with pytest.warns(RuntimeWarning, match="n = 10 samples ≤ p = 20 features"):
        dlr(phi[:10], out[:10])
    with pytest.warns(RuntimeWarning, match="cannot be resolved"):
        dlr(phi, 1e6 + 1e-8 * out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dlr(phi, out)  # a well-posed pair: no warning


# -- orphan-proof sweeps ------------------------------------------------------------------------------
_PARENT = textwrap.dedent("""
    import sys, time
    import nhtlab
    from nhtlab.training.sweeps import default_executor

    def pid(_):
        import os, time
        time.sleep(0.5)
        return os.getpid()

    if __name__ == "__main__":
        pool = default_executor(2)
        print(*sorted(set(pool.map(pid, range(2)))), flush=True)
        runs = [nhtlab.ModularRun(p=23, steps=10**6, eval_every=10**5, seed=s, device="cpu") for s in range(2)]
        nhtlab.sweep(runs, strategy="parallel", executor=pool, progress="none")
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sweep_workers_exit_when_the_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    env = {**os.environ, "NHTLAB_CACHE": "off", "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    workers = []
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2, "the parent did not report its workers"
        time.sleep(1.0)  # training now
        assert all(_alive(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "a worker kept training after its sweep was killed"
    finally:
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


def test_sweep_without_the_main_guard_names_the_guard(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text("import nhtlab\n"
                      "runs = [nhtlab.ModularRun(p=7, steps=2, eval_every=1, seed=s, device='cpu') for s in range(2)]\n"
                      "nhtlab.sweep(runs, strategy='parallel', workers=2, progress='none')\n")
    env = {**os.environ, "NHTLAB_CACHE": "off", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr, done.stderr[-3000:]


def test_sweep_docstring_shows_the_main_guard():
    assert 'if __name__ == "__main__":' in nhtlab.sweep.__doc__


# -- nothing lost ---------------------------------------------------------------------------------------
def test_train_returns_the_history_when_the_checkpoint_cannot_be_written(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    data = nhtlab.modular_data(7, seed=0)
    model = EmbeddingMLP(7, width=8)
    config = nhtlab.TrainConfig(steps=4, eval_every=2, device="cpu")
    with pytest.warns(RuntimeWarning, match="could not write a checkpoint"):
        history = nhtlab.train(model, data, config, progress="none", checkpoint_dir=blocker / "run")
    assert history.status == "completed" and [r["step"] for r in history.rows] == [0, 2, 4]


def test_a_damaged_run_json_gets_a_named_error(tmp_path):
    (tmp_path / "run.json").write_text('{"p": 7, "ste')  # cut off mid-write
    with pytest.raises(ValueError, match="holds a damaged run.json"):
        nhtlab.run_modular(TINY, progress="none", run_dir=tmp_path)
    (tmp_path / "run.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a damaged run.json"):
        nhtlab.run_modular(TINY, progress="none", run_dir=tmp_path)


class _ReadOnlyCache:
    def get(self, config):
        return None

    def put(self, config, history):
        raise PermissionError(13, "Read-only file system")


def test_a_sweep_that_cannot_write_its_cache_returns_every_history(tmp_path):
    runs = [TINY, TINY.replace(seed=1)]
    with pytest.warns(RuntimeWarning, match="could not be written"):
        result = nhtlab.sweep(runs, strategy="sequential", cache=_ReadOnlyCache(), progress="none")
    assert [row.status for row in result] == ["completed", "completed"]
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="could not be written"):
        result = nhtlab.sweep(runs, strategy="sequential", cache=nhtlab.training.cache.ResultCache(blocker / "cache"), progress="none")
    assert [len(row.history) for row in result] == [3, 3]


# -- named errors at the boundary -------------------------------------------------------------------------
def test_monitor_names_bad_inputs():
    monitor = Monitor(EmbeddingMLP(7, width=8), every=1)
    with pytest.raises(TypeError, match="'probe' parameter of Monitor"):
        Monitor(EmbeddingMLP(7, width=8), probe=0.5)
    with pytest.raises(TypeError, match="'step' parameter of Monitor must be an int"):
        monitor("a")
    with pytest.raises(TypeError, match="'loss' scalar of Monitor must be a real number"):
        monitor(1, loss="abc")
    monitor(1, loss=torch.tensor(0.5), acc=1)  # a one-element tensor and an int are scalars


def test_a_model_built_for_another_p_is_refused_by_name():
    data = nhtlab.modular_data(23, seed=0)
    with pytest.raises(ValueError, match="built for p = 7"):
        nhtlab.train(EmbeddingMLP(7, width=8), data, nhtlab.TrainConfig(steps=2, device="cpu"), progress="none")


@pytest.mark.parametrize("field, value", [("seed", 2**70), ("p", 10**6), ("lr", 1e38)])
def test_out_of_range_settings_get_named_errors(field, value):
    with pytest.raises(ValueError, match=f"The '{field}' parameter of ModularRun"):
        TINY.replace(**{field: value})
    if field in ("seed", "p"):
        with pytest.raises(ValueError, match=f"The '{field}' parameter of modular_data"):
            nhtlab.modular_data(**{"p": 7, field: value})
