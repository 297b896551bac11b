"""Chapter 06's layer-order chart: each layer over its own peak, one run at a time, with the border's events."""

from __future__ import annotations

import pytest

from nhtlab.analysis.layers import CONTRACTION_SHARE
from nhtlab.book.layer_charts import layer_peak_chart
from nhtlab.book.layer_report import peak_records
from nhtlab.history import History

# conv1 peaks at 4 (step 200), the read-out at 8 (step 100); the border is fitted at 100 (cue_acc 0.6 > 0.2) and
# dropped at 300 (conflict_acc 0.7); training accuracy reaches 0.99 at 200 (T_mem). A border run records no
# test_acc, and neither does this history.
STEPS = [0, 100, 200, 300, 400]
CONV1 = [1.0, 2.0, 4.0, 4.0, 3.0]
READOUT = [2.0, 8.0, 6.0, 4.0, 4.0]
CUE = [0.1, 0.6, 0.5, 0.2, 0.1]
CONFLICT = [0.1, 0.2, 0.3, 0.7, 0.8]
TRAIN = [0.1, 0.9, 0.99, 1.0, 1.0]


def _history(train=TRAIN) -> History:
    return History([{"step": s, "norm": a + b, "norm/conv1": a, "norm/readout": b, "cue_acc": c,
                     "conflict_acc": d, "train_acc": t}
                    for s, a, b, c, d, t in zip(STEPS, CONV1, READOUT, CUE, CONFLICT, train)])


def test_each_layer_is_read_over_its_own_peak_with_the_runs_events():
    records, events = peak_records({"λ = 0.1, seed 0": _history()})
    curve = {layer: [r["normalised"] for r in records if r["layer"] == layer] for layer in ("conv 1", "read-out")}
    assert curve["conv 1"] == pytest.approx([0.25, 0.5, 1.0, 1.0, 0.75])
    assert curve["read-out"] == pytest.approx([0.25, 1.0, 0.75, 0.5, 0.5])
    assert [r["step"] for r in records if r["layer"] == "conv 1"] == STEPS
    # the read-out loses 10% of its value at the fit (8) by step 200; conv1 only grows after the fit
    assert {r["first"] for r in records} == {"read-out"}
    assert {(e["event"], e["step"]) for e in events} == {("border fitted", 100), ("border dropped", 300),
                                                         ("T_mem", 200)}


def test_an_event_that_never_happened_is_not_marked():
    _, events = peak_records({"a": _history(train=[0.1, 0.5, 0.6, 0.7, 0.8])})
    assert "T_mem" not in {e["event"] for e in events}
    assert {e["run"] for e in events} == {"a"}


def test_a_run_that_never_fitted_the_border_names_no_first_layer():
    rows = [{**r, "cue_acc": 0.1} for r in _history().rows]  # never follows the border
    records, events = peak_records({"a": History(rows)})
    assert {r["first"] for r in records} == {"— (the border was never fitted)"}
    assert [e["event"] for e in events] == ["T_mem"]


def test_an_empty_record_list_is_refused_by_name():
    with pytest.raises(ValueError, match="'records'"):
        layer_peak_chart([], [])


def test_the_chart_has_a_run_dropdown_and_a_rule_layer_with_a_legend():
    runs = {"λ = 0.1, seed 0": _history(), "λ = 0.01, seed 0": _history(train=[0.1] * 5)}
    spec = layer_peak_chart(*peak_records(runs)).to_dict()
    param = next(p for p in spec["params"] if p["name"] == "run")
    assert param["bind"]["input"] == "select" and param["bind"]["options"] == list(runs)
    assert param["value"] == "λ = 0.1, seed 0"
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["line", "rule", "text"]
    rule = spec["layer"][1]
    assert rule["encoding"]["strokeDash"]["field"] == "event"  # a legend of its own, not the layers' colour
    assert rule["encoding"]["strokeDash"]["scale"]["domain"] == ["border fitted", "T_mem", "border dropped"]
    # the note names each run's first layer, with the share it had to lose
    notes = {row["run"]: row["text"] for row in spec["layer"][2]["data"]["values"]}
    assert notes["λ = 0.1, seed 0"].endswith(f"lose {CONTRACTION_SHARE:.0%} of its value at the fit: read-out")
    assert rule["encoding"]["x"]["field"] == "step"
    assert spec["layer"][0]["encoding"]["y"]["title"] == "‖θ_ℓ‖² / its own peak"
