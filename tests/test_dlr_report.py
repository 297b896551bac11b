"""nhtlab.book.dlr_report: chapter 04's records and checks, each check shown failing on an input built to fail it.

The toy and the rank-rule assertions live here (they train nothing), not in the chapter.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from nhtlab.book import dlr_report as report
from nhtlab.book.dlr_report import dlr_table
from nhtlab.history import History
from nhtlab.papers import DLR_PAPER


def lazy_rich(dlrs, ckas=(0.3, 0.99), nc1s=(0.01, 1.0)):
    """Records of lazy/rich runs: DLR per α, CKA and NC1 at the two ends (interpolated in between)."""
    out = []
    for i, d in enumerate(dlrs):
        end = i == len(dlrs) - 1
        out.append({"alpha": 10.0**i, "dlr": d, "cka_to_init": ckas[1] if end else ckas[0],
                    "nc1": nc1s[1] if end else nc1s[0], "dlr[full]": d + 0.01, "dlr[energy 0.99]": d})
    return out


def test_toy_dlr_falls_monotonically_from_near_one_to_zero():
    toy = report.toy_curve(seed=0)
    assert len(toy) == 21 and toy[0]["alpha"] == 0 and toy[-1]["alpha"] == 1
    assert toy[0]["DLR"] > 0.9 and toy[-1]["DLR"] < 1e-6
    assert all(a["DLR"] >= b["DLR"] - 1e-9 for a, b in zip(toy, toy[1:]))
    assert toy[-1]["f_in"] == pytest.approx(1.0)
    text = report.toy_text([{"alpha": 0.0, "DLR": 0.9, "f_in": 0.1}, {"alpha": 0.5, "DLR": 0.6, "f_in": 0.4},
                            {"alpha": 1.0, "DLR": 0.0, "f_in": 1.0}])
    assert text.split(".")[0] == "DLR starts at 0"


def test_the_chosen_rule_passes_the_synthetic_properties_and_full_fails():
    rows = {r["rule"]: r for r in report.rule_records(report.rule_properties(report.CANDIDATE_RULES, seed=0))}
    assert rows["energy 0.99"]["synthetic"] == "passes" and rows["full"]["synthetic"] == "fails"


def test_lazy_rich_checks_pass_on_a_clean_ground_truth_and_fail_otherwise():
    good = lazy_rich([0.05, 0.2, 0.5])
    assert all(report.lazy_rich_checks(good))
    assert not report.lazy_rich_checks(lazy_rich([0.05, 0.5], ckas=(0.8, 0.99)))[0]  # rich run did not move
    assert not report.lazy_rich_checks(lazy_rich([0.05, 0.5], ckas=(0.3, 0.9)))[0]  # lazy run moved
    assert not report.lazy_rich_checks(lazy_rich([0.05, 0.5], nc1s=(0.5, 1.0)))[0]  # rich run did not collapse
    assert not report.lazy_rich_checks(lazy_rich([0.3, 0.45]))[1]
    assert not report.lazy_rich_checks(lazy_rich([0.05, 0.4, 0.3, 0.5]))[2]
    assert report.lazy_rich_checks(lazy_rich([0.05, 0.4, 0.39, 0.5]))[2]  # within the slack
    with pytest.raises(ValueError, match="at least two"):
        report.lazy_rich_checks(lazy_rich([0.1]))


def test_lazy_rich_records_and_rule_scores():
    result = SimpleNamespace(alpha=1.0, dlr=0.1, cka_to_init=0.5, nc1=0.2, test_acc=0.9, train_loss=0.01,
                             compare={"full": 0.3, "energy 0.9": 0.05})
    (row,) = report.lazy_rich_records([result])
    assert row["band"] == "0.050–0.300" and row["dlr[full]"] == 0.3
    props = [{"rule": "full", "passes": False}, {"rule": "energy 0.99", "passes": True}]
    scored = report.rule_records(props, lazy_rich([0.05, 0.5]))
    assert [r["all_four"] for r in scored] == ["fail", "pass"]
    assert report.chosen_rule_check(scored)
    assert not report.chosen_rule_check(report.rule_records(props, lazy_rich([0.4, 0.5])))  # gap too small
    assert not report.chosen_rule_check(scored, rule="full")


def rows_for(dlrs, step=100):
    return [{"step": i * step, "dlr": d, "test_acc": min(1.0, i / 4)} for i, d in enumerate(dlrs)]


def test_timing_holds_only_when_dlr_falls_more_after_t_mem():
    rows = rows_for([0.3, 0.32, 0.1, 0.05])
    t = report.timing_check(rows, t_mem=100, t_grok=200)
    assert t.passed is True and t.detail == "change before T_mem +0.020, fall T_mem → T_grok +0.220"
    early = report.timing_check(rows_for([0.5, 0.2, 0.15, 0.1]), t_mem=100, t_grok=200)  # fell during memorisation
    assert early.passed is False and "change before T_mem -0.300" in early.detail
    missing = report.timing_check(rows, t_mem=100, t_grok=None)
    assert missing.passed is False and "did not both" in missing.detail
    reading = report.timing_reading({0: t, 1: early})
    assert (reading.k, reading.n, reading.holds, reading.flips) == (1, 2, False, True)


def test_transformer_check_needs_both_events():
    assert report.transformer_check(500, 900)
    assert not report.transformer_check(500, None) and not report.transformer_check(None, None)


def test_marks_put_the_papers_values_beside_ours_and_flag_steps_not_reached():
    rows = rows_for([0.3, 0.32, 0.2, 0.1])
    band = [{"step": r["step"], "dlr": r["dlr"], "low": r["dlr"] - 0.1, "high": r["dlr"] + 0.1} for r in rows]
    marks = report.dlr_marks(rows, 100, 200, band, DLR_PAPER["transformer"])
    by = {m["mark"]: m for m in marks}
    assert by["step 200"]["paper_dlr"] == 0.51 and by["step 200"]["dlr"] == 0.2
    assert by["step 3,000"]["dlr"] is None and by["step 3,000"]["paper_acc"] == 0.998
    assert by["T_mem"]["band"] == "0.220–0.420" and by["last"]["step"] == 300
    assert by["T_mem"]["fourier"] is None  # no Fourier column off Z_p: the cell is blank, not 0
    table = dlr_table("marks", marks)
    assert "| step 3,000 | 3,000 | 0.11 | — |" in table and "top-5 Fourier share" in table
    with_share = report.dlr_marks([dict(r, fourier=0.1 * i) for i, r in enumerate(rows)], 100, 200, band, {})
    assert [m["fourier"] for m in with_share] == [0.1, 0.2, pytest.approx(0.3)]
    text = report.dlr_fourier_text(with_share)
    assert "0.320 and 0.100 at T_mem (step 100)" in text and "0.100 and 0.300 at last (step 300)" in text
    assert "not read at T_mem" in report.dlr_fourier_text(marks)
    with pytest.raises(ValueError, match="kind"):
        dlr_table("nope", marks)


def test_spectra_marks_and_layer_change():
    records = [{"step": s, "k": k, "relative": 1 / k, "quality": k / 100, "utilisation": k / 50}
               for s in (0, 100) for k in range(1, 41)]
    out = report.spectra_marks(records, {"step 0": 0, "T_mem": None, "last": 100})
    assert [r["mark"] for r in out] == ["step 0", "last"] and out[1]["quality_40"] == 0.4
    assert out[0]["rho_10"] == pytest.approx(0.1)
    rows = [{"step": s, "test_acc": 0.5, "dlr": d, "dlr_f_in": 0.5, "dlr_pr": 3.0, "dlr_rank": 4.0, "dlr[full]": d + 0.2}
            for s, d in ((0, 0.3), (100, 0.2), (200, 0.5))]
    first, last = report.layer_change(rows, 100, ["full"])
    assert first["mark"] == "T_mem" and first["dlr"] == 0.2 and last["high"] == pytest.approx(0.7)
    assert report.layer_change(rows, None, ["full"])[0]["mark"] == "step 0"


def test_additive_share_is_one_for_additive_features_and_small_for_interactions():
    p = 7
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], dim=1)
    additive = torch.stack([torch.sin(pairs[:, 0] * 1.0), torch.cos(pairs[:, 1] * 2.0)], dim=1)
    assert report.additive_share(additive, pairs, p) == pytest.approx(1.0)
    s = (pairs[:, 0] + pairs[:, 1]) % p
    interaction = torch.stack([torch.cos(2 * torch.pi * s / p), torch.sin(2 * torch.pi * s / p)], dim=1)
    assert report.additive_share(interaction, pairs, p) < 1e-10


def cnn_runs(dlrs, accs):
    runs = {}
    for name, d, acc in zip(report.CNN_NAMES, dlrs, accs):
        runs[name] = History(rows=[{"step": 0, "dlr": 0.5, "nc1": 1.0, "norm": 10.0, "train_acc": 0.1, "test_acc": 0.1,
                                    "dlr_f_in": 0.5, "dlr_pr": 2.0, "dlr_rank": 3.0},
                                   {"step": 10, "dlr": d, "nc1": 0.1, "norm": 8.0, "train_acc": 1.0, "test_acc": acc,
                                    "dlr_f_in": 0.9, "dlr_pr": 3.0, "dlr_rank": 6.0}], status="completed")
    return runs


def test_cnn_checks_pass_on_the_papers_ordering_and_fail_otherwise():
    good = report.final_records(cnn_runs([0.3, 0.03, 0.1], [0.95, 0.99, 0.11]))
    assert all(report.cnn_checks(good))
    assert not report.cnn_checks(report.final_records(cnn_runs([0.1, 0.05, 0.1], [0.95, 0.99, 0.11])))[0]
    assert not report.cnn_checks(report.final_records(cnn_runs([0.3, 0.03, 0.1], [0.99, 0.95, 0.11])))[0]
    assert not report.cnn_checks(report.final_records(cnn_runs([0.3, 0.03, 0.1], [0.95, 0.99, 0.5])))[1]
    assert not report.cnn_checks(report.final_records(cnn_runs([0.3, 0.03, 0.4], [0.95, 0.99, 0.11])))[1]
    summary = report.measure_summary(list(cnn_runs([0.3, 0.03, 0.1], [0.9, 0.9, 0.1]).items()))
    assert summary[0]["nc1_min"] == 0.1 and summary[0]["norm_first"] == 10.0
    assert dlr_table("cnn", good).count("\n") == 4


def test_cnn_settings_shuffle_only_the_third_settings_training_labels():
    from nhtlab.data.images import ImageData

    y = torch.arange(50) % 10
    images = ImageData(torch.zeros(50, 3, 4, 4), y, torch.zeros(5, 3, 4, 4), y[:5], 10, "toy")
    settings = report.cnn_settings(images, seed=0)
    assert list(settings) == list(report.CNN_NAMES)
    assert [norm for norm, _ in settings.values()] == ["none", "batch", "batch"]
    shuffled = settings[report.CNN_NAMES[2]][1]
    assert not torch.equal(shuffled.y_train, y) and torch.equal(shuffled.y_train.sort().values, y.sort().values)
    assert settings[report.CNN_NAMES[1]][1] is images


def test_paper_records_come_from_nhtlab_papers():
    rows = report.paper_cnn_records(DLR_PAPER["cnn"])
    assert {r["run"] for r in rows} == set(DLR_PAPER["cnn"]) and rows[0]["dlr"] == 0.034


def test_run_timing_reads_the_runs_own_events():
    """T_mem at step 100 (train accuracy), T_grok at step 200 (test): the same verdicts as the two-step form."""
    def history(dlrs):
        accs = [(0.1, 0.0), (1.0, 0.2), (1.0, 1.0), (1.0, 1.0)]
        return History(rows=[{"step": i * 100, "dlr": d, "train_acc": a, "test_acc": b, "norm": 1.0}
                             for i, (d, (a, b)) in enumerate(zip(dlrs, accs))])

    assert report.run_timing(history([0.3, 0.32, 0.1, 0.05]))  # fell after T_mem
    assert not report.run_timing(history([0.5, 0.2, 0.15, 0.1]))  # fell during memorisation
    never = History(rows=[{"step": 0, "dlr": 0.3, "train_acc": 0.1, "test_acc": 0.0, "norm": 1.0}])
    assert not report.run_timing(never) and "did not both" in report.run_timing(never).detail


def test_grouped_checks_are_the_single_checks_in_the_chapters_order():
    good, bad = lazy_rich([0.05, 0.2, 0.5]), lazy_rich([0.3, 0.45], ckas=(0.8, 0.99))
    assert [bool(c) for c in report.lazy_rich_checks(good)] == [True, True, True]
    assert [bool(c) for c in report.lazy_rich_checks(bad)] == [False, False, True]
    assert [bool(c) for c in report.lazy_rich_checks(good, margin=0.5)] == [True, False, True]
    assert not report.lazy_rich_checks(good, rich_cka=0.2)[0]  # the thresholds reach the ground truth
    end = report.final_records(cnn_runs([0.3, 0.03, 0.1], [0.95, 0.99, 0.5]))
    assert [bool(c) for c in report.cnn_checks(end)] == [True, False]
    assert [bool(c) for c in report.cnn_checks(end, chance_below=0.6)] == [True, True]


def test_the_dlr_timeline_draws_the_fourier_share_only_where_the_run_recorded_it():
    from nhtlab.book import dlr_timeline

    def series(history):
        chart = dlr_timeline(history).to_dict()
        return {r["series"] for r in chart["vconcat"][0]["data"]["values"]}, chart["vconcat"][0]["encoding"]["color"]

    rows = rows_for([0.3, 0.2, 0.1])
    names, color = series(History(rows))
    assert names == {"DLR", "test accuracy"} and color["scale"]["domain"] == ["DLR", "test accuracy"]
    names, color = series(History([dict(r, fourier=0.2) for r in rows]))
    assert "top-5 Fourier share" in names and len(color["scale"]["range"]) == 3


# --- the lesson: the spectrum's knee, the exercise, the takeaway, the charts ---------------------------------

def spectrum(step, utilisation):
    return [{"step": step, "k": k, "relative": 1 / k, "quality": 0.01 * k, "utilisation": u}
            for k, u in enumerate(utilisation, 1)]


def test_the_knee_is_the_fewest_eigenfunctions_holding_the_share_at_the_nearest_recorded_step():
    records = spectrum(0, [0.1, 0.2, 0.3, 0.4]) + spectrum(100, [0.5, 0.9, 0.95, 1.0])
    knee = report.spectrum_knee(records, 90)
    assert (knee["step"], knee["k"], knee["top"], knee["utilisation"]) == (100, 2, 4, 0.9)
    assert report.spectrum_knee(records, 0)["k"] == 4  # 0.3 < 0.9 × 0.4 ≤ 0.4
    text = report.spectra_text(records, None, 100, 100).split("<details")[0]
    assert "At T_grok (step 100) look at k = 2" in text and "0.900" in text and "all 4 kept" in text
    assert "no T_grok" in report.spectra_text(records, None, None, 100)
    with pytest.raises(ValueError, match="records"):
        report.spectrum_knee([], 0)


def solution(features, outputs, r):
    """The chapter's solution, the long way: n × n kernels and their CKA."""
    import numpy as np

    phi = features - features.mean(0)
    out = outputs - outputs.mean(0)
    t = phi @ phi.T
    q = np.linalg.svd(out, full_matrices=False)[0][:, :r]
    t_mp = q @ q.T
    return 1 - (t * t_mp).sum() / (np.linalg.norm(t) * np.linalg.norm(t_mp))


def test_the_exercise_solution_agrees_with_nhtlab_and_a_wrong_r_does_not():
    from nhtlab.book.exercises import check_function

    g = torch.Generator().manual_seed(0)
    features = torch.relu(torch.randn(300, 20, generator=g))
    outputs = features @ torch.randn(20, 8, generator=g)
    cases = report.dlr_exercise_cases(features, outputs, n=120)
    assert [c[0].shape for c in cases] == [(120, 20)] * 2 and cases[1][2] == 3
    assert check_function(solution, report.dlr_of_arrays, cases).status == "correct"
    ignores_r = check_function(lambda f, o, r: solution(f, o, o.shape[1]), report.dlr_of_arrays, cases)
    assert ignores_r.status == "wrong"


def test_what_we_found_reads_every_sentence_from_the_runs():
    from nhtlab.book.claims import over_seeds

    end = report.final_records(cnn_runs([0.3, 0.03, 0.1], [0.95, 0.99, 0.5]))
    terms = [{"mark": "T_mem", "dlr": 0.32, "test_acc": 0.02}, {"mark": "last", "dlr": 0.45, "test_acc": 0.995}]
    seeds = over_seeds("DLR timing", {0: "falls with generalisation", 1: "does not"}, "falls with generalisation")
    lr = [over_seeds("a", {0: "yes", 1: "no"}, "yes")]
    found = report.dlr_found(lazy_rich([0.05, 0.5]), seeds, terms, 0.74, end, lr)
    assert "0.50 for the lazy run" in found[0] and "higher for the lazy run, as" in found[0]
    assert "1 of 2 seeds" in found[1] and "does not time" in found[1]
    assert "rises from 0.32 to 0.45 while its test accuracy goes from 2% to 100%" in found[2] and "74%" in found[2]
    assert "0.10 at test accuracy 0.50, lower than the 0.30" in found[3]
    assert "(a) 1 of 2" in found[4]
    assert "against what" in report.dlr_found(lazy_rich([0.5, 0.05]), seeds, terms, 0.74, end, lr)[0]


def test_the_lessons_charts_open_at_t_grok_and_keep_one_colour_per_name():
    from nhtlab.analysis.events import Events
    from nhtlab.book import dlr_decomposition, lr_panels, spectra_explorer

    records = spectrum(0, [0.5, 1.0]) + spectrum(100, [0.5, 1.0]) + spectrum(200, [0.9, 1.0])
    events = Events(100, 190, peak_step=0, peak_norm=1.0, final_norm=1.0, norm_at_mem=1.0, norm_at_grok=1.0)
    history = History([{"step": s, "dlr": 0.3, "test_acc": 0.5} for s in (0, 100, 200)])
    chart = spectra_explorer(records, events=events, history=history).to_dict()
    slider = chart["params"][0]
    assert slider["value"] == 200 and "T_grok = 190" in slider["bind"]["name"]
    assert spectra_explorer(records).to_dict()["params"][0]["value"] == 0
    shares = chart["vconcat"][2]
    assert shares["encoding"]["color"]["scale"]["domain"] == sorted({r["measure"] for r in shares["data"]["values"]})
    rows = [dict(r, dlr_f_in=0.5, dlr_balance=0.9, dlr_pr=2.0, dlr_rank=3) for r in history.rows]
    legends = [p["encoding"]["color"]["legend"] for p in dlr_decomposition(History(rows)).to_dict()["vconcat"]]
    assert all(legend["labelLimit"] == 0 for legend in legends)
    panels = lr_panels([{"lr": 1e-3, "seed": 0, "dlr": 0.4, "test_acc": 0.9}]).to_dict()["hconcat"]
    assert [p["encoding"]["y"]["field"] for p in panels] == ["dlr", "test_acc"]


def test_the_chapters_text_puts_its_evidence_in_closed_blocks_and_no_run_time_on_the_page():
    from nhtlab.book.claims import Check, over_seeds

    terms = [{"mark": "T_mem", "step": 100, "test_acc": 0.1, "dlr": 0.32, "f_in": 0.3, "pr": 4.0, "r": 3,
              "low": 0.3, "high": 0.4}, {"mark": "last", "step": 600, "test_acc": 0.1, "dlr": 0.45, "f_in": 0.36,
                                         "pr": 5.0, "r": 3, "low": 0.4, "high": 0.5}]
    text = report.mlp_text(terms, 100, None, 0, 0.74)
    assert "DLR **rises** from 0.320 at T_mem to 0.450" in " ".join(text.split()) and "\n    " not in text
    assert text.count("<details") == 1 and "| mark |" in text.split("<details")[1]
    runs = [{"lr": lr, "seed": s, "dlr": 0.2, "used": 3, "pr": 2.0, "train_acc": 0.9, "test_acc": a, "cpu_s": 9.0}
            for lr, a in ((1e-3, 0.8), (1e-2, 0.9)) for s in (0, 1)]
    section = report.lr_section(runs, [over_seeds("p: (a)", {0: "yes", 1: "yes"}, "yes")], {1e-3: (0.5, 0.6)})
    assert "CPU" not in section and section.count("<details") == 1
    assert ("By mean test accuracy the best rate is 0.01 (0.900, DLR 0.200). The paper's readings on our runs: "
            "(a): 2 of 2 seeds (holds).") in section
    first = Check("x", True, "d")
    timing = report.timing_text(first, over_seeds("t", {0: "falls with generalisation"}, "falls with generalisation"),
                                    {0: first}, [], Check("same", True, "both entries read"), 1100)
    assert timing.index("<details") < timing.index("both entries read")  # the run's provenance is evidence


def test_seed_timings_trains_each_other_seed_with_the_chapters_probe_after_the_first(monkeypatch):
    from nhtlab.book.claims import Check
    from nhtlab.training.presets import companion

    trained = []
    monkeypatch.setattr(report, "companion_probe", lambda run: f"probe {run.seed}")
    monkeypatch.setattr(report, "tracked_run", lambda run, probe: trained.append((run.seed, probe)) or run.seed)
    monkeypatch.setattr(report, "run_timing", lambda seed: Check("timing", seed % 2 == 1, f"seed {seed}"))
    first = Check("timing", False, "the shown run")
    out = report.seed_timings(companion(1.0, seed=2), first, [1, 3])
    assert list(out) == [2, 3, 5] and out[2] is first and [bool(c) for c in out.values()] == [False, True, True]
    assert trained == [(3, "probe 3"), (5, "probe 5")]
