"""The grokking ETA on synthetic histories with known answers (nhtlab/analysis/eta.py)."""

from __future__ import annotations

import math

import pytest

import nhtlab
from nhtlab.analysis.eta import calibrate_eta, cut_history, predict_grok, synthetic_contraction
from nhtlab.book.held_out_eta import evaluate_eta
from nhtlab.book.held_out_eta import eta_verdict


def _family(lams, jitter=(1.0,)):
    # every run grokks after contracting by the same log factor (2.0) at a rate 1.5·ηλ, as the delay law says
    runs = []
    for lam in lams:
        for j in jitter:
            rate = 1.5 * 1e-3 * lam * j
            runs.append(synthetic_contraction(t_mem=500, t_grok=500 + round(2.0 / rate / 100) * 100, rate=rate,
                                              weight_decay=lam))
    return runs


def test_pure_exponential_contraction_is_predicted_where_it_groks():
    fit = _family([0.5])
    cal = calibrate_eta(fit)
    assert math.isclose(cal.log_contraction, 2.0, rel_tol=0.05)
    truth = _family([1.0])[0]
    t_grok = nhtlab.find_events(truth).t_grok
    for f in (0.25, 0.5, 0.75):
        step = 500 + int(f * (t_grok - 500)) // 100 * 100
        est = predict_grok(cut_history(truth, step), cal)
        assert est.t_grok is not None and abs(est.t_grok - t_grok) <= 100, (f, est)
        assert est.low <= est.t_grok <= est.high and est.low >= step
        assert "grokking expected near step" in est.text()


def test_a_run_that_never_contracts_gets_no_estimate():
    cal = calibrate_eta(_family([1.0]))
    plateau = synthetic_contraction(t_mem=500, t_grok=None, rate=0.0, end=3000)
    est = predict_grok(plateau, cal)
    assert est.t_grok is None and "not contracting" in est.reason


def test_a_run_that_has_not_memorised_gets_no_estimate():
    cal = calibrate_eta(_family([1.0]))
    est = predict_grok(cut_history(_family([1.0])[0], 300), cal)
    assert est.t_grok is None and "not memorised" in est.reason


def test_a_diverged_run_gets_no_estimate():
    cal = calibrate_eta(_family([1.0]))
    h = _family([1.0])[0]
    h.rows[-1]["norm"] = float("nan")
    h.status = "diverged"
    est = predict_grok(h, cal)
    assert est.t_grok is None and "diverged" in est.reason


def test_calibration_needs_a_grokked_run():
    with pytest.raises(ValueError, match="at least one run that memorised and grokked"):
        calibrate_eta([synthetic_contraction(t_mem=500, t_grok=None, rate=0.0)])


def test_evaluation_beats_the_same_lambda_baseline_when_the_law_holds():
    # fitting runs at λ = 1 with two rates; held-out runs at λ = 1 with an intermediate rate: the mean
    # delay of the fitting runs misses them, the rate read from the live run does not
    fit = _family([1.0], jitter=(0.7, 1.3))
    test = _family([1.0], jitter=(1.0,))
    rows = evaluate_eta(fit, test)
    half = next(r for r in rows if r["fraction"] == 0.5)
    assert half["n"] == 1 and half["mae"] < half["mae_baseline"]
    assert half["mae_companion_fit"] is not None  # η = 1e-3 runs are compared with the companion's 1/λ fit


def test_verdict_fails_when_coverage_is_far_from_its_stated_level():
    rows = [{"fraction": 0.5, "n": 10, "mae": 100.0, "mae_baseline": 300.0, "coverage": 0.4,
             "stated_coverage": 0.8, "median_width": 50.0}]
    assert not eta_verdict(rows)
    rows[0]["coverage"] = 0.75
    assert eta_verdict(rows)
    rows[0]["mae"] = 400.0
    assert not eta_verdict(rows)
    assert not eta_verdict([])


def test_saved_evaluation_is_shipped_with_its_verdict_and_warnings():
    from nhtlab.book.held_out_eta import saved_evaluation

    saved = saved_evaluation("book")
    assert saved is not None and saved["profile"] == "book"
    assert {r["fraction"] for r in saved["eta"]} == {0.25, 0.5, 0.75}
    # the verdict saved is the rule applied to the saved records
    assert saved["verdict"]["passed"] == eta_verdict(saved["eta"]).passed
    assert {r["signal"] for r in saved["warnings"]} == set(nhtlab.analysis.early_warnings.SIGNALS)
    assert saved_evaluation("full") is None or saved_evaluation("full")["profile"] == "full"
    with pytest.raises(ValueError, match="'profile'"):
        saved_evaluation("paper")


def test_eta_report_says_when_the_forecast_does_not_ship():
    saved = {"profile": "book", "nhtlab": "x", "fit": "a", "test": "b", "no_grok": "c",
             "eta": [{"fraction": 0.5, "n": 3, "mae": 1.0, "mae_baseline": 2.0, "coverage": 1.0,
                      "stated_coverage": 0.8, "median_width": 5.0, "mae_companion_fit": None, "no_estimate": 0}],
             "verdict": {"passed": False, "name": "rule", "detail": "why"},
             "warnings": [{"signal": "total_norm", "median_lead": 2000.0, "median_lead_eta_lambda": 0.9}]}
    text = nhtlab.book.eta_report(saved)
    assert "**Does not ship.**" in text and "offers no ETA" in text and "| 50% |" in text and "2,000" in text
    assert "same-λ baseline error" in text and "mae_baseline" not in text and "median_lead" not in text  # words
    saved["verdict"]["passed"] = True
    assert "**Ships.**" in nhtlab.book.eta_report(saved) and "no ETA" not in nhtlab.book.eta_report(saved)



def test_eta_report_of_a_profile_renders_its_saved_evaluation_or_says_it_is_missing(monkeypatch):
    import nhtlab.book.held_out_eta as eta

    assert nhtlab.book.eta_report("book") == nhtlab.book.eta_report(eta.saved_evaluation("book"))
    with pytest.raises(ValueError, match="profile"):
        nhtlab.book.eta_report("paper")
    import nhtlab.book.report as report

    monkeypatch.setattr(report, "saved_evaluation", lambda profile, off_grid=False: None)
    text = nhtlab.book.eta_report("full")
    assert "has not been saved" in text and "evaluate_eta_seeds.py --profile full" in text


def test_table_shows_every_key_and_checks_formats_against_explicit_columns():
    rows = [{"run": "a"}, {"run": "b", "T_grok": 2100}]
    text = nhtlab.book.table(rows, formats={"T_grok": "{:,}"})
    assert text.splitlines()[0] == "| run | T_grok |" and "| a | — |" in text and "| b | 2,100 |" in text
    with pytest.raises(ValueError, match="'formats' parameter of table"):
        nhtlab.book.table(rows, columns=["run"], formats={"T_grok": "{:,}"})


def _seeded_runs():
    # three seeds of λ = 1 at different contraction rates: seeds 0 and 1 to fit, seed 2 to forecast
    runs = []
    for seed, j in ((0, 0.7), (1, 1.3), (2, 1.0)):
        (h,) = _family([1.0], jitter=(j,))
        h.config["seed"] = seed
        runs.append(h)
    return runs


def test_eta_evaluation_holds_out_the_test_seeds_and_is_what_the_script_saves():
    runs = _seeded_runs()
    weak = synthetic_contraction(t_mem=500, t_grok=None, rate=0.0, end=3000, weight_decay=0.01)
    weak.config["seed"] = 2
    saved = nhtlab.book.eta_evaluation(runs, test_seeds=[2], no_grok=[weak], profile="book")
    assert saved["fit"] == "λ ∈ [1.0], seeds [0, 1]" and saved["test"] == "seeds [2]"
    assert saved["no_grok"].startswith("λ = 0.01, ")
    assert saved["eta"] == evaluate_eta(runs[:2], runs[2:])  # constants from seeds 0 and 1 only
    assert saved["verdict"]["name"] == eta_verdict(saved["eta"]).name
    assert {r["signal"] for r in saved["warnings"]} and all(r["false_alarms"].endswith("of 1") for r in saved["warnings"])
    assert "Evaluation (book profile" in nhtlab.book.eta_report(saved)
    with pytest.raises(ValueError, match="'test_seeds' parameter of eta_evaluation"):
        nhtlab.book.eta_evaluation(runs, test_seeds=[0, 1, 2])


