"""The rules every nhtlab trainer applies at an evaluation: one row layout, one divergence rule, one early stop.

:func:`nhtlab.training.loop.train` (one model) and :func:`nhtlab.training.batched.train_batched` (R runs stacked
into one model) measure in different ways (a module's ``parameters()`` against a stacked ``(R, ...)``
dictionary), but what they *record* and *decide* from a measurement is the same, and lives here so that it
cannot drift apart:

* :func:`history_row`: the row layout ``step, lr, <set>_loss, <set>_acc, …, norm, norm/<layer>, …`` (and, on
  Z_p, ``fourier, fourier/<k>, …``);
* :func:`diverged_at_evaluation` and :func:`diverged_in_training`: a run whose loss or parameters became
  non-finite ends with ``status = "diverged"`` and keeps the rows measured until then;
* :func:`grok_step` and :func:`stopped_after`: ``stop_after`` ends a run that many steps after its *test*
  accuracy first reached :data:`~nhtlab.thresholds.FITTED_ACCURACY` (T_grok, found as
  :func:`~nhtlab.analysis.events.find_events` finds it).

Where the two trainers differ, on purpose:

* *when* a non-finite minibatch loss is noticed: ``train`` checks every step and stops before the optimiser
  step; ``train_batched`` notes the first bad step of each run on the device (no host sync per step) and reads
  it at the next evaluation, so the run keeps stepping until then (it cannot touch the other runs). Both record
  the same message, with the same step number; a diverged stacked run's returned model is its state at that
  evaluation.
* ``train`` also emits a ``RuntimeWarning`` on divergence; ``train_batched`` only marks the run's history.
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
    """One evaluation as a :class:`~nhtlab.history.History` row.

    ``step`` (optimiser steps so far), ``lr`` (in force, after the schedule), then ``<set>_loss`` and
    ``<set>_acc`` for each of ``scores`` (set name → (mean cross-entropy, accuracy), ``"train"`` first,
    order kept), ``norm`` (the sum of ``layer_norms``, added in layer order) and ``norm/<layer>``; with
    ``spectrum`` (a model on Z_p: :func:`~nhtlab.measures.fourier.fourier_spectrum` of its token
    embedding), then ``fourier`` and ``fourier/<k>``.

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
    """True (and ``history`` marked diverged) when the row just recorded has a NaN or infinite training loss
    or ‖θ‖² (a non-finite parameter makes the norm non-finite): the run must end. The row stays: it is the evidence."""
    if math.isfinite(row["train_loss"]) and math.isfinite(row["norm"]):
        return False
    history.status, history.message = "diverged", f"non-finite loss or parameters at step {row['step']}"
    return True


def diverged_in_training(history: History, step: int) -> None:
    """Mark ``history`` diverged because the minibatch loss of training step ``step`` (1-based) was not finite."""
    history.status, history.message = "diverged", f"non-finite training loss at step {step}"


def reached_stop_accuracy(row: Mapping[str, float]) -> bool:
    """True when the row's test accuracy is at least :data:`~nhtlab.thresholds.FITTED_ACCURACY` (False without a test set)."""
    return row.get("test_acc", 0.0) >= FITTED_ACCURACY


def grok_step(rows: Sequence[Mapping[str, float]]) -> int | None:
    """The first recorded step (of history ``rows``, in step order) whose test accuracy reached
    :data:`~nhtlab.thresholds.FITTED_ACCURACY`, or None: T_grok, by the one finder that
    :func:`~nhtlab.analysis.events.find_events` uses too.

    Examples
    --------
    >>> grok_step([{"step": 0, "test_acc": 0.1}, {"step": 50, "test_acc": 0.995}, {"step": 75, "test_acc": 1.0}])
    50
    >>> grok_step([{"step": 0, "test_acc": 0.1}]) is None
    True
    """
    return first_step_at_least([r["step"] for r in rows], [r.get("test_acc", math.nan) for r in rows], FITTED_ACCURACY)


def stopped_after(history: History, grok: int | None, step: int, stop_after: int | None) -> bool:
    """True (and ``history`` marked stopped) when the run must end: ``stop_after`` is set (None never stops)
    and the evaluated ``step`` is at least ``grok`` (:func:`grok_step` so far; None: not reached) + ``stop_after``.

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
