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
    assert direction_by_seed(FOLLOWS, "log_gap") == {0: "grows", 1: "grows"}
    shrinking = [dict(r, log_gap=2 - r["log_gap"]) for r in FOLLOWS]
    assert direction_by_seed(shrinking, "log_gap") == {0: "shrinks", 1: "shrinks"}
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
