"""Regime report: records, readings over seeds and the order check, on synthetic regime-table rows."""

import pytest

import nhtlab
from nhtlab.book.regime_report import (check_regime_order, norm_start_records, regime_readings, regime_records,
                                           regime_seed_records, regimes_by_lambda)


def row(lam, seed, regime, peak_step=0):
    return {"weight_decay": lam, "seed": seed, "regime": regime, "t_mem": 500, "t_grok": None, "v_mem": 3000.0,
            "last_step": 1500, "contraction": 0.05, "max_test_acc": 0.1, "reason": "because", "peak_step": peak_step}


ORDERED = [row(0.01, 0, "weak", 300), row(0.01, 1, "weak"), row(1.0, 0, "intermediate"), row(1.0, 1, "intermediate"),
           row(5.0, 0, "strong"), row(5.0, 1, "strong")]


def test_order_holds_on_an_ordered_sweep_and_fails_on_one_that_steps_back():
    assert check_regime_order(ORDERED)
    backwards = ORDERED[:4] + [row(5.0, 0, "weak"), row(5.0, 1, "strong")]
    c = check_regime_order(backwards)
    assert not c and "λ = 5: weak, strong" in c.detail
    # undetermined runs judge nothing
    assert check_regime_order(ORDERED + [row(0.1, 0, "undetermined")])


def test_readings_count_seeds_against_the_expected_regime():
    expected = {0.01: "weak", 1.0: "intermediate", 5.0: "strong"}
    assert all(r.holds for r in regime_readings(ORDERED, expected))
    flipped = ORDERED[:3] + [row(1.0, 1, "undetermined")] + ORDERED[4:]
    r = regime_readings(flipped, expected, rule="all")[1]
    assert (r.k, r.n, r.holds, r.flips) == (1, 2, False, True)
    assert not regime_readings(ORDERED, {2.0: "strong"})[0].holds  # a λ not trained has no seed


def test_records():
    rec = regime_records(ORDERED, nhtlab.papers.COMPANION_GROK_COUNTS)
    assert rec[0]["λ"] == 0.01 and rec[0]["paper grokked"] == "0/10" and rec[0]["reason"] == "because"
    assert regime_records(ORDERED)[0]["paper grokked"] is None
    assert regimes_by_lambda(ORDERED)[1.0] == {0: "intermediate", 1: "intermediate"}
    seeds = regime_seed_records(ORDERED[:3] + [row(1.0, 1, "undetermined")])
    assert seeds[1] == {"λ": 1.0, "regimes": "seed 0: intermediate, seed 1: undetermined", "flips": "yes"}
    starts = norm_start_records(ORDERED)
    assert starts[0] == {"λ": 0.01, "largest at init": "1 of 2", "rises first": "seed 0"}
    assert starts[1]["rises first"] is None
    with pytest.raises(TypeError):
        regime_records("not rows")
