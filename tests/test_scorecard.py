import pytest

from nhtlab.scorecard import PREDICTIONS, cue_escape_step, delay_scaling_ok, regimes_in_order, scorecard_text
from nhtlab.separation import Separation
from nhtlab.train import History


def test_regimes_in_order_collapses_repeats_and_ignores_too_early():
    assert regimes_in_order({0.0: "weak", 0.1: "weak", 1.0: "intermediate", 3.0: "too early", 10.0: "strong"})
    assert not regimes_in_order({0.0: "weak", 1.0: "strong", 3.0: "intermediate"})
    assert not regimes_in_order({0.0: "weak", 1.0: "intermediate"})


def test_delay_scaling_is_t_times_lambda_within_tolerance():
    assert delay_scaling_ok({0.5: 2000, 1.0: 1000, 2.0: 520})       # T·λ = 1000, 1000, 1040
    assert not delay_scaling_ok({0.5: 1000, 1.0: 1000})             # T·λ = 500 vs 1000
    assert not delay_scaling_ok({1.0: 1000, 2.0: None})             # one measured run shows nothing
    with pytest.raises(ValueError, match="'tolerance' parameter of delay_scaling_ok"):
        delay_scaling_ok({1.0: 1}, tolerance=1.0)


def test_cue_escape_step_finds_the_halving_after_the_peak():
    rows = [{"step": s, "cue_acc": a} for s, a in [(0, 1.0), (10, 1.0), (20, 0.8), (30, 0.5), (40, 0.2)]]
    history = History(rows=rows, status="completed")
    sep = Separation(score=1.0, defined=True, n_points=3, peak_step=10, phi_at_peak=1.0, phi_final=0.11,
                     phi_drop=0.89, norm_contraction=0.3)
    # φ = (acc − 0.1)/0.9: 1.0 → 1, 0.8 → 0.78, 0.5 → 0.44 ≤ 0.5
    assert cue_escape_step(history, sep) == 30
    assert cue_escape_step(history, sep, fraction=0.05) is None


def test_scorecard_text_counts_the_passes():
    row = dict.fromkeys(PREDICTIONS, False) | {"P2 three regimes": True, "P5 clean separation": True}
    text = scorecard_text({"toy": row})
    assert "P2 ✓" in text and "P1 ✗" in text and "(2/6)" in text
