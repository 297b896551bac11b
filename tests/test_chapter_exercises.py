"""The answers chapters 01-04's exercises read from their runs, the live panel's budget rule and
chapter 02's λ control: each on data whose answer is known, and on data that flips it."""

from __future__ import annotations

import pytest

from nhtlab.book import claims, delay_law_report, dlr_report, grokking_report, regime_report, widgets
from nhtlab.book.exercises import check_answer, check_prediction
from nhtlab.book.regime_charts import lambda_slider
from nhtlab.history import History
from nhtlab.training.presets import companion


def _run(test_accs, train_acc=1.0, every=100):
    return History([{"step": i * every, "train_acc": train_acc, "test_acc": t, "norm": 100.0 - i}
                    for i, t in enumerate(test_accs)])


# --- chapter 01: the live panel's budget and the λ = 0 prediction ---------------------------------

def test_panel_budget_scales_with_one_over_eta_lambda_between_the_base_and_the_cap():
    assert widgets.panel_budget(4000, 1e-3, 1e-3) == 4000
    assert widgets.panel_budget(4000, 1e-3 * 1.0, 1e-3 * 0.3) == 13333  # λ = 0.3: 1/0.3 of the budget
    assert widgets.panel_budget(4000, 1e-3, 1e-4) == 40000  # λ = 0.1: ten times
    assert widgets.panel_budget(4000, 1e-3, 1e-5) == 40000  # capped at ten times
    assert widgets.panel_budget(4000, 1e-3, 0.0) == 40000  # no decay: the cap
    assert widgets.panel_budget(4000, 1e-3, 1e-2) == 4000  # a larger λ never gets less than the base
    assert widgets.PANEL_BUDGET_CAP == 10


@pytest.mark.parametrize("args, name", [((0, 1e-3, 1e-3), "steps"), ((4000, 0.0, 1e-3), "rate"),
                                        ((4000, 1e-3, -1.0), "new_rate")])
def test_panel_budget_errors_name_the_parameter(args, name):
    with pytest.raises(ValueError, match=name):
        widgets.panel_budget(*args)


def test_the_static_panel_states_its_budget_rule(monkeypatch):
    monkeypatch.setenv("NHTLAB_BOOK", "1")
    note = repr(widgets.train_panel(companion(1.0, steps=4000)))
    assert "1/(ηλ)" in note and "4,000 steps at λ = 1" in note and "10×" in note


def test_generalise_answer_reads_t_grok_by_majority():
    never = _run([0.1, 0.2, 0.3])
    groks = _run([0.1, 0.5, 0.995])
    answer, choices, why = grokking_report.generalise_answer({0: never, 1: never, 2: groks})
    assert choices == ("yes", "no")
    assert answer == "no" and "1 of 3 runs" in why and "0.99" in why
    assert grokking_report.generalise_answer({0: groks, 1: groks, 2: never})[0] == "yes"
    with pytest.raises(ValueError, match="histories"):
        grokking_report.generalise_answer({})


# --- chapter 02: which λ is intermediate, does the largest memorise -------------------------------

def _rows(regimes):
    return [{"weight_decay": lam, "seed": s, "regime": r, "t_mem": None if r == "strong" else 300,
             "last_step": 1000} for lam, by_seed in regimes.items() for s, r in enumerate(by_seed)]


def test_intermediate_answer_is_the_smallest_lambda_with_a_majority():
    table = _rows({0.01: ["weak"] * 3, 0.1: ["intermediate", "undetermined", "undetermined"],
                   0.3: ["intermediate", "intermediate", "weak"], 1.0: ["intermediate"] * 3, 5.0: ["strong"] * 3})
    answer, choices, why = regime_report.intermediate_answer(table)
    assert answer == "0.3" and choices == ("0.01", "0.1", "0.3", "1", "5", "none")
    assert "λ = 0.1: 1 of 3" in why
    check_prediction("0.3", answer, choices, why)  # the answer is one of the choices
    assert regime_report.intermediate_answer(_rows({0.01: ["weak"], 5.0: ["strong"]}))[0] == "none"


def test_the_lambda_control_is_labelled_with_lambda_values():
    curves = [{"run": 0, "weight_decay": lam, "lam_index": i, "step": 0, "train_acc": 0.1, "test_acc": 0.1,
               "norm": 1.0, "regime": "weak", "seed": 0} for i, lam in enumerate([0.01, 0.3, 5.0])]
    bind = lambda_slider(curves, [0.01, 0.3, 5.0]).to_dict()["params"][0]["bind"]
    assert bind["labels"] == ["0.01", "0.3", "5"] and bind["options"] == [0, 1, 2]
    assert "λ" in bind["name"] and "index" not in bind["name"]


# --- chapter 03: the η exercise and the direction with λ ------------------------------------------

def _point(lr, measured, lam=1.0, seed=0, init_scale=1.0):
    return dict(weight_decay=lam, lr=lr, seed=seed, init_scale=init_scale, measured=measured)


def test_lr_scaling_exercise_expects_the_base_delay_scaled_by_one_over_eta():
    points = [_point(3e-3, 900), _point(2e-3, 1700), _point(3e-3, 5000, init_scale=1.5), _point(3e-3, 700, seed=1)]
    assert lr_check(None, points).status == "unanswered"
    right = lr_check(1350, points)  # 900 · 3e-3 / 2e-3
    assert right.status == "correct" and "1,350" in right.reveal and "measured 1,700" in right.reveal
    assert lr_check(1700, points).status == "wrong"  # the measured delay is not the law's answer here
    assert lr_check(1350, [_point(2e-3, 1700)]).status == "unanswered"  # no base run: nothing to scale
    with pytest.raises(ValueError, match="'new_lr'"):
        delay_law_report.lr_scaling_exercise(None, points, 3e-3, 0.0, 0)


def lr_check(answer, points):
    return delay_law_report.lr_scaling_exercise(answer, points, lr=3e-3, new_lr=2e-3, seed=0)


def test_reading_answer_follows_the_readings_rule():
    falls = claims.over_seeds("the delay falls", {0: "falls", 1: "falls", 2: "does not fall"}, expected="falls")
    assert claims.reading_answer(falls, "falls", "no") == (
        "falls", ("falls", "no"), f"the delay falls: {falls.text()}, and a majority of seeds decides")
    flat = claims.over_seeds("the delay falls", {0: "falls", 1: "does not fall"}, expected="falls")
    assert claims.reading_answer(flat, "falls", "no")[0] == "no"  # one of two is no majority
    with pytest.raises(TypeError, match="reading"):
        claims.reading_answer("falls", "falls", "no")


def test_check_answer_hides_its_explanation_until_answered():
    unanswered = check_answer(None, 1350.0, why="from the run")
    assert "<details" in unanswered._repr_html_() and "1,350" in unanswered._repr_html_()
    assert "1,350" not in repr(unanswered)
    assert "1,350" in repr(check_answer(1000, 1350.0, why="from the run"))
    assert check_answer(None, 1350.0).reveal == ""


# --- chapter 04: lazy against rich ----------------------------------------------------------------

def test_lazy_rich_answer_compares_the_ends():
    rows = [dict(alpha=0.3, dlr=0.05, cka_to_init=0.3), dict(alpha=10.0, dlr=0.4, cka_to_init=0.9),
            dict(alpha=100.0, dlr=0.7, cka_to_init=0.99)]
    answer, choices, why = dlr_report.lazy_rich_answer(rows)
    assert choices == ("lazy", "rich")
    assert answer == "lazy" and "0.700 at α = 100" in why and "0.050 at α = 0.3" in why
    assert dlr_report.lazy_rich_answer([dict(rows[0], dlr=0.9), rows[-1]])[0] == "rich"
    with pytest.raises(ValueError, match="records"):
        dlr_report.lazy_rich_answer(rows[:1])
