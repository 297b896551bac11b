import math

import pytest

from nhtlab.analysis.delay import delay_summary, predicted_delay
from nhtlab.analysis.events import find_events, norm_at
from nhtlab.history import History


def synthetic(train_acc, test_acc, norm, every=10, lr=1e-3, wd=1.0):
    rows = [{"step": i * every, "train_acc": a, "test_acc": b, "norm": n} for i, (a, b, n) in enumerate(zip(train_acc, test_acc, norm))]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": wd})


def test_events_on_a_grokking_curve():
    h = synthetic([0.1, 0.5, 0.995, 1, 1, 1, 1], [0, 0, 0.01, 0.2, 0.9, 0.99, 1.0], [10, 20, 40, 50, 30, 20, 15])
    e = find_events(h)
    assert (e.t_mem, e.t_grok, e.peak_step, e.peak_norm) == (20, 50, 30, 50)
    assert e.delay == 30 and e.norm_at_mem == 40 and e.norm_at_grok == 20
    assert e.contraction == pytest.approx(1 - 15 / 50)


def test_missing_events_are_none():
    e = find_events(synthetic([0.1, 0.2], [0, 0], [5, 6]))
    assert e.t_mem is None and e.t_grok is None and e.delay is None
    assert e.contraction == 0.0 and e.peak_step == 10


def test_threshold_is_a_parameter_and_validated():
    h = synthetic([0.9, 0.96], [0.5, 0.96], [1, 1])
    assert find_events(h, threshold=0.95).t_mem == 10
    with pytest.raises(ValueError, match="'threshold' parameter of find_events"):
        find_events(h, threshold=1.5)
    with pytest.raises(ValueError, match="is empty"):
        find_events(History())


def test_predicted_delay_closed_form():
    assert predicted_delay(math.e ** 2 * 10, 10, lr=1e-3, weight_decay=2.0) == pytest.approx(1000.0)
    assert predicted_delay(5, 10, lr=1e-3, weight_decay=1.0) == 0.0
    assert predicted_delay(10, 5, lr=1e-3, weight_decay=0.0) == math.inf
    with pytest.raises(ValueError, match="'v_st' parameter of predicted_delay"):
        predicted_delay(10, 0, lr=1e-3, weight_decay=1.0)


def test_delay_summary_reads_eta_lambda_from_config():
    # memorised at step 0 with V = 100e, generalised at step 10 with V = 100, ended at V = 100
    h = synthetic([1, 1, 1], [0, 1, 1], [100 * math.e, 100, 100], lr=1e-2, wd=0.5)
    s = delay_summary(h)
    assert s["grok"]["measured"] == 10 and s["grok"]["predicted"] == pytest.approx(200.0)  # log(e)/(ηλ)
    assert s["companion"]["predicted"] == pytest.approx(100.0)  # log(e)/(2ηλ)
    assert s["t_escape"] == 10 and s["companion"]["measured"] == 10  # first step with V ≤ 1.5·V_final
    never = synthetic([1, 1], [0, 0], [10, 10])
    assert delay_summary(never) == {"companion": None, "grok": None}


def test_exercise_checks():
    from nhtlab.book.exercises import check_answer

    assert check_answer(None, 100.0).status == "unanswered"
    assert check_answer(103.0, 100.0).status == "correct"
    assert check_answer(120.0, 100.0).status == "wrong"
    assert "100" not in check_answer(120.0, 100.0).message  # the verdict never gives the answer away
    with pytest.raises(TypeError, match="'answer' parameter of check_answer must be a float"):
        check_answer("2772", 2772.0)


def test_norm_at_is_the_one_reader_of_v_sc_and_v_st():
    from nhtlab.analysis.scorecard import norm_ordering

    h = History([{"step": s, "norm": v, "train_acc": a, "test_acc": b}
                 for s, v, a, b in [(0, 10.0, 0.1, 0.1), (50, 40.0, 1.0, 0.2), (100, 20.0, 1.0, 1.0)]])
    assert [norm_at(h, s) for s in (0, 1, 50, 51, 100)] == [10.0, 40.0, 40.0, 20.0, 20.0]  # first evaluated step ≥ s
    with pytest.raises(ValueError, match="after the history's last evaluated step 100"):
        norm_at(h, 101)
    ev = find_events(h)
    assert (ev.norm_at_mem, ev.norm_at_grok) == (norm_at(h, ev.t_mem), norm_at(h, ev.t_grok)) == (40.0, 20.0)
    assert norm_ordering(h, ev.t_mem, ev.t_grok).value == 2.0


def test_a_prediction_is_checked_against_the_run_and_hidden_until_made():
    from nhtlab.book.exercises import check_prediction

    choices = ("backward", "forward")
    blank = check_prediction(None, "forward", choices, "the embedding lost 10% first in 3 of 3 seeds")
    other = check_prediction(None, "backward", choices, "why")
    assert blank.status == "unanswered" and blank.message == other.message  # the prompt does not give it away
    assert "<details" in blank._repr_html_() and "3 of 3" in blank._repr_html_()  # hidden until clicked
    right, wrong = (check_prediction(g, "forward", choices, "why") for g in ("forward", "backward"))
    assert right.status == "correct" and wrong.status == "wrong" and not wrong
    assert "<details" not in wrong._repr_html_() and "answer: forward" in wrong._repr_html_()
    with pytest.raises(ValueError, match="'guess' must be one of"):
        check_prediction("sideways", "forward", choices, "why")
    with pytest.raises(ValueError, match="'answer' must be one of"):
        check_prediction(None, "undetermined", choices, "why")


def test_grokked_is_memorised_and_generalised():
    from nhtlab.analysis.events import Events

    assert Events(600, 1500, peak_step=0, peak_norm=1.0, final_norm=1.0, norm_at_mem=None, norm_at_grok=None).grokked
    assert not Events(600, None, peak_step=0, peak_norm=1.0, final_norm=1.0, norm_at_mem=None, norm_at_grok=None).grokked
    assert not Events(None, None, peak_step=0, peak_norm=1.0, final_norm=1.0, norm_at_mem=None, norm_at_grok=None).grokked
