"""The delay law's definitions (companion and grok), its fits and the contraction fit, on histories with known answers."""

import math

import numpy as np
import pytest

from nhtlab.analysis.delay import DEFINITIONS, contraction_fit, delay_fits, delay_point, linear_fit, predicted_delay
from nhtlab.history import History


def law_history(t_mem=200, v_mem=4000.0, v_final=1000.0, lr=1e-3, wd=1.0, rate_factor=2.0, window=500, every=100,
                seed=0, tag="a", offset=0.0):
    """Train accuracy 1 from T_mem; ‖θ‖² decays from V_mem towards V_final at rate_factor·ηλ per step;
    test accuracy reaches 1 at the step where ‖θ‖² crosses 1.5·V_final (+ ``offset`` steps);
    the run ends ``window`` steps after T_grok, where ‖θ‖² = V_final exactly."""
    gamma = rate_factor * lr * wd
    t_cross = t_mem + math.log(v_mem / (1.5 * v_final)) / gamma
    t_grok = int(math.ceil((t_cross + offset) / every) * every)
    t_end = t_grok + window
    steps = np.arange(0, t_end + 1, every)
    # exponential from V_mem at T_mem, rescaled so that V(t_end) = V_final exactly
    k = math.log(v_mem / v_final) / (t_end - t_mem)
    norm = np.where(steps < t_mem, v_mem * 1.2, v_mem * np.exp(-k * (steps - t_mem)))
    rows = [{"step": int(s), "train_acc": 1.0 if s >= t_mem else 0.2, "test_acc": 1.0 if s >= t_grok else 0.01,
             "norm": float(v)} for s, v in zip(steps, norm)]
    config = {"lr": lr, "weight_decay": wd, "seed": seed, "model_kwargs": {"tag": tag}}
    return History(rows=rows, status="stopped", config=config)


def test_linear_fit_closed_form_and_r2():
    x = np.arange(10.0)
    fit = linear_fit(x, 3 * x - 2)
    assert fit.slope == pytest.approx(3) and fit.intercept == pytest.approx(-2) and fit.r2 == pytest.approx(1) and fit.n == 10
    y = 3 * x + np.array([1, -1] * 5)
    assert linear_fit(x, y).r2 == pytest.approx(1 - 10 / ((y - y.mean()) ** 2).sum(), rel=1e-2)
    noisy = y + np.random.default_rng(0).normal(size=10)  # R² is 1 − SS_res/SS_tot of the least-squares line
    slope, intercept = np.polyfit(x, noisy, 1)
    residual = noisy - (slope * x + intercept)
    assert linear_fit(x, noisy).r2 == pytest.approx(1 - (residual @ residual) / ((noisy - noisy.mean()) ** 2).sum(), abs=1e-12)
    assert math.isnan(linear_fit(x, np.full(10, 4.0)).r2)  # a constant y: nothing to explain, no R²
    with pytest.raises(ValueError, match="at least 2 points"):
        linear_fit([1.0], [2.0])
    with pytest.raises(ValueError, match="two distinct values"):
        linear_fit([1.0, 1.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        linear_fit([1.0, math.nan], [2.0, 3.0])


def test_companion_definition_by_hand():
    h = law_history(t_mem=200, v_mem=4000.0, v_final=1000.0, lr=1e-3, wd=1.0)
    p = delay_point(h)  # the default is the companion's definition
    steps, norm = h.column("step"), h.column("norm")
    assert p["definition"] == "companion" and p["v_mem"] == 4000.0 and p["v_final"] == pytest.approx(1000.0)
    first = int(steps[(steps >= 200) & (norm <= 1500.0)][0])
    assert p["t_escape"] == first == p["measured"]
    assert p["predicted"] == pytest.approx(math.log(4.0) / 2e-3) == pytest.approx(p["escape_theory"])
    assert p["final_window"] == 500 and p["t_end"] == p["t_grok"] + 500
    assert p["inv_lambda"] == 1.0 and p["inv_eta_lambda"] == pytest.approx(1000.0)


def test_grok_definition_by_hand():
    h = law_history(t_mem=300, v_mem=5000.0, v_final=800.0, lr=2e-3, wd=0.5)
    p = delay_point(h, definition="grok")
    v_grok = float(h.column("norm")[h.column("step") == p["t_grok"]][0])
    assert p["measured"] == p["t_grok"] - 300
    assert p["predicted"] == pytest.approx(math.log(5000.0 / v_grok) / 1e-3)
    assert set(DEFINITIONS) == {"companion", "grok"}


def test_runs_without_a_delay_have_no_point():
    never = History(rows=[{"step": 0, "train_acc": 1.0, "test_acc": 0.1, "norm": 10.0}], config={"lr": 1e-3, "weight_decay": 1.0})
    assert delay_point(never) is None and delay_point(never, definition="grok") is None
    no_decay = law_history(wd=1.0)
    no_decay.config["weight_decay"] = 0.0
    assert delay_point(no_decay) is None


def test_the_law_beats_one_over_lambda_when_eta_and_the_gap_vary():
    """Delays made by the law (3× its clock + 200 steps): varying η and the norm gap at fixed λ
    separates it from 1/λ and from 1/(ηλ); a λ-only sweep cannot."""
    settings = [(1e-3, 1.0, 4.0), (1e-3, 0.5, 4.0), (1e-3, 0.3, 4.0), (2e-3, 1.0, 4.0), (5e-4, 1.0, 4.0),
                (1e-3, 1.0, 16.0), (1e-3, 1.0, 1.5)]
    points = []
    for i, (lr, wd, gap) in enumerate(settings):
        clock = predicted_delay(gap, 1.0, lr, wd)
        points.append({"definition": "grok", "setting": str(i), "measured": 3 * clock + 200, "predicted": clock,
                       "inv_lambda": 1 / wd, "inv_eta_lambda": 1 / (lr * wd)})
    fits = delay_fits(points)
    assert set(fits) == {"vs_predicted", "vs_inverse_lambda", "vs_inverse_eta_lambda"}
    assert fits["vs_predicted"].r2 == pytest.approx(1.0) and fits["vs_predicted"].slope == pytest.approx(3.0)
    assert fits["vs_predicted"].intercept == pytest.approx(200.0)
    assert 1.0 - 1e-9 > 0.9 > fits["vs_inverse_eta_lambda"].r2 > fits["vs_inverse_lambda"].r2
    lambda_only = delay_fits(points[:3])  # same η, same gap: every law is the same line
    assert lambda_only["vs_inverse_lambda"].r2 == pytest.approx(1.0) == pytest.approx(lambda_only["vs_predicted"].r2)


def test_seed_means_and_mixed_definitions():
    points = []
    for wd in (0.3, 0.5, 1.0):
        for seed, jitter in ((0, -300), (1, 300)):
            points.append(delay_point(law_history(wd=wd, seed=seed, offset=jitter + 300), definition="grok"))
    per_run, means = delay_fits(points), delay_fits(points, average_seeds=True)
    assert means["vs_inverse_lambda"].n == 3 and per_run["vs_inverse_lambda"].n == 6
    assert means["vs_inverse_lambda"].r2 > per_run["vs_inverse_lambda"].r2
    assert "vs_inverse_eta_lambda" in means  # η is fixed but λ varies, so 1/(ηλ) varies too
    with pytest.raises(ValueError, match="mixes definitions"):
        delay_fits(points + [delay_point(law_history())])
    with pytest.raises(ValueError, match="at least 2 grokked runs"):
        delay_fits(points[:1] + [None])


@pytest.mark.parametrize("r, amplitude, offset", [(0.997, 3000.0, 800.0), (0.9995, 5000.0, 200.0), (0.99, 1000.0, 0.0)])
def test_contraction_fit_recovers_a_offset_exponential(r, amplitude, offset):
    steps = np.arange(0, 6001, 100)
    t_mem = 400
    norm = np.where(steps < t_mem, 9000.0, amplitude * r ** (steps - t_mem) + offset)
    rows = [{"step": int(s), "train_acc": 1.0 if s >= t_mem else 0.5, "test_acc": 1.0 if s >= 3000 else 0.0, "norm": float(v)}
            for s, v in zip(steps, norm)]
    h = History(rows=rows, config={"lr": 1e-3, "weight_decay": 1.0})
    fit = contraction_fit(h)
    assert fit.start == t_mem and fit.stop == 6000
    assert fit.r == pytest.approx(r, rel=1e-7)
    assert fit.amplitude == pytest.approx(amplitude, rel=1e-4) and fit.offset == pytest.approx(offset, abs=1e-2 * amplitude)
    assert fit.ratio == pytest.approx((1 - r) / 1e-3, rel=1e-4) and fit.r_theory == pytest.approx(1 - 2e-3)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9)


def test_contraction_fit_needs_memorisation_and_points():
    rows = [{"step": s, "train_acc": 0.5, "test_acc": 0.0, "norm": 100.0 - s} for s in range(0, 50, 10)]
    assert contraction_fit(History(rows=rows, config={"lr": 1e-3, "weight_decay": 1.0})) is None
    rows[-1]["train_acc"] = 1.0
    assert contraction_fit(History(rows=rows, config={"lr": 1e-3, "weight_decay": 1.0})) is None  # one point after T_mem


def test_predicted_delay_rate_factor():
    assert predicted_delay(math.e * 10, 10, 1e-3, 1.0, rate_factor=2.0) == pytest.approx(500.0)
    with pytest.raises(ValueError, match="'rate_factor' parameter of predicted_delay"):
        predicted_delay(20, 10, 1e-3, 1.0, rate_factor=0.0)
