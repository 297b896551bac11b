"""The emergence report (chapter 07): the law's link and the size checks fail on sweeps without them; directions are read per seed."""

import math

import pytest

from nhtlab.analysis.emergence import size_summary
from nhtlab.book.emergence_report import (check_law_link, check_sizes_generalise, direction_by_seed, law_link,
                                          trend_answer, trend_records)


def row(size, seed, log_gap, delay, t_mem=500):
    ratio = None if log_gap is None else math.exp(log_gap)
    return {"size": size, "seed": seed, "T_mem": t_mem, "T_grok": None if delay is None else t_mem + delay,
            "delay": delay, "V_sc": 1000.0, "V_st": None if ratio is None else 1000.0 / ratio, "ratio": ratio,
            "log_gap": log_gap, "predicted": None if log_gap is None else log_gap / 1e-3, "eta_lambda": 1e-3}


FOLLOWS = [row(32, 0, 0.1, 200), row(32, 1, 0.2, 300), row(64, 0, 0.6, 700), row(64, 1, 0.7, 800),
           row(128, 0, 1.2, 1300), row(128, 1, 1.3, 1250)]


def test_law_link_holds_when_the_delay_follows_the_gap_and_fails_when_it_does_not():
    assert check_law_link(FOLLOWS, at_least=0.5)
    against = [dict(r, delay=2000 - r["delay"]) for r in FOLLOWS]
    c = check_law_link(against, at_least=0.5)
    assert not c and "rank correlation -" in c.detail
    few = check_law_link(FOLLOWS[:2])
    assert not few and law_link(FOLLOWS[:2])["runs"] == 2 and math.isnan(law_link(FOLLOWS[:2])["correlation"])


def test_sizes_generalise_counts_sizes_with_a_transition():
    assert check_sizes_generalise(size_summary(FOLLOWS), at_least=3)
    none_at_32 = [row(32, s, None, None, t_mem=None) for s in (0, 1)] + FOLLOWS[2:]
    c = check_sizes_generalise(size_summary(none_at_32), at_least=3)
    assert not c and c.detail.endswith("64, 128")


def test_directions_and_trends():
    assert direction_by_seed(FOLLOWS, "log_gap") == ((32, 128), {0: "grows", 1: "grows"})
    shrinking = [dict(r, log_gap=2 - r["log_gap"]) for r in FOLLOWS]
    assert direction_by_seed(shrinking, "log_gap") == ((32, 128), {0: "shrinks", 1: "shrinks"})
    trends = trend_records(FOLLOWS, {"log gap": "log_gap", "delay": "delay"}, expected="shrinks")
    assert trends[0]["verdict"] == "grows" and trends[0]["seeds"].startswith("shrinks in 0 of 2 seeds")
    noisy = [row(32, 0, 0.1, 200), row(32, 1, 1.5, 300), row(64, 0, 0.2, 400), row(64, 1, 1.4, 500)]
    assert trend_records(noisy, {"log gap": "log_gap"})[0]["verdict"] == "within seed noise"
    one_size = trend_records(FOLLOWS[:2], {"log gap": "log_gap"})[0]
    assert one_size["verdict"] is None and one_size["seeds"] is None


def test_trend_answer_reads_the_direction_against_the_seed_spread():
    keys = {"log gap": "log_gap", "delay": "delay"}
    answer, choices, why = trend_answer(trend_records(FOLLOWS, keys), "log gap")
    assert (answer, choices) == ("grows", ("grows", "shrinks", "no clear change"))
    assert "+1.10, against a seed spread of 0.10" in why and "shrinks in 0 of 2 seeds" in why
    shrinking = [dict(r, delay=2000 - r["delay"]) for r in FOLLOWS]
    answer, _, why = trend_answer(trend_records(shrinking, keys), "delay")
    assert answer == "shrinks" and "is -1,025, against a seed spread of 100;" in why
    noisy = [row(32, 0, 0.1, 200), row(32, 1, 0.9, 300), row(128, 0, 0.2, 1300), row(128, 1, 0.3, 1250)]
    assert trend_answer(trend_records(noisy, keys), "log gap")[0] == "no clear change"
    # no run generalised at two sizes (a capped smoke run): nothing to read, and the reason says so
    answer, _, why = trend_answer(trend_records(FOLLOWS[:2], keys), "delay")
    assert answer == "no clear change" and "fewer than two sizes" in why
    with pytest.raises(ValueError, match="'quantity'"):
        trend_answer(trend_records(FOLLOWS, keys), "T_mem")


def test_trends_compare_every_seed_at_the_widths_the_difference_reads():
    # seed 1 never generalised at 32: its 64 → 128 change must not be counted beside a 32 → 128 difference
    rows = [row(32, 0, 0.1, 200), row(32, 1, None, None), row(64, 1, 1.5, 900), row(128, 0, 1.2, 1300),
            row(128, 1, 1.0, 1250)]
    gap = trend_records(rows, {"norm gap": "log_gap"})[0]
    assert gap["widths"] == "32 → 128" and gap["verdict"] == "grows"
    assert gap["seeds"] == "shrinks in 0 of 1 seeds (seed 0: grows)"
    from nhtlab.book.emergence_report import trend_reading

    reading = trend_reading(rows)
    assert reading.name == "the norm gap with width (32 → 128)" and (reading.k, reading.n) == (0, 1)
    assert "(32 → 128) is +" in trend_answer([gap], "norm gap")[2]


def test_width_rows_findings_and_the_norm_gap_exercise():
    import numpy as np

    from nhtlab.analysis.emergence import scale_table
    from nhtlab.book.emergence_report import emergence_findings, norm_gap, run_table, width_rows, width_table
    from nhtlab.book.exercises import check_function
    from tests.test_emergence import synthetic

    widths = width_rows(FOLLOWS + [row(32, 2, None, None)], budget=1000)
    assert widths[0]["generalised"] == "2 of 3" and widths[0]["gap"] == pytest.approx(0.15)
    assert widths[0]["within"] == pytest.approx(2 / 3) and widths[-1]["delay"] == pytest.approx(1275)
    assert "| d_model | seeds generalised | norm gap |" in width_table(FOLLOWS, 1000)
    assert "median V_mem" in width_table(FOLLOWS, 1000, evidence=True) and "norm gap" in run_table(FOLLOWS)
    trends = trend_records(FOLLOWS, {"norm gap": "log_gap", "delay": "delay"})
    box = emergence_findings(FOLLOWS, trends, budget=1000)
    assert "What we found" in box and "grows from d_model 32 to 128" in box and "does not hold here" in box
    assert "The median V_mem is 1,000 at d_model 32 and 1,000 at 128." in box

    def solution(history):  # chapter 07's solution, as printed
        train = history.column("train_acc") >= 0.99
        test = history.column("test_acc") >= 0.99
        if not train.any() or not test.any():
            return None
        norm = history.column("norm")
        return float(np.log(norm[train.argmax()] / norm[test.argmax()]))

    runs = [synthetic(32, 0, 100, 700, 1000.0, 400.0), synthetic(64, 0, 100, None, 1000.0, 800.0)]
    assert norm_gap(runs[0]) == pytest.approx(scale_table(runs[:1], key="width")[0]["log_gap"])
    assert norm_gap(runs[1]) is None
    assert check_function(solution, norm_gap, [(h,) for h in runs]).status == "correct"


def test_small_readings_read_to_the_character():
    from nhtlab.book.emergence_report import width_rows

    assert law_link([{"log_gap": g, "delay": d} for g, d in [(0.1, 100), (0.5, 400), (1.0, 900)]]) == {
        "runs": 3, "correlation": 1.0}
    rows = [{"size": 32, "seed": 0, "g": 0.1}, {"size": 128, "seed": 0, "g": 1.2},
            {"size": 32, "seed": 1, "g": None}, {"size": 64, "seed": 1, "g": 1.3}, {"size": 128, "seed": 1, "g": 1.0}]
    assert direction_by_seed(rows, "g") == ((32, 128), {0: "grows"})  # seed 1 has no value at 32
    assert direction_by_seed(rows[:1], "g") == (None, {})
    rows = [{"size": 32, "seed": 0, "g": 0.5}, {"size": 128, "seed": 0, "g": 0.9}]
    answer, _, why = trend_answer(trend_records(rows, {"log gap": "g"}, expected="shrinks"), "log gap")
    assert answer == "grows" and why == ("the median log gap at the largest size minus at the smallest (32 → 128) is "
                                         "+0.40, against a seed spread of 0.00; shrinks in 0 of 1 seeds (seed 0: grows)")
    rows = [{"size": 32, "seed": 0, "T_mem": 500, "T_grok": 900, "delay": 400, "log_gap": 0.5, "ratio": 1.65,
             "predicted": 500.0, "V_sc": 10.0, "V_st": 6.0}]
    assert (width_rows(rows, budget=1000)[0]["generalised"], width_rows(rows, budget=800)[0]["within"]) == ("1 of 1", 0.0)
