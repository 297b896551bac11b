"""Records, readings over seeds and checks of shortcut-image runs, each check on histories that fail it."""

import json
import math

import numpy as np
import pytest

from nhtlab.book.claims import over_seeds
from nhtlab.analysis.separation import clean_norm_separation
from nhtlab.book.claims import check_reading, reading_answer, reading_rows
from nhtlab.book.shortcut_report import (PILOT_COLUMNS, border_reading, border_record, check_border_escape,
                                             check_rho_trend, check_separation_defined, final_accuracy_records,
                                             norm_record, pilot_row, read_pilot, rho_drop,
                                             rho_reading, separation_records, write_pilot)
from nhtlab.history import History

STEPS = np.arange(0, 1001, 100)


def run(cue, conflict, norm=None, clean=None, train=None):
    """A shortcut-image history: the border followed (cue) and the digit read (conflict) at each step."""
    n = len(STEPS)
    norm = np.linspace(10, 50, n) if norm is None else norm
    cols = dict(cue_acc=cue, conflict_acc=conflict, norm=norm,
                clean_acc=np.full(n, 0.8) if clean is None else clean,
                train_acc=np.full(n, 1.0) if train is None else train, shortcut_acc=np.full(n, 0.9))
    return History(rows=[{"step": int(s), **{k: float(v[i]) for k, v in cols.items()}} for i, s in enumerate(STEPS)],
                   status="completed")


# fitted at 100 (cue 0.6 > conflict 0.1), dropped at 600 (conflict ≥ 0.5)
ESCAPE = run(np.r_[0.1, 0.6, 0.6, 0.5, 0.4, 0.3, 0.2, 0.2, 0.1, 0.1, 0.1],
             np.r_[0.1, 0.1, 0.2, 0.3, 0.4, 0.45, 0.55, 0.6, 0.7, 0.7, 0.72])
# fitted at 100, never dropped
KEPT = run(np.r_[0.1, 0.6, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8], np.full(11, 0.1))
# the digit read from the start: never fitted
NEVER = run(np.full(11, 0.1), np.linspace(0.3, 0.9, 11))


def test_border_record_and_reading():
    r = border_record(ESCAPE)
    assert (r["fitted at"], r["dropped at"]) == (100, 600)
    assert r["conflict min"] == pytest.approx(0.1) and r["conflict"] == pytest.approx(0.72)
    assert r["train"] == 1.0 and r["clean"] == pytest.approx(0.8) and r["shortcut"] == pytest.approx(0.9)
    assert [border_reading(h) for h in (ESCAPE, KEPT, NEVER)] == ["dropped", "kept", "never fitted"]
    assert border_record(KEPT)["dropped at"] is None
    with pytest.raises(ValueError, match="empty"):
        border_record(History(rows=[]))


def test_norm_record_peak_and_contraction():
    rec = norm_record(run(ESCAPE.column("cue_acc"), ESCAPE.column("conflict_acc"),
                          norm=np.r_[10, 50, 90, 100, 95, 80, 60, 50, 45, 42, 40.0]))
    assert rec == {"norm peak step": 300, "norm peak": 100.0, "norm end": 40.0, "contraction": pytest.approx(0.6)}
    assert norm_record(KEPT)["contraction"] == 0.0  # still rising at the end


def test_rho_reading_needs_a_fall_above_the_margin():
    assert rho_drop(ESCAPE, KEPT) == pytest.approx(0.62)
    assert rho_reading(ESCAPE, KEPT) == "falls"
    assert rho_reading(ESCAPE, KEPT, margin=0.7) == "does not fall"
    assert rho_reading(KEPT, ESCAPE) == "does not fall"  # it rises with ρ


def test_check_border_escape_passes_on_a_majority_and_fails_otherwise():
    ok = check_border_escape({0: ESCAPE, 1: ESCAPE, 2: KEPT})
    assert ok and "dropped in 2 of 3 seeds" in ok.detail
    # kept in two seeds of three, or never fitted: the border is not escaped
    assert not check_border_escape({0: ESCAPE, 1: KEPT, 2: NEVER})
    assert not check_border_escape({0: ESCAPE, 1: ESCAPE, 2: KEPT}, rule="all")
    assert not check_border_escape({})


def test_check_rho_trend_fails_when_the_worst_group_does_not_fall():
    ok = check_rho_trend({0: ESCAPE, 1: ESCAPE}, {0: KEPT, 1: KEPT})
    assert ok and "seed 0: 0.62" in ok.detail
    flat = check_rho_trend({0: ESCAPE, 1: KEPT, 2: KEPT}, {0: KEPT, 1: KEPT, 2: KEPT})
    assert not flat and "falls in 1 of 3 seeds" in flat.detail
    with pytest.raises(ValueError, match="same seeds"):
        check_rho_trend({0: ESCAPE}, {1: KEPT})


def test_check_separation_defined_fails_when_the_score_is_undefined():
    steps = np.arange(0, 2001, 20.0)
    norm = np.where(steps <= 500, 100 + steps, 600 * np.exp(-(steps - 500) / 600))
    defined = clean_norm_separation(steps, norm, 1 / (1 + np.exp((steps - 1200) / 50)), start_step=500)
    never = clean_norm_separation(steps, norm, np.ones(len(steps)), start_step=None)
    assert check_separation_defined({0: defined, 1: defined, 2: never})
    bad = check_separation_defined({0: defined, 1: never, 2: never})
    assert not bad and "undefined" in bad.detail
    rows = separation_records({"border": defined, "tint": never})
    assert rows[0]["domain"] == "border" and rows[0]["score text"] == "1.00" and rows[0]["defined"]
    assert rows[1]["score text"].startswith("undefined") and math.isnan(rows[1]["score"])


def test_readings_become_records_and_checks():
    flipping = over_seeds("border", {0: "dropped", 1: "kept", 2: "kept"}, expected="dropped")
    rec = reading_rows([flipping])[0]
    assert rec["seeds"] == "1 of 3" and rec["holds"] == "✗" and rec["flips"] == "yes"
    assert rec["by seed"] == "0: dropped, 1: kept, 2: kept"
    assert not check_reading(flipping)
    steady = over_seeds("border", {0: "dropped", 1: "dropped", 2: "dropped"}, expected="dropped")
    assert check_reading(steady)


def test_final_accuracy_records_are_long_form():
    recs = final_accuracy_records({0.9: ESCAPE, 1.0: KEPT}, {"conflict_acc": "conflict", "train_acc": "train"})
    assert len(recs) == 4 and recs[0] == {"rho": 0.9, "series": "conflict", "value": pytest.approx(0.72)}


def test_pilot_rows_round_trip_through_the_file(tmp_path):
    row = pilot_row(ESCAPE, dict(otherwise="other", task="1,258 images", contrast=1.0, rho=0.95, lam=0.1, seed=0))
    assert list(row) == list(PILOT_COLUMNS) and (row["fitted"], row["dropped"]) == (100, 600)
    about = {"machine": "test", "nhtlab": "0", "command": "pytest"}
    path = write_pilot(tmp_path / "pilot.json", [row], about)
    assert read_pilot(path) == (about, [row])
    with pytest.raises(ValueError, match="must say"):
        write_pilot(tmp_path / "x.json", [row], {"machine": "test"})
    (tmp_path / "bad.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="not a pilot-grid file"):
        read_pilot(tmp_path / "bad.json")


def test_the_books_pilot_file_reads():
    about, rows = read_pilot()
    assert {"machine", "nhtlab", "command"} <= set(about) and len(rows) == 16
    assert all(set(r) == set(PILOT_COLUMNS) for r in rows)


def test_reading_answer_is_yes_only_when_the_rule_holds():
    held = over_seeds("the border", {0: "dropped", 1: "kept", 2: "dropped"}, expected="dropped")
    assert reading_answer(held, detail="seed 1: kept") == (
        "yes", ("yes", "no"),
        ("the border: dropped in 2 of 3 seeds (seed 0: dropped, seed 1: kept, seed 2: dropped), and a majority of"
         " seeds decides; seed 1: kept"))
    tie = over_seeds("the border", {0: "dropped", 1: "kept"}, expected="dropped")
    assert reading_answer(tie)[0] == "no"  # a tie is no majority
    every = over_seeds("the border", {0: "dropped", 1: "kept", 2: "dropped"}, expected="dropped", rule="all")
    assert reading_answer(every)[0] == "no" and "every seed decides" in reading_answer(every)[2]
    with pytest.raises(TypeError, match="reading"):
        reading_answer("dropped")
    with pytest.raises(TypeError, match="detail"):
        reading_answer(held, detail=3)


def test_budget_regime_calls_weak_or_strong_only_after_the_budget():
    from nhtlab.analysis.regimes import budget_regime
    from nhtlab.book.shortcut_report import REGIME_BUDGET
    assert REGIME_BUDGET == 4.0  # chapter 01's panel: 4,000 steps at ηλ = 1e-3
    assert budget_regime("weak", 3000, 3e-3 * 0.3, REGIME_BUDGET) == "not decided within 3,000 steps"  # 2.7 < 4
    assert budget_regime("strong", 3000, 3e-3 * 1.0, REGIME_BUDGET) == "strong"  # 9 ≥ 4
    assert budget_regime("strong", 1000, 1e-3, REGIME_BUDGET) == "not decided within 1,000 steps"
    assert budget_regime("intermediate", 10, 1e-6, REGIME_BUDGET) == "intermediate"  # something seen stands at any budget
    assert budget_regime("undetermined", 10, 1e-6, REGIME_BUDGET) == "undetermined"
    assert budget_regime("weak", 3000, 0.0, REGIME_BUDGET) == "not decided within 3,000 steps"  # no decay: never decided
    with pytest.raises(ValueError, match="factor"):
        budget_regime("weak", 3000, 1e-3, factor=0.0)


def _mnist_pilot(dropped_mid):
    from nhtlab.book.report import MNIST_CRITERIA

    verdicts = [{"design": d, "rho": 1.0, "contrast": c, "train_size": 500,
                 **dict(zip(MNIST_CRITERIA, (dropped_mid and d == 1, d == 1, dropped_mid and d == 1, True)))}
                for d, c in enumerate((0.2, 1.0))]
    run = {"fitted": 200, "dropped": 900 if dropped_mid else None, "norm_fitted": 120, "norm_end": 80,
           "conflict_end": 0.7, "order": {"verdict": "backward"}}
    other = {**run, "order": {"verdict": "forward"}}  # the control and the strong λ: never the one read
    seeds = [{"seed": s, "0.01": other, "0.5": run, "3.0": other,
              **dict(zip(MNIST_CRITERIA, (dropped_mid, True, dropped_mid, s == 0)))} for s in (0, 1, 2)]
    return {"about": {}, "designs": [], "rows": [], "verdicts": verdicts, "chosen": 1, "seeds": seeds}


def test_the_mnist_pilot_says_whether_any_design_meets_the_premise(tmp_path):
    import json

    from nhtlab.book.report import mnist_pilot_summary, read_mnist_pilot

    none = str(mnist_pilot_summary(_mnist_pilot(False)))
    assert "(i) P1 in 0 of 2" in none and "(ii) control keeps it in 1 of 2" in none and "No design in the grid met (i)–(iii)" in none
    assert "(iv) strong does not fit 1 of 3" in none and "at λ = 0.5 (backward" in none and "backward in 3 of 3" in none
    assert "contrast 1, 500 training images" in none and none.count("|") > 20
    some = str(mnist_pilot_summary(_mnist_pilot(True)))
    assert "1 design(s) met (i)–(iii)" in some and "| 900 |" in some
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps({"about": {}, "rows": []}))
    with pytest.raises(ValueError, match=r"lacks \['chosen', 'designs', 'seeds', 'verdicts'\]"):
        read_mnist_pilot(path)


def _omnigrok_pilot(passed):
    base = {"size": 14, "lr": 2e-3, "eval_every": 100, "time_scales": 2.0, "generalised": 0.8}
    runs = [{"lam": lam, "seed": s, "steps": 1000, "t_mem": 200, "t_gen": None if lam == 0.2 and s == 1 else 600,
             "delay": None if lam == 0.2 and s == 1 else 400, "norm_start": 9000, "norm_mem": 5000 if s else 500,
             "norm_end": 700, "train_end": 1.0, "test_end": 0.9,
             "order": {"verdict": "backward" if s == 0 else "forward"}, "status": "completed", "cpu_s": 1}
            for lam in (0.1, 0.2) for s in (0, 1)]
    law = {"passed": passed, "detail": "α = 0.97 [0.5, 1.4] (3 runs, 2 λ)", "alpha": 0.97}
    return {"about": {"command": "python x", "nhtlab": "0", "machine": "m", "cpu_s": 4}, "base": base,
            "lams": [0.1, 0.2], "seeds": [0, 1], "runs": runs, "delay_law": law}


def _omnigrok_cnn_pilot():
    """Three CNN runs: one never memorises, one generalises before it memorises, one memorises first."""
    events = [(None, 700, None), (900, 500, None), (200, 600, 400)]
    runs = [{"lam": 0.1, "seed": s, "steps": 1000, "t_mem": m, "t_gen": g, "delay": d, "norm_start": 700,
             "norm_mem": None if m is None else 300, "norm_end": 50, "train_end": 0.9, "test_end": 0.85,
             "order": {"verdict": "forward"} if d else None, "status": "completed", "cpu_s": 1,
             "layers": {"conv1": {"peak_step": 0, "lost": lost}, "hidden": {"peak_step": 0, "lost": 0.9},
                        "readout": {"peak_step": 100 * s, "lost": 0.5}}}
            for s, (m, g, d), lost in zip(range(3), events, (0.99, 0.9, 0.95))]
    pilot = _omnigrok_pilot(False)
    law = {"passed": False, "detail": "1 λ with a measured delay (needs 3)", "alpha": math.nan}
    return {**pilot, "base": {**pilot["base"], "arch": "cnn"}, "lams": [0.1], "seeds": [0, 1, 2], "runs": runs,
            "delay_law": law}


def test_the_real_image_grokking_pilot_is_read_k_of_n(tmp_path):
    import json

    from nhtlab.book.report import omnigrok_summary, read_omnigrok_pilot
    from nhtlab.papers import NHT_LAYER_ORDER

    text = str(omnigrok_summary(_omnigrok_pilot(True), NHT_LAYER_ORDER))
    assert "memorised (train accuracy ≥ 99%) in 4 of 4, and memorised, then generalised (test ≥ 80%) in 3 of 4." in text
    assert "delay follows 1/(ηλ)" in text and "without memorising first" not in text and "own peak" not in text
    assert "(P1) in 2 of the 4 that memorised" in text and "backward in 2, forward in 2 of 4" in text and "the paper reads backward" in text
    assert "| 0.1 | 0 | 1,000 | 200 | 600 | 0.08 | 9,000 → 500 → 700 | 1, 0.9 |" in text  # delay · ηλ = 400 · 2e-3 · 0.1
    failing = str(omnigrok_summary(_omnigrok_pilot(False), NHT_LAYER_ORDER))
    assert "does not follow" in failing and "grows slower than 1/(ηλ)" in failing  # α = 0.97 < 1
    assert "So the paper's backward order fails on these runs" in text  # 2 of 4 is no strict majority
    three = _omnigrok_pilot(True)
    three["runs"][1]["order"] = {"verdict": "backward"}
    assert "So the paper's backward order holds" in str(omnigrok_summary(three, NHT_LAYER_ORDER))
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps({"about": {}, "runs": []}))
    with pytest.raises(ValueError, match=r"lacks \['base', 'delay_law', 'lams', 'seeds'\]"):
        read_omnigrok_pilot(path=path)
    assert read_omnigrok_pilot()["base"]["arch"] == "cnn"  # the saved pilot is the CNN's: chapter 05 trains the MLP


def test_the_cnn_pilot_reads_conv1_against_the_readout():
    from nhtlab.book.report import omnigrok_summary
    from nhtlab.papers import NHT_LAYER_ORDER

    text = str(omnigrok_summary(_omnigrok_cnn_pilot(), NHT_LAYER_ORDER))
    assert "with a CNN (conv1, a max-pool, then the MLP's hidden layer and the read-out fc" in text
    assert "run of the CNN" in text
    assert "memorised (train accuracy ≥ 99%) in 2 of 3, and memorised, then generalised (test ≥ 80%) in 1 of 3" in text
    assert "2 of 3 reached the test threshold without memorising first" in text  # never memorised; memorised later
    assert "the delay cannot be tested against 1/(ηλ): 1 λ with a measured delay" in text  # α is NaN
    assert "follow" not in text and "grows" not in text
    assert "(P1) in 2 of the 2 that memorised" in text
    assert "the read-out and conv1 contracted in the order not read in 2, forward in 1 of 3;" in text
    assert "the read-out peaked at initialisation in 1 of 3 and had lost a median 50%" in text
    assert "conv1 peaked at initialisation in 3 of 3 and had lost a median 95%" in text  # median of .99, .9, .95
    assert "the read-out lost less than conv1, where the paper's read-out loses more than conv1." in text
    assert "hidden peaked" not in text  # the paper's reading: the read-out against conv1
    none = _omnigrok_cnn_pilot()
    none["runs"] = [{**r, "t_mem": None, "delay": None, "order": None, "norm_mem": None} for r in none["runs"]]
    none_text = str(omnigrok_summary(none, NHT_LAYER_ORDER))
    assert "not read in 3 of 3 (not read: no run memorised, then generalised)" in none_text
    assert "these runs cannot test the paper's order" in none_text
