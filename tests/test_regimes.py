"""Regime diagnosis: synthetic curves for each rule, threshold parameters, and short real runs."""

import numpy as np
import pytest

import nhtlab
from nhtlab.analysis.regimes import diagnose_regime, regime_order_ok, regime_table
from nhtlab.history import History

STEPS = np.arange(0, 3001, 50)


def synthetic(train, test, norm, lr=1e-2, wd=1.0):
    rows = [{"step": int(s), "train_acc": float(a), "test_acc": float(b), "norm": float(n)}
            for s, a, b, n in zip(STEPS, train, test, norm)]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": wd})


def ramp(at, low=0.02, high=1.0):
    return np.where(STEPS >= at, high, low)


def test_strong_when_the_train_set_is_never_fitted():
    d = diagnose_regime(synthetic(np.full(len(STEPS), 0.7), np.full(len(STEPS), 0.05), 1000 * np.exp(-STEPS / 500)))
    assert d.regime == "strong" and not d.memorised and "never reached 99%" in d.reason and d.contraction is None


def test_weak_when_the_norm_grows_or_stays_flat_after_memorising():
    growing = diagnose_regime(synthetic(ramp(100), np.full(len(STEPS), 0.05), 1000 + 20 * STEPS))
    assert growing.regime == "weak" and growing.memorised and not growing.generalised and growing.growth > 10
    flat = diagnose_regime(synthetic(ramp(100), np.full(len(STEPS), 0.05), np.full(len(STEPS), 800.0)))
    assert flat.regime == "weak" and flat.contraction == 0.0


def test_intermediate_needs_contraction_after_memorising_and_a_delay():
    # the companion's picture: ‖θ‖² largest at init, falling from step 0 and on after T_mem
    norm = 13000 * np.exp(-STEPS / 800) + 700
    d = diagnose_regime(synthetic(ramp(800), ramp(2000), norm))
    assert d.regime == "intermediate" and d.generalised and d.events.t_grok == 2000
    assert d.contraction == pytest.approx(1 - norm[STEPS == 2000][0] / norm[STEPS == 800][0])
    # a peak at step 0 is no evidence: the same norm curve with no delay is not a transition
    no_delay = diagnose_regime(synthetic(ramp(800), ramp(850), norm))
    assert no_delay.regime == "undetermined" and "no delay" in no_delay.reason
    # a delay without contraction after T_mem (the norm only fell before memorising) is not NHT's transition
    before_only = np.where(STEPS < 800, 13000 - 10 * STEPS, 5000.0)
    d = diagnose_regime(synthetic(ramp(800), ramp(2000), before_only))
    assert d.regime == "undetermined" and "no contraction" in d.reason


def test_thresholds_decide():
    norm = np.where(STEPS < 500, 4000.0, 4000.0 * (1 - 0.15 * (STEPS - 500) / 2500))  # −15% by the end
    never = synthetic(ramp(500), np.full(len(STEPS), 0.3), norm)
    assert diagnose_regime(never).regime == "weak"  # 15% < 20%
    under_way = diagnose_regime(never, min_contraction=0.1)
    assert under_way.regime == "undetermined" and "no generalisation" in under_way.reason
    grokked = synthetic(ramp(500), ramp(2500), norm)
    assert diagnose_regime(grokked).regime == "undetermined"
    assert diagnose_regime(grokked, min_contraction=0.1).regime == "intermediate"
    assert diagnose_regime(grokked, min_contraction=0.1, min_delay=2500).regime == "undetermined"


def test_bad_thresholds_and_empty_histories_are_named():
    h = synthetic(ramp(100), ramp(2000), 1000 + STEPS)
    with pytest.raises(ValueError, match="'min_contraction' parameter of diagnose_regime"):
        diagnose_regime(h, min_contraction=1.0)
    with pytest.raises(ValueError, match="'fit_threshold' parameter of diagnose_regime"):
        diagnose_regime(h, fit_threshold=0.0)
    with pytest.raises(ValueError, match="'min_delay' parameter of diagnose_regime"):
        diagnose_regime(h, min_delay=-1)
    with pytest.raises(TypeError, match="'history' parameter of diagnose_regime"):
        diagnose_regime({"rows": []})
    with pytest.raises(ValueError, match="empty"):
        diagnose_regime(History())


def test_regime_order():
    assert regime_order_ok([0, 0.1, 1, 1, 10], ["weak", "weak", "intermediate", "intermediate", "strong"])
    assert regime_order_ok([1, 1, 3], ["weak", "intermediate", "intermediate"])  # a boundary shared by seeds
    assert not regime_order_ok([0, 1, 3], ["weak", "strong", "intermediate"])
    assert not regime_order_ok([1, 1, 3], ["weak", "intermediate", "weak"])
    with pytest.raises(ValueError, match="same length"):
        regime_order_ok([0, 1], ["weak"])
    with pytest.raises(ValueError, match="must hold only"):
        regime_order_ok([0], ["lazy"])
    assert regime_order_ok([0, 1, 2, 3], ["weak", "undetermined", "intermediate", "strong"])  # skipped, not ranked
    assert not regime_order_ok([0, 1, 2], ["strong", "undetermined", "weak"])
    # the online monitor's unjudged label is skipped too (one vocabulary: analysis.regimes.UNJUDGED)
    assert regime_order_ok([0, 1, 2, 3], ["weak", "too early", "intermediate", "strong"])
    assert not regime_order_ok([0, 1, 2], ["intermediate", "too early", "weak"])


def test_short_real_runs_weak_without_decay_strong_with_huge_decay():
    base = nhtlab.ModularRun(p=13, model_kwargs=dict(width=64, embed_std=0.3), steps=300, eval_every=10, lr=1e-2, device="cpu")
    result = nhtlab.sweep([base.replace(weight_decay=0.0), base.replace(weight_decay=30.0)], strategy="batched", progress="none")
    table = regime_table(result)
    assert [row["regime"] for row in table] == ["weak", "strong"], [row["reason"] for row in table]
    assert table[0]["t_mem"] is not None and table[0]["contraction"] < 0.2
    assert table[1]["t_mem"] is None


def test_regime_charts_give_every_diagnosis_its_own_colour_a_diverged_run_included():
    from nhtlab.analysis.regimes import DIVERGED, REGIMES, UNDETERMINED
    from nhtlab.book.regime_charts import REGIME_COLORS, regime_norm_curves

    assert set(REGIME_COLORS) == {*REGIMES, UNDETERMINED, DIVERGED}
    assert len(set(REGIME_COLORS.values())) == len(REGIME_COLORS)
    rows = [{"run": 0, "weight_decay": 1.0, "seed": 0, "regime": DIVERGED, "step": 0, "norm": 1.0}]
    scale = regime_norm_curves(rows).to_dict()["encoding"]["color"]["scale"]
    assert DIVERGED in scale["domain"] and scale["range"][scale["domain"].index(DIVERGED)] == REGIME_COLORS[DIVERGED]


def test_delay_fit_chart_counts_its_marks_and_gives_each_family_a_colour_and_a_shape():
    from nhtlab.analysis.delay import delay_fits
    from nhtlab.book.regime_charts import delay_fit_chart

    points = [{"measured": 100.0 * k + s, "predicted": 90.0 * k, "inv_lambda": 1.0 / k, "inv_eta_lambda": 1e3 / k,
               "setting": f"k={k}", "definition": "grok", "family": "λ sweep" if k < 3 else "η sweep",
               "weight_decay": 1.0, "lr": 1e-3, "seed": s, "t_mem": 0, "t_grok": 0, "v_mem": 1.0, "v_final": 1.0}
              for k in (1, 2, 3) for s in (0, 1, 2)]
    fit = delay_fits(points, average_seeds=True)["vs_predicted"]
    spec = delay_fit_chart(points, fit, color="family", color_title="family").to_dict()
    title = spec["title"]
    assert f"over the {fit.n} large marks" in title["text"] and fit.n == 3
    assert "each of the 3 settings" in title["subtitle"] and "the 9 runs" in title["subtitle"]
    dots = [layer for layer in spec["layer"] if "shape" in layer.get("encoding", {})]
    assert len(dots) == 2  # the setting means and the runs
    for layer in dots:
        enc = layer["encoding"]
        assert enc["color"]["scale"]["domain"] == enc["shape"]["scale"]["domain"] == ["λ sweep", "η sweep"]
        assert len(set(enc["color"]["scale"]["range"][:2])) == 2 and len(set(enc["shape"]["scale"]["range"][:2])) == 2
    assert all("type" not in layer["encoding"]["x"].get("scale", {}) for layer in dots)  # 90–270: linear
    wide = [{**p, "predicted": p["predicted"] ** 3, "measured": p["measured"] ** 3} for p in points]
    fit = delay_fits(wide, average_seeds=True)["vs_predicted"]
    layers = delay_fit_chart(wide, fit, color="family").to_dict()["layer"]
    assert all(layer["encoding"]["x"]["scale"] == {"type": "log"} for layer in layers)  # a decade: log axes
    assert "log scale" in layers[1]["encoding"]["y"]["title"]


def test_contraction_chart_shapes_the_runs_by_family_and_colours_only_the_references():
    from nhtlab.book.regime_charts import contraction_chart

    records = [{"eta_lambda": 1e-3 * k, "ratio": 1.5, "weight_decay": k, "seed": 0, "r2": 0.99, "family": f}
               for k, f in ((0.3, "λ sweep"), (1.0, "λ sweep"), (2.0, "η sweep"))]
    lines, dots = contraction_chart(records).to_dict()["layer"]
    assert "color" in lines["encoding"] and "color" not in dots["encoding"]
    assert dots["encoding"]["shape"]["scale"]["domain"] == ["λ sweep", "η sweep"]
