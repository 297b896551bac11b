"""The clean-norm-separation estimator on synthetic trajectories with known answers."""

import numpy as np
import pytest

from nhtlab.separation import (clean_norm_separation, reliance_from_generalisation, reliance_from_shortcut,
                               separation_from_history, spearman)
from nhtlab.train import History

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
    sep = clean_norm_separation(STEPS, NORM, phi)
    assert sep.defined and sep.score == pytest.approx(1.0)
    assert sep.peak_step == 500 and sep.phi_drop > 0.99 and sep.norm_contraction > 0.9


def test_points_before_the_peak_are_ignored():
    # before the peak reliance falls while the norm rises; only the decline after it counts
    phi = np.where(STEPS < 500, 1 - STEPS / 500, 1 / (1 + np.exp((STEPS - 1200) / 50)))
    assert clean_norm_separation(STEPS, NORM, phi).score == pytest.approx(1.0)
    assert spearman(NORM, phi) < 0.8  # the whole run would look less clean


def test_reliance_unrelated_to_the_norm_scores_near_zero():
    rng = np.random.default_rng(0)
    phi = rng.uniform(size=len(STEPS))
    assert abs(clean_norm_separation(STEPS, NORM, phi).score) < 0.25


def test_reliance_rising_as_the_norm_falls_scores_minus_one():
    phi = np.clip((STEPS - 500) / 1500, 0, 1)
    assert clean_norm_separation(STEPS, NORM, phi).score == pytest.approx(-1.0)


def test_constant_reliance_is_undefined_and_scores_zero():
    sep = clean_norm_separation(STEPS, NORM, np.ones(len(STEPS)))
    assert not sep.defined and sep.score == 0.0 and sep.phi_drop == 0.0


def test_too_few_points_after_the_peak():
    norm = np.arange(len(STEPS), dtype=float)  # peaks at the last step
    sep = clean_norm_separation(STEPS, norm, np.linspace(1, 0, len(STEPS)))
    assert not sep.defined and sep.n_points == 1


def test_reliance_rescaling():
    np.testing.assert_allclose(reliance_from_shortcut(np.array([0.1, 1.0, 0.55, 0.0]), 10), [0, 1, 0.5, 0])
    np.testing.assert_allclose(reliance_from_generalisation(np.array([0.1, 1.0]), 10), [1, 0])


def test_from_history_reads_the_right_columns():
    phi = 1 / (1 + np.exp((STEPS - 1200) / 50))
    acc = 0.1 + 0.9 * phi  # shortcut accuracy
    rows = [{"step": int(s), "norm": float(n), "cue_acc": float(a), "test_acc": float(1.1 - a)}
            for s, n, a in zip(STEPS, NORM, acc)]
    h = History(rows=rows, status="completed")
    assert separation_from_history(h, 10).score == pytest.approx(1.0)
    # test accuracy rising while the norm falls: a memorisation shortcut being left, also +1
    assert separation_from_history(h, 10, kind="generalisation").score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'kind' parameter of separation_from_history must be one of"):
        separation_from_history(h, 10, kind="border")
    with pytest.raises(ValueError, match="'steps', 'norm' and 'phi' parameters"):
        clean_norm_separation(STEPS, NORM[:-1], acc)
