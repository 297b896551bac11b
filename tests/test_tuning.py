"""The weight-decay recipe's records, readings and checks (nhtlab.book.tuning_report), on synthetic monitors."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

import nhtlab
from nhtlab.analysis.regimes import budget_regime
from nhtlab.book import tuning_report as tuning


def fake_monitor(norms, head, train_acc=1.0, test_acc=0.5, regime="weak", dlr=0.3, every=10):
    """A stand-in with the Monitor attributes the records read."""
    rows = [{"step": i * every, "norm": n, "norm/9": h, "train_acc": train_acc, "test_acc": test_acc, "dlr": dlr}
            for i, (n, h) in enumerate(zip(norms, head))]
    return SimpleNamespace(rows=rows, head="9", warn_drop=0.02, summary=lambda fit: {
        "regime": regime, "norm peak": max(norms), "norm peak step": rows[norms.index(max(norms))]["step"],
        "norm contraction": 1 - norms[-1] / max(norms)})


RISING, PEAKED = [1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 3.0, 2.0]


def grid(seed_regimes, test=None):
    """Monitors of a three-λ grid per seed: seed → (regimes, test accuracies)."""
    monitors = {}
    for seed, regimes in seed_regimes.items():
        accs = (test or {}).get(seed, [0.5, 0.8, 0.2])
        for lam, regime, acc in zip([0.01, 1.0, 10.0], regimes, accs):
            monitors[seed, lam] = fake_monitor(RISING if regime == "weak" else PEAKED, PEAKED,
                                               regime=regime, test_acc=acc)
    return monitors


GOOD = ("weak", "intermediate", "strong")


def test_fit_threshold_closed_form():
    assert nhtlab.fit_threshold(0.3, 10) == pytest.approx(0.9 * 0.73)
    assert nhtlab.fit_threshold(0.0, 10, margin=1.0) == 1.0
    with pytest.raises(ValueError):
        nhtlab.fit_threshold(1.5, 10)


def test_contracting_step_is_the_monitor_rule():
    assert tuning.contracting_step([0, 1, 2, 3], [1, 2, 3, 4], 0.05) is None
    assert tuning.contracting_step([0, 1, 2, 3], [1, 10, 9.6, 9.4], 0.05) == 3


def test_records_regimes_and_recipe():
    records = tuning.lambda_grid_records(grid({0: GOOD, 1: GOOD}), fit=0.6)
    assert [(r["seed"], r["λ"]) for r in records] == [(0, 0.01), (0, 1.0), (0, 10.0), (1, 0.01), (1, 1.0), (1, 10.0)]
    assert records[0]["norm contracting from step"] is None and records[1]["norm contracting from step"] == 20
    assert tuning.regimes_by_seed(records)[1] == {"λ": 1.0, "seed 0": "intermediate", "seed 1": "intermediate"}
    recipe = tuning.lambda_recipe(records)
    assert [r["chosen λ"] for r in recipe] == [1.0, 1.0]
    assert recipe[0]["verdict"] == "beats the weakest λ" and recipe[0]["best λ"] == 1.0
    # the head and the total norm both turn at step 20 on the shown run
    assert recipe[0]["head"] == "same record"


def test_recipe_without_an_intermediate_run_and_without_a_gain():
    records = tuning.lambda_grid_records(grid({0: ("weak", "weak", "strong"), 1: GOOD},
                                              test={1: [0.5, 0.51, 0.2]}), fit=0.6)
    recipe = tuning.lambda_recipe(records)
    assert recipe[0]["chosen λ"] is None and recipe[0]["verdict"] == "no intermediate λ"
    assert recipe[0]["shown λ"] == 1.0  # the middle of the grid
    assert recipe[1]["verdict"] == "does not beat the weakest λ"


def test_head_reading_cases():
    def row(head, norm):
        return {"head contracting from step": head, "norm contracting from step": norm}
    assert tuning.head_reading(row(10, 20)) == "read-out first"
    assert tuning.head_reading(row(20, 10)) == "total norm first"
    assert tuning.head_reading(row(None, 10)) == "read-out never contracts"
    assert tuning.head_reading(row(None, None)) == "neither contracts"
    assert tuning.head_reading(row(5, None)) == "only the read-out contracts"


def test_checks_hold_on_a_good_grid_and_fail_on_bad_ones():
    good = tuning.lambda_grid_records(grid({0: GOOD, 1: GOOD, 2: ("weak", "weak", "strong")}), fit=0.6)
    checks = nhtlab.book.lambda_checks(nhtlab.book.lambda_readings(good))
    assert all(checks), [str(c) for c in checks]
    assert "2 of 3 seeds" in checks[2].detail  # the recipe: seed 2 had no intermediate λ
    # the smallest λ not weak in two of three seeds; the largest not strong; no recipe gain
    bad = tuning.lambda_grid_records(grid({0: ("intermediate", "intermediate", "intermediate"),
                                           1: ("intermediate", "intermediate", "weak"), 2: GOOD},
                                          test={0: [0.5, 0.5, 0.5], 1: [0.5, 0.5, 0.5]}), fit=0.6)
    verdicts = nhtlab.book.lambda_checks(nhtlab.book.lambda_readings(bad))
    assert [c.passed for c in verdicts] == [False, False, False]
    assert [c.passed for c in nhtlab.book.lambda_checks(nhtlab.book.lambda_readings(good, rule="all"))] == [True, True, False]


def test_readout_first_reading_is_displayed_not_asserted():
    readings = nhtlab.book.lambda_readings(tuning.lambda_grid_records(grid({0: GOOD}), fit=0.6))
    assert "read-out first" in readings and "read-out first" not in tuning.ASSERTED
    assert readings["read-out first"].by_seed == {0: "same record"} and not readings["read-out first"].holds


def test_norm_curve_records():
    monitors = grid({0: GOOD, 1: GOOD})
    records = tuning.lambda_grid_records(monitors, fit=0.6)
    curves = nhtlab.book.norm_curve_records(monitors, records, seed=1)
    assert len(curves) == 12 and {c["lambda"] for c in curves} == {0.01, 1.0, 10.0}
    assert curves[0] == {"step": 0, "lambda": 0.01, "regime": "weak", "norm": 1.0}
    with pytest.raises(ValueError):
        nhtlab.book.norm_curve_records(monitors, records, seed=7)


def test_monitor_dlr_check_fails_on_a_stale_or_short_record():
    assert nhtlab.book.monitor_dlr_check({"step": 100, "dlr": 0.25}, 0.25, last_step=100)
    assert not nhtlab.book.monitor_dlr_check({"step": 100, "dlr": 0.25}, 0.26, last_step=100)
    assert not nhtlab.book.monitor_dlr_check({"step": 90, "dlr": 0.25}, 0.25, last_step=100)
    assert not nhtlab.book.monitor_dlr_check({"step": 100, "dlr": math.nan}, math.nan, last_step=100)
    assert not nhtlab.book.monitor_dlr_check({"step": 100}, 0.25, last_step=100)


def test_first_turn_answer_counts_a_lone_contraction_as_first():
    def row(seed, head, norm):
        r = {"seed": seed, "shown λ": 1.0, "head contracting from step": head, "norm contracting from step": norm}
        return {**r, "head": tuning.head_reading(r)}
    recipe = [row(0, 10, 20), row(1, 20, 10), row(2, 5, None), row(3, None, 10), row(4, 10, 10), row(5, None, None)]
    answers = [tuning.first_turn_answer(recipe, seed=s)[0] for s in range(6)]
    assert answers == ["the read-out", "the total norm", "the read-out", "the total norm", "together", "neither"]
    answer, choices, why = tuning.first_turn_answer(recipe, seed=3)
    assert choices == tuning.FIRST_TURN_CHOICES and answer in choices
    assert "the read-out never contracted and the total norm contracted from step 10" in why
    assert "seed 4: together" in why
    # on a real grid: the head and the total norm turn at the same record
    records = tuning.lambda_grid_records(grid({0: GOOD}), fit=0.6)
    assert tuning.first_turn_answer(tuning.lambda_recipe(records), seed=0)[0] == "together"
    with pytest.raises(ValueError, match="'seed'"):
        tuning.first_turn_answer(recipe, seed=9)


def test_a_weak_or_strong_label_needs_one_time_scale_of_budget():
    def decided(regime, lam):  # the chapter's budget rule: one time scale 1/(ηλ), η = 3·10⁻³, 1,500 steps
        return budget_regime(regime, 1500, 3e-3 * lam, tuning.DECIDED_AFTER)

    assert decided("weak", 0.01) == "not decided within 1,500 steps"
    assert decided("strong", 0.1) == "not decided within 1,500 steps"
    assert decided("strong", 1.0) == "strong"  # 4.5 time scales
    assert decided("intermediate", 0.01) == "intermediate"  # observed
    records = tuning.lambda_grid_records(grid({0: GOOD}), fit=0.6, lr=3e-3, steps=1500)
    assert [r["regime"] for r in records] == ["not decided within 1,500 steps", "intermediate", "strong"]
    assert [r["online regime"] for r in records] == list(GOOD)
    # the smallest λ's reading is what the online rule observed, whatever the label says
    readings = nhtlab.book.lambda_readings(records)
    assert readings["smallest λ"].by_seed == {0: tuning.NOT_CONTRACTED} and readings["smallest λ"].holds
    curves = nhtlab.book.norm_curve_records(grid({0: GOOD}), records, seed=0)
    assert {c["regime"] for c in curves if c["lambda"] == 0.01} == {"too early"}


def test_the_order_is_not_read_on_a_run_that_never_fitted():
    monitors = {(0, lam): fake_monitor(PEAKED, PEAKED, train_acc=0.3) for lam in (0.01, 1.0, 10.0)}
    records = tuning.lambda_grid_records(monitors, fit=0.6)
    assert all(r["fitted step"] is None and r["head contracting from step"] is None for r in records)
    assert tuning.head_reading(records[1]) == tuning.NOT_READ
    answer, choices, why = tuning.first_turn_answer(tuning.lambda_recipe(records), seed=0)
    assert answer == "not read" and answer in choices and "never fitted" in why


def test_largest_fit_answer_and_layer_words():
    records = tuning.lambda_grid_records(grid({0: GOOD}), fit=0.6)
    assert tuning.largest_fit_answer(records, seed=0, fit=0.6)[0] == "fits"  # the fakes all fit
    with pytest.raises(ValueError):
        tuning.largest_fit_answer(records, seed=5, fit=0.6)
    rows = [{"seed": 0, "λ": 1.0, "fitted step": 50, "train acc": 0.7},
            {"seed": 0, "λ": 10.0, "fitted step": None, "train acc": 0.2}]
    assert tuning.largest_fit_answer(rows, seed=0, fit=0.657)[0] == "does not fit"
    assert tuning.contraction_sentence({"λ": 1.0, "norm peak": 120.0, "norm peak step": 200, "norm contraction": 0.125}) == (
        "‖θ‖² peaked at 120.0 (step 200) and ended 12.5% below its peak; the panel's axis does not start at zero, "
        "so the fall looks larger than it is.")
    import torch.nn as nn
    words = tuning.layer_words(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.Linear(4, 2)))
    assert words == {"0": "Conv2d 1", "2": "Conv2d 2", "3": "read-out (Linear 1)"}


def test_eta_record_checks_recompute_every_saved_verdict():
    checks = tuning.eta_record_checks(["book", "mlp_full_batch", "mlp_minibatch"])
    assert len(checks) == 5 and all(checks), [str(c) for c in checks]
    assert checks[-1].name == "no evaluation shipped the ETA"
    assert tuning.off_grid_section("book").startswith("### The companion transformer")
    with pytest.raises(ValueError):
        tuning.off_grid_section("paper")
    verdicts = tuning.forecast_verdicts()
    assert verdicts["evaluations"] == 4 and verdicts["shipped"] == 0


def test_layer_norm_curves_takes_the_names_it_is_given():
    from nhtlab.history import History

    rows = [{"step": s, "norm": 2.0, "norm/0": 1.0, "norm/9": 1.0} for s in (0, 10)]
    chart = nhtlab.charts.layer_norm_curves(History(rows=rows), names={"9": "read-out (Linear 2)"}).to_dict()
    series = {r["series"] for r in chart["data"]["values"]} if "data" in chart else {
        r["series"] for d in chart["datasets"].values() for r in d}
    assert series == {"read-out (Linear 2)", "0"}
