"""The off-grid ETA evaluation (issue 46) on synthetic histories with known answers (nhtlab/book/off_grid_eta.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nhtlab
import nhtlab.book.off_grid_eta as og
from nhtlab.analysis.eta import conformal_quantile, nearest_setting, synthetic_contraction
from nhtlab.book.off_grid_eta import off_grid_verdict

GRID = [(1e-3, lam) for lam in (0.1, 0.3, 0.5, 1.0)]
OFF = [(1e-3, 0.2), (1e-3, 0.7), (3e-3, 0.3)]


def _runs(settings, seeds=3, law=0.5, jitter=0.0, seed=0):
    """Runs whose delay is law/(ηλ) (× a seed jitter), contracting by e² before they grok."""
    rng, runs = np.random.default_rng(seed), []
    for lr, lam in settings:
        for s in range(seeds):
            delay = max(100, round(law / (lr * lam) * (1 + jitter * rng.normal()) / 100) * 100)
            h = synthetic_contraction(t_mem=500, t_grok=500 + delay, rate=2.0 / delay, lr=lr, weight_decay=lam)
            h.config["seed"] = s
            runs.append(h)
    return runs


def test_baseline_b_is_exact_on_runs_that_obey_the_delay_law():
    off = [(1e-3, 0.2), (1e-3, 0.6), (2e-3, 0.3)]  # every delay 0.6/(ηλ) a whole number of evaluations
    rows = og.forecast_rows(_runs(GRID + off, law=0.6), GRID, off, methods=("law_scaled", "nearest_delay"))
    law = [r for r in rows if r["method"] == "law_scaled"]
    assert len(law) == 3 * 3 * 7 and all(abs(r["error"]) < 1e-6 for r in law)
    # the nearest setting's unscaled delay misses every setting of another ηλ
    assert all(abs(r["error"]) > 0 for r in rows if r["method"] == "nearest_delay")


def test_nearest_setting_is_nearest_in_log_eta_lambda_with_ties_to_the_larger():
    assert nearest_setting((1e-3, 0.2), GRID) == (1e-3, 0.3)
    assert nearest_setting((3e-3, 0.3), GRID) == (1e-3, 1.0)
    assert nearest_setting((1e-3, 0.2), [(1e-3, 0.1), (1e-3, 0.4)]) == (1e-3, 0.4)  # log-equidistant


def test_conformal_quantile_covers_exchangeable_errors_at_about_the_stated_level():
    rng = np.random.default_rng(1)
    hits = []
    for _ in range(400):  # marginal coverage over calibration draws: ≥ 0.8, and < 0.8 + 1/(n+1)
        scores = np.abs(rng.normal(size=20))
        q = conformal_quantile(scores, 0.8)
        hits.extend(np.abs(rng.normal(size=50)) <= q)
    assert 0.78 <= np.mean(hits) <= 0.80 + 1 / 21 + 0.02
    assert conformal_quantile([0.1, 0.2], 0.8) == math.inf  # too few scores: an unbounded interval
    assert conformal_quantile([0.1, 0.2, 0.3, 0.4], 0.5) == 0.3


def test_wilson_interval_brackets_the_rate_and_widens_with_fewer_runs():
    lo, hi = og.wilson_interval(8, 10)
    assert lo < 0.8 < hi and math.isclose(lo, 0.490, abs_tol=1e-3) and math.isclose(hi, 0.943, abs_tol=1e-3)
    lo100, hi100 = og.wilson_interval(80, 100)
    assert hi100 - lo100 < hi - lo
    assert og.wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_is_the_score_formula_on_a_grid():
    # scipy computes it now; the closed form (Wilson 1927) is what nhtlab computed before, and must agree
    def score_interval(k, n, z):
        p = k / n
        centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)

    for z in (1.0, 1.96, 2.58):
        for n in (1, 2, 3, 5, 10, 20, 37, 100):
            for k in range(n + 1):
                got, want = og.wilson_interval(k, n, z), score_interval(k, n, z)
                assert got == pytest.approx(want, abs=1e-12), (k, n, z)


def test_leave_one_out_never_calibrates_on_the_setting_it_forecasts(monkeypatch):
    seen = []
    real = og.fit_eta_method

    def spy(method, calibration, coverage=0.8):
        seen.append({og.setting_of(h) for h in calibration})
        return real(method, calibration, coverage)

    monkeypatch.setattr(og, "fit_eta_method", spy)
    rows = og.forecast_rows(_runs(GRID + OFF, seeds=2, jitter=0.2), GRID, OFF)
    for split in og.leave_one_out_splits(GRID, OFF):
        assert split["forecast"] not in split["calibrate"]
        if split["split"] == "off-grid":
            assert split["calibrate"] == GRID
    forecast = {(r["eta"], r["lam"]) for r in rows}
    assert forecast == set(GRID + OFF)
    # no fit (nor the nested fits of the conformal scores) ever saw an off-grid setting
    assert seen and all(not (s & set(OFF)) for s in seen)
    seen.clear()  # the grid alone: every fit leaves one of the four grid settings out
    og.forecast_rows(_runs(GRID, seeds=2, jitter=0.2), GRID)
    assert seen and all(len(s) <= 3 for s in seen)
    assert {r["split"] for r in rows} == {"leave-one-out", "off-grid"}


def test_the_per_cut_intervals_cover_about_as_stated_on_exchangeable_runs():
    runs = _runs(GRID + OFF, seeds=8, jitter=0.3, seed=3)
    rows = og.forecast_rows(runs, GRID, OFF, methods=("law_scaled",))
    cov = og.coverage_table(rows, "law_scaled")
    assert [c["fraction"] for c in cov] == [0.25, 0.5, 0.75]
    assert all(c["covered"].endswith("of 56") for c in cov)
    assert all(c["wilson_low"] <= 0.8 <= c["wilson_high"] for c in cov), cov


def test_error_table_counts_runs_and_the_companion_fit_only_at_eta_1e_3():
    rows = og.forecast_rows(_runs(GRID + OFF, seeds=1), GRID, OFF)
    table = og.error_table(rows)
    assert [r["n"] for r in table] == [7, 7, 7] and all(r["n_companion_fit"] == 6 for r in table)
    assert set(og.ETA_METHODS) <= set(table[0])
    assert og.error_table(rows, "off-grid")[0]["n"] == 3


def test_off_grid_verdict_reads_every_baseline_and_the_coverage_at_every_cut():
    def row(method, seed, error, covered=True, fraction=0.5):
        return {"method": method, "fraction": fraction, "eta": 1e-3, "lam": 0.2, "seed": seed, "split": "off-grid",
                "error": error, "covered": covered, "low": 0.0, "high": 1.0}

    base = {"nearest_delay": 300.0, "law_scaled": 200.0, "companion_fit": 400.0}
    rows = [row(m, s, e) for s in range(10) for m, e in {"eta": 100.0, "eta_rate": 150.0, **base}.items()]
    rows += [row("eta", s, 100.0, covered=s < 8, fraction=0.25) for s in range(10)]
    for r in rows:
        if r["method"] == "eta" and r["fraction"] == 0.5:
            r["covered"] = r["seed"] < 8
    v = off_grid_verdict(rows)
    assert isinstance(v, nhtlab.book.Check) and v and v.name.startswith("the ETA beats every baseline")  # the verdict type
    assert v.passed and v.winner == "eta" and v.best_baseline == "law_scaled" and v.offer == "eta"
    for r in rows:  # coverage off by more than 10 points at one cut: no ship, the best baseline is offered
        if r["method"] == "eta" and r["fraction"] == 0.25:
            r["covered"] = r["seed"] < 5
    v = off_grid_verdict(rows)
    assert not v and v.offer == "law_scaled" and "50% (5 of 10) at 25%" in v.detail
    assert v.record() == {"passed": False, "name": v.name, "detail": v.detail, "winner": "eta",
                          "best_baseline": "law_scaled", "offer": "law_scaled"}
    empty = off_grid_verdict([])
    assert not empty and empty.offer is None and empty.detail == "not enough forecast runs to evaluate"


def test_the_record_renders_with_its_tables_and_verdict():
    saved = og.off_grid_evaluation(_runs(GRID + OFF, seeds=2, jitter=0.2), GRID, OFF, profile="quick")
    # what scripts/evaluate_eta.py adds to the evaluation before it saves the record
    saved.update(cpu_seconds=12.0, cpu_model="a CPU", loss_rise_fixed="before these runs")
    text = nhtlab.book.eta_report(saved)
    assert "Off-grid evaluation (quick profile" in text and "(b) law-scaled" in text and "95% Wilson" in text
    assert ("**Ships**" in text) == saved["verdict"]["passed"] and "CPU 12 s on a CPU" in text
    assert saved["verdict"] == off_grid_verdict(saved["rows"]).record()


def test_saved_off_grid_record_is_rendered_or_named_missing():
    saved = nhtlab.book.saved_evaluation("book", off_grid=True)
    if saved is None:
        assert "scripts/evaluate_eta.py --profile book" in nhtlab.book.eta_report("book", off_grid=True)
    else:
        assert saved["design"] == "off-grid" and saved["verdict"] == off_grid_verdict(saved["rows"]).record()
        assert {c["fraction"] for c in saved["coverage"]} == {0.25, 0.5, 0.75}


def test_bad_inputs_raise_named_errors():
    h = synthetic_contraction(t_mem=500, t_grok=1500, rate=2e-3)
    del h.config["lr"]
    with pytest.raises(ValueError, match="'history' parameter of setting_of"):
        og.setting_of(h)
    with pytest.raises(ValueError, match="'grid' parameter of leave_one_out_splits"):
        og.leave_one_out_splits([(1e-3, 1.0)])
    with pytest.raises(ValueError, match="'off_grid' parameter of leave_one_out_splits"):
        og.leave_one_out_splits(GRID, [(1e-3, 0.5)])
    with pytest.raises(ValueError, match="'method' parameter of fit_eta_method"):
        og.fit_eta_method("oracle", _runs([(1e-3, 1.0)]))
    with pytest.raises(ValueError, match="'calibration' parameter of fit_eta_method"):
        og.fit_eta_method("eta", [synthetic_contraction(t_mem=500, t_grok=None, rate=0.0)])
    with pytest.raises(ValueError, match="'k' parameter of wilson_interval"):
        og.wilson_interval(5, 3)
    with pytest.raises(ValueError, match="'coverage'"):
        conformal_quantile([0.1], 1.0)
    with pytest.raises(ValueError, match="'calibrated' parameter of nearest_setting"):
        nearest_setting((1e-3, 1.0), [])


def test_monitor_readings_set_the_online_regime_beside_the_finished_diagnosis():
    grokking = _runs([(1e-3, 1.0)], seeds=2)
    never = synthetic_contraction(t_mem=500, t_grok=None, rate=0.0, end=3000, weight_decay=0.01)
    late = _runs([(1e-3, 0.5)], seeds=1)  # meant never to grok, but it did: scored as a grokking run
    out = og.monitor_readings(grokking, [never, *late])
    assert out["moved"] == 1
    rows = {r["diagnosed"]: r for r in out["regimes"]}
    assert rows["intermediate"]["runs"] == 3 and rows["intermediate"]["at the end"].startswith("3 of 3")
    assert rows["intermediate"]["at 50%"] == "3 of 3 (intermediate 3)"
    assert sum(r["runs"] for r in out["regimes"]) == 4 and "at 50%" not in rows[never_regime(never)]
    train_loss = next(r for r in out["warnings"] if r["signal"] == "train_loss")
    assert train_loss["false_alarms"].endswith("of 1")


def never_regime(history):
    return nhtlab.diagnose_regime(history).regime


def test_the_monitor_docstring_says_what_the_saved_second_model_records_hold():
    from nhtlab.training import monitor

    doc = " ".join(monitor.__doc__.split())
    assert "MLP on Z_47" in doc and "none of the grokking runs" in doc and "neither rule is supported" in doc
    for profile in ("mlp_full_batch", "mlp_minibatch"):
        saved = nhtlab.book.saved_evaluation(profile, off_grid=True)
        assert saved is not None and saved["design"] == "off-grid"
        warning = next(r for r in saved["warnings"] if r["signal"] == monitor.GROK_WARNING_SIGNAL)
        assert warning["fired"].startswith("0 of ") and warning["late"] == 0
        rows = {r["diagnosed"]: r for r in saved["regimes"]}
        assert all(v.startswith("0 of ") for k, v in rows["undetermined"].items() if k.startswith("at "))
        assert saved["verdict"] == off_grid_verdict(saved["rows"]).record()


def _with_loss_rise(h, t_rise):
    """``h`` with a train loss that doubles its minimum since T_mem at ``t_rise`` (None: never)."""
    rows = [{**r, "train_loss": 0.05 if t_rise is not None and r["step"] >= t_rise else 0.01} for r in h.rows]
    return nhtlab.History(rows=rows, status=h.status, config=dict(h.config))


def test_loss_rise_is_exact_once_fired_and_baseline_b_before():
    off, c_rise, runs = [(1e-3, 0.2), (1e-3, 0.7), (2e-3, 0.3)], 0.42, []  # every lead 0.42/(ηλ) a whole record
    for lr, lam in GRID + off:
        for seed in range(2):
            delay = round(0.6 / (lr * lam) / 10) * 10 + 10 * seed
            h = synthetic_contraction(t_mem=500, t_grok=500 + delay, rate=2.0 / delay, every=10, lr=lr, weight_decay=lam)
            h.config["seed"] = seed
            runs.append(_with_loss_rise(h, 500 + delay - round(c_rise / (lr * lam))))
    rows = og.forecast_rows(runs, GRID, off, methods=("loss_rise", "law_scaled"))
    by = {(r["eta"], r["lam"], r["seed"], r["fraction"], r["method"]): r for r in rows}
    fired = 0
    for key, r in by.items():
        if key[-1] != "loss_rise":
            continue
        t_rise = r["t_grok"] - round(c_rise / (r["eta"] * r["lam"]))
        if r["step"] >= t_rise:  # fired by the cut: t_rise + c_rise/(ηλ), here exactly T_grok
            fired += 1
            assert abs(r["forecast"] - r["t_grok"]) < 1e-6
        else:  # not yet: baseline (b)'s forecast, the same row
            assert r["forecast"] == by[key[:-1] + ("law_scaled",)]["forecast"]
    assert 0 < fired < len(rows) // 2
    silent = [_with_loss_rise(h, None) for h in runs]  # the rule never fires in calibration: (b) everywhere
    rows = og.forecast_rows(silent, GRID, off, methods=("loss_rise", "law_scaled"))
    pairs = {(r["eta"], r["lam"], r["seed"], r["fraction"]): [] for r in rows}
    for r in rows:
        pairs[(r["eta"], r["lam"], r["seed"], r["fraction"])].append(r["forecast"])
    assert all(a == b for a, b in pairs.values())


def test_the_monitor_forecast_is_the_evaluations_baseline_b_with_an_interval_no_narrower():
    from nhtlab.analysis.eta import delay_law_forecast

    runs = _runs(GRID + OFF, jitter=0.2)
    rows = og.forecast_rows(runs, GRID, OFF, methods=("law_scaled",))
    calibration: dict = {}
    for h in runs:
        if og.setting_of(h) in GRID:
            calibration.setdefault(og.setting_of(h), []).append(h)
    checked = 0
    for r in rows:
        if r["split"] != "off-grid":
            continue
        est = delay_law_forecast(calibration, r["eta"], r["lam"], r["t_mem"], r["step"])
        assert abs(est.t_grok - r["forecast"]) < 0.06  # rows round to 0.1 step
        assert est.low <= r["low"] + 0.06 and est.high >= r["high"] - 0.06  # q at T_mem ≥ every cut's q
        assert "not the ETA" in est.basis
        checked += 1
    assert checked == 3 * 3 * 3


def test_the_forecast_basis_says_what_the_saved_records_hold():
    from nhtlab.analysis.eta import DELAY_LAW_BASIS

    best = {"book": "law_scaled", "mlp_full_batch": "law_scaled", "mlp_minibatch": "nearest_delay"}
    for profile, baseline in best.items():
        saved = nhtlab.book.saved_evaluation(profile, off_grid=True)
        assert saved is not None and not saved["verdict"]["passed"]  # "The ETA … did not ship"
        assert saved["verdict"]["best_baseline"] == baseline and not saved["verdict_loss_rise"]["passed"]
        assert saved["verdict_loss_rise"] == off_grid_verdict(saved["rows"], method="loss_rise").record()
    assert "did not ship" in DELAY_LAW_BASIS and "with minibatches the unscaled delay (a)" in DELAY_LAW_BASIS
