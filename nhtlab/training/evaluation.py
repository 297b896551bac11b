"""The rules every nhtlab trainer applies at an evaluation: one row layout, one divergence rule, one early stop.

:func:`nhtlab.training.loop.train` and :func:`nhtlab.training.batched.train_batched` measure in different ways,
but what they *record* and *decide* from a measurement lives here so that it cannot drift apart.

They differ on purpose in *when* a non-finite minibatch loss is noticed: ``train`` checks every step and
stops before the optimiser step (and warns); ``train_batched`` notes the first bad step on the device (no host
sync per step) and reads it at the next evaluation. Both record the same message with the same step number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from ..history import History, first_step_at_least
from ..measures.fourier import fourier_columns
from ..thresholds import FITTED_ACCURACY

__all__ = ["history_row", "diverged_at_evaluation", "diverged_in_training", "reached_stop_accuracy",
           "grok_step", "stopped_after"]


def history_row(step: int, lr: float, scores: Mapping[str, tuple[float, float]],
                layer_norms: Mapping[str, float], spectrum: torch.Tensor | None = None) -> dict[str, float]:
    """One evaluation as a row: ``scores`` maps a set to (mean cross-entropy, accuracy), ``"train"`` first.

    ``spectrum`` (a model on Z_p) adds the Fourier columns.

    Examples
    --------
    >>> history_row(10, 1e-3, {"train": (0.5, 0.9)}, {"a": 1.0, "b": 2.0})
    {'step': 10, 'lr': 0.001, 'train_loss': 0.5, 'train_acc': 0.9, 'norm': 3.0, 'norm/a': 1.0, 'norm/b': 2.0}
    """
    row: dict[str, float] = {"step": step, "lr": lr}
    for name, (loss, acc) in scores.items():
        row[f"{name}_loss"], row[f"{name}_acc"] = loss, acc
    row["norm"] = sum(layer_norms.values())
    row.update({f"norm/{name}": value for name, value in layer_norms.items()})
    return row if spectrum is None else {**row, **fourier_columns(spectrum)}


def diverged_at_evaluation(history: History, row: Mapping[str, float]) -> bool:
    """True (and ``history`` marked diverged) when the row's training loss or ‖θ‖² is not finite.

    The row stays: it is the evidence.
    """
    if math.isfinite(row["train_loss"]) and math.isfinite(row["norm"]):
        return False
    history.status, history.message = "diverged", f"non-finite loss or parameters at step {row['step']}"
    return True


def diverged_in_training(history: History, step: int) -> None:
    """Mark ``history`` diverged because the minibatch loss of training step ``step`` (1-based) was not finite."""
    history.status, history.message = "diverged", f"non-finite training loss at step {step}"


def reached_stop_accuracy(row: Mapping[str, float]) -> bool:
    """Whether the row's test accuracy reached :data:`~nhtlab.thresholds.FITTED_ACCURACY` (no test set: False)."""
    return row.get("test_acc", 0.0) >= FITTED_ACCURACY


def grok_step(rows: Sequence[Mapping[str, float]]) -> int | None:
    """T_grok: the first step whose test accuracy reached :data:`~nhtlab.thresholds.FITTED_ACCURACY`, or None.

    The one finder that :func:`~nhtlab.analysis.events.find_events` uses too.

    Examples
    --------
    >>> grok_step([{"step": 0, "test_acc": 0.1}, {"step": 50, "test_acc": 0.995}, {"step": 75, "test_acc": 1.0}])
    50
    >>> grok_step([{"step": 0, "test_acc": 0.1}]) is None
    True
    """
    return first_step_at_least([r["step"] for r in rows], [r.get("test_acc", math.nan) for r in rows], FITTED_ACCURACY)


def stopped_after(history: History, grok: int | None, step: int, stop_after: int | None) -> bool:
    """True (and ``history`` marked stopped) once ``step`` ≥ ``grok`` + ``stop_after`` (either None: never).

    Examples
    --------
    >>> h = History()
    >>> stopped_after(h, 100, 125, 50), stopped_after(h, 100, 150, 50), h.status
    (False, True, 'stopped')
    """
    if stop_after is None or grok is None or step < grok + stop_after:
        return False
    history.status, history.message = "stopped", f"stopped {stop_after} steps after test accuracy reached {FITTED_ACCURACY:.0%}"
    return True
