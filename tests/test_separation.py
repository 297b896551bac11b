"""The clean-norm-separation estimator on synthetic trajectories with known answers."""

import numpy as np
import pytest

from nhtlab.analysis.separation import clean_norm_separation, reliance_from_generalisation, reliance_from_shortcut, separation_from_history, spearman, format_score
from nhtlab.history import History

STEPS = np.arange(0, 2001, 20)
# the norm rises until step 500, then contracts exponentially
NORM = np.where(STEPS <= 500, 100 + STEPS, 600 * np.exp(-(STEPS - 500) / 600))


def test_spearman_closed_forms():
    x = np.arange(10.0)
    assert spearman(x, x ** 3) == pytest.approx(1.0)
    assert spearman(x, -np.exp(x)) == pytest.approx(-1.0)
    assert np.isnan(spearman(x, np.ones(10)))
    # ties use average ranks: Pearson on ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4)
    r = np.array([1, 2.5, 2.5, 4]) - 2.5
    s = np.array([1, 2, 3, 4]) - 2.5
    assert spearman(np.array([0, 1, 1, 2.0]), np.arange(4.0)) == pytest.approx((r @ s) / np.sqrt((r @ r) * (s @ s)))


def test_clean_separation_scores_one():
    # reliance falls sharply (a sigmoid) while the norm contracts: a monotone relation
    phi = 1 / (1 + np.exp((STEPS - 1200) / 50))
    sep = clean_norm_separation(STEPS, NORM, phi, start_step=500)
    assert sep.defined and sep.score == pytest.approx(1.0) and sep.reason == "" and format_score(sep) == "1.00"
    assert sep.start_step == 500 and sep.peak_step == 500 and sep.phi_drop > 0.99 and sep.norm_contraction > 0.9


def test_points_before_the_fitted_shortcut_are_ignored():
    # before T_mem reliance falls while the norm rises; only what happens after the shortcut is fitted counts
    phi = np.where(STEPS < 500, 1 - STEPS / 500, 1 / (1 + np.exp((STEPS - 1200) / 50)))
    assert clean_norm_separation(STEPS, NORM, phi, start_step=500).score == pytest.approx(1.0)
    assert clean_norm_separation(STEPS, NORM, phi, start_step=0).score < 0.8  # the whole run looks less clean


def test_window_starts_at_the_fitted_step_not_the_norm_peak():
    # the norm peaks at step 1000, after reliance already fell (at ~700): a window from the peak would see
    # φ = 0 throughout (undefined); the window from the fitted step sees the norm rise while φ falls
    norm = np.where(STEPS <= 1000, 100 + STEPS, 1100 - 0.1 * (STEPS - 1000))
    phi = (STEPS < 700).astype(float)
    sep = clean_norm_separation(STEPS, norm, phi, start_step=200)
    assert sep.defined and sep.start_step == 200 and sep.peak_step == 1000
    assert sep.score < 0  # reliance fell while the norm was still rising: no clean separation
    assert not clean_norm_separation(STEPS, norm, phi, start_step=1200).defined  # φ ≡ 0 there


def test_reliance_unrelated_to_the_norm_scores_near_zero():
    rng = np.random.default_rng(0)
    phi = rng.uniform(size=len(STEPS))
    assert abs(clean_norm_separation(STEPS, NORM, phi, start_step=500).score) < 0.25


def test_reliance_rising_as_the_norm_falls_scores_minus_one():
    phi = np.clip((STEPS - 500) / 1500, 0, 1)
    assert clean_norm_separation(STEPS, NORM, phi, start_step=500).score == pytest.approx(-1.0)


def test_undefined_scores_are_nan_never_zero():
    sep = clean_norm_separation(STEPS, NORM, np.ones(len(STEPS)), start_step=500)
    assert not sep.defined and np.isnan(sep.score) and sep.phi_drop == 0.0 and "constant" in sep.reason
    assert format_score(sep) == "undefined (φ or ‖θ‖² constant in the window)" and str(sep) == format_score(sep)
    never = clean_norm_separation(STEPS, NORM, np.ones(len(STEPS)), start_step=None)
    assert not never.defined and np.isnan(never.score) and never.reason == "shortcut never fitted"


def test_too_few_points_in_the_window():
    sep = clean_norm_separation(STEPS, NORM, np.linspace(1, 0, len(STEPS)), start_step=1960)
    assert not sep.defined and sep.n_points == 3 and np.isnan(sep.score) and "fewer than 4" in sep.reason
    with pytest.raises(ValueError, match="'start_step' parameter of clean_norm_separation must be at most"):
        clean_norm_separation(STEPS, NORM, NORM, start_step=5000)


def test_reliance_rescaling():
    np.testing.assert_allclose(reliance_from_shortcut(np.array([0.1, 1.0, 0.55, 0.0]), 10), [0, 1, 0.5, 0])
    np.testing.assert_allclose(reliance_from_generalisation(np.array([0.1, 1.0]), 10), [1, 0])


def test_from_history_reads_the_right_columns():
    phi = 1 / (1 + np.exp((STEPS - 1200) / 50))
    acc = 0.1 + 0.9 * phi  # shortcut accuracy
    rows = [{"step": int(s), "norm": float(n), "cue_acc": float(a), "test_acc": float(1.1 - a)}
            for s, n, a in zip(STEPS, NORM, acc)]
    h = History(rows=rows, status="completed")
    assert separation_from_history(h, 10, start_step=500).score == pytest.approx(1.0)
    # "auto" for a shortcut: the first step the border is followed (cue_acc ≥ 0.3 and above conflict_acc)
    rows2 = [dict(r, conflict_acc=1.0 - r["cue_acc"]) for r in rows]
    assert separation_from_history(History(rows=rows2), 10).start_step == 0
    # test accuracy rising while the norm falls: a memorisation shortcut being left, also +1
    assert separation_from_history(h, 10, kind="generalisation", start_step=500).score == pytest.approx(1.0)
    # "auto" for generalisation: T_mem, and no train_acc column here means no T_mem: undefined
    never = separation_from_history(History(rows=[dict(r, train_acc=0.5) for r in rows]), 10, kind="generalisation")
    assert not never.defined and np.isnan(never.score) and never.reason == "shortcut never fitted"
    with pytest.raises(ValueError, match="'kind' parameter of separation_from_history must be one of"):
        separation_from_history(h, 10, kind="border")
    with pytest.raises(ValueError, match="'steps', 'norm' and 'phi' parameters"):
        clean_norm_separation(STEPS, NORM[:-1], acc)
