"""Single-run report: each check holds on a grokking-shaped history and fails on a history without the phenomenon."""

import numpy as np
import pytest

import nhtlab
from nhtlab.book.claims import Check
from nhtlab.book.grokking_report import (check_contraction, check_grokking, check_norm_largest_at_init, check_weak,
                                        checks_over_seeds, delay_law_text, events_evidence)
from nhtlab.book.claims import reading_rows
from nhtlab.history import History

STEPS = np.arange(0, 3001, 100)


def history(train, test, norm, lr=1e-3, wd=1.0):
    rows = [{"step": int(s), "train_acc": float(a), "test_acc": float(b), "norm": float(n)}
            for s, a, b, n in zip(STEPS, train, test, norm)]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": wd})


def ramp(at, low=0.01, high=1.0):
    return np.where(STEPS >= at, high, low)


FALLING = 13000 * np.exp(-STEPS / 700) + 800  # largest at init, contracting after T_mem
GROKS = history(ramp(800), ramp(2000), FALLING)


def test_a_grokking_run_passes_every_check():
    assert check_grokking(GROKS, min_delay=300)
    assert check_contraction(GROKS, at_least=1 / 3)
    assert check_norm_largest_at_init(GROKS)
    c = check_grokking(GROKS, min_delay=300)
    assert "T_mem = 800" in c.detail and "T_grok = 2,000" in c.detail


def test_grokking_fails_without_a_delay_or_without_generalising():
    at_once = history(ramp(800), ramp(800), FALLING)
    assert not check_grokking(at_once, min_delay=300)
    never = history(ramp(800), np.full(len(STEPS), 0.05), FALLING)
    c = check_grokking(never, min_delay=300)
    assert not c and "never reached 99%" in c.detail
    assert not check_grokking(history(np.full(len(STEPS), 0.5), np.full(len(STEPS), 0.05), FALLING), 300)


def test_contraction_fails_when_the_norm_fell_only_before_memorising():
    before_only = np.where(STEPS < 800, 13000 - 10 * STEPS, 5000.0)
    c = check_contraction(history(ramp(800), ramp(2000), before_only))
    assert not c and "0% smaller" in c.detail
    assert not check_contraction(history(ramp(800), np.full(len(STEPS), 0.05), FALLING))  # no T_grok


def test_norm_largest_at_init_fails_on_a_norm_that_rises_first():
    rising = 1000 + 50 * STEPS - 0.02 * STEPS**2
    c = check_norm_largest_at_init(history(ramp(800), ramp(2000), rising))
    assert not c and "at step 0" in c.detail


def test_weak_holds_without_decay_and_fails_on_a_grokking_run():
    flat = history(ramp(300), np.full(len(STEPS), 0.01), np.full(len(STEPS), 9000.0), wd=0.0)
    assert check_weak(flat)
    assert not check_weak(GROKS)
    assert not check_weak(history(np.full(len(STEPS), 0.3), np.full(len(STEPS), 0.01), FALLING))  # strong


def test_checks_over_seeds_counts_and_rules():
    checks = {0: Check("x", True), 1: Check("x", False), 2: Check("x", True)}
    majority = checks_over_seeds("groks", checks)
    assert (majority.k, majority.n, majority.holds, majority.flips) == (2, 3, True, True)
    assert not checks_over_seeds("groks", checks, rule="all").holds
    rows = reading_rows([majority])
    assert rows[0]["seeds"] == "2 of 3" and rows[0]["stated"] == "holds" and rows[0]["holds"] == "✓"
    assert rows[0]["flips"] == "yes" and rows[0]["by seed"] == "0: holds, 1: fails, 2: holds"
    with pytest.raises(TypeError, match="'paper' needs 'readings' as a mapping"):
        reading_rows([majority], paper={0: "holds"})
    with pytest.raises(TypeError):
        checks_over_seeds("groks", {0: True})


def test_the_tables_beside_the_companions_values():
    events = events_evidence({0: GROKS, 1: GROKS}, lr=1e-3)  # the companion's λ = 1 row: T_mem 1,100 ± 200
    assert "| T_mem | 800 | 800 | 1,100 ± 200 |" in events and "| T_grok | 2000 | 2000 | 2,100 ± 374 |" in events
    assert "(η = 0.001): 2 of 2 seeds" in events  # 2,000 lies within one standard deviation of 2,100
    law = delay_law_text(nhtlab.delay_summary(GROKS), seed=0)
    rows = [line for line in law.splitlines() if line.startswith("| companion") or line.startswith("| grok")]
    assert [r.split(" | ")[0] for r in rows] == ["| companion", "| grok"]
    assert rows[1].startswith("| grok | 1,200 |") and rows[1].endswith("| delay ≈ 1,000 (difference of the means) |")
    assert "T_escape 3,350 ± 229, theory 1,140 ± 163" in rows[0]
    no_transition = nhtlab.delay_summary(history(ramp(800), np.full(len(STEPS), 0.05), FALLING))
    assert delay_law_text(no_transition, seed=0) == "No delay to compare: the run did not generalise."


# --- chapter 01's Fourier view: where the share rises against T_mem and T_grok ---------------------

def fourier_history(share, p=7):
    """GROKS (T_mem 800, T_grok 2000) with a Fourier share column and a spectrum whose k = 1 holds ``share``."""
    rows = [{**row, "fourier": float(s), "fourier/0": 1.0, "fourier/1": float(s),
             **{f"fourier/{k}": float((1 - s) / 2) for k in (2, 3)}} for row, s in zip(GROKS.rows, share)]
    return History(rows=rows, status="completed")


def test_fourier_timing_places_the_halfway_step_by_the_rule_fixed_before_the_runs():
    from nhtlab.book.grokking_report import check_fourier_rises, fourier_readings, fourier_spectrum_records, fourier_timing
    # halfway between 0.2 and 0.8 is 0.5: first reached at step 1500, inside (T_mem, T_grok) = (800, 2000)
    during = fourier_timing(fourier_history(np.interp(STEPS, [0, 800, 2200, 3000], [0.2, 0.2, 0.8, 0.8])))
    assert during["t_half"] == 1500 and during["when"] == "between T_mem and T_grok" and during["key"] == "1, 2, 3"
    assert during["share init"] == 0.2 and during["share end"] == 0.8
    assert 0 < during["contracted"] < 1  # the norm is part way down from V_mem to V_grok
    early = fourier_timing(fourier_history(np.where(STEPS >= 500, 0.8, 0.2)))
    late = fourier_timing(fourier_history(np.where(STEPS >= 2500, 0.8, 0.2)))
    flat = fourier_timing(fourier_history(np.full(len(STEPS), 0.3)))
    assert (early["when"], late["when"], flat["when"]) == ("by T_mem", "after T_grok", "no rise")
    # halfway at the evaluation where test accuracy reaches 99% (T_grok = 2000) is "at T_grok", not during the delay
    with_grok = fourier_timing(fourier_history(np.where(STEPS >= 2000, 0.8, 0.2)))
    assert with_grok["t_half"] == 2000 and with_grok["when"] == "at T_grok"
    reading = fourier_readings({0: during, 1: early, 2: during})
    assert (reading.k, reading.n, reading.holds) == (2, 3, True)
    assert check_fourier_rises(fourier_history(np.linspace(0.2, 0.8, len(STEPS))))
    assert not check_fourier_rises(fourier_history(np.full(len(STEPS), 0.3)))
    records = fourier_spectrum_records({0: fourier_history(np.full(len(STEPS), 0.5))})
    assert {r["moment"] for r in records} == {"init", "T_mem", "T_grok", "end"} and len(records) == 4 * 3
    assert sum(r["share"] for r in records if r["moment"] == "end") == pytest.approx(1.0)  # k = 0 left out
    with pytest.raises(ValueError, match="'history'.*fourier"):
        fourier_timing(GROKS)


def test_fourier_at_grok_gives_the_median_share_and_delay_per_lambda():
    from nhtlab.book.grokking_report import fourier_at_grok
    runs = [History(rows=fourier_history(np.linspace(0.2, 0.8, len(STEPS))).rows, config={"weight_decay": lam})
            for lam in (1.0, 0.5)]
    never = History(rows=[{**r, "test_acc": 0.1} for r in runs[1].rows], config={"weight_decay": 2.0})
    line = fourier_at_grok([*runs, never])
    # T_grok = 2000 of 3000: the share is 0.2 + 0.6 · 2/3 = 0.6 there; the delay is 2000 − 800
    assert "λ = 0.5: 0.20 → 0.60, delay 1,200 steps (1 run)" in line and "λ = 2: no run grokked" in line
    with pytest.raises(TypeError, match="'histories'"):
        fourier_at_grok(runs[0])


# --- chapter 01's lesson: the window between T_mem and T_grok, the layers, the closing claims ----------

def test_delay_window_reads_the_fall_and_the_lowest_training_accuracy_between_the_events():
    from nhtlab.book.grokking_report import delay_window, delay_window_report, train_acc_reading
    dips = history(np.where((STEPS >= 800) & (STEPS != 1200), 1.0, np.where(STEPS == 1200, 0.83, 0.01)),
                   ramp(2000), FALLING)
    w = delay_window(dips)
    assert (w["t_mem"], w["t_grok"], w["lowest train acc"], w["at step"]) == (800, 2000, 0.83, 1200)
    assert w["fall"] == pytest.approx(1 - FALLING[20] / FALLING[8])
    assert delay_window(GROKS)["lowest train acc"] == 1.0
    assert delay_window(history(ramp(800), np.full(len(STEPS), 0.05), FALLING)) is None  # no T_grok
    reading = train_acc_reading({0: GROKS, 1: dips, 2: GROKS})
    assert (reading.k, reading.n, reading.by_seed[1]) == (2, 3, "dips below 99%")
    text = str(delay_window_report({0: GROKS, 1: dips}))
    assert "in 2 of 2 seeds" in text and "0.83 (seed 1, step 1,200)" in text and "<details" in text


def test_layer_falls_names_layers_in_words_and_sorts_by_fall():
    from nhtlab.book.grokking_report import layer_falls, layer_falls_report
    rows = [{**row, "norm/tok": row["norm"] * 0.9, "norm/readout": 10.0 + row["step"] / 1000}
            for row in GROKS.rows]
    h = History(rows=rows, status="completed")
    falls = layer_falls(h)
    assert [r["layer"] for r in falls] == ["token embedding", "read-out"]
    assert falls[0]["fall"] > 0 > falls[1]["fall"]  # the read-out grows here
    assert "“read-out” (" in str(layer_falls_report(h, 0)) and "larger" in str(layer_falls_report(h, 0))
    assert layer_falls(History(rows=[{**r, "test_acc": 0.0} for r in rows])) == []


def test_chapter_checks_keep_the_names_the_findings_page_reads():
    from nhtlab.book.grokking_report import chapter_checks
    flat = history(ramp(300), np.full(len(STEPS), 0.01), np.full(len(STEPS), 9000.0), wd=0.0)
    grokking = fourier_history(np.linspace(0.2, 0.8, len(STEPS)))
    checks = chapter_checks({0: grokking}, {0: flat}, min_delay=300)
    assert list(checks) == ["memorises, then generalises later", "‖θ‖² falls by a third between T_mem and T_grok",
                            "‖θ‖² is largest at initialisation", "the top-5 Fourier share rises",
                            "without decay: memorises and stays weak"]
    assert all(c[0] for c in checks.values())


def test_fourier_table_is_two_narrow_tables_and_the_curves_mark_each_seeds_events():
    from nhtlab.book.fourier_charts import fourier_curves
    from nhtlab.book.grokking_report import fourier_table, fourier_timing
    h = fourier_history(np.linspace(0.2, 0.8, len(STEPS)))
    tables = str(fourier_table({0: fourier_timing(h)}))
    assert max(line.count("|") for line in tables.splitlines()) <= 7  # six columns at most per table
    assert "contraction done" in tables and "top 5 k (end)" in tables
    spec = fourier_curves({0: h, 1: h}).to_dict()
    marks = spec["vconcat"][0]["layer"][1]["data"]["values"]
    assert {(m["series"], m["event"], m["step"]) for m in marks} == {
        ("seed 0", "T_mem", 800), ("seed 0", "T_grok", 2000), ("seed 1", "T_mem", 800), ("seed 1", "T_grok", 2000)}


def test_time_scale_why_gives_the_working():
    from nhtlab.book.grokking_report import time_scale_why
    assert "≈ 2,773 steps" in time_scale_why(4.0, lr=1e-3, weight_decay=0.5)


def test_event_rules_list_only_what_is_drawn_and_compare_runs_marks_the_events():
    from nhtlab.charts import compare_runs, event_rules
    ev = nhtlab.find_events(GROKS)  # its norm peaks at step 0: no peak rule
    scale = event_rules(ev).to_dict()["encoding"]["color"]["scale"]
    assert scale["domain"] == ["T_mem (memorised)", "T_grok (generalised)"] and len(scale["range"]) == 2
    spec = compare_runs([("λ = 1", GROKS), ("λ = 0", GROKS)], ev).to_dict()
    assert all("layer" in panel for panel in spec["vconcat"])  # both panels carry the rules


# --- what were the module's docstring examples: small readings checked to the character ---------------------------

def test_small_readings_read_to_the_character():
    from nhtlab.book.grokking_report import delay_window, generalise_answer, time_scale_why, train_acc_reading

    r = checks_over_seeds("groks", {0: Check("groks", True), 1: Check("groks", False)}, rule="all")
    assert (r.text(), r.holds) == ("holds in 1 of 2 seeds (seed 0: holds, seed 1: fails)", False)
    assert "| T_grok | 2000 | 2,100 ± 374 |" in events_evidence({0: GROKS}, lr=1e-3)
    h = History([{"step": s, "train_acc": 1.0, "test_acc": 0.2, "norm": 9.0} for s in (0, 100, 200)])
    why = "test accuracy reached 99% in 0 of 1 runs within their budgets (200 steps); the best it reached was 0.20"
    assert generalise_answer({0: h}) == ("no", ("yes", "no"), why)
    h = History([{"step": s, "train_acc": a, "test_acc": b, "norm": n} for s, a, b, n in
                 [(0, 0.1, 0.0, 9.0), (100, 1.0, 0.1, 8.0), (200, 0.9, 0.5, 6.0), (300, 1.0, 1.0, 4.0)]])
    w = delay_window(h)
    assert (w["fall"], w["lowest train acc"], w["at step"]) == (0.5, 0.9, 200)
    h = History([{"step": s, "train_acc": a, "test_acc": b, "norm": 9.0 - s / 100} for s, a, b in
                 [(0, 0.1, 0.0), (100, 1.0, 0.1), (200, 0.9, 0.5), (300, 1.0, 1.0)]])
    assert train_acc_reading({0: h}).text() == "stays ≥ 99% in 0 of 1 seeds (seed 0: dips below 99%)"
    assert time_scale_why(4.0, lr=1e-3, weight_decay=0.5) == (
        "that is log 4 / (ηλ) = 1.386 / 0.0005 ≈ 2,773 steps; the companion code's 2ηλ would give half, 1,386")
