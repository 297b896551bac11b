"""The rules both trainers share (nhtlab.training.loop): row layout, divergence, early stop."""

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.func import stack_module_state

from nhtlab.history import History
from nhtlab.measures.norms import layer_names, layer_norms, layer_parameters
from nhtlab.models import EmbeddingMLP
from nhtlab.analysis.events import find_events
from nhtlab.thresholds import FITTED_ACCURACY
from nhtlab.training.loop import (
    diverged_at_evaluation,
    diverged_in_training,
    grok_step,
    history_row,
    stopped_after,
)


def test_history_row_layout_and_norm_sum():
    row = history_row(5, 0.01, {"train": (0.7, 0.5), "test": (0.9, 0.25)}, {"embed": 2.0, "readout": 3.5})
    assert list(row) == ["step", "lr", "train_loss", "train_acc", "test_loss", "test_acc", "norm", "norm/embed", "norm/readout"]
    assert row["norm"] == 5.5 and row["step"] == 5 and row["lr"] == 0.01


@pytest.mark.parametrize("loss,norm,diverged", [
    (math.nan, 1.0, True), (math.inf, 1.0, True), (0.3, math.nan, True), (0.3, -math.inf, True), (0.3, 1.0, False),
])
def test_divergence_rule_keeps_the_row_and_marks_the_history(loss, norm, diverged):
    h = History()
    row = history_row(40, 1e-3, {"train": (loss, 0.1)}, {"a": norm})
    h.rows.append(row)
    assert diverged_at_evaluation(h, row) is diverged
    assert h.rows == [row]  # the evidence stays
    if diverged:
        assert h.status == "diverged" and h.message == "non-finite loss or parameters at step 40"
    else:
        assert h.status == "running" and h.message == ""


def test_divergence_in_training_names_the_step():
    h = History()
    diverged_in_training(h, 11)
    assert (h.status, h.message) == ("diverged", "non-finite training loss at step 11")


def test_the_trainers_grok_step_is_find_events_t_grok():
    # one event finder: the early stop's T_grok and the analysis's T_grok agree on the same rows, NaN (no
    # test accuracy known) and accuracies just below, at and above the threshold included
    rng = np.random.default_rng(0)
    levels = np.array([0.0, 0.5, np.nextafter(FITTED_ACCURACY, 0.0), FITTED_ACCURACY, 0.995, 1.0, math.nan])
    found = []
    for _ in range(300):
        n = int(rng.integers(1, 12))
        steps = np.cumsum(rng.integers(1, 100, size=n)) - 1
        rows = [{"step": int(s), "train_acc": float(rng.choice(levels)), "test_acc": float(a), "norm": 1.0}
                for s, a in zip(steps, rng.choice(levels, size=n, p=[0.3, 0.2, 0.1, 0.05, 0.05, 0.05, 0.25]))]
        t_grok = find_events(History(rows)).t_grok
        assert grok_step(rows) == t_grok, rows
        found.append(t_grok)
    assert any(t is None for t in found) and any(t is not None and t > 0 for t in found)  # both cases were met


def test_early_stop_closed_form():
    rows = [{"step": s, "test_acc": a} for s, a in [(0, 0.1), (25, 0.98), (50, FITTED_ACCURACY), (75, 0.5), (100, 1.0)]]
    assert grok_step(rows) == 50  # the first crossing counts, even if the accuracy falls back
    assert grok_step([{"step": 0, "train_acc": 1.0}]) is None  # no test set: never
    assert grok_step([{"step": 0, "test_acc": 0.9899}]) is None and grok_step([{"step": 0, "test_acc": 0.99}]) == 0
    assert grok_step([{"step": 0, "test_acc": FITTED_ACCURACY}]) == 0
    assert grok_step([{"step": 0, "test_acc": math.nan}]) is None
    # stop at the first evaluation with step ≥ grok + stop_after (grok read off the history's rows)
    for grok, step, stop_after, expected in [(50, 50, 0, True), (50, 75, 50, False), (50, 100, 50, True),
                                             (50, 125, 50, True), (None, 1000, 0, False), (50, 10**6, None, False)]:
        h = History([{"step": 0, "test_acc": 0.1}] + ([] if grok is None else [{"step": grok, "test_acc": 1.0}]))
        assert stopped_after(h, step, stop_after) is expected
        assert h.status == ("stopped" if expected else "running")
    h = History(rows[:3])
    stopped_after(h, 100, 50)
    assert h.message == "stopped 50 steps after test accuracy reached 99%"


def test_layer_parameters_is_the_grouping_of_norms_and_of_stacked_parameters():
    torch.manual_seed(0)
    model = EmbeddingMLP(7, width=8)
    groups = layer_parameters(model)
    assert list(groups) == layer_names(model) == list(layer_norms(model))
    params, _ = stack_module_state([model, EmbeddingMLP(7, width=8)])
    assert [n for names in groups.values() for n in names] == list(params)
    nested = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1, bias=False)))
    assert layer_parameters(nested) == {"0": ["0.weight", "0.bias"], "1.1": ["1.1.weight"]}
