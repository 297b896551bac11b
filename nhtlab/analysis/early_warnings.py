"""Early warnings of grokking, evaluated: how far ahead of T_grok each signal fires, and how often it fires
when no grokking follows.

Each candidate signal has one rule (:data:`SIGNALS`, in words), fixed before any
evaluation and read only after ``T_mem``: before memorisation nothing is a warning of
grokking. The lead is ``T_grok − t_fire`` in steps and in units of ``1/(ηλ)`` (the delay
law's time scale); a warning after ``T_grok`` is late. On runs where no grokking follows
within their horizon, any firing is a false alarm.

>>> from nhtlab.analysis.eta import synthetic_contraction
>>> h = synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3)
>>> warning_step(h, "total_norm")
700
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..history import History, require_history
from ..validation import require_choice, require_rates
from .events import find_events
from .layers import head_and_first

__all__ = ["supported_signal", "SIGNALS", "TRAIN_LOSS_RATIO", "warning_step", "evaluate_warnings"]

#: The train-loss rule: the loss at least this many times its minimum since T_mem (the Monitor's rule too).
TRAIN_LOSS_RATIO = 2.0


def _after_peak(values: np.ndarray, share: float) -> np.ndarray:
    return values <= (1 - share) * np.fmax.accumulate(values)


def _series(h: History, name: str) -> np.ndarray | None:
    """A column of ``h``, or ``"head"``/``"first"``: the read-out's or the first layer's ‖θ_ℓ‖²; None when not recorded."""
    if name in ("head", "first"):
        return h.column(f"norm/{head_and_first(h.layers)[name == 'first']}") if h.layers else None
    return h.column(name) if name in h.columns else None


def _rule(names: tuple[str, ...], fires: Callable[..., np.ndarray]) -> Callable[[History, slice], np.ndarray | None]:
    """A signal's rule over the rows ``w``: ``fires(w, *series)`` on the series ``names``, None when one is missing."""
    def rule(h: History, w: slice) -> np.ndarray | None:
        series = [_series(h, name) for name in names]
        return None if any(s is None for s in series) else fires(w, *series)
    return rule


#: signal name → (rule in words, rule over the rows from T_mem on).
SIGNALS: dict[str, tuple[str, Callable[[History, slice], np.ndarray | None]]] = {
    "readout_peak": ("read-out ‖θ_L‖² 5% below its maximum since T_mem",
                     _rule(("head",), lambda w, head: _after_peak(head[w], 0.05))),
    "readout_vs_init": ("‖θ_L‖²/‖θ_L(0)‖² < 1", _rule(("head",), lambda w, head: head[w] / head[0] < 1.0)),
    "readout_vs_first": ("‖θ_L‖²/‖θ_1‖² 5% below its maximum since T_mem",
                         _rule(("head", "first"), lambda w, head, first: _after_peak(head[w] / first[w], 0.05))),
    "total_norm": ("‖θ‖² 10% below its value at T_mem", _rule(("norm",), lambda w, norm: norm[w] <= 0.9 * norm[w][0])),
    "embedding_norm": ("first layer's ‖θ_1‖² 10% below its value at T_mem",
                       _rule(("first",), lambda w, first: first[w] <= 0.9 * first[w][0])),
    "train_loss": ("train loss twice its minimum since T_mem",
                   _rule(("train_loss",), lambda w, loss: loss[w] >= TRAIN_LOSS_RATIO * np.fmin.accumulate(loss[w]))),
    "dlr": ("DLR on the probe < 0.5", _rule(("dlr",), lambda w, dlr: dlr[w] < 0.5)),
}


def warning_step(history: History, signal: str) -> int | None:
    """The first evaluated step after T_mem at which ``signal``'s rule fires (None: never, or not recorded)."""
    require_history(history, "warning_step", norms=["norm"], fractions=("train_acc", "test_acc"))
    require_choice(signal, "signal", SIGNALS, owner="warning_step")
    t_mem = find_events(history).t_mem
    if t_mem is None or history.diverged:
        return None
    steps = history.column("step")  # increasing: find_events checked them
    start = int(np.searchsorted(steps, t_mem))
    fired = SIGNALS[signal][1](history, slice(start, None))
    if fired is None:
        return None
    fired = np.asarray(fired, dtype=bool)
    return int(steps[start:][fired][0]) if fired.any() else None


def evaluate_warnings(grokking: Sequence[History], no_grokking: Sequence[History]) -> list[dict[str, Any]]:
    """Lead times before T_grok and false alarms of every signal, one record per signal.

    ``grokking`` runs are evaluated for lead time (those that never grok count as missing);
    on ``no_grokking`` runs (no grokking within their horizon, e.g. λ = 0.01) a firing is a
    false alarm. ``fired`` and ``false_alarms`` read "k of n"; ``late`` counts firings after
    T_grok; ``median_lead_eta_lambda`` is lead·ηλ.
    """
    grokked = [(h, find_events(h)) for h in grokking]
    grokked = [(h, e) for h, e in grokked if e.t_grok is not None and e.t_mem is not None]
    records = []
    for name, (rule, fn) in SIGNALS.items():
        leads, scaled, late, recorded = [], [], 0, 0
        for h, e in grokked:
            recorded += fn(h, slice(0, 1)) is not None
            step = warning_step(h, name)
            if step is None:
                continue
            if step > e.t_grok:
                late += 1
                continue
            leads.append(e.t_grok - step)
            lr, wd = require_rates(h.config, "grokking", "warning_leads")
            scaled.append((e.t_grok - step) * lr * wd)
        alarms = sum(warning_step(h, name) is not None for h in no_grokking)
        records.append({
            "signal": name, "rule": rule, "fired": f"{len(leads)} of {len(grokked)}", "late": late,
            "median_lead": float(np.median(leads)) if leads else None,
            "median_lead_eta_lambda": float(np.median(scaled)) if scaled else None,
            "false_alarms": f"{alarms} of {len(no_grokking)}", "recorded": recorded,
        })
    return records


def supported_signal(records: Sequence[dict[str, Any]]) -> str:
    """The signal an online monitor should warn by, from :func:`evaluate_warnings` records.

    The order: a signal that warned before T_grok in some run before one that never did (no
    warning is no signal); then fewest false alarms (a warning on runs that never grok
    misleads more than a late one); then most runs warned; then fewest late; then the
    longest median lead.
    """
    if not records:
        raise ValueError("The 'records' parameter of supported_signal must hold at least one evaluated signal. "
                         "Got an empty sequence.")

    def count(text: str) -> int:
        return int(str(text).split(" of ")[0])

    return min(records, key=lambda r: (count(r["fired"]) == 0, count(r["false_alarms"]), -count(r["fired"]), r["late"],
                                       -(r["median_lead"] or 0.0)))["signal"]
