"""Each scorecard rule on a history that passes it and one that fails it."""

import math

import numpy as np
import pytest

from nhtlab.analysis.layers import contraction_order
from nhtlab.analysis.scorecard import (PREDICTIONS, contraction_rule, delay_scaling, fit_delay_exponent,
                                      norm_ordering, regimes_in_order, score_predictions, separation_rule, three_regimes,
                                      worst_group_rise)
from nhtlab.book.shortcut_report import scorecard_rows, sweep_checks
from nhtlab.analysis.separation import clean_norm_separation
from nhtlab.history import History


def history(steps, **columns):
    return History(rows=[{"step": int(s), **{k: float(v[i]) for k, v in columns.items()}} for i, s in enumerate(steps)],
                   status="completed")


STEPS = np.arange(0, 1001, 100)
RISE_FALL = np.array([10, 50, 90, 100, 95, 80, 60, 50, 45, 42, 40.0])   # peaks at 300
RISING = np.linspace(10, 100, len(STEPS))                                  # never contracts


def test_p1_norm_ordering_passes_when_the_shortcut_norm_is_larger():
    v = norm_ordering(history(STEPS, norm=RISE_FALL), shortcut_step=300, structured_step=1000)
    assert v.passed and v.value == pytest.approx(100 / 40) and "100/40" in v.detail


def test_p1_fails_when_the_shortcut_is_the_cheaper_solution():
    # the border is fitted at step 100 (norm 50) and the network ends at a larger norm: V_mem < V_post
    v = norm_ordering(history(STEPS, norm=RISING), shortcut_step=100, structured_step=1000)
    assert not v.passed and v.value < 1
    unmeasured = norm_ordering(history(STEPS, norm=RISE_FALL), shortcut_step=300, structured_step=None)
    assert not unmeasured.passed and math.isnan(unmeasured.value) and "structure never reached" in unmeasured.detail
    with pytest.raises(ValueError, match="after the history's last evaluated step"):
        norm_ordering(history(STEPS, norm=RISE_FALL), 300, 5000)


def test_p2_is_regime_order_ok_plus_all_three_present():
    """P2's order is regime_order_ok's rule; P2 alone adds that every regime appears (exhaustive over 4 λ)."""
    import itertools

    from nhtlab.analysis.regimes import REGIMES, UNJUDGED, regime_order_ok

    labels = REGIMES + UNJUDGED
    for combo in itertools.product(labels, repeat=4):
        mapping = dict(zip([0.0, 0.1, 1.0, 10.0], combo))
        judged = [r for r in combo if r not in UNJUDGED]
        expected = regime_order_ok(list(mapping), list(combo)) and set(judged) == set(REGIMES)
        assert regimes_in_order(mapping) is expected, combo
    with pytest.raises(ValueError, match="'regimes' parameter of regime_order_ok"):
        regimes_in_order({0.0: "weak", 1.0: "lazy"})


def test_p2_three_regimes():
    assert regimes_in_order({0.0: "weak", 0.1: "weak", 1.0: "intermediate", 3.0: "too early", 10.0: "strong"})
    # diagnose_regime's unjudged label is skipped like the monitor's, as regime_order_ok skips it
    assert regimes_in_order({0.01: "weak", 0.1: "undetermined", 1.0: "intermediate", 5.0: "strong"})
    assert not regimes_in_order({0.01: "weak", 0.1: "undetermined", 5.0: "strong"})
    assert not regimes_in_order({0.0: "weak", 1.0: "strong", 3.0: "intermediate"})
    good = three_regimes({0.01: "weak", 0.3: "intermediate", 3.0: "strong"})
    assert good.passed and good.value == 3 and good.detail == "weak → intermediate → strong"
    bad = three_regimes({0.01: "weak", 0.3: "intermediate"})
    assert not bad.passed and bad.value == 2
    # a regime that comes back at a larger λ is not the ordered sequence (all three are seen, still ✗)
    back = three_regimes({0.01: "weak", 0.1: "intermediate", 0.3: "weak", 1.0: "strong"})
    assert not back.passed and back.value == 3 and back.detail == "weak → intermediate → weak → strong"


def test_p3_worst_group_must_start_below_and_end_above_the_level():
    escape = np.array([0.1, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.62, 0.65])
    v = worst_group_rise(history(STEPS, conflict_acc=escape), "conflict_acc", start_step=100)
    assert v.passed and v.value == pytest.approx(0.65) and "0.10 → 0.65" in v.detail
    # never escapes
    stuck = worst_group_rise(history(STEPS, conflict_acc=np.full(11, 0.2)), "conflict_acc", start_step=100)
    assert not stuck.passed
    # already above the level when the shortcut was fitted: there was nothing to escape (the old, tautological P3)
    high = worst_group_rise(history(STEPS, conflict_acc=np.linspace(0.6, 0.9, 11)), "conflict_acc", start_step=100)
    assert not high.passed
    never = worst_group_rise(history(STEPS, conflict_acc=escape), "conflict_acc", start_step=None)
    assert not never.passed and "never fitted" in never.detail


def test_p5_separation_rule():
    steps = np.arange(0, 2001, 20.0)
    norm = np.where(steps <= 500, 100 + steps, 600 * np.exp(-(steps - 500) / 600))
    clean = clean_norm_separation(steps, norm, 1 / (1 + np.exp((steps - 1200) / 50)), start_step=500)
    assert separation_rule(clean).passed and "1.00" in separation_rule(clean).detail
    undefined = clean_norm_separation(steps, norm, np.ones(len(steps)), start_step=500)
    v = separation_rule(undefined)
    assert not v.passed and math.isnan(v.value) and "undefined" in v.detail
    rng = np.random.default_rng(0)
    assert not separation_rule(clean_norm_separation(steps, norm, rng.uniform(size=len(steps)), start_step=500)).passed


def test_delay_exponent_recovers_a_power_law_with_an_interval():
    lams = [0.3, 0.5, 1.0, 2.0]
    rng = np.random.default_rng(1)
    pairs = [(lam, 1000 / lam * math.exp(rng.normal(0, 0.05))) for lam in lams for _ in range(2)]
    fit = fit_delay_exponent(pairs)
    assert fit.low < 1 < fit.high and abs(fit.alpha - 1) < 0.1 and fit.n == 8 and fit.n_lams == 4
    exact = fit_delay_exponent([(1.0, 1000), (2.0, 500), (4.0, 250)])
    assert exact.alpha == pytest.approx(1.0) and exact.high - exact.low == pytest.approx(0, abs=1e-6)
    with pytest.raises(ValueError, match="at least 3"):
        fit_delay_exponent([(1.0, 10), (2.0, 5)])


def test_p6_needs_three_lambdas_and_an_interval_around_one():
    lams = [0.3, 0.5, 1.0, 2.0]
    rng = np.random.default_rng(1)
    law = {lam: [int(1000 / lam * math.exp(rng.normal(0, 0.05))) for _ in range(2)] for lam in lams}
    v = delay_scaling(law)
    assert v.passed and abs(v.value - 1) < 0.1 and "4 λ" in v.detail
    # two λ values, however well they fit, do not show a scaling (the old rule passed them)
    assert not delay_scaling({0.5: [2000], 1.0: [1000]}).passed
    assert not delay_scaling({0.5: [2000], 1.0: [1000], 2.0: [None]}).passed
    # the delay falls as λ^(-0.5): the interval excludes 1
    half = {lam: [int(1000 / math.sqrt(lam) * math.exp(rng.normal(0, 0.02))) for _ in range(2)] for lam in lams}
    v = delay_scaling(half)
    assert not v.passed and v.value == pytest.approx(0.5, abs=0.1)
    # no dependence on λ: the interval contains 0
    flat = {lam: [int(1000 * math.exp(rng.normal(0, 0.3))) for _ in range(2)] for lam in lams}
    assert not delay_scaling(flat).passed


def test_score_predictions_and_the_table_print_each_number():
    # the first layer contracts after the shortcut is fitted, the read-out never does: forward, P4 fails
    h = history(STEPS, norm=RISE_FALL, conflict_acc=np.linspace(0.1, 0.7, 11), **{"norm/conv1": RISE_FALL,
                "norm/readout": RISING})
    sep = clean_norm_separation(STEPS, RISE_FALL, np.linspace(1, 0, 11), start_step=300)
    card = score_predictions(main=h, regimes={0.01: "weak", 0.3: "intermediate", 3.0: "strong"}, shortcut_step=300,
                             structured_step=1000, worst_column="conflict_acc",
                             order=contraction_order(h, window=(300, None), head="readout", first="conv1"),
                             separation=sep, delays={0.3: [900], 1.0: [None]})
    assert list(card) == list(PREDICTIONS)
    passed = {name: v.passed for name, v in card.items()}
    assert passed == {"P1 norm ordering": True, "P2 three regimes": True, "P3 clean/worst-group": True,
                      "P4 layer hierarchy": False, "P5 clean separation": True, "P6 delay scaling": False}
    rows = {row["prediction"]: row["toy"] for row in scorecard_rows({"toy": card})}
    assert rows["passed"] == "4/6" and rows["P1 norm ordering"] == "✓ V_mem/V_post = 100/40 = 2.50"
    assert rows["P4 layer hierarchy"].startswith("✗ forward: readout not within the window, conv1 step 500")


def test_prediction_readings_count_each_prediction_over_seeds():
    from nhtlab.book.claims import Check
    from nhtlab.book.shortcut_report import prediction_readings

    def card(p1, p3):
        return {"P1 norm ordering": Check("norm ordering", p1, "", 1.0), "P3 clean/worst-group": Check("worst-group rise", p3, "", 0.6)}

    readings = prediction_readings({0: card(True, False), 1: card(False, False), 2: card(True, True)})
    p1, p3 = readings
    assert (p1.name, p1.k, p1.n, p1.holds, p1.flips) == ("P1 norm ordering", 2, 3, True, True)
    # the paper's P3 fails in two seeds of three: the reading does not hold
    assert (p3.k, p3.holds) == (1, False) and p3.by_seed == {0: "✗", 1: "✗", 2: "✓"}
    only = prediction_readings({0: card(True, True)}, names=["P3 clean/worst-group"])
    assert [r.name for r in only] == ["P3 clean/worst-group"] and prediction_readings({}) == []


def test_p4_contraction_rule_passes_only_on_the_backward_reading():
    """Chapter 05's reading: each layer's step of losing 10% of its value at the fitted step."""
    def order(head, first, window=(300, None)):
        h = history(STEPS, **{"norm/conv1": first, "norm/readout": head})
        return contraction_order(h, window=window, head="readout", first="conv1")

    late = np.array([10, 50, 90, 100, 99, 98, 97, 95, 85, 80, 75.0])  # loses 10% of its step-300 value at 800
    back = contraction_rule(order(RISE_FALL, late))
    assert back.passed and back.value == 300.0 and back.detail.startswith("backward")
    assert contraction_rule(order(RISE_FALL, RISING)).passed  # the first layer never contracts: still backward
    fwd = contraction_rule(order(late, RISE_FALL))
    assert not fwd.passed and fwd.value == -300.0 and fwd.detail.startswith("forward")
    assert not contraction_rule(order(RISE_FALL, RISE_FALL)).passed  # simultaneous
    none = contraction_rule(order(RISE_FALL, RISE_FALL, window=(None, None)))
    assert not none.passed and math.isnan(none.value) and none.detail.startswith("undetermined")
    with pytest.raises(TypeError, match="order"):
        contraction_rule("backward")


def test_sweep_checks_show_p2_and_p6_as_one_sweep_readings():
    from nhtlab.book.claims import Check

    card = {"P1 norm ordering": Check("norm ordering", True, "V_mem/V_post = 2.00", 2.0),
            "P2 three regimes": Check("three regimes", False, "weak → intermediate", 2.0),
            "P6 delay scaling": Check("delay scaling", False, "2 λ with a measured delay (needs 3)")}
    shown = sweep_checks(card)
    assert [c.name for c in shown] == ["P2 three regimes (one sweep)", "P6 delay scaling (one sweep)"]
    assert not any(shown) and shown[0].detail == "one sweep, 1 seed: weak → intermediate" and shown[0].value == 2.0
