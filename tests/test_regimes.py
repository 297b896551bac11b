"""Regime diagnosis: synthetic curves for each rule, threshold parameters, and short real runs."""

import numpy as np
import pytest

import nhtlab
from nhtlab.regimes import diagnose_regime, regime_order_ok, regime_table
from nhtlab.train import History

STEPS = np.arange(0, 3001, 50)


def synthetic(train, test, norm, lr=1e-2, wd=1.0):
    rows = [{"step": int(s), "train_acc": float(a), "test_acc": float(b), "norm": float(n)}
            for s, a, b, n in zip(STEPS, train, test, norm)]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": wd})


def ramp(at, low=0.02, high=1.0):
    return np.where(STEPS >= at, high, low)


def test_strong_when_the_train_set_is_never_fitted():
    d = diagnose_regime(synthetic(np.full(len(STEPS), 0.7), np.full(len(STEPS), 0.05), 1000 * np.exp(-STEPS / 500)))
    assert d.regime == "strong" and not d.memorised and "never reached 99%" in d.reason


def test_weak_when_the_norm_keeps_growing_without_generalising():
    d = diagnose_regime(synthetic(ramp(100), np.full(len(STEPS), 0.05), 1000 + 20 * STEPS))
    assert d.regime == "weak" and d.memorised and not d.generalised and d.growth > 10


def test_intermediate_when_the_norm_peaks_then_the_test_set_is_learnt():
    norm = 1000 + 3000 * np.sin(np.pi * STEPS / 3000) ** 2 * np.exp(-STEPS / 3000)
    d = diagnose_regime(synthetic(ramp(100), ramp(2000), norm))
    assert d.regime == "intermediate" and d.generalised and d.events.t_grok == 2000


def test_intermediate_without_generalisation_needs_a_turned_norm_and_respects_thresholds():
    rise_fall = np.where(STEPS < 1500, 1000 + 2 * STEPS, 4000 - 0.4 * (STEPS - 1500))  # +200 % then −15 %
    h = synthetic(ramp(100), np.full(len(STEPS), 0.3), rise_fall)
    d = diagnose_regime(h)
    assert d.regime == "intermediate" and not d.generalised
    assert d.contraction == pytest.approx(0.15, abs=0.01)
    assert diagnose_regime(h, min_contraction=0.2).regime == "weak"  # the threshold decides
    assert diagnose_regime(synthetic(ramp(100), ramp(2000, high=0.95), rise_fall), generalise_threshold=0.9).generalised


def test_a_transition_under_way_is_intermediate():
    rising = 1000 + 20 * STEPS
    h = synthetic(ramp(100), np.where(STEPS >= 2500, 0.95, 0.05), rising)
    d = diagnose_regime(h)
    assert d.regime == "intermediate" and not d.generalised and "under way" in d.reason
    assert diagnose_regime(h, transition_threshold=0.97).regime == "weak"


def test_strong_when_the_decay_pins_the_norm_after_memorising():
    d = diagnose_regime(synthetic(ramp(200), np.full(len(STEPS), 0.4), np.full(len(STEPS), 500.0)))
    assert d.regime == "strong" and d.memorised and "held" in d.reason
    assert diagnose_regime(synthetic(ramp(200), np.full(len(STEPS), 0.4), np.full(len(STEPS), 500.0)), min_growth=0.0).regime == "weak"


def test_bad_thresholds_and_empty_histories_are_named():
    h = synthetic(ramp(100), ramp(2000), 1000 + STEPS)
    with pytest.raises(ValueError, match="'min_contraction' parameter of diagnose_regime"):
        diagnose_regime(h, min_contraction=1.0)
    with pytest.raises(ValueError, match="'fit_threshold' parameter of diagnose_regime"):
        diagnose_regime(h, fit_threshold=0.0)
    with pytest.raises(TypeError, match="'history' parameter of diagnose_regime"):
        diagnose_regime({"rows": []})
    with pytest.raises(ValueError, match="empty"):
        diagnose_regime(History())


def test_regime_order():
    assert regime_order_ok([0, 0.1, 1, 1, 10], ["weak", "weak", "intermediate", "intermediate", "strong"])
    assert regime_order_ok([1, 1, 3], ["weak", "intermediate", "intermediate"])  # a boundary shared by seeds
    assert not regime_order_ok([0, 1, 3], ["weak", "strong", "intermediate"])
    assert not regime_order_ok([1, 1, 3], ["weak", "intermediate", "weak"])
    with pytest.raises(ValueError, match="same length"):
        regime_order_ok([0, 1], ["weak"])
    with pytest.raises(ValueError, match="must hold only"):
        regime_order_ok([0], ["lazy"])


def test_short_real_runs_weak_without_decay_strong_with_huge_decay():
    base = nhtlab.ModularRun(p=13, model_kwargs=dict(width=64, embed_std=0.3), steps=300, eval_every=10, lr=1e-2, device="cpu")
    result = nhtlab.sweep([base.replace(weight_decay=0.0), base.replace(weight_decay=30.0)], strategy="batched", progress="none")
    table = regime_table(result)
    assert [row["regime"] for row in table] == ["weak", "strong"], [row["reason"] for row in table]
    assert table[0]["t_mem"] is not None and table[0]["growth"] > 1.0
    assert table[1]["t_mem"] is None
