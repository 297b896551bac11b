"""Events along a training history: memorisation, grokking, the norm peak.

Definitions (NHT companion paper, arXiv 2603.13331): T_mem is the first
evaluated step with train accuracy ≥ 99%, T_grok the first with test accuracy
≥ 99%; the delay is T_grok − T_mem.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from ..history import History, first_step_at_least, require_history
from ..thresholds import BORDER_DROPPED, BORDER_FITTED, FITTED_ACCURACY
from ..validation import require_fractions, require_increasing, require_real, require_type

__all__ = ["Events", "find_events", "first_step_at_least", "norm_at"]


@dataclass
class Events:
    """Key moments of a run: ``t_mem`` and ``t_grok``, the first evaluated steps with train (test) accuracy at
    the threshold (None when never), ``peak_step`` of the largest ‖θ‖², ‖θ‖² at its peak, at the last evaluation,
    at T_mem and at T_grok (``peak_norm``, ``final_norm``, ``norm_at_mem``, ``norm_at_grok``)."""

    t_mem: int | None
    t_grok: int | None
    peak_step: int
    peak_norm: float
    final_norm: float
    norm_at_mem: float | None
    norm_at_grok: float | None

    @property
    def test_before_train(self) -> bool:
        """Whether test accuracy reached the threshold before training accuracy did: an impossible order for a
        memorise-then-generalise run (a history whose columns are swapped, or whose training labels are noisy),
        so it has no delay and did not grok."""
        return self.t_mem is not None and self.t_grok is not None and self.t_grok < self.t_mem

    @property
    def delay(self) -> int | None:
        """T_grok − T_mem, or None if either is missing or they came in the impossible order (:attr:`test_before_train`)."""
        if self.t_mem is None or self.t_grok is None or self.test_before_train:
            return None
        return self.t_grok - self.t_mem

    @property
    def grokked(self) -> bool:
        """Whether the run memorised and generalised (both T_mem and T_grok found): the book's one
        definition of a run that grokked, as the companion counts them."""
        return self.delay is not None

    @property
    def contraction(self) -> float:
        """Fraction by which ‖θ‖² fell from its peak to the end of the run (0 if it never fell)."""
        if self.peak_norm <= 0:
            return 0.0
        return max(0.0, 1.0 - self.final_norm / self.peak_norm)

    def to_dict(self) -> dict:
        return {**asdict(self), "delay": self.delay, "contraction": self.contraction,
                "test_before_train": self.test_before_train}


def norm_at(history: History, step: int) -> float:
    """‖θ‖² at the first evaluated step at or after ``step`` (not after the last): how nhtlab reads V_sc and V_st.

    :func:`find_events` (hence the delay law's V_mem and V_grok) and the scorecard's P1 read a norm at a step
    through it.

    >>> h = History([{"step": 0, "norm": 5.0}, {"step": 50, "norm": 3.0}])
    >>> norm_at(h, 50), norm_at(h, 1)
    (3.0, 3.0)
    """
    steps = require_increasing(history.column("step"), "history", owner="norm_at")
    k = int(np.searchsorted(steps, step))
    if k >= len(steps):
        raise ValueError(f"The 'step' parameter of norm_at ({step}) is after the history's last evaluated step "
                         f"{int(steps[-1])}.")
    return float(history.column("norm")[k])


def find_events(history: History, threshold: float = FITTED_ACCURACY) -> Events:
    """Locate T_mem, T_grok and the peak of ‖θ‖² in ``history``.

    A recorded ‖θ‖² that is NaN or inf (the run diverged) is warned of and left out of the peak; a history
    with no finite ‖θ‖² is refused.

    Parameters
    ----------
    history : History
        Columns ``step`` (increasing), ``train_acc``, ``test_acc`` (in [0, 1]; NaN: not known) and ``norm``.
    threshold : float in (0, 1]
        Accuracy that counts as "fitted" (:data:`nhtlab.thresholds.FITTED_ACCURACY`, the papers' 0.99).

    Returns
    -------
    Events
        ``norm_at_mem`` and ``norm_at_grok`` read by :func:`norm_at`.
    """
    require_type(history, "history", History, owner="find_events")
    require_real(threshold, "threshold", 0.0, 1.0, low_open=True, owner="find_events")
    # a step is a count of updates: 200.5 is a mistake, not 200; NaN accuracies are not known, and never reach it
    require_history(history, "find_events", fractions=("train_acc", "test_acc"))
    steps = history.column("step").astype(int)
    norm = history.column("norm")
    finite = np.isfinite(norm)
    if not finite.any():
        raise ValueError(f"The 'history' parameter of find_events has no finite ‖θ‖² in its 'norm' column "
                         f"(first value {norm[0]!r}): the run diverged, and has no norm peak.")
    broken = ~finite & np.array(["norm" in row for row in history.rows])  # a row without it is only unmeasured
    if broken.any():
        warnings.warn(f"nhtlab.find_events: ‖θ‖² is not finite at step {int(steps[broken][0])} (the run diverged "
                      f"there): the norm peak is read on the finite evaluations.", RuntimeWarning, stacklevel=2)
    if (norm[finite] < 0).any():
        raise ValueError("The 'history' parameter of find_events must hold squared norms ≥ 0 in its 'norm' column. "
                         f"Got {float(np.nanmin(norm)):g}.")
    t_mem = first_step_at_least(steps, history.column("train_acc"), threshold)
    t_grok = first_step_at_least(steps, history.column("test_acc"), threshold)
    peak = int(np.argmax(np.where(finite, norm, -np.inf)))

    return Events(t_mem=t_mem, t_grok=t_grok, peak_step=int(steps[peak]), peak_norm=float(norm[peak]),
                  final_norm=float(norm[-1]), norm_at_mem=None if t_mem is None else norm_at(history, t_mem),
                  norm_at_grok=None if t_grok is None else norm_at(history, t_grok))


def border_times(history, fit_level: float = BORDER_FITTED, drop_level: float = BORDER_DROPPED) -> tuple[int | None, int | None]:
    """When the border was fitted and when it was dropped, read off a history.

    Both are read on the ``conflict`` test images (a wrong class's border on
    every digit): ``cue_acc`` is the share on which the network answers the
    border's class, ``conflict_acc`` the share on which it answers the digit.

    * **fitted** (the shortcut's T_mem): the first evaluated step at which the
      network follows the border on at least ``fit_level`` of those images
      (three times chance by default) *and* more often than it reads the digit;
    * **dropped** (the escape): the first evaluated step *after* ``fitted`` at
      which it reads the digit on at least ``drop_level`` of them.

    Parameters
    ----------
    history : History
        Rows with ``step``, ``cue_acc`` and ``conflict_acc``.
    fit_level, drop_level : float in (0, 1)

    Returns
    -------
    (fitted, dropped) : tuple of int or None
        None where the event never happened (``dropped`` whenever ``fitted`` is).

    Examples
    --------
    >>> from nhtlab.training.loop import History
    >>> rows = [dict(step=s, cue_acc=c, conflict_acc=d) for s, c, d in
    ...         [(0, 0.1, 0.1), (100, 0.6, 0.2), (200, 0.3, 0.4), (300, 0.1, 0.7)]]
    >>> border_times(History(rows))
    (100, 300)
    """

    owner = "border_times"
    require_type(history, "history", History, owner=owner)
    require_real(fit_level, "fit_level", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
    require_real(drop_level, "drop_level", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
    steps = require_increasing(history.column("step"), "history", owner=owner)
    cue = require_fractions(history.column("cue_acc"), "history", owner)
    conflict = require_fractions(history.column("conflict_acc"), "history", owner)
    fitted = next((int(s) for s, a, b in zip(steps, cue, conflict) if a >= fit_level and a > b), None)
    if fitted is None:
        return None, None
    dropped = next((int(s) for s, b in zip(steps, conflict) if s > fitted and b >= drop_level), None)
    return fitted, dropped

