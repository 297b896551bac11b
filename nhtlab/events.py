"""Events along a training history: memorisation, grokking, the norm peak.

Definitions (NHT companion paper, arXiv 2603.13331): T_mem is the first
evaluated step with train accuracy ≥ 99%, T_grok the first with test accuracy
≥ 99%; the delay is T_grok − T_mem.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .train import History
from .validation import check_real, check_type

__all__ = ["Events", "find_events", "first_step_at_least"]


@dataclass
class Events:
    """Key moments of a run. Steps are None when the event never happened."""

    t_mem: int | None
    t_grok: int | None
    peak_step: int
    peak_norm: float
    final_norm: float
    norm_at_mem: float | None
    norm_at_grok: float | None

    @property
    def delay(self) -> int | None:
        """T_grok − T_mem, or None if either is missing."""
        if self.t_mem is None or self.t_grok is None:
            return None
        return self.t_grok - self.t_mem

    @property
    def contraction(self) -> float:
        """Fraction by which ‖θ‖² fell from its peak to the end of the run (0 if it never fell)."""
        if self.peak_norm <= 0:
            return 0.0
        return max(0.0, 1.0 - self.final_norm / self.peak_norm)

    def to_dict(self) -> dict:
        return {**asdict(self), "delay": self.delay, "contraction": self.contraction}


def first_step_at_least(steps: np.ndarray, values: np.ndarray, threshold: float) -> int | None:
    """First step whose value is ≥ threshold, or None."""
    hits = np.flatnonzero(np.asarray(values) >= threshold)
    return int(steps[hits[0]]) if hits.size else None


def find_events(history: History, threshold: float = 0.99) -> Events:
    """Locate T_mem, T_grok and the peak of ‖θ‖² in ``history``.

    Parameters
    ----------
    history : History
        Needs ``step``, ``train_acc``, ``test_acc`` and ``norm`` columns.
    threshold : float in (0, 1]
        Accuracy that counts as "fitted" (0.99 in the papers).
    """
    check_type(history, "history", History, owner="find_events")
    check_real(threshold, "threshold", 0.0, 1.0, low_open=True, owner="find_events")
    if len(history) == 0:
        raise ValueError("The 'history' parameter of find_events is empty: it has no evaluated step.")
    steps = history.column("step").astype(int)
    norm = history.column("norm")
    t_mem = first_step_at_least(steps, history.column("train_acc"), threshold)
    t_grok = first_step_at_least(steps, history.column("test_acc"), threshold)
    peak = int(np.nanargmax(norm))

    def norm_at(step: int | None) -> float | None:
        return None if step is None else float(norm[np.flatnonzero(steps == step)[0]])

    return Events(
        t_mem=t_mem,
        t_grok=t_grok,
        peak_step=int(steps[peak]),
        peak_norm=float(norm[peak]),
        final_norm=float(norm[-1]),
        norm_at_mem=norm_at(t_mem),
        norm_at_grok=norm_at(t_grok),
    )
