"""Chapter 05's readings over seeds, on synthetic digit-border histories with known answers."""

import re

import pytest

from nhtlab.book.layer_report import (
    image_readings,
    image_run_rows,
    modular_order_table,
    signal_records,
)
from nhtlab.analysis.layers import contraction_order
from nhtlab.book.layer_report import order_readings
from nhtlab.book.claims import reading_rows
from nhtlab.book.shortcut_report import border_reading
from nhtlab.history import History


def border_run(drop=True, head_first=True, fitted=True):
    """Follows the border from step 100 (if ``fitted``) and reads the digit from 500 (if ``drop``).

    ``head_first``: the read-out peaks at 100 and loses 20% at 200, conv1 at 400 (backward; the read-out's
    signal turns down before the drop: it warns). Otherwise conv1 loses 20% at 200 while the read-out grows
    until the drop at 500 (forward; the signal turns down at the drop: no warning).
    """
    rows = []
    for s in range(0, 701, 100):
        cue = 0.8 if fitted and 100 <= s < (500 if drop else 10**9) else 0.1
        conflict = 0.7 if drop and s >= 500 else 0.1
        if head_first:
            readout, conv1 = (1.0 + s / 100 if s <= 100 else 2.0) * (0.8 if s >= 200 else 1.0), 5.0 * (
                0.8 if s >= 400 else 1.0)
        else:
            readout, conv1 = 1.0 + min(s, 500) / 100, 5.0 * (0.8 if s >= 200 else 1.0)
        rows.append({"step": s, "cue_acc": cue, "conflict_acc": conflict, "norm": readout + conv1,
                     "norm/conv1": conv1, "norm/bn1": 1.0, "norm/readout": readout})
    return History(rows=rows, status="completed")


def test_border_reading_tells_the_three_fates():
    assert border_reading(border_run()) == "dropped"
    assert border_reading(border_run(drop=False)) == "kept"
    assert border_reading(border_run(fitted=False)) == "never fitted"


def test_image_rows_and_readings_count_seeds():
    runs = {("main", 0): border_run(), ("main", 1): border_run(head_first=False), ("main", 2): border_run(),
            ("control", 0): border_run(drop=False), ("control", 1): border_run(drop=True)}
    rows = image_run_rows(runs)
    first = rows[0]
    assert (first["fitted"], first["dropped"], first["border"], first["verdict"]) == (100, 500, "dropped", "backward")
    assert first["order"] == "readout → conv1" and first["warning"] == "warns"
    assert rows[1]["verdict"] == "forward" and rows[1]["warning"] == "does not warn"
    assert rows[3]["border"] == "kept" and rows[3]["warning"] == "no drop"
    readings = image_readings(rows, {("main", "border"): "dropped", ("main", "verdict"): "backward",
                                     ("control", "border"): "kept"})
    main, order, control = readings.values()
    assert (main.k, main.n, main.holds) == (3, 3, True)
    assert (order.k, order.n, order.holds, order.flips) == (2, 3, True, True)
    assert (control.k, control.n, control.holds) == (1, 2, False)  # one of two is not a strict majority
    table = reading_rows(readings, {("main", "verdict"): "backward"})
    assert table[1]["paper"] == "backward" and table[1]["holds"] == "✓" and table[1]["flips"] == "yes"
    assert table[2]["holds"] == "✗" and table[0]["paper"] is None
    assert table[1]["seeds"] == "2 of 3" and table[1]["stated"] == "backward"


def test_modular_rows_and_signal_records():
    h = border_run()
    orders = {(1.0, 0): contraction_order(h, window=(100, 500))}
    row = modular_order_table(orders).splitlines()[2]  # λ, seed, T_mem, T_grok, the read-out's step first
    assert row.startswith("| 1 | 0 | 100 | 500 | 200 |") and row.endswith("| backward |")
    assert order_readings(orders)[1.0].k == 1
    records, events = signal_records({"main": h})
    assert {r["signal"] for r in records} == {"‖θ_L‖²/‖θ_L(0)‖²", "‖θ_L‖²/‖θ_1‖²", "‖θ‖²/‖θ(0)‖²"}
    assert len(records) == 3 * len(h) and records[0]["value"] == pytest.approx(1.0)
    assert events == [{"run": "main", "event": "border fitted", "step": 100},
                      {"run": "main", "event": "border dropped", "step": 500}]


def test_order_answer_reads_the_majority_and_names_a_tie():
    from nhtlab.analysis.layers import ContractionOrder, LayerContraction
    from nhtlab.book.layer_report import order_answer

    def order(verdict, head_step, first_step):
        layers = [LayerContraction("tok", 10.0, 7.0, 0.3, first_step), LayerContraction("readout", 5.0, 4.0, 0.2, head_step)]
        return ContractionOrder(100, 500, 0.1, "readout", "tok", layers, verdict)

    answer, choices, why = order_answer({0: order("forward", 400, 200), 1: order("forward", 300, 200),
                                         2: order("backward", 200, 300)})
    assert answer == "forward" and "forward in 2 of 3 runs" in why and "backward" in choices
    assert order_answer({(1.0, 0): order("forward", 400, 200)}) == (
        "forward", ("backward", "forward", "simultaneous", "undetermined"),
        "forward in 1 of 1 runs; the read-out lost its share at a median 300 steps after the window opens, the first "
        "layer at a median 100 steps after the window opens")
    tie, _, why = order_answer({0: order("forward", 400, 200), 1: order("backward", 200, 300)})
    assert tie == "undetermined" and "a tie, backward in 1 and forward in 1 of 2 runs" in why
    with pytest.raises(ValueError, match="'orders' is empty"):
        order_answer({})


def modular_run(t_mem, t_grok, head_drop, first_drop):
    """A companion-shaped history: train (test) accuracy at 99% from t_mem (t_grok); each layer halves at its step."""
    rows = [{"step": s, "train_acc": float(s >= t_mem), "test_acc": float(s >= t_grok),
             "norm/tok": 10.0 / (1 + (s >= first_drop)), "norm/readout": 4.0 / (1 + (s >= head_drop))}
            for s in range(0, 1601, 100)]
    return History(rows=[{**r, "norm": r["norm/tok"] + r["norm/readout"]} for r in rows], status="completed")


def test_embedding_scale_readings_pair_each_small_run_with_its_default_seed():
    from nhtlab.book.layer_report import embedding_scale_readings, embedding_scale_report

    default = {(1.0, s): modular_run(300, 1000, 800, 400) for s in (0, 1, 2)}  # forward, delay 700
    small = {(1.0, 0): modular_run(300, 600, 400, 500), (1.0, 1): modular_run(300, 600, 400, 500),  # backward, 300
             (1.0, 2): modular_run(200, 1200, 800, 400)}  # forward, delay 1000
    readings = embedding_scale_readings(default, small, 0.1)
    order, delay = readings[("order", 1.0)], readings[("delay", 1.0)]
    assert order.by_seed == {0: "backward", 1: "backward", 2: "forward"} and order.holds
    assert delay.by_seed == {0: "shorter", 1: "shorter", 2: "longer"} and (delay.k, delay.n) == (2, 3)
    report = embedding_scale_report(default, small, readings)
    assert "The hypothesis holds on these runs" in report and "| 1 | 2 | 300 | 200 | 1000 | 1200 | forward | forward |" in report
    failed = embedding_scale_readings(default, {(1.0, 0): default[(1.0, 0)]}, 0.1)
    assert "The hypothesis failed" in embedding_scale_report(default, {(1.0, 0): default[(1.0, 0)]}, failed)
    assert failed[("delay", 1.0)].by_seed == {0: "the same"}
    with pytest.raises(ValueError, match="'small'.*without a default run"):
        embedding_scale_readings({}, small, 0.1)


def test_window_records_give_each_run_its_window_and_named_events():
    from nhtlab.book.layer_report import conflict_records, window_records
    from nhtlab.book.layer_charts import contraction_curves, warning_signals

    records, events = window_records({"λ = 1, seed 0": modular_run(300, 1000, 800, 400)})
    assert {r["step"] for r in records} == set(range(300, 1001, 100))
    assert events == [{"run": "λ = 1, seed 0", "event": "T_mem", "step": 300, "align": "left"},
                      {"run": "λ = 1, seed 0", "event": "T_grok", "step": 1000, "align": "right"}]
    records, events = window_records({"main": border_run(drop=False)}, border=True)
    assert [e["event"] for e in events] == ["border fitted"] and max(r["step"] for r in records) == 700
    spec = contraction_curves(records, 0.1, events=events).to_dict()
    layers = spec["layer"]
    # one legend: the filled points repeat the lines' colour without a legend of their own
    assert layers[1]["encoding"]["fill"]["condition"]["legend"] is None
    assert {r["layer"] for r in layers[0]["data"]["values"]} == {"conv 1", "read-out"}
    assert [l["mark"]["type"] for l in layers[3:]] == ["rule", "text", "text"]
    accuracy = conflict_records({"main": border_run()})
    assert accuracy[0] == {"step": 0, "run": "main", "value": 0.1} and len(accuracy) == 8
    chart = warning_signals(*signal_records({"main": border_run()}), accuracy=accuracy).to_dict()
    assert len(chart["vconcat"]) == 2


def test_order_reference_and_cases_are_the_exercise_answer():
    from nhtlab.book.layer_report import order_cases, order_reference

    runs = {(1.0, 0): modular_run(300, 1000, 800, 400), (1.0, 1): modular_run(300, 1000, 400, 800)}
    orders = {key: contraction_order(h) for key, h in runs.items()}
    cases = order_cases(runs, orders)
    assert [c[2:] for c in cases] == [(300, 1000), (300, 1000)] and cases[0][1] == ["tok", "readout"]
    assert order_reference(*cases[0]) == ["tok", "readout"] and order_reference(*cases[1]) == ["readout", "tok"]
    never = {(1.0, 0): modular_run(2000, 2000, 800, 400)}
    assert order_cases(never, {k: contraction_order(h) for k, h in never.items()})[0][2:] == (0, 1600)
    with pytest.raises(ValueError, match="'layers'"):
        order_reference(runs[(1.0, 0)], ["readout"], 300, 1000)


def test_tally_and_findings_count_every_seed():
    from nhtlab.book.claims import over_seeds
    from nhtlab.book.layer_report import layer_findings, order_summary, tally

    fwd = over_seeds("layer order at λ = 1", {0: "forward", 1: "forward"}, expected="backward")
    assert tally(fwd) == "backward in 0 of 2 seeds (forward 2)"
    a = over_seeds("x", {0: "forward", 1: "backward"}, expected="backward")
    b = over_seeds("y", {0: "forward", 1: "undetermined"}, expected="backward")
    assert tally([a, b]) == "backward in 1 of 4 runs (forward 2, undetermined 1)"
    assert tally(a) == "backward in 1 of 2 seeds (forward 1)"
    assert order_summary({"λ = 1": fwd}) == ("On this setting the paper's P4 **holds at 0 of 1 λ** (backward in a "
                                             "strict majority of seeds): λ = 1: backward in 0 of 2 seeds (forward 2).")
    small = {("order", 1.0): fwd, ("delay", 1.0): over_seeds("d", {0: "shorter", 1: "longer"}, expected="shorter")}
    images = {("main", "border"): over_seeds("b", {0: "dropped"}, expected="dropped"),
              ("control", "border"): over_seeds("c", {0: "dropped"}, expected="kept"),
              ("main", "verdict"): over_seeds("v", {0: "undetermined"}, expected="backward"),
              ("main", "warning"): over_seeds("w", {0: "does not warn"}, expected="warns")}
    mnist = {"runs": [{"delay": 400, "order": {"verdict": "backward"}}, {"delay": None, "order": None}],
             "delay_law": {"passed": False, "detail": "1 λ with a measured delay (needs 3)", "alpha": float("nan")}}
    box = layer_findings({"λ = 1": fwd}, small, images, 0.1, mnist)
    assert "What we found" in box and "holds at 0 of 1 λ" in box and "shorter in 1 of 2 seeds (longer 1)" in box
    assert "kept in 0 of 1 seeds (dropped 1)" in box and "warns in 0 of 1 seeds (does not warn 1)" in box
    assert "1 of 2 runs memorised, then generalised; from T_mem their layer order reads backward in 1, not read in 1 " \
           "of 2. Across λ the delay cannot be tested against 1/(ηλ) (1 λ with a measured delay (needs 3))." in box


def grok_history(t_mem, t_gen, end=1000):
    """A real-image run: train accuracy 1 from ``t_mem``, test 0.85 from ``t_gen`` (else 0.5); the read-out loses
    20% at 600 and the first layer at 800, each from a peak at 200; ‖θ‖² is their sum."""
    rows = []
    for s in range(0, end + 1, 100):
        readout = (1.0 + s / 200 if s <= 200 else 2.0) * (0.8 if s >= 600 else 1.0)
        first = (4.0 + s / 100 if s <= 200 else 6.0) * (0.8 if s >= 800 else 1.0)
        rows.append({"step": s, "train_acc": 1.0 if t_mem is not None and s >= t_mem else 0.5,
                     "test_acc": 0.85 if t_gen is not None and s >= t_gen else 0.5, "norm": readout + first,
                     "norm/layers.0": first, "norm/readout": readout})
    return History(rows=rows, status="completed")


def test_a_real_image_run_is_read_from_its_history():
    from nhtlab.book.layer_report import grok_run_reading, omnigrok_runs
    from nhtlab.training.image_grok_run import ImageGrokRun

    runs = omnigrok_runs({"size": 7, "n_train": 100, "lr": 2e-3, "budgets": {0.1: 6300, 0.4: 1600},
                          "seeds": [0, 1]}, seed=3)
    assert list(runs) == [(0.1, 3), (0.1, 4), (0.4, 3), (0.4, 4)]
    assert [r.steps for r in runs.values()] == [6300, 6300, 1600, 1600]
    assert runs[(0.4, 4)] == ImageGrokRun(size=7, n_train=100, lr=2e-3, weight_decay=0.4, steps=1600, seed=4)
    read = grok_run_reading(runs[(0.1, 3)], grok_history(300, 900))
    assert (read["lam"], read["seed"], read["steps"], read["t_mem"], read["t_gen"], read["delay"]) == \
        (0.1, 3, 6300, 300, 900, 600)
    assert (read["norm_start"], read["norm_mem"], read["norm_end"]) == (5, 8, 6)  # 1 + 4; 2 + 6; 1.6 + 4.8
    assert read["order"]["verdict"] == "backward"  # the read-out loses 10% at 600, the first layer at 800
    assert read["layers"] == {"layers.0": {"peak_step": 200, "lost": 0.2}, "readout": {"peak_step": 200, "lost": 0.2}}
    early = grok_run_reading(runs[(0.1, 3)], grok_history(700, 400))  # generalised before it memorised
    assert early["delay"] is None and early["order"] is None and early["t_gen"] == 400
    never = grok_run_reading(runs[(0.1, 3)], grok_history(None, 400))
    assert never["t_mem"] is None and never["norm_mem"] is None and never["delay"] is None


@pytest.mark.parametrize("spec, missing", [({"seeds": [0]}, "['budgets']"), ({"budgets": {0.1: 100}}, "['seeds']"),
                                           ({"budgets": [0.1], "seeds": [0]}, "[]")])
def test_a_real_image_spec_without_its_budgets_or_seeds_is_named(spec, missing):
    """A reader who edits chapter 05's profile gets the spec's needs named, not a KeyError."""
    from nhtlab.book.layer_report import omnigrok_runs

    with pytest.raises(ValueError, match=rf"'spec' parameter of omnigrok_runs needs 'budgets'.*missing {re.escape(missing)}"):
        omnigrok_runs(spec)
def test_the_real_image_runs_premise_and_record():
    from nhtlab.book.layer_report import grok_run_reading, omnigrok_premise, omnigrok_record, omnigrok_runs
    from nhtlab.book.report import omnigrok_summary
    from nhtlab.papers import NHT_LAYER_ORDER

    spec = {"size": 7, "n_train": 100, "lr": 2e-3, "budgets": {0.1: 1000, 0.2: 1000, 0.4: 1000}, "seeds": [0, 1, 2]}
    runs = omnigrok_runs(spec)
    # delays 800, 400 and 200 at λ = 0.1, 0.2, 0.4: exactly 1/λ; ‖θ‖² 8 at T_mem, 6.4 at the end
    events = {0.1: (200, 1000), 0.2: (200, 600), 0.4: (200, 400)}
    record = omnigrok_record([grok_run_reading(run, grok_history(*events[lam])) for (lam, _), run in runs.items()],
                             spec)
    # the shortest budget in time scales: 1,000 steps · 2e-3 · 0.1
    assert record["base"] == {"size": 7, "n_train": 100, "lr": 2e-3, "time_scales": 0.2, "generalised": 0.8}
    assert record["seeds"] == [0, 1, 2] and record["about"] is None
    assert record["delay_law"]["passed"] and record["delay_law"]["alpha"] == pytest.approx(1.0)
    premise = omnigrok_premise(record)
    assert premise and premise.detail == "λ = 0.1: 3 of 3; λ = 0.2: 3 of 3; λ = 0.4: 3 of 3"
    text = str(omnigrok_summary(record, NHT_LAYER_ORDER))
    assert "on 100 MNIST-5k images at 7 × 7 pixels" in text and "Trained by this chapter." in text
    assert "delay follows 1/(ηλ)" in text
    # two seeds at λ = 0.4 never memorise: no strict majority there, so the premise fails, naming the λ
    for r in record["runs"]:
        if r["lam"] == 0.4 and r["seed"] < 2:
            r.update(delay=None, norm_mem=None, t_mem=None)
    failed = omnigrok_premise(record)
    assert not failed and failed.detail.endswith("λ = 0.4: 1 of 3")
    # memorised, then generalised, but with ‖θ‖² higher at the end than at T_mem: P1 fails, so the premise does
    for r in record["runs"]:
        r["norm_end"] = r["norm_mem"] or 0
    assert not omnigrok_premise(record)


def test_the_chapter_solution_agrees_with_order_reference():
    import numpy as np

    from nhtlab.book.exercises import check_function
    from nhtlab.book.layer_report import order_cases, order_reference

    def contraction_order_of(history, layers, t_mem, t_end, share=0.1):  # chapter 05's solution, as printed
        steps = history.column("step")
        inside = (steps >= t_mem) & (steps <= t_end)
        when = {}
        for layer in layers:
            norm = history.column(f"norm/{layer}")[inside]
            lost = np.nonzero(norm <= (1 - share) * norm[0])[0]
            if len(lost):
                when[layer] = steps[inside][lost[0]]
        return sorted(when, key=when.get)

    runs = {(1.0, 0): modular_run(300, 1000, 800, 400), (1.0, 1): modular_run(300, 1000, 400, 800),
            (1.0, 2): modular_run(300, 1000, 600, 600)}
    cases = order_cases(runs, {key: contraction_order(h) for key, h in runs.items()})
    assert check_function(contraction_order_of, order_reference, cases).status == "correct"
    assert check_function(lambda *a: ["readout", "tok"], order_reference, cases).status == "wrong"
