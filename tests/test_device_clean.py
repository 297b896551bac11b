"""Device-clean code: the device audit (nhtlab.training.device) catches what would break on a GPU, and nhtlab passes it.

On a CPU-only machine the audit makes ``pick_device()`` return ``cpu:0`` and
tags every tensor as on the chosen device or left on the host; mixing the two,
``.numpy()`` on a device tensor, or a model that was never moved raises
:class:`~nhtlab.plumbing.device_audit.DeviceMixError`. The smoke executions of the chapters
(tests/test_full_smoke.py) run under it through ``NHTLAB_DEVICE_CHECK=1``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.plumbing.device_audit import AUDIT_DEVICE, DeviceMixError, device_audit, device_audit_enabled

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the audit stands in for a GPU on CPU-only machines")


# --- the audit catches planted mistakes -------------------------------------------------------

def test_pick_device_names_the_chosen_device_only_inside_the_audit():
    assert nhtlab.pick_device() == torch.device("cpu") and not device_audit_enabled()
    with device_audit():
        assert nhtlab.pick_device() == AUDIT_DEVICE and nhtlab.pick_device("cpu") == AUDIT_DEVICE
        assert device_audit_enabled()
    assert nhtlab.pick_device() == torch.device("cpu")


def test_a_model_never_moved_is_caught():
    with device_audit():
        model = torch.nn.Linear(3, 2)
        x = torch.zeros(4, 3).to(nhtlab.pick_device())
        with pytest.raises(DeviceMixError, match="model parameter of shape \\(2, 3\\) that was never moved"):
            model(x)
        with pytest.raises(DeviceMixError, match="never moved"):
            model(torch.zeros(4, 3))  # neither moved: on a GPU machine this trains on the host
        model.to(nhtlab.pick_device())
        assert model(x).shape == (4, 2)


def test_data_never_moved_is_caught():
    with device_audit():
        model = torch.nn.Linear(3, 2).to(nhtlab.pick_device())
        with pytest.raises(DeviceMixError, match="mixes a tensor on the chosen device .* left on the host \\(shape \\(4, 3\\)\\)"):
            model(torch.from_numpy(np.zeros((4, 3), dtype=np.float32)))


def test_a_host_tensor_made_inside_a_forward_pass_is_caught():
    class Bad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x) + torch.ones(3)  # should be torch.ones(3, device=x.device)

    class Good(Bad):
        def forward(self, x):
            return self.lin(x) + torch.ones(3, device=x.device)

    with device_audit():
        x = torch.zeros(2, 3, device=nhtlab.pick_device())
        with pytest.raises(DeviceMixError, match="add\\(\\) mixes"):
            Bad().to(nhtlab.pick_device())(x)
        assert Good().to(nhtlab.pick_device())(x).shape == (2, 3)


def test_numpy_on_a_device_tensor_is_caught_and_cpu_first_is_fine():
    with device_audit():
        y = torch.arange(6, device=nhtlab.pick_device()).float() * 2
        with pytest.raises(DeviceMixError, match="numpy\\(\\) was called"):
            y.numpy()
        with pytest.raises(DeviceMixError, match="was called"):
            np.asarray(y)
        assert y.cpu().numpy().tolist() == [0, 2, 4, 6, 8, 10]
        assert y.tolist()[1] == 2 and float(y.sum()) == 30  # host reads that work on CUDA too
        assert y.sum().item() == 30 and y.numpy is not None
        y.cpu()
        with pytest.raises(DeviceMixError):  # .cpu() of the CPU tensor did not re-tag the original
            y.numpy()


def test_allowed_patterns_pass():
    with device_audit():
        device = nhtlab.pick_device()
        x = torch.randn(5, 3).to(device)
        assert x[torch.tensor([0, 2])].shape == (2, 3)  # host indices into a device tensor: fine on CUDA
        assert (x * torch.tensor(2.0)).shape == (5, 3)  # a 0-d host scalar: fine on CUDA
        pos = torch.arange(3, device=x.device)  # device=x.device: no verdict either way
        assert (x + pos).shape == (5, 3)
        host = torch.zeros(5, 3)
        host.copy_(x)  # copies between the two are allowed
        assert torch.equal(host, x.cpu())


# --- nhtlab's own functions pass ---------------------------------------------------------------

def test_training_loops_are_device_clean():
    with device_audit():
        mlp = nhtlab.run_modular(nhtlab.ModularRun(p=11, model_kwargs=dict(width=16), steps=10, eval_every=5), progress="none")
        tf = nhtlab.run_modular(nhtlab.companion(1.0, p=11, steps=6, eval_every=3), progress="none")
        stacked = nhtlab.training.batched.train_batched([nhtlab.companion(1.0, p=11, steps=6, eval_every=3),
                                        nhtlab.companion(0.1, seed=1, p=11, steps=6, eval_every=3)], progress="none")
    assert mlp.status == tf.status == "completed" and [h.status for h in stacked] == ["completed"] * 2


def test_results_are_unchanged_by_the_audit():
    run = nhtlab.ModularRun(p=11, model_kwargs=dict(width=16), steps=10, eval_every=5)
    plain = nhtlab.run_modular(run, progress="none")
    with device_audit():
        audited = nhtlab.run_modular(run, progress="none")
    assert audited.rows == plain.rows


def test_shortcut_runs_features_dlr_and_monitor_are_device_clean():
    with device_audit():
        device = nhtlab.pick_device()
        run = nhtlab.ShortcutRun(size=10, channels=(4, 4, 8, 8, 8, 8), steps=4, eval_every=2, batch_size=16)
        history = nhtlab.training.shortcut_run.run_shortcut(run, progress="none")
        model = history.model
        data = run.data()
        captured = nhtlab.capture(model, data.x_test[:64], layer="readout", which="input")
        value = nhtlab.dlr(captured.features, captured.outputs)
        spectrum = nhtlab.measures.spectra.feature_spectrum(captured.features, captured.outputs, top=4)
        mlp = nhtlab.make_model("mlp", 11, width=16).to(device)
        xs = nhtlab.modular_data(11, seed=0)
        monitor = nhtlab.Monitor(mlp, every=1, probe=(xs.x_test,))
        opt = torch.optim.AdamW(mlp.parameters(), lr=1e-2)
        x, y = xs.x_train.to(device), xs.y_train.to(device)
        for step in range(1, 4):
            loss = torch.nn.functional.cross_entropy(mlp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            monitor.step(step, loss=loss.item())
        tracker = nhtlab.DLRTracker(xs.x_test)
        row, _ = tracker.measure(mlp)
    assert history.status == "completed" and 0.0 <= value <= 1.0 and spectrum is not None
    assert len(monitor.rows) == 4 and all(np.isfinite(r["dlr"]) for r in monitor.rows[1:]) and 0.0 <= row["dlr"] <= 1.0


def test_the_environment_switch_audits_a_whole_process():
    code = ("import torch, nhtlab\n"
            "from nhtlab.plumbing.device_audit import DeviceMixError\n"
            "assert nhtlab.pick_device() == torch.device('cpu', 0)\n"
            "try:\n"
            "    torch.nn.Linear(2, 2)(torch.zeros(1, 2))\n"
            "except DeviceMixError:\n"
            "    print('caught')\n")
    env = {**os.environ, "NHTLAB_DEVICE_CHECK": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "caught"
