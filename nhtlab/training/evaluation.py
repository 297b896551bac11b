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
  accuracy first reached :data:`STOP_ACCURACY`.

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

from ..history import History
from ..measures.fourier import fourier_columns

__all__ = ["STOP_ACCURACY", "history_row", "diverged_at_evaluation", "diverged_in_training", "reached_stop_accuracy",
           "grok_step", "stopped_after"]

#: Test accuracy whose first crossing starts the ``stop_after`` count (the papers' T_grok threshold).
STOP_ACCURACY = 0.99


def history_row(step: int, lr: float, scores: Mapping[str, tuple[float, float]],
                layer_norms: Mapping[str, float], spectrum: torch.Tensor | None = None) -> dict[str, float]:
    """One evaluation as a :class:`~nhtlab.history.History` row.

    Parameters
    ----------
    step : int
        Optimiser steps taken so far.
    lr : float
        The learning rate in force (after the schedule).
    scores : mapping set name → (loss, accuracy)
        Mean cross-entropy and accuracy per evaluated set, ``"train"`` first by
        convention; the order is kept in the row.
    layer_norms : mapping layer name → float
        ‖θ_ℓ‖² per layer, in model order (:func:`nhtlab.measures.norms.layer_norms`).
    spectrum : Tensor, shape (p//2 + 1,), optional
        A model on Z_p: its token embedding's :func:`~nhtlab.measures.fourier.fourier_spectrum`.

    Returns
    -------
    dict
        ``step``, ``lr``, then ``<set>_loss`` and ``<set>_acc`` per set, ``norm``
        (the sum of the layer norms, added in layer order) and ``norm/<layer>``
        per layer, then ``fourier`` and ``fourier/<k>`` with a spectrum (:func:`~nhtlab.measures.fourier.fourier_columns`).

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
    """Apply the divergence rule to a recorded row; mark ``history`` diverged when it fires.

    The rule: the training loss or the total norm ‖θ‖² is NaN or infinite (a
    non-finite parameter makes the norm non-finite). The row stays in the
    history: it is the evidence.

    Parameters
    ----------
    history : History
        The run's history; its ``status`` and ``message`` are set when the rule fires.
    row : mapping
        The row just recorded (:func:`history_row`), with ``step``, ``train_loss`` and ``norm``.

    Returns
    -------
    bool
        True when the run diverged and must end.
    """
    if math.isfinite(row["train_loss"]) and math.isfinite(row["norm"]):
        return False
    history.status, history.message = "diverged", f"non-finite loss or parameters at step {row['step']}"
    return True


def diverged_in_training(history: History, step: int) -> None:
    """Mark ``history`` diverged (its ``status``) because the minibatch loss of (1-based) step ``step`` was not finite."""
    history.status, history.message = "diverged", f"non-finite training loss at step {step}"


def reached_stop_accuracy(row: Mapping[str, float]) -> bool:
    """True when the history row's test accuracy is at least :data:`STOP_ACCURACY` (False without a test set)."""
    return row.get("test_acc", 0.0) >= STOP_ACCURACY


def grok_step(rows: Sequence[Mapping[str, float]]) -> int | None:
    """The first recorded step of the history ``rows`` (in step order) at which the test accuracy reached
    :data:`STOP_ACCURACY`, or None.

    Examples
    --------
    >>> grok_step([{"step": 0, "test_acc": 0.1}, {"step": 50, "test_acc": 0.995}, {"step": 75, "test_acc": 1.0}])
    50
    >>> grok_step([{"step": 0, "test_acc": 0.1}]) is None
    True
    """
    return next((int(r["step"]) for r in rows if reached_stop_accuracy(r)), None)


def stopped_after(history: History, grok: int | None, step: int, stop_after: int | None) -> bool:
    """Apply the early stop; mark ``history`` stopped when it fires.

    The rule: with ``stop_after`` set and the test accuracy having reached
    :data:`STOP_ACCURACY` at step ``grok``, the run stops at the first
    evaluation with ``step ≥ grok + stop_after``.

    Parameters
    ----------
    history : History
        The run's history; ``status`` becomes ``"stopped"`` when the rule fires.
    grok : int or None
        :func:`grok_step` of the rows so far (None: not reached yet).
    step : int
        The step just evaluated.
    stop_after : int or None
        Steps to train past ``grok``; None never stops early.

    Returns
    -------
    bool
        True when the run must end.

    Examples
    --------
    >>> h = History()
    >>> stopped_after(h, 100, 125, 50), stopped_after(h, 100, 150, 50), h.status
    (False, True, 'stopped')
    """
    if stop_after is None or grok is None or step < grok + stop_after:
        return False
    history.status, history.message = "stopped", f"stopped {stop_after} steps after test accuracy reached 99%"
    return True
