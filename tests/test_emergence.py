import math

import pytest

from nhtlab.analysis.emergence import between_and_within, fit_gamma, fraction_generalised, law_records, run_row, scale_table, size_summary
from nhtlab.history import History


def synthetic(width, seed, t_mem, t_grok, peak, final, steps=1000, lr=1e-3, wd=1.0, every=50):
    """A history whose norm rises linearly to ``peak`` at t_mem, then decays linearly to ``final`` at
    t_grok (at the last step when it never groks) and stays there."""
    rows = []
    end = steps if t_grok is None else t_grok
    for step in range(0, steps + 1, every):
        if step <= t_mem:
            norm = 100 + (peak - 100) * step / t_mem
        else:
            norm = peak + (final - peak) * min(1.0, (step - t_mem) / (end - t_mem))
        rows.append({"step": step, "train_acc": 1.0 if step >= t_mem else 0.5,
                     "test_acc": 1.0 if (t_grok is not None and step >= t_grok) else 0.1, "norm": norm})
    return History(rows=rows, status="completed",
                   config={"lr": lr, "weight_decay": wd, "seed": seed, "model_kwargs": {"width": width}})


def test_run_row_reads_gap_delay_and_law():
    # V_sc = ‖θ‖² at T_mem, V_st = ‖θ‖² at T_grok (the delay law's "grok" definition)
    row = run_row(synthetic(64, 3, t_mem=100, t_grok=600, peak=1000.0, final=500.0, steps=2000), key="width")
    assert (row["size"], row["seed"], row["T_mem"], row["T_grok"], row["delay"]) == (64, 3, 100, 600, 500)
    assert row["V_sc"] == 1000.0 and row["V_st"] == pytest.approx(500.0) and row["ratio"] == pytest.approx(2.0)
    assert row["predicted"] == pytest.approx(math.log(2.0) / 1e-3)
    assert row["log_gap"] == pytest.approx(math.log(2.0))
    assert run_row(synthetic(64, 3, 100, 600, 1000.0, 500.0), key="d_model", default_size=128)["size"] == 128
    # a run config keeps only non-default model settings: the size then comes from the model's default
    base = synthetic(64, 3, 100, 600, 1000.0, 500.0)
    base.config.update(model="transformer", model_kwargs={})
    assert run_row(base, key="d_model")["size"] == 128 and run_row(base, key="d_ff")["size"] == 512
    with pytest.raises(KeyError, match="'transformer' has no default for it"):
        run_row(base, key="width")


def test_run_row_without_transition_has_no_gap():
    row = run_row(synthetic(32, 0, t_mem=100, t_grok=None, peak=1000.0, final=900.0), key="width")
    assert row["T_grok"] is None and row["delay"] is None
    assert row["ratio"] is None and row["predicted"] is None and row["V_st"] is None


def test_rank_correlation_and_seed_noise():
    from nhtlab.analysis.separation import spearman

    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 1, 2], [5, 5, 9]) == pytest.approx(1.0)  # ties share a rank
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3])) and math.isnan(spearman([1], [2]))  # undefined, not 0
    with pytest.raises(ValueError, match="spearman needs two 1-d arrays"):
        spearman([1, 2], [1, 2, 3])
    noisy = [{"size": 1, "g": 1.0}, {"size": 1, "g": 1.5}, {"size": 2, "g": 1.1}, {"size": 2, "g": 1.3}]
    d = between_and_within(noisy, "g")
    assert d["difference"] == pytest.approx(1.2 - 1.25) and d["seed_spread"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two sizes or more"):
        between_and_within(noisy[:2], "g")


def test_fraction_generalised_counts_budget_inclusively():
    rows = scale_table([synthetic(32, s, 100, g, 1000.0, 800.0) for s, g in enumerate([None, 900, 400])]
                       + [synthetic(64, s, 100, 300, 1000.0, 800.0) for s in range(2)], key="width")
    assert [r["size"] for r in rows] == [32, 32, 32, 64, 64]
    fr = fraction_generalised(rows, budget=400)
    assert fr == [{"size": 32, "budget": 400, "runs": 3, "generalised": 1, "fraction": pytest.approx(1 / 3)},
                  {"size": 64, "budget": 400, "runs": 2, "generalised": 2, "fraction": 1.0}]
    assert [f["fraction"] for f in fraction_generalised(rows, budget=299)] == [0.0, 0.0]


def test_size_summary_medians_over_runs_that_generalised():
    rows = scale_table([synthetic(32, 0, 100, None, 1000.0, 900.0),
                        synthetic(32, 1, 100, 700, 1000.0, 400.0),
                        synthetic(32, 2, 100, 500, 1000.0, 500.0),
                        synthetic(64, 0, 100, 300, 1000.0, 800.0)], key="width")
    summary = size_summary(rows, budget=600)
    small, large = summary
    assert (small["runs"], small["grokked"], small["delay"]) == (3, 2, 500.0)
    assert small["ratio"] == pytest.approx((2.5 + 2.0) / 2)
    assert small["fraction"] == pytest.approx(1 / 3) and large["fraction"] == 1.0
    assert large["ratio"] == pytest.approx(1.25)


def test_fit_gamma_recovers_the_rate_of_an_exact_law():
    gamma = 2e-4  # delays follow log(V_sc/V_st)/γ exactly; ηλ = 1e-3
    histories = []
    for width, ratio in [(32, 3.0), (64, 2.0), (128, 1.5)]:
        delay = int(round(math.log(ratio) / gamma / 50)) * 50
        histories.append(synthetic(width, 0, 100, 100 + delay, 1000.0, 1000.0 / ratio, steps=100 + delay + 100))
    fit = fit_gamma(scale_table(histories, key="width"))
    assert fit["gamma"] == pytest.approx(gamma, rel=0.02)
    assert fit["gamma / eta_lambda"] == pytest.approx(0.2, rel=0.02)
    assert fit["r2_through_origin"] > 0.999


def test_law_records_scale_the_law_by_the_fitted_rate():
    summary = [{"size": 32, "delay": 1000.0, "predicted": 100.0}, {"size": 64, "delay": None, "predicted": None}]
    recs = law_records(summary, {"gamma / eta_lambda": 0.1})
    assert recs == [{"size": 32, "series": "measured (median)", "delay": 1000.0},
                    {"size": 32, "series": "law, γ = ηλ", "delay": 100.0},
                    {"size": 32, "series": "law, fitted γ", "delay": pytest.approx(1000.0)}]


def test_errors_name_the_parameter():
    h = synthetic(32, 0, 100, 500, 1000.0, 500.0)
    with pytest.raises(TypeError, match="'history' parameter of run_row"):
        run_row({"rows": []})
    with pytest.raises(ValueError, match="'budget' parameter of fraction_generalised"):
        fraction_generalised([], budget=-1)
    with pytest.raises(ValueError, match="fit_gamma needs at least 2"):
        fit_gamma(scale_table([h], key="width"))
    with pytest.raises(KeyError, match="depth"):
        run_row(h, key="depth")


def test_charts_serialise_with_their_interactive_params():
    from nhtlab import book as charts  # chapter 07's and 08's charts are the book's

    rows = scale_table([synthetic(32, 0, 100, 700, 1000.0, 400.0), synthetic(64, 0, 100, 300, 1000.0, 800.0)], key="width")
    summary = size_summary(rows, budget=500)
    spec = charts.gap_and_delay(rows, law_records(summary, fit_gamma(rows))).to_dict()
    assert len(spec["vconcat"]) == 2  # the gap above the delay, on one size axis
    assert spec["vconcat"][0]["encoding"]["y"]["title"] == "norm gap log(V_mem/V_grok)"
    fractions = [f for b in (300, 500, 700) for f in fraction_generalised(rows, b)]
    spec = charts.fraction_threshold(fractions, [300, 500, 700], start=500).to_dict()
    assert spec["params"][0]["bind"]["input"] == "range" and spec["params"][0]["value"] == 500
    assert spec["transform"] == [{"filter": "(datum.budget === budget)"}]
    records = [{"step": r["step"], "lambda": 0.1, "regime": "weak", "norm": r["norm"]} for r in synthetic(32, 0, 100, None, 10.0, 20.0).rows]
    spec = charts.lambda_grid(records).to_dict()
    assert spec["params"][0]["bind"]["input"] == "select"
