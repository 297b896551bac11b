"""Layerwise analysis on histories with known answers."""

import numpy as np
import pytest

from nhtlab.analysis.layers import early_warning, head_and_first, head_signals, head_to_first_ratio, layer_transitions, normalised_layer_norms
from nhtlab.history import History


def bump(steps, peak_step, height, start=1.0, end_fraction=0.5):
    """Rises linearly from ``start`` to ``height`` at ``peak_step``, then decays to end_fraction·height."""
    steps = np.asarray(steps, float)
    up = start + (height - start) * steps / peak_step
    down = height * (1 - (1 - end_fraction) * (steps - peak_step) / (steps[-1] - peak_step))
    return np.where(steps <= peak_step, up, down)


def synthetic_history():
    steps = np.arange(0, 1001, 50)
    curves = {
        "conv1": bump(steps, 700, 4.0, end_fraction=0.8),   # peaks late, contracts 20%
        "norm1": np.linspace(1, 2, len(steps)),             # a normalisation layer, never contracts
        "conv2": np.linspace(2, 6, len(steps)),             # never contracts
        "readout": bump(steps, 300, 10.0, end_fraction=0.4),  # peaks first, contracts 60%
    }
    rows = []
    for i, s in enumerate(steps):
        row = {"step": int(s), "norm": float(sum(c[i] for c in curves.values()))}
        row.update({f"norm/{k}": float(v[i]) for k, v in curves.items()})
        rows.append(row)
    return History(rows=rows, status="completed")


def test_transitions_peaks_and_contractions():
    h = synthetic_history()
    t = {x.layer: x for x in layer_transitions(h)}
    assert t["readout"].peak_step == 300 and t["readout"].contraction == pytest.approx(0.6)
    assert t["conv1"].peak_step == 700 and t["conv1"].contraction == pytest.approx(0.2)
    assert t["conv2"].peak_step == 1000 and t["conv2"].contraction == 0.0
    assert t["readout"].initial_norm == pytest.approx(1.0)


def test_default_head_and_first():
    assert head_and_first(synthetic_history().layers) == ("readout", "conv1")


def test_normalised_curves_peak_at_one_and_end_at_one_minus_contraction():
    h = synthetic_history()
    curves = normalised_layer_norms(h)
    for t in layer_transitions(h):
        assert curves[t.layer].max() == pytest.approx(1.0)
        assert curves[t.layer][-1] == pytest.approx(1 - t.contraction)


def test_head_to_first_ratio_and_early_warning():
    h = synthetic_history()
    signals = head_to_first_ratio(h)
    np.testing.assert_allclose(signals["head_over_first"], h["norm/readout"] / h["norm/conv1"])
    assert signals["head_over_init"][0] == 1.0
    warn = early_warning(h)
    assert warn["head"] == "readout" and warn["first"] == "conv1"
    assert warn["ratio_peak_step"] == 300 and warn["head_peak_step"] == 300 and warn["first_peak_step"] == 700
    assert warn["lead"] == warn["total_peak_step"] - 300


def test_bad_inputs():
    with pytest.raises(ValueError, match="'layers' parameter of layer_transitions must name layers"):
        layer_transitions(synthetic_history(), ["fc"])
    with pytest.raises(ValueError, match="'history' parameter of layer_transitions must have evaluated rows"):
        layer_transitions(History())
    with pytest.raises(TypeError, match="'history' parameter of normalised_layer_norms must be of type History"):
        normalised_layer_norms({"rows": []})


def test_warning_times_against_the_drop():
    from nhtlab.analysis.layers import warning_times

    h = synthetic_history()
    w = warning_times(h, drop_step=600)
    assert w["head_over_init_peak"] == 300 and w["head_over_init_lead"] == 300
    # readout/conv1 peaks where readout does (conv1 still rising at 300): a warning 300 steps ahead
    assert w["head_over_first_peak"] == 300 and w["total_lead"] == 600 - w["total_peak"]
    assert warning_times(h, drop_step=None)["head_over_first_lead"] is None
    with pytest.raises(TypeError, match="'history' parameter of warning_times"):
        warning_times("not a history", drop_step=600)
    with pytest.raises(ValueError, match="'head' parameter of warning_times"):
        warning_times(h, drop_step=600, head="no such layer")


def test_warning_signals_chart_has_a_run_dropdown_and_event_rules():
    from nhtlab.book.layer_charts import score_bars, warning_signals

    records = [{"step": s, "run": run, "signal": "a", "value": 1.0 + s} for run in ("x", "y") for s in (0, 100)]
    spec = warning_signals(records, [{"run": "x", "event": "dropped", "step": 50}]).to_dict()
    assert spec["layer"][1]["mark"]["type"] == "rule"
    assert spec["params"][0]["bind"]["options"] == ["x", "y"]
    bars = score_bars([{"domain": "d", "score": float("nan"), "defined": False, "phi_drop": 0, "norm_contraction": 0}])
    assert bars.to_dict()["data"]["values"][0]["domain"] == "d (undefined)"


@pytest.mark.parametrize("model, expected", [("simple", ("readout", "conv1")), ("resnet18", ("net.fc", "net.conv1")),
                                             ("transformer", ("readout", "tok")), ("mlp", ("readout", "embed_a"))])
def test_default_head_and_first_names_exist_in_every_model(model, expected):
    # chapter 06's `full` profile reads these names off ResNet18 and the companion transformer: they must exist
    import nhtlab
    from nhtlab.models.cnn import ResNet18, SimpleCNN
    from nhtlab.models import make_model

    net = {"simple": lambda: SimpleCNN(10, norm="batch"), "resnet18": lambda: ResNet18(10, norm="group"),
           "transformer": lambda: make_model("transformer", 97), "mlp": lambda: make_model("mlp", 97)}[model]()
    names = list(nhtlab.layer_norms(net))
    h = History(rows=[{"step": 0, "norm": 1.0, **{f"norm/{n}": 1.0 for n in names}}])
    assert head_and_first(h.layers) == expected and set(expected) <= set(names)
    monitor = nhtlab.Monitor(net)  # the online monitor picks the same two layers as the offline analysis
    assert (monitor.head, monitor.first) == expected


def test_head_signals_one_rule_for_arrays_and_scalars():
    ratio, rel = head_signals(np.array([4.0, 2.0, 0.0, np.nan]), np.array([2.0, 0.0, 0.0, 1.0]), 4.0)
    np.testing.assert_array_equal(ratio, [2.0, np.inf, np.inf, np.nan])  # zero denominator → inf, NaN stays NaN
    np.testing.assert_array_equal(rel, [1.0, 0.5, 0.0, np.nan])
    assert [float(v) for v in head_signals(3.0, 0.0, 0.0)] == [np.inf, np.inf]
    # the Monitor's scalar path follows the same rule as the array path
    for h_, f_, i_ in [(4.0, 2.0, 4.0), (2.0, 0.0, 4.0), (0.0, 0.0, 0.0), (np.nan, 1.0, 4.0), (1.0, np.nan, 2.0)]:
        scalar = head_signals(h_, f_, i_)
        array = head_signals(np.array([h_]), np.array([f_]), np.array([i_]))
        assert isinstance(scalar[0], float)
        np.testing.assert_array_equal(np.array(scalar), np.array([array[0][0], array[1][0]]))
    # the offline curves are the same function of the history's columns
    h = synthetic_history()
    signals = head_to_first_ratio(h, "readout", "conv1")
    ratio, rel = head_signals(h.column("norm/readout"), h.column("norm/conv1"), h.column("norm/readout")[0])
    np.testing.assert_array_equal(signals["head_over_first"], ratio)
    np.testing.assert_array_equal(signals["head_over_init"], rel)


def test_head_and_first_skips_normalisation_layers():
    assert head_and_first(["embed", "ln0", "hidden", "bn"]) == ("hidden", "embed")
    assert head_and_first(["conv1", "layer1.bn1", "fc", "post.norm"]) == ("fc", "conv1")
    assert head_and_first(["ln_only"]) == ("ln_only", "ln_only")  # nothing but norms: use them


# --- the order after the shortcut is fitted (contraction_order) ---------------------------------------------------

def modular_like(head_drop_at, first_drop_at, steps=range(0, 1001, 100), t_mem=300, t_grok=800):
    """A history whose read-out and embedding lose 30% of their T_mem value at the given steps (None: never).

    The embedding ``tok`` falls from its initialisation before T_mem (its peak is step 0, so its peak step
    says nothing); the accuracies put T_mem at ``t_mem`` and T_grok at ``t_grok``.
    """
    rows = []
    for s in steps:
        tok = 100.0 - 0.1 * min(s, t_mem, 500) - (30.0 if first_drop_at is not None and s >= first_drop_at else 0.0)
        readout = min(10.0 + s / 10, 40.0) * (0.7 if head_drop_at is not None and s >= head_drop_at else 1.0)
        rows.append({"step": s, "train_acc": 1.0 if s >= t_mem else 0.5, "test_acc": 1.0 if s >= t_grok else 0.1,
                     "norm": tok + readout + 5.0,
                     "norm/tok": tok, "norm/blocks.0.ln_1": 5.0, "norm/readout": readout})
    return History(rows=rows, status="completed")


def test_contraction_order_reads_backward_and_forward():
    from nhtlab.analysis.layers import contraction_order

    back = contraction_order(modular_like(head_drop_at=400, first_drop_at=600))
    assert (back.t_mem, back.t_end, back.head, back.first) == (300, 800, "readout", "tok")
    assert back.verdict == "backward" and back.order == ["readout", "tok"]
    assert back.layer("readout").step == 400 and back.layer("tok").step == 600
    assert [c.layer for c in back.layers] == ["tok", "readout"]  # the normalisation layer is skipped
    assert back.layer("tok").share_lost == pytest.approx(30 / 70)
    # the same curves with the two drops swapped read forward: the reading can come out either way
    fwd = contraction_order(modular_like(head_drop_at=600, first_drop_at=400))
    assert fwd.verdict == "forward" and fwd.order == ["tok", "readout"]
    assert fwd.to_dict()["head_step"] == 600 and fwd.to_dict()["first_step"] == 400
    # the embedding falls from step 0: by peak steps it would always come "first"
    head_only = modular_like(600, None)
    assert {t.layer: t.peak_step for t in layer_transitions(head_only)}["tok"] == 0
    assert contraction_order(head_only).verdict == "backward"  # the read-out contracts, the embedding never does


def test_contraction_order_ties_no_contraction_and_no_window():
    from nhtlab.analysis.layers import contraction_order

    assert contraction_order(modular_like(500, 500)).verdict == "simultaneous"
    assert contraction_order(modular_like(None, 500)).verdict == "forward"
    assert contraction_order(modular_like(None, None)).verdict == "undetermined"
    # a drop after T_grok is outside the window
    assert contraction_order(modular_like(900, None)).verdict == "undetermined"
    # never memorised: no window
    never = contraction_order(modular_like(400, 600, t_mem=5000))
    assert never.verdict == "undetermined" and never.t_mem is None and never.order == []
    # a window given by hand (images: border fitted, dropped); None as its end: the run's last step
    late = contraction_order(modular_like(900, None), window=(300, None))
    assert late.t_end == 1000 and late.verdict == "backward"
    # a larger share is not reached by a 30% drop
    assert contraction_order(modular_like(400, 600), share=0.5).verdict == "undetermined"
    with pytest.raises(ValueError, match="'window' parameter of contraction_order must contain"):
        contraction_order(modular_like(400, 600), window=(2000, 3000))
    with pytest.raises(ValueError, match="share"):
        contraction_order(modular_like(400, 600), share=1.0)


def test_order_readings_count_seeds_and_order_determined_fails_on_an_open_run():
    from nhtlab.analysis.layers import contraction_order
    from nhtlab.book.layer_report import order_determined, order_readings

    orders = {(1.0, 0): contraction_order(modular_like(400, 600)), (1.0, 1): contraction_order(modular_like(600, 400)),
              (1.0, 2): contraction_order(modular_like(400, None)), (0.5, 0): contraction_order(modular_like(600, 400))}
    readings = order_readings(orders)
    assert list(readings) == [1.0, 0.5]
    assert (readings[1.0].k, readings[1.0].n, readings[1.0].holds, readings[1.0].flips) == (2, 3, True, True)
    assert readings[0.5].text() == "backward in 0 of 1 seeds (seed 0: forward)" and not readings[0.5].holds
    assert order_determined(orders)
    failing = order_determined({**orders, (0.5, 1): contraction_order(modular_like(None, None))})
    assert not failing and "undetermined: [(0.5, 1)]" in failing.detail
    assert not order_determined({})


def test_layer_window_records_and_chart_show_the_window():
    from nhtlab.analysis.layers import contraction_order
    from nhtlab.book.layer_report import layer_window_records
    from nhtlab.book.layer_charts import contraction_curves

    h = modular_like(400, 600)
    order = contraction_order(h)
    rows = layer_window_records(h, order, run="λ = 1, seed 0")
    assert {r["step"] for r in rows} == set(range(300, 801, 100)) and {r["layer"] for r in rows} == {"tok", "readout"}
    first = {(r["layer"], r["step"]): r for r in rows}
    assert first[("tok", 300)]["at_mem"] == 1.0 and first[("tok", 300)]["normalised"] == pytest.approx(0.7)
    assert first[("readout", 400)]["contracted"] and not first[("readout", 300)]["contracted"]
    assert layer_window_records(h, contraction_order(h, window=(None, None))) == []
    spec = contraction_curves(rows, order.share).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["run"]["bind"]["options"] == ["λ = 1, seed 0"] and params["view"]["bind"]["input"] == "radio"


def test_contraction_curves_without_a_window_says_so():
    from nhtlab import book as charts  # chapter 05's charts are the book's

    spec = charts.contraction_curves([], share=0.1).to_dict()
    assert spec["mark"]["type"] == "text" and "no run" in spec["data"]["values"][0]["text"]
