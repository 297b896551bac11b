"""Clean norm separation: does shortcut reliance fall with ‖θ‖²?

The NHT paper (arXiv 2603.07323) says the delay law applies under *clean norm
separation*: a scalar φ(θ), 1 on the shortcut solutions and 0 on the structured ones,
monotonically related to ‖θ‖² and dropping sharply as the network escapes. It reports
scores (≈ 1 on modular arithmetic, 0.5–0.7 on coloured-border CIFAR-10, ≈ 0 on
Waterbirds, −0.11 on CelebA) but gives **no formula**. nhtlab's own operationalisation:

1. **Shortcut reliance φ**, accuracy rescaled so chance is 0 and perfect 1: on the
   ``cue`` test set of :mod:`nhtlab.data.cues` (the ``shortcut`` set is off-distribution
   and noisier); on modular arithmetic, where the memorised table *is* the shortcut,
   1 − rescaled test accuracy.
2. **The score**, Spearman's rank correlation of ‖θ‖² and φ (a monotone relation, as the
   definition asks) from the step the shortcut is *fitted* (T_mem, or
   :func:`~nhtlab.analysis.events.border_times`) to the end, not from the norm's peak: on
   images the norm can peak after the cue is dropped (or never). No fitted shortcut, a
   constant φ or ‖θ‖², or fewer than ``min_points`` checkpoints leave it **undefined**:
   NaN, never 0 (which would read as "measured, no separation"), with a ``reason``. The
   drop's sharpness is reported beside it (``phi_drop``), not folded in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..history import History, require_history
from ..validation import require_choice, require_increasing, require_int, require_numbers
from .events import border_times, find_events

__all__ = ["Separation", "clean_norm_separation", "separation_from_history", "spearman",
           "reliance_from_shortcut", "reliance_from_generalisation", "format_score"]


@dataclass
class Separation:
    """A clean-norm-separation score and what it was computed from.

    ``score`` is NaN when undefined (``defined`` False, ``reason`` why); ``phi_drop`` is
    φ's fall over the window (> 0: reliance fell); ``norm_contraction`` is 1 − final /
    (largest norm in the window).
    """

    score: float
    defined: bool
    reason: str
    n_points: int
    start_step: int | None
    peak_step: int | None
    phi_at_start: float
    phi_final: float
    phi_drop: float
    norm_contraction: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return format_score(self)


def format_score(separation: Separation) -> str:
    """The score as text: two decimals, or "undefined (reason)" — never 0 (a defined score is finite)."""
    return f"{separation.score:.2f}" if separation.defined else f"undefined ({separation.reason})"


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (``scipy.stats.spearmanr``: average ranks for ties); NaN where undefined.

    Undefined: either input constant or shorter than two.

    >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 25.0]))
    1.0
    >>> round(spearman(np.array([1, 2, 3, 4]), np.array([10, 20, 15, 40])), 6)
    0.8
    """
    # local: scipy.stats is slow to import, and only the scores need it
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"spearman needs two 1-d arrays of the same length. Got shapes {x.shape} and {y.shape}.")
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.clip(stats.spearmanr(x, y).statistic, -1.0, 1.0))


def reliance_from_shortcut(shortcut_acc: np.ndarray, num_classes: int) -> np.ndarray:
    """φ from the accuracy of following the cue: (acc − 1/C)/(1 − 1/C), clipped to [0, 1]."""
    chance = 1.0 / require_int(num_classes, "num_classes", low=2, owner="reliance_from_shortcut")
    return np.clip((np.asarray(shortcut_acc, dtype=float) - chance) / (1.0 - chance), 0.0, 1.0)


def reliance_from_generalisation(test_acc: np.ndarray, num_classes: int) -> np.ndarray:
    """φ for memorisation shortcuts: 1 − (acc − 1/C)/(1 − 1/C), clipped to [0, 1]."""
    require_int(num_classes, "num_classes", low=2, owner="reliance_from_generalisation")
    return 1.0 - reliance_from_shortcut(test_acc, num_classes)


def clean_norm_separation(steps: np.ndarray, norm: np.ndarray, phi: np.ndarray, start_step: int | None = None,
                          min_points: int = 4) -> Separation:
    """nhtlab's clean-norm-separation score: Spearman(‖θ‖², φ) from the fitted shortcut on.

    Parameters
    ----------
    steps, norm, phi : arrays (n,)
        Evaluated steps, ‖θ‖² and shortcut reliance φ at those steps.
    start_step : int or None
        The step the shortcut was fitted (the window runs from the first checkpoint at or
        after it); None: never fitted, so the score is undefined.
    min_points : int >= 3
        Fewer checkpoints in the window leave the score undefined.

    Returns
    -------
    Separation
        ``score`` is NaN (never 0) whenever it is undefined.
    """
    owner = "clean_norm_separation"
    steps, norm, phi = (require_numbers(a, name, owner=owner) for a, name in ((steps, "steps"), (norm, "norm"), (phi, "phi")))
    if not (steps.shape == norm.shape == phi.shape) or steps.ndim != 1 or len(steps) == 0:
        raise ValueError(f"The 'steps', 'norm' and 'phi' parameters of {owner} must be 1-d arrays of one length. "
                         f"Got shapes {steps.shape}, {norm.shape}, {phi.shape}.")
    require_increasing(steps, "steps", owner=owner)  # a window read from unsorted steps would be the wrong one
    if (norm[np.isfinite(norm)] < 0).any():
        raise ValueError(f"The 'norm' parameter of {owner} must hold squared norms ≥ 0. Got {float(np.nanmin(norm)):g}.")
    require_int(min_points, "min_points", low=3, owner=owner)
    nan = float("nan")
    if start_step is None:
        return Separation(nan, False, "shortcut never fitted", 0, None, None, nan, nan, nan, nan)
    require_int(start_step, "start_step", owner=owner)
    window = steps >= start_step
    if not window.any():
        raise ValueError(f"The 'start_step' parameter of {owner} must be at most the last step {int(steps[-1])}. "
                         f"Got {start_step}.")
    first = int(np.flatnonzero(window)[0])
    after_norm, after_phi = norm[first:], phi[first:]
    k = first + int(np.nanargmax(after_norm))
    contraction = max(0.0, 1.0 - norm[-1] / norm[k]) if norm[k] > 0 else 0.0
    reason = ""
    if len(after_norm) < min_points:
        rho, reason = nan, f"fewer than {min_points} checkpoints"
    else:
        rho = spearman(after_norm, after_phi)
        if not np.isfinite(rho):
            reason = "φ or ‖θ‖² constant in the window"
    return Separation(score=rho, defined=not reason, reason=reason, n_points=len(after_norm),
                      start_step=int(steps[first]), peak_step=int(steps[k]), phi_at_start=float(phi[first]),
                      phi_final=float(phi[-1]), phi_drop=float(phi[first] - phi[-1]),
                      norm_contraction=float(contraction))


def separation_from_history(history: History, num_classes: int, kind: str = "shortcut",
                            start_step: int | None | str = "auto", min_points: int = 4) -> Separation:
    """The score for a training history: φ from ``cue_acc`` (``"shortcut"``) or ``test_acc`` (``"generalisation"``).

    ``start_step="auto"``: the first step the border is fitted for a shortcut, T_mem for generalisation.
    """
    require_history(history, "separation_from_history", norms=["norm"], fractions=["cue_acc", "test_acc"])
    require_choice(kind, "kind", ("shortcut", "generalisation"), owner="separation_from_history")
    acc = history.column("cue_acc" if kind == "shortcut" else "test_acc")
    phi = reliance_from_shortcut(acc, num_classes) if kind == "shortcut" else reliance_from_generalisation(acc, num_classes)
    if isinstance(start_step, str):
        if start_step != "auto":
            raise ValueError(f"The 'start_step' parameter of separation_from_history must be an int, None or 'auto'. "
                             f"Got {start_step!r} instead.")
        start_step = border_times(history)[0] if kind == "shortcut" else find_events(history).t_mem
    return clean_norm_separation(history.column("step"), history.column("norm"), phi, start_step=start_step,
                                 min_points=min_points)
