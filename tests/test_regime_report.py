"""Regime report: records, readings over seeds and the order check, on synthetic regime-table rows."""

import pytest

import nhtlab
from nhtlab.book.regime_report import check_regime_order, norm_start_records, regime_records, regimes_by_lambda


def row(lam, seed, regime, peak_step=0):
    return {"weight_decay": lam, "seed": seed, "regime": regime, "t_mem": 500, "t_grok": None, "v_mem": 3000.0,
            "last_step": 1500, "contraction": 0.05, "max_test_acc": 0.1, "reason": "because", "peak_step": peak_step}


ORDERED = [row(0.01, 0, "weak", 300), row(0.01, 1, "weak"), row(1.0, 0, "intermediate"), row(1.0, 1, "intermediate"),
           row(5.0, 0, "strong"), row(5.0, 1, "strong")]


def test_order_holds_on_an_ordered_sweep_and_fails_on_one_that_steps_back():
    assert check_regime_order(ORDERED)
    backwards = ORDERED[:4] + [row(5.0, 0, "weak"), row(5.0, 1, "strong")]
    c = check_regime_order(backwards)
    assert not c and "λ = 5: weak, strong" in c.detail
    # undetermined runs judge nothing
    assert check_regime_order(ORDERED + [row(0.1, 0, "undetermined")])


def test_records():
    rec = regime_records(ORDERED, nhtlab.papers.COMPANION_GROK_COUNTS)
    assert rec[0]["λ"] == 0.01 and rec[0]["paper grokked"] == "0/10" and rec[0]["reason"] == "because"
    assert regime_records(ORDERED)[0]["paper grokked"] is None
    assert regimes_by_lambda(ORDERED)[1.0] == {0: "intermediate", 1: "intermediate"}
    starts = norm_start_records(ORDERED)
    assert starts[0] == {"λ": 0.01, "largest at init": "1 of 2", "rises first": "seed 0"}
    assert starts[1]["rises first"] is None
    with pytest.raises(TypeError):
        regime_records("not rows")


# --- the budget rule: a verdict other than intermediate needs a budget scaled as 1/(ηλ) -------------

def test_decision_budgets_scale_as_one_over_eta_lambda_from_the_base():
    from nhtlab.book.regime_report import decision_budgets

    needed = decision_budgets({0.01: 1500, 0.3: 8000, 1.0: 4000, 5.0: 1000}, 1e-3)
    assert needed == {0.01: 40_000, 0.3: 13_333, 1.0: 4000, 5.0: 4000}
    with pytest.raises(ValueError, match="base_lam"):
        decision_budgets({0.1: 2000}, 1e-3)


def test_within_budget_keeps_an_observed_transition_and_withholds_the_rest():
    from nhtlab.analysis.regimes import NOT_DECIDED, UNJUDGED, within_budget

    assert NOT_DECIDED in UNJUDGED
    assert within_budget("intermediate", 100, 10_000) == "intermediate"
    assert within_budget("diverged", 100, 10_000) == "diverged"
    for label in ("weak", "strong", "undetermined"):
        assert within_budget(label, 1999, 2000) == NOT_DECIDED
        assert within_budget(label, 2000, 2000) == label


def test_budget_regimes_relabel_keep_the_rule_and_count_in_readings():
    from nhtlab.book.regime_report import (budget_regimes, decided_readings, lambda_sentences, regime_findings,
                                           regime_summary_records, rule_check)

    rows = [{**row(lam, s, r), "t_grok": 900 if r == "intermediate" else None,
             "t_mem": None if r == "strong" else 500, "max_train_acc": tr,
             "max_test_acc": te} for lam, r, tr, te in ((0.01, "weak", 1.0, 0.01), (1.0, "intermediate", 1.0, 1.0),
                                                         (5.0, "strong", 0.4, 0.7)) for s in (0, 1)]
    needed = {0.01: 40_000, 1.0: 4000, 5.0: 4000}
    table = budget_regimes(rows, needed)
    assert [r["regime"] for r in table] == ["not decided"] * 2 + ["intermediate"] * 2 + ["not decided"] * 2
    assert table[0]["rule_regime"] == "weak" and table[0]["reason"].startswith("not decided within 1,500 steps")
    assert rows[0]["regime"] == "weak"  # the input is not changed
    assert check_regime_order(table)
    assert regime_summary_records(table)[2]["verdict"] == "not decided within 1,500 steps: 2 of 2"
    weak, strong = decided_readings(table, {0.01: "weak", 5.0: "strong"})
    assert (weak.k, weak.n, weak.holds) == (0, 2, False) and not strong.holds
    assert decided_readings(table, {1.0: "intermediate"})[0].holds
    assert rule_check(table, 0.01, "weak", "flat") and rule_check(table, 5.0, "strong", "no fit")
    assert not rule_check(table, 1.0, "weak", "flat") and not rule_check(table, 2.0, "strong", "no run")
    # with budgets long enough the same runs are decided
    long = budget_regimes(rows, {0.01: 1500, 1.0: 1500, 5.0: 1500})
    assert [r["regime"] for r in long] == [r["regime"] for r in rows]
    assert "verdict: not decided" in lambda_sentences(table)[0] and "yet the test accuracy reached 0.70" in \
        lambda_sentences(table)[2]
    found = regime_findings(table)
    assert found[0].startswith("2 of 6 runs") and "0.70 at λ = 5" in found[2] and "did not stop it" in found[2]
    flat = regime_findings([{**r, "max_test_acc": 0.05} for r in table])
    assert "too short a run" in flat[2]


def test_small_readings_read_to_the_character():
    from nhtlab.book.regime_report import (budget_regimes, decision_budgets, intermediate_answer, lambda_sentences,
                                           learning_answer, panel_budget, regime_findings, regime_summary_records,
                                           rule_check, verdict_label)

    assert panel_budget(4000, 1e-3, 1e-4) == 40000
    assert (panel_budget(4000, 1e-3, 3e-3), panel_budget(4000, 1e-3, 0.0), panel_budget(4000, 1e-3, 1e-5)) == (
        4000, 40000, 40000)
    assert decision_budgets({0.1: 2000, 1.0: 4000, 2.0: 2000}, 1e-3) == {0.1: 40000, 1.0: 4000, 2.0: 4000}
    rows = budget_regimes([{"weight_decay": 0.01, "regime": "weak", "last_step": 1500, "reason": "flat"}],
                          {0.01: 40_000})
    assert (rows[0]["regime"], rows[0]["rule_regime"], verdict_label(rows[0])) == (
        "not decided", "weak", "not decided within 1,500 steps")
    assert (verdict_label({"regime": "not decided", "last_step": 2000}), verdict_label({"regime": "weak"})) == (
        "not decided within 2,000 steps", "weak")
    rows = [{"weight_decay": 5.0, "seed": s, "regime": "not decided", "last_step": 1000, "t_mem": None,
             "max_train_acc": a, "max_test_acc": a / 2} for s, a in ((0, 0.5), (1, 0.6))]
    assert regime_summary_records(rows)[0] == {"λ": 5.0, "verdict": "not decided within 1,000 steps: 2 of 2",
                                               "memorised": "0 of 2", "best train": "0.50–0.60",
                                               "best test": "0.25–0.30"}
    rows = [{"weight_decay": 5.0, "seed": s, "regime": "not decided", "last_step": 1000, "needed": 4000,
             "t_mem": None, "t_grok": None, "contraction": None, "max_train_acc": 0.5, "max_test_acc": 0.4}
            for s in (0, 1)]
    assert lambda_sentences(rows)[0] == (
        "**λ = 5**: no seed reached 99% training accuracy within 1,000 steps (best 0.50), and the test accuracy "
        "reached only 0.40; verdict: not decided within 1,000 steps in 2 of 2 (a verdict needs 4,000 steps).")
    assert regime_records([row(1.0, 0, "weak")], {1.0: (10, 10)})[0]["paper grokked"] == "10/10"
    by_lam = regimes_by_lambda([{"weight_decay": 5.0, "seed": 0, "regime": "strong"},
                                {"weight_decay": 0.01, "seed": 0, "regime": "weak"}])
    assert by_lam == {0.01: {0: "weak"}, 5.0: {0: "strong"}} and list(by_lam) == [0.01, 5.0]
    rows = [{"weight_decay": lam, "seed": 0, "regime": r}
            for lam, r in ((0.01, "weak"), (1.0, "intermediate"), (5.0, "strong"))]
    why = "seeds diagnosed intermediate: λ = 0.01: 0 of 1, λ = 1: 1 of 1, λ = 5: 0 of 1"
    assert intermediate_answer(rows) == ("1", ("0.01", "1", "5", "none"), why)
    rows = [{"weight_decay": 5.0, "seed": s, "max_test_acc": a, "max_train_acc": 0.9, "last_step": 1000}
            for s, a in ((0, 0.7), (1, 0.8), (2, 0.1))]
    assert learning_answer(rows, 5.0) == ("yes", ("yes", "no"), (
        "at λ = 5 the best test accuracy passed 0.5 in 2 of 3 seeds within 1,000 steps (0.70, 0.80, 0.10; "
        "best training accuracy 0.90, 0.90, 0.90)"))
    rows = [{"weight_decay": 5.0, "seed": 0, "regime": "not decided", "rule_regime": "strong", "last_step": 1000}]
    c = rule_check(rows, 5.0, "strong", "never fitted its table")
    assert c and c.name == "λ = 5 within its budget: never fitted its table"
    assert c.detail == "the rule alone reads strong in 1 of 1 seeds within 1,000 steps (seed 0: strong)"
    rows = [{"weight_decay": lam, "seed": 0, "regime": r, "last_step": 1000, "t_mem": m, "max_test_acc": a}
            for lam, r, m, a in ((0.01, "not decided", 300, 0.01), (1.0, "intermediate", 500, 1.0),
                                 (2.0, "not decided", None, 0.8), (5.0, "not decided", None, 0.01))]
    assert regime_findings(rows) == [
        "1 of 4 runs reached a verdict within their budget, all intermediate (λ = 1).",
        ("The other 3 runs (λ = 0.01, 2, 5) stopped before the steps their λ needs: they are not decided, and "
         "nothing here calls them weak or strong."),
        ("Where no run fitted its training set, the best test accuracy reached 0.80 at λ = 2 within 1,000 steps (the "
         "decay slowed learning, it did not stop it) and stayed at 0.01 at λ = 5 within 1,000 steps (too short a run "
         "to tell slowed from stopped).")]
