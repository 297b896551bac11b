"""Delay-law fits: closed forms on synthetic data, the V_sc/V_st choices, the contraction rate."""

import math

import numpy as np
import pytest

from nhtlab.delay import contraction_rate, delay_fits, delay_point, linear_fit, norm_gap, predicted_delay
from nhtlab.train import History


def run_history(t_mem=100, t_grok=1100, peak=600, lr=1e-2, wd=0.5, v0=1000.0, rate=None, steps=2000):
    """Norm rises linearly to a peak, then contracts exponentially (rate per step)."""
    rate = 2 * lr * wd if rate is None else rate
    grid = np.arange(0, steps + 1, 25)
    v_peak = v0 * 3
    norm = np.where(grid <= peak, v0 + (v_peak - v0) * grid / peak, v_peak * np.exp(-rate * (grid - peak)))
    rows = [{"step": int(s), "train_acc": 1.0 if s >= t_mem else 0.1, "test_acc": 1.0 if s >= t_grok else 0.05, "norm": float(n)}
            for s, n in zip(grid, norm)]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": wd, "seed": 0})


def test_linear_fit_closed_form_and_r2():
    x = np.arange(10.0)
    fit = linear_fit(x, 3 * x - 2)
    assert fit.slope == pytest.approx(3) and fit.intercept == pytest.approx(-2) and fit.r2 == pytest.approx(1) and fit.n == 10
    noisy = linear_fit(x, 3 * x + np.array([1, -1] * 5))
    assert noisy.r2 == pytest.approx(1 - 10 / (((3 * x + np.array([1, -1] * 5)) - (3 * x + np.array([1, -1] * 5)).mean()) ** 2).sum(), rel=1e-2)
    assert 0.9 < noisy.r2 < 1
    assert np.allclose(fit.predict([0, 1]), [-2, 1])
    with pytest.raises(ValueError, match="at least 2 points"):
        linear_fit([1.0], [2.0])
    with pytest.raises(ValueError, match="two distinct values"):
        linear_fit([1.0, 1.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        linear_fit([1.0, math.nan], [2.0, 3.0])


def test_norm_gap_choices_and_delay_point():
    h = run_history()
    v_peak = 3000.0
    v_mem = 1000 + 2000 * 100 / 600
    assert norm_gap(h, v_sc="peak", v_st="end")[0] == pytest.approx(v_peak)
    assert norm_gap(h, v_sc="mem", v_st="grok") == pytest.approx((v_mem, v_peak * math.exp(-0.01 * 500)))
    with pytest.raises(ValueError, match="'v_sc' parameter of norm_gap"):
        norm_gap(h, v_sc="start")
    p = delay_point(h, v_sc="peak", v_st="grok")
    assert p["measured"] == 1000 and p["inv_lambda"] == 2.0
    # log(V_peak / V_grok) = rate · (T_grok − peak) = 2ηλ · 500, so predicted = 1000 steps
    assert p["predicted"] == pytest.approx(predicted_delay(p["v_sc"], p["v_st"], 1e-2, 0.5)) == pytest.approx(1000)
    never = History(rows=[{"step": 0, "train_acc": 1.0, "test_acc": 0.1, "norm": 10.0}], config={"lr": 1e-2, "weight_decay": 1.0})
    assert delay_point(never) is None


def test_delay_fits_recover_a_one_over_lambda_law():
    points = []
    for wd in (0.25, 0.5, 1.0, 2.0):
        t_grok = 100 + int(round(500 / wd / 25)) * 25
        points.append(delay_point(run_history(t_grok=t_grok, peak=60, wd=wd, steps=3000), v_sc="peak", v_st="grok"))
    assert None not in points
    fits = delay_fits(points)
    assert fits["vs_inverse_lambda"].n == 4
    assert fits["vs_inverse_lambda"].slope == pytest.approx(500, rel=0.05)
    assert fits["vs_inverse_lambda"].r2 > 0.99
    assert fits["vs_predicted"].r2 > 0.99
    with pytest.raises(ValueError, match="at least 2 grokked runs"):
        delay_fits(points[:1] + [None])
    # seed means: two seeds per λ whose delays straddle the law average back onto it
    jittered = [{**p, "measured": p["measured"] + d, "seed": s} for p in points for s, d in ((0, -150), (1, 150))]
    assert delay_fits(jittered)["vs_inverse_lambda"].r2 < 0.99
    mean_fit = delay_fits(jittered, average_seeds=True)["vs_inverse_lambda"]
    assert mean_fit.n == 4 and mean_fit.r2 > 0.99 and mean_fit.slope == pytest.approx(500, rel=0.05)


def test_contraction_rate_recovers_the_exponential():
    for rate in (0.004, 0.02):
        fit = contraction_rate(run_history(rate=rate, lr=1e-2, wd=1.0), stop="grok")
        assert fit.rate == pytest.approx(rate, rel=1e-6) and fit.r2 == pytest.approx(1.0)
        assert fit.ratio == pytest.approx(rate / 1e-2) and fit.start == 600 and fit.stop == 1100
    # a norm that rises to the end has no contraction window
    rising = History(rows=[{"step": s, "train_acc": 1.0, "test_acc": 0.1, "norm": 100.0 + s} for s in range(0, 500, 25)],
                     config={"lr": 1e-2, "weight_decay": 1.0})
    assert contraction_rate(rising) is None
    with pytest.raises(ValueError, match="'stop' parameter of contraction_rate"):
        contraction_rate(rising, stop="peak")
