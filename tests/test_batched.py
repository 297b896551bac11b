"""The stacked trainer reproduces separate torch.optim.AdamW runs, run by run."""

import warnings

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.training.batched import StackedAdamW, batch_key, train_batched

BASE = nhtlab.ModularRun(p=11, model_kwargs=dict(width=32, embed_std=0.5), steps=25, eval_every=5, lr=3e-3, device="cpu")


def _max_param_gap(a: torch.nn.Module, b: torch.nn.Module) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    return max(float((sa[k] - sb[k]).abs().max()) for k in sa)


@pytest.mark.parametrize("batch_size,schedule", [(None, "constant"), (16, "cosine")])
def test_stacked_runs_equal_separate_adamw_runs(batch_size, schedule):
    runs = [BASE.replace(weight_decay=wd, seed=seed, lr=lr, batch_size=batch_size, schedule=schedule)
            for wd, seed, lr in [(0.0, 0, 3e-3), (1.0, 1, 1e-3), (5.0, 2, 3e-3)]]
    stacked = train_batched(runs, progress="none")
    for run, h in zip(runs, stacked):
        alone = nhtlab.run_modular(run, progress="none")
        assert _max_param_gap(h.model, alone.model) < 1e-6
        assert h.column("step").tolist() == alone.column("step").tolist()
        np.testing.assert_allclose(h["train_loss"], alone["train_loss"], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(h["norm"], alone["norm"], rtol=1e-6)
        np.testing.assert_allclose(h["lr"], alone["lr"], rtol=1e-12)
        assert h.columns == alone.columns
        assert h.config == {**run.to_dict(), "threads": 1, "stacked": True} and h.status == alone.status == "completed"
    # different decay and seeds really give different runs
    assert _max_param_gap(stacked[0].model, stacked[1].model) > 1e-2


def test_stacked_adamw_matches_torch_on_random_gradients():
    torch.manual_seed(0)
    shapes = {"w": (3, 4, 5), "b": (3, 5)}
    params = {k: torch.randn(s, requires_grad=True) for k, s in shapes.items()}
    copies = [{k: v[r].detach().clone().requires_grad_(True) for k, v in params.items()} for r in range(3)]
    lr, wd = torch.tensor([1e-3, 3e-3, 1e-2]), torch.tensor([0.0, 1.0, 10.0])
    opt = StackedAdamW(params, lr, wd, betas=(0.9, 0.98))
    ref = [torch.optim.AdamW(c.values(), lr=float(lr[r]), weight_decay=float(wd[r]), betas=(0.9, 0.98)) for r, c in enumerate(copies)]
    for _ in range(10):
        grads = {k: torch.randn(s) for k, s in shapes.items()}
        for k in params:
            params[k].grad = grads[k].clone()
            for r in range(3):
                copies[r][k].grad = grads[k][r].clone()
        opt.step()
        for o in ref:
            o.step()
    for k in params:
        for r in range(3):
            assert float((params[k][r] - copies[r][k]).detach().abs().max()) < 1e-6


def test_a_diverging_run_does_not_touch_the_others():
    good = BASE.replace(weight_decay=1.0)
    bad = good.replace(lr=10.0, weight_decay=100.0, seed=1)  # θ ← θ·(1 − 1000) each step: overflows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h_good, h_bad = train_batched([good, bad], progress="none")
    alone = nhtlab.run_modular(good, progress="none")
    assert h_bad.status == "diverged" and "non-finite" in h_bad.message
    assert h_good.status == "completed"
    assert _max_param_gap(h_good.model, alone.model) < 1e-6


def test_stop_after_freezes_the_finished_run_only():
    # a setting that groks within ~1,200 steps (the delay-law chapter's large init)
    fast = nhtlab.ModularRun(p=31, train_fraction=0.7, model_kwargs=dict(width=128, embed_std=1.0), steps=1500,
                             eval_every=25, lr=1e-2, weight_decay=1.0, stop_after=0, device="cpu")
    slow = fast.replace(weight_decay=0.0, seed=3)
    h_fast, h_slow = train_batched([fast, slow], progress="none")
    assert h_fast.status == "stopped" and h_slow.status == "completed"
    assert h_fast.column("step")[-1] < 1500 and h_fast.column("test_acc")[-1] >= 0.99
    assert h_slow.column("step")[-1] == 1500
    # the stopped run's model is the one of its last row, not the stack's final state
    assert nhtlab.total_norm(h_fast.model) == pytest.approx(h_fast.rows[-1]["norm"], rel=1e-9)
    assert nhtlab.total_norm(h_slow.model) == pytest.approx(h_slow.rows[-1]["norm"], rel=1e-9)


def test_runs_that_cannot_share_a_stack_are_refused():
    assert batch_key(BASE) == batch_key(BASE.replace(weight_decay=3.0, seed=4, lr=1e-2))
    assert batch_key(BASE) != batch_key(BASE.replace(p=13))
    with pytest.raises(ValueError, match="must hold runs that share"):
        train_batched([BASE, BASE.replace(p=13)], progress="none")
    with pytest.raises(ValueError, match="at least one ModularRun"):
        train_batched([], progress="none")
    with pytest.raises(TypeError, match="'runs' parameter of train_batched"):
        train_batched([BASE, "not a run"], progress="none")


TRANSFORMER = nhtlab.companion(1.0, p=13, steps=30, eval_every=10, device="cpu", batch_size=16, stop_after=None,
                               model_kwargs=dict(d_model=32, n_heads=4, d_ff=64))


def test_stacked_transformers_equal_separate_adamw_runs():
    """The companion transformer, stacked: different λ, η and seeds, against separate torch.optim.AdamW runs.

    Every parameter agrees within 1e-6 except the attention's key bias and a rare element elsewhere:
    the key bias's gradient is zero in exact arithmetic (softmax ignores a shift shared by all keys),
    so Adam turns float noise into steps of size ≤ η; it differs by O(η) and, as the logits show,
    changes nothing the model computes. Adam does the same to any element whose gradient happens to
    be near zero (a GELU unit flat on the batch), and which elements those are depends on how the CPU
    rounds: on a Zen 3 (AVX2) one fc.weight element of 2,048 moved by 5e-6. So at most one element in
    a thousand may pass 1e-6, none may pass Adam's bound, and the model's function must agree. A
    stacking bug (a member's λ, η or seed mixed up) moves most elements, the norms and the logits.
    """
    runs = [TRANSFORMER.replace(weight_decay=wd, seed=seed, lr=lr) for wd, seed, lr in [(0.0, 0, 1e-3), (1.0, 1, 3e-3), (5.0, 2, 1e-3)]]
    stacked = train_batched(runs, progress="none")
    x = nhtlab.modular_data(13, seed=0)
    inputs = torch.cat([x.x_train, x.x_test])
    for run, h in zip(runs, stacked):
        alone = nhtlab.run_modular(run, progress="none")
        sa, sb = h.model.state_dict(), alone.model.state_dict()
        assert sa.keys() == sb.keys()
        d = 32
        for name in sa:
            a, b = sa[name], sb[name]
            if name.endswith("attn.qkv.bias"):
                assert float((a[d:2 * d] - b[d:2 * d]).abs().max()) <= 2 * run.lr * run.steps  # the key bias: O(η) noise
                a, b = torch.cat([a[:d], a[2 * d:]]), torch.cat([b[:d], b[2 * d:]])
            gap = (a - b).abs()
            assert float(gap.max()) <= 2 * run.lr * run.steps, name  # Adam's bound: a step moves an element ≤ ~η
            assert int((gap > 1e-6).sum()) <= max(1, gap.numel() // 1000), name  # rare near-zero gradients only
        with torch.no_grad():
            assert float((h.model(inputs) - alone.model(inputs)).abs().max()) < 1e-4
        assert h.column("step").tolist() == alone.column("step").tolist() == [0, 10, 20, 30]
        np.testing.assert_allclose(h["train_loss"], alone["train_loss"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h["norm"], alone["norm"], rtol=1e-5)
        assert h.columns == alone.columns
    assert _max_param_gap(stacked[0].model, stacked[1].model) > 1e-2


def test_finished_runs_leave_the_stack(monkeypatch):
    """A run that stopped (stop_after) or diverged stops costing compute; the others are unchanged."""
    widths = []
    real_vmap = torch.vmap

    def counting_vmap(fn, *args, **kwargs):
        batched = real_vmap(fn, *args, **kwargs)

        def call(params, buffers, x):
            widths.append(x.shape[0])  # runs in the stack for this forward pass
            return batched(params, buffers, x)
        return call

    monkeypatch.setattr(torch, "vmap", counting_vmap)
    fast = nhtlab.ModularRun(p=31, train_fraction=0.7, model_kwargs=dict(width=128, embed_std=1.0), steps=1500,
                             eval_every=25, lr=1e-2, weight_decay=1.0, stop_after=0, device="cpu")
    slow = fast.replace(weight_decay=0.0, seed=3)
    bad = fast.replace(lr=10.0, weight_decay=100.0, seed=1, stop_after=None)  # overflows at once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h_fast, h_slow, h_bad = train_batched([fast, slow, bad], progress="none")
    monkeypatch.setattr(torch, "vmap", real_vmap)
    assert h_bad.status == "diverged" and h_fast.status == "stopped" and h_slow.status == "completed"
    stop = int(h_fast.column("step")[-1])
    assert stop < 1500
    assert max(widths) == 3 and widths[-1] == 1  # only the slow run is left at the end
    # after the bad run diverged (first evaluation at step 25 at the latest) the stack is at most 2 wide
    assert widths.count(3) <= 2 * 2 + 25 and 3 not in widths[60:]
    assert sum(widths) < 3 * len(widths) - (1500 - stop)  # the stopped run took no more steps
    # dropping runs changes nothing for the others: each run equals its own one-run stack. (Against
    # run_modular, 850 steps at lr 1e-2 amplify float rounding enough to move T_grok by a few evaluations,
    # with or without dropping; the first test checks the stacked step itself.)
    for run, h in ((fast, h_fast), (slow, h_slow)):
        (alone,) = train_batched([run], progress="none")
        assert h.status == alone.status and h.column("step").tolist() == alone.column("step").tolist()
        assert _max_param_gap(h.model, alone.model) < 1e-5
