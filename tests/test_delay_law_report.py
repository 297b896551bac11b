"""The paper-vs-ours comparison, the delay-law records and the checks, on histories with known answers.

Each check is shown failing on a run (or records) without the phenomenon it claims.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import nhtlab
from nhtlab.book.claims import check_reading
from nhtlab.book.delay_law_report import (MIN_FIT_LAMBDAS, check_lambdas_grok, check_norm_halves,
                                        contraction_records, delay_readings, delay_records, eta_comparison,
                                        fit_records, law_fits, paper_comparison, ratio_records, run_records)
from nhtlab.history import History
from nhtlab.papers import COMPANION_GROK_FIT, COMPANION_LAMBDA_SWEEP

ROOT = Path(__file__).resolve().parent.parent


def run(wd=1.0, lr=1e-3, seed=0, t_mem=300, delay=None, v_mem=4000.0, contract=0.2, window=500, every=100,
        init_scale=None, grok=True):
    """A run that memorises at ``t_mem`` and (if ``grok``) generalises ``delay`` steps later (default:
    about 1/λ thousand steps); ‖θ‖² decays exponentially from V_mem to ``contract``·V_mem at the end."""
    delay = int(round(1000 / wd / every) * every) if delay is None else delay
    t_grok = t_mem + delay
    t_end = t_grok + window
    steps = np.arange(0, t_end + 1, every)
    k = math.log(1 / contract) / (t_end - t_mem)
    norm = np.where(steps < t_mem, v_mem * 1.1, v_mem * np.exp(-k * (steps - t_mem)))
    rows = [{"step": int(s), "train_acc": 1.0 if s >= t_mem else 0.3,
             "test_acc": 1.0 if grok and s >= t_grok else 0.02, "norm": float(v)} for s, v in zip(steps, norm)]
    kwargs = {} if init_scale is None else {"init_scale": init_scale}
    config = {"lr": lr, "weight_decay": wd, "seed": seed, "model_kwargs": kwargs, "model": "transformer"}
    return History(rows=rows, status="stopped", config=config)


# --- paper_comparison ---------------------------------------------------------------------------

def test_paper_comparison_rows_and_fit_by_hand():
    delays = {0.3: (3300, 3500, 3400), 0.5: (2000, 2200, 2100), 1.0: (1000, 1200, 1100)}
    histories = [run(wd=lam, seed=s, delay=d) for lam, ds in delays.items() for s, d in enumerate(ds)]
    cmp = paper_comparison(histories)
    assert [r["λ"] for r in cmp.rows] == ["0.3", "0.5", "1"]
    assert cmp.rows[0]["grokked"] == "3/3 (10/10)"
    mean_grok = 300 + np.mean(delays[1.0])
    assert cmp.stats[1.0]["t_grok"] == pytest.approx((mean_grok, np.std([1300, 1500, 1400])))
    assert cmp.rows[2]["T_grok"] == f"{mean_grok:,.0f} ± {np.std([1000, 1200, 1100]):,.0f} (2,100 ± 374)"
    theirs = COMPANION_LAMBDA_SWEEP[1.0]["t_grok"]
    assert cmp.stats[1.0]["t_grok_within"] is bool(abs(mean_grok - theirs[0]) <= theirs[1])
    # the fit over the three λ values' seed means
    x = [1 / lam for lam in delays]
    y = [300 + np.mean(ds) for ds in delays.values()]
    slope, intercept = np.polyfit(x, y, 1)
    assert cmp.fit["n"] == 3 and cmp.fit["slope"] == pytest.approx(slope) and cmp.fit["intercept"] == pytest.approx(intercept)
    lo, hi = COMPANION_GROK_FIT["slope_ci"]
    assert cmp.fit["slope_within_ci"] is bool(lo <= slope <= hi)
    assert "3 λ values" in cmp.fit_text() and f"{slope:,.0f}" in cmp.fit_text()
    # rendered by nhtlab.book.table, as the chapter and the script do
    rendered = nhtlab.book.table(cmp.rows)
    assert rendered.startswith("| λ | grokked | T_mem | T_grok | T_escape | theory | (1 − r)/(ηλ) |")


def test_paper_comparison_needs_three_lambdas_to_fit():
    assert MIN_FIT_LAMBDAS == 3
    two = [run(wd=lam, seed=s) for lam in (0.5, 1.0) for s in (0, 1)]
    cmp = paper_comparison(two)
    assert cmp.fit is None and cmp.fit_lambdas == [0.5, 1.0]
    assert "fit needs 3" in cmp.fit_text()


def test_paper_comparison_counts_runs_that_do_not_grok_and_the_edges():
    histories = [run(wd=1.0, seed=0), run(wd=1.0, seed=1, grok=False), run(wd=2.0, seed=0, grok=False),
                 run(wd=0.3, seed=0), run(wd=0.5, seed=0)]
    cmp = paper_comparison(histories)
    rows = {r["λ"]: r for r in cmp.rows}
    assert rows["1"]["grokked"] == "1/2 (10/10)" and rows["2"]["grokked"] == "0/1 (3/10)"
    assert rows["2"]["T_grok"] == "no grok" and cmp.stats[2.0]["t_grok"] is None
    assert 2.0 not in cmp.fit_lambdas and cmp.fit["n"] == 3  # the edge is outside the fit's λ range


def test_paper_comparison_refuses_a_mixed_sweep():
    with pytest.raises(ValueError, match="one λ sweep"):
        paper_comparison([run(wd=1.0), run(wd=0.5, lr=2e-3)])
    with pytest.raises(ValueError, match="one λ sweep"):
        paper_comparison([run(wd=1.0), run(wd=0.5, init_scale=1.5)])
    with pytest.raises(ValueError, match="at least one run"):
        paper_comparison([])


def test_reproduce_table3_main_writes_the_table(tmp_path, monkeypatch, capsys):
    """The whole script, its sweep replaced by synthetic histories of the runs it asks for: its Markdown is the
    shared comparison, written and recorded."""
    spec = importlib.util.spec_from_file_location("reproduce_table3", ROOT / "scripts" / "reproduce_table3.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)

    class Result:
        def __init__(self, runs):
            self.histories = [run(wd=r.weight_decay, seed=r.seed, grok=0.1 <= r.weight_decay <= 1.0) for r in runs]

        def __iter__(self):  # rows: none of these came from the cache
            return iter([type("Row", (), {"cached": False})() for _ in self.histories])

    swept = []
    monkeypatch.setattr(script.nhtlab, "sweep", lambda runs, **kwargs: swept.append(Result(runs)) or swept[-1])
    monkeypatch.setenv("NHTLAB_MEASUREMENTS_DIR", str(tmp_path / "records"))
    out = tmp_path / "table3.md"
    monkeypatch.setattr("sys.argv", ["reproduce_table3.py", "--seeds", "2", "--lams", "0.3", "0.5", "1.0",
                                     "--edges", "--out", str(out)])
    script.main()
    text = out.read_text()
    assert "| 2 | 0/2 (3/10) |" in text and "| 0.01 | 0/2 (0/10) |" in text
    assert "seed means of 3 λ values" in text and "written to" in capsys.readouterr().out
    # its Markdown is the shared comparison (paper_comparison), as chapter 3 renders it
    comparison = paper_comparison(swept[0].histories)
    assert text.startswith("Companion λ sweep reproduced") and "| λ | grokked |" in text
    assert str(nhtlab.book.table(comparison.rows)) in text and comparison.fit_text() in text
    # ... and the same table is recorded for the generated measurements page (tools/measurements_page.py)
    import measurements_page  # tools/ is on sys.path (conftest.py)

    (recorded,) = measurements_page.load([tmp_path / "records"])
    assert recorded["benchmark"] == "reproduce_table3" and recorded["settings"]["runs"] == 5 * 2
    assert recorded["settings"]["from_cache"] == 0
    page = measurements_page.render([recorded])
    assert "## `reproduce_table3`" in page and "| 2 | 0/2 (3/10) |" in page and "seed means of 3 λ values" in page


# --- records --------------------------------------------------------------------------------------

def families():
    """A λ sweep, an η sweep and an init-scale family in two seeds, with delays made by the law's direction."""
    hs, labels = [], []
    for s in (0, 1):
        for lam in (0.3, 0.5, 1.0):
            hs.append(run(wd=lam, seed=s, delay=int(1000 / lam) // 100 * 100 + 100 * s))
            labels.append("λ sweep")
        hs.append(run(wd=1.0, lr=2e-3, seed=s, delay=500 + 100 * s))
        labels.append("η sweep")
        for k, v_mem, d in ((0.5, 1000.0, 600), (1.5, 9000.0, 1800)):
            hs.append(run(wd=1.0, seed=s, init_scale=k, v_mem=v_mem, delay=d + 100 * s))
            labels.append("init scale")
    return hs, labels


def test_delay_records_and_run_records():
    hs, labels = families()
    hs.append(run(wd=2.0, grok=False))
    labels.append("λ sweep")
    points = delay_records(hs, labels)
    assert set(points) == {"companion", "grok"} and len(points["grok"]) == len(hs) - 1
    assert {p["init_scale"] for p in points["grok"]} == {0.5, 1.0, 1.5}
    rows = run_records(hs, labels)
    assert len(rows) == len(hs) and "T_grok" not in rows[-1]
    assert rows[-1]["note"] and rows[0]["note"] is None
    assert rows[0]["delay"] == points["grok"][0]["measured"] and isinstance(rows[0]["V_mem"], int)
    with pytest.raises(ValueError, match="one label per history"):
        run_records(hs, labels[:-1])


def test_eta_fit_contraction_and_ratio_records():
    hs, labels = families()
    points = delay_records(hs, labels)
    eta = eta_comparison(points["grok"])
    assert [r["η"] for r in eta] == [1e-3, 2e-3] and eta[1]["T_grok (companion)"] == "840 ± 80"
    assert eta[1]["delay"] == "550 ± 50" and eta[1]["mean delay"] == pytest.approx(550.0)
    fits = law_fits(points)
    assert set(fits) == {"companion", "grok"}
    rows = fit_records(fits)
    assert {r["x"] for r in rows} == {"law", "1/λ", "1/(ηλ)"}
    assert sum(r["best"] == "✓" for r in rows if r["definition"] == "grok") == 1
    assert law_fits({"grok": points["grok"][:1]}) == {}  # one setting: nothing to fit
    contraction = contraction_records(hs, labels)
    assert len(contraction) == len(hs)
    base = [c for c in contraction if c["lr"] == 1e-3 and c["weight_decay"] == 0.5]
    assert base and base[0]["companion"] == 1.55
    assert all(c["companion"] is None for c in contraction if c["lr"] == 2e-3)
    ratios = ratio_records(points)
    grok = next(r for r in ratios if r["definition"] == "grok")
    by_hand = [p["predicted"] / p["measured"] for p in points["grok"]]
    assert grok["median"] == pytest.approx(np.median(by_hand)) and grok["runs"] == len(by_hand)


# --- readings and checks ----------------------------------------------------------------------------

def test_delay_readings_hold_on_the_laws_directions():
    hs, labels = families()
    readings = delay_readings(delay_records(hs, labels)["grok"], lr=1e-3)
    for key in ("lambda", "eta", "init", "law vs 1/λ"):
        assert readings[key].holds and readings[key].n == 2, readings[key].text()
        assert check_reading(readings[key]), check_reading(readings[key]).detail


def test_delay_readings_fail_when_the_directions_are_reversed():
    # the delay grows with λ and with η, and the larger init is quicker: every direction reversed
    hs, labels = [], []
    for s in (0, 1, 2):
        for lam, d in ((0.3, 500), (0.5, 900), (1.0, 1500)):
            hs.append(run(wd=lam, seed=s, delay=d))
            labels.append("λ sweep")
        hs.append(run(wd=1.0, lr=2e-3, seed=s, delay=2500))
        labels.append("η sweep")
        for k, v_mem, d in ((0.5, 1000.0, 2000), (1.5, 9000.0, 700)):
            hs.append(run(wd=1.0, seed=s, init_scale=k, v_mem=v_mem, delay=d))
            labels.append("init scale")
    readings = delay_readings(delay_records(hs, labels)["grok"], lr=1e-3)
    for key in ("lambda", "eta", "init"):
        r = readings[key]
        assert r.k == 0 and r.n == 3 and not r.holds
        check = check_reading(r)
        assert not check and "0 of 3 seeds" in check.detail


def test_a_reading_that_flips_fails_the_all_rule_and_holds_the_majority():
    hs, labels = [], []
    for s, d1 in ((0, 1000), (1, 1000), (2, 5000)):  # seed 2: λ = 1 slower than λ = 0.5
        for lam, d in ((0.5, 2000), (1.0, d1)):
            hs.append(run(wd=lam, seed=s, delay=d))
            labels.append("λ sweep")
    points = delay_records(hs, labels)["grok"]
    assert delay_readings(points, lr=1e-3)["lambda"].holds
    strict = delay_readings(points, lr=1e-3, rule="all")["lambda"]
    assert strict.flips and not strict.holds and not check_reading(strict)
    with pytest.raises(ValueError, match="'grok' definition"):
        delay_readings(delay_records(hs, labels)["companion"], lr=1e-3)


def test_check_lambdas_grok_fails_on_a_run_that_never_generalises():
    ok = [run(wd=lam, seed=s) for lam in (0.5, 1.0) for s in (0, 1)]
    assert check_lambdas_grok(ok + [run(wd=2.0, grok=False)])  # λ = 2 is an edge, not checked
    failed = check_lambdas_grok(ok + [run(wd=0.5, seed=2, grok=False)])
    assert not failed and "λ = 0.5: 2/3" in failed.detail
    assert not check_lambdas_grok([run(wd=2.0)])  # nothing in range checks nothing


def test_check_norm_halves_fails_on_a_run_whose_norm_barely_contracts():
    halved = delay_records([run(contract=0.2), run(wd=0.5, contract=0.2)])["grok"]
    assert check_norm_halves(halved)
    barely = delay_records([run(contract=0.2), run(wd=0.5, seed=3, contract=0.8)])["grok"]
    check = check_norm_halves(barely)
    assert not check and "seed 3" in check.detail
    # the init-scale family is left out unless asked for
    shrunk_gap = delay_records([run(contract=0.2), run(init_scale=0.5, contract=0.9)])["grok"]
    assert check_norm_halves(shrunk_gap) and not check_norm_halves(shrunk_gap, init_scale=0.5)
    assert not check_norm_halves([])


# --- the lesson's exercise, sentences and forecast --------------------------------------------------

def test_law_line_is_the_readers_polyfit_of_the_delay_on_the_laws_time_scale():
    from nhtlab.book.delay_law_report import law_line

    hs, labels = families()
    pts = [p for p in delay_records(hs, labels)["grok"] if p["init_scale"] == 1.0]
    x = [math.log(p["v_mem"] / p["v_grok"]) / (p["lr"] * p["weight_decay"]) for p in pts]
    y = [p["t_grok"] - p["t_mem"] for p in pts]
    assert law_line(pts) == pytest.approx(tuple(np.polyfit(x, y, 1)))
    assert nhtlab.book.check_function(lambda runs: tuple(np.polyfit(x, y, 1)), law_line, [(pts,)]).status == "correct"
    assert nhtlab.book.check_function(lambda runs: (1.0, 0.0), law_line, [(pts,)]).status == "wrong"


def test_escape_ratios_and_the_size_sentence_say_which_way_ours_go():
    from nhtlab.book.delay_law_report import escape_ratios, size_summary

    hs, labels = families()
    lam_hs = [h for h, f in zip(hs, labels) if f == "λ sweep"]
    cmp = paper_comparison(lam_hs)
    rows = escape_ratios(cmp)
    assert [r["λ"] for r in rows] == [0.3, 0.5, 1.0]
    for r in rows:
        ours, theirs = cmp.stats[r["λ"]], COMPANION_LAMBDA_SWEEP[r["λ"]]
        assert r["ours"] == pytest.approx(ours["escape_theory"][0] / ours["t_escape"][0])
        assert r["companion"] == pytest.approx(theirs["escape_theory"][0] / theirs["t_escape"][0])
        assert r["higher"] is (r["ours"] > r["companion"])
    ratio_table, sentence, closed = size_summary(delay_records(hs, labels), cmp)
    higher = sum(r["higher"] for r in rows)
    assert f"higher than the companion's at {higher} of 3 λ values" in sentence
    assert ("not a lower one" in sentence) is (higher == 3)
    assert ratio_table.startswith("| definition | median |") and closed.startswith("<details")


def test_runs_contraction_and_found_sentences_count_over_the_seeds():
    from nhtlab.book.delay_law_report import contraction_summary, delay_found, runs_summary

    hs, labels = families()
    points = delay_records(hs, labels)
    readings = delay_readings(points["grok"], lr=1e-3)
    sentence, closed = runs_summary(hs, labels, points, readings)
    assert "λ = 0.3:" in sentence and "(2 runs)" in sentence and "in 2 of 2 seeds" in sentence
    assert "How we know: every run" in closed and "| family |" in closed
    contraction = contraction_records(hs, labels)
    text, table_block = contraction_summary(contraction)
    assert "(6 runs)" in text and "<details" in table_block
    assert "not measured" in contraction_summary([])[0]
    found = delay_found(readings, points, contraction)
    assert "What we found" in found and "falls as λ grows in 2 of 2 seeds" in found
    assert found.count("\n- ") == 4


def test_forecast_report_names_the_lambdas_it_was_fitted_on_and_says_not_measured():
    from nhtlab.analysis.eta import synthetic_contraction
    from nhtlab.book.delay_law_report import forecast_report

    runs = []
    for seed, j in ((0, 0.7), (1, 1.3), (2, 1.0)):
        for lam in (0.5, 1.0):
            rate = 1.5 * 1e-3 * lam * j
            h = synthetic_contraction(t_mem=500, t_grok=500 + round(2.0 / rate / 100) * 100, rate=rate,
                                      weight_decay=lam)
            h.config["seed"] = seed
            runs.append(h)
        never = run(wd=2.0, seed=seed, grok=False)  # a λ trained but never grokked: not a λ of the fit
        runs.append(never)
    sentence, tables = forecast_report(runs, test_seeds=[2], profile="book")
    assert "seeds 0, 1 that memorised and grokked (λ = 0.5, 1)" in sentence
    assert "λ = 2" not in sentence and "the forecast does not ship" in sentence  # coverage 50%, stated 80%
    assert "| cut |" in tables and "| 50% | 2 | 0 |" in tables
    dlr = next(line for line in tables.splitlines() if line.startswith("| dlr |"))
    assert "not measured" in dlr and "0 of" not in dlr  # no held-out run records DLR: not "fired 0 of 2"
    one, empty = forecast_report(runs[:2], test_seeds=[0], profile="quick")
    assert "nothing to hold out" in one and empty == ""
