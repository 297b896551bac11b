"""The NHT delay law: T ≈ log(V_sc / V_st) / γ_eff with γ_eff = ηλ.

Khanh & Hoa (arXiv 2603.07323), Theorem on escape time: under gradient descent
with weight decay, E[V_t] ≤ (1 − ηλ)^t V_0 + V_∞, so leaving a shortcut of
squared norm V_sc for a structure of squared norm V_st takes
Θ(log(V_sc/V_st) / (ηλ)) steps. For AdamW the paper bounds γ_eff ≥ ηλ, so the
prediction is a time *scale*; its agreement with measured delays is a fit
(slope, R²), not an identity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .events import Events, find_events
from .train import History
from .validation import check_bool, check_choice, check_real, check_type

__all__ = ["predicted_delay", "delay_summary", "LinearFit", "linear_fit", "norm_gap", "delay_point",
           "delay_fits", "ContractionFit", "contraction_rate"]


def predicted_delay(v_sc: float, v_st: float, lr: float, weight_decay: float) -> float:
    """log(V_sc / V_st) / (η λ), in steps.

    Returns 0 when V_sc ≤ V_st (no norm gap to close) and ``inf`` when λ = 0
    (nothing contracts the norm).

    Examples
    --------
    >>> round(predicted_delay(math.e * 100, 100, lr=1e-3, weight_decay=1.0))
    1000
    """
    check_real(v_sc, "v_sc", 0.0, low_open=True, owner="predicted_delay")
    check_real(v_st, "v_st", 0.0, low_open=True, owner="predicted_delay")
    check_real(lr, "lr", 0.0, low_open=True, owner="predicted_delay")
    check_real(weight_decay, "weight_decay", 0.0, owner="predicted_delay")
    if v_sc <= v_st:
        return 0.0
    if weight_decay == 0.0:
        return math.inf
    return math.log(v_sc / v_st) / (lr * weight_decay)


def delay_summary(history: History, events: Events | None = None) -> dict[str, float | int | None]:
    """Measured delay next to the law's time scale for one run.

    V_sc is ‖θ‖² at its peak, V_st ‖θ‖² at the end of the run; η and λ are read
    from the history's config.
    """
    check_type(history, "history", History, owner="delay_summary")
    events = events or find_events(history)
    lr, wd = history.config["lr"], history.config["weight_decay"]
    return {
        "T_mem": events.t_mem,
        "T_grok": events.t_grok,
        "measured delay": events.delay,
        "V_sc (peak ‖θ‖²)": round(events.peak_norm, 1),
        "V_st (final ‖θ‖²)": round(events.final_norm, 1),
        "log(V_sc/V_st)": round(math.log(events.peak_norm / events.final_norm), 4),
        "ηλ": lr * wd,
        "law's time scale log(V_sc/V_st)/(ηλ)": round(predicted_delay(events.peak_norm, events.final_norm, lr, wd), 1) if wd > 0 else math.inf,
    }


# --- Fits over sweeps -------------------------------------------------------------------------

V_SC_CHOICES = ("mem", "peak")
V_ST_CHOICES = ("grok", "end")


@dataclass
class LinearFit:
    """Least-squares line ``y ≈ slope · x + intercept`` and its coefficient of determination.

    Attributes
    ----------
    slope, intercept : float
    r2 : float
        1 − SS_res/SS_tot (NaN when y is constant).
    n : int
        Number of points.
    """

    slope: float
    intercept: float
    r2: float
    n: int

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        return self.slope * np.asarray(x, dtype=float) + self.intercept

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def linear_fit(x: Sequence[float], y: Sequence[float]) -> LinearFit:
    """Fit ``y ≈ slope · x + intercept`` by least squares.

    Parameters
    ----------
    x, y : sequences of float, shape (n,), n ≥ 2, finite

    Examples
    --------
    >>> fit = linear_fit([1, 2, 3], [3, 5, 7])
    >>> round(fit.slope, 6), round(fit.intercept, 6), round(fit.r2, 6)
    (2.0, 1.0, 1.0)
    """
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise ValueError(f"The 'x' and 'y' parameters of linear_fit must be 1-D of the same length. Got shapes {xa.shape} and {ya.shape}.")
    if len(xa) < 2:
        raise ValueError(f"The 'x' parameter of linear_fit must hold at least 2 points. Got {len(xa)}.")
    if not (np.isfinite(xa).all() and np.isfinite(ya).all()):
        raise ValueError("The 'x' and 'y' parameters of linear_fit must be finite (no NaN or inf).")
    if np.ptp(xa) == 0:
        raise ValueError("The 'x' parameter of linear_fit must hold at least two distinct values.")
    slope, intercept = np.polyfit(xa, ya, 1)
    residual = ya - (slope * xa + intercept)
    ss_tot = float(((ya - ya.mean()) ** 2).sum())
    r2 = 1.0 - float((residual ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")
    return LinearFit(float(slope), float(intercept), r2, len(xa))


def norm_gap(history: History, events: Events | None = None, v_sc: str = "mem", v_st: str = "end") -> tuple[float, float]:
    """(V_sc, V_st) read from one run's ‖θ‖² curve.

    Parameters
    ----------
    history : History
    events : Events, optional
        Computed from ``history`` when omitted.
    v_sc : {"mem", "peak"}
        The shortcut's norm: ‖θ‖² at T_mem (the issue's definition, the default)
        or at the norm peak.
    v_st : {"grok", "end"}
        The structure's norm: ‖θ‖² at T_grok or at the last evaluated step
        (the default: the run has settled on the structured solution there).
    """
    check_type(history, "history", History, owner="norm_gap")
    check_choice(v_sc, "v_sc", V_SC_CHOICES, owner="norm_gap")
    check_choice(v_st, "v_st", V_ST_CHOICES, owner="norm_gap")
    events = events or find_events(history)
    sc = events.norm_at_mem if v_sc == "mem" else events.peak_norm
    st = events.norm_at_grok if v_st == "grok" else events.final_norm
    if sc is None or st is None:
        raise ValueError(f"norm_gap needs a run that memorised and generalised; got T_mem={events.t_mem}, T_grok={events.t_grok}.")
    return float(sc), float(st)


def delay_point(history: History, v_sc: str = "mem", v_st: str = "end") -> dict[str, Any] | None:
    """One run's measured delay next to the law's prediction, or None if it did not grok.

    Returns
    -------
    dict or None
        ``weight_decay``, ``lr``, ``seed``, ``inv_lambda`` (1/λ), ``t_mem``,
        ``t_grok``, ``measured`` (T_grok − T_mem), ``v_sc``, ``v_st``,
        ``log_ratio`` (log V_sc/V_st) and ``predicted`` (log(V_sc/V_st)/(ηλ)).
    """
    check_type(history, "history", History, owner="delay_point")
    events = find_events(history)
    if events.delay is None:
        return None
    sc, st = norm_gap(history, events, v_sc, v_st)
    lr, wd = float(history.config["lr"]), float(history.config["weight_decay"])
    return {
        "weight_decay": wd,
        "lr": lr,
        "seed": history.config.get("seed"),
        "inv_lambda": 1.0 / wd if wd > 0 else math.inf,
        "t_mem": events.t_mem,
        "t_grok": events.t_grok,
        "measured": events.delay,
        "v_sc": sc,
        "v_st": st,
        "log_ratio": math.log(sc / st) if sc > 0 and st > 0 else math.nan,
        "predicted": predicted_delay(sc, st, lr, wd) if sc > 0 and st > 0 else math.nan,
    }


def delay_fits(points: Sequence[Mapping[str, Any]], average_seeds: bool = False) -> dict[str, LinearFit]:
    """Fits over :func:`delay_point` records: measured vs predicted, and measured vs 1/λ.

    Parameters
    ----------
    points : sequence of dict (None entries are skipped)
    average_seeds : bool
        Fit the per-(λ, η) means of measured and predicted delays over seeds
        instead of every run (the companion paper fits seed means).

    Returns
    -------
    dict
        ``"vs_predicted"``: measured ≈ slope · predicted + intercept (the slope
        absorbs AdamW's γ_eff/(ηλ) factor); ``"vs_inverse_lambda"``:
        measured ≈ slope / λ + intercept.
    """
    check_bool(average_seeds, "average_seeds", owner="delay_fits")
    usable = [p for p in points if p is not None and math.isfinite(p["predicted"]) and math.isfinite(p["inv_lambda"])]
    if average_seeds:
        groups: dict[tuple[float, float], list[Mapping[str, Any]]] = {}
        for p in usable:
            groups.setdefault((p["weight_decay"], p["lr"]), []).append(p)
        usable = [{key: float(np.mean([p[key] for p in members])) for key in ("measured", "predicted", "inv_lambda")}
                  for members in groups.values()]
    if len(usable) < 2:
        raise ValueError(f"The 'points' parameter of delay_fits must hold at least 2 grokked runs (or λ values) with λ > 0. Got {len(usable)}.")
    measured = [p["measured"] for p in usable]
    return {
        "vs_predicted": linear_fit([p["predicted"] for p in usable], measured),
        "vs_inverse_lambda": linear_fit([p["inv_lambda"] for p in usable], measured),
    }


@dataclass
class ContractionFit:
    """Exponential fit ‖θ_t‖² ≈ A · exp(−rate · t) over a window after the norm peak.

    Attributes
    ----------
    rate : float
        Contraction rate of ‖θ‖² per step.
    eta_lambda : float
        ηλ of the run; pure weight decay gives rate ≈ 2ηλ.
    ratio : float
        rate / (ηλ) (the companion paper reports ≈ 1.41 for its transformer).
    r2 : float
        R² of the straight-line fit of log ‖θ‖² against step.
    start, stop : int
        The window's first and last steps.
    """

    rate: float
    eta_lambda: float
    ratio: float
    r2: float
    start: int
    stop: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def contraction_rate(history: History, stop: str = "grok", min_points: int = 3) -> ContractionFit | None:
    """Fit the exponential contraction of ‖θ‖² from its peak to ``stop``.

    The window starts at the later of the norm peak and T_mem: the derivation
    of the law assumes the training loss's gradient is already small, which it
    is not before memorisation (with a large init the peak is at step 0).

    Parameters
    ----------
    history : History
    stop : {"grok", "end"}
        Window end: T_grok (the contraction that drives the transition; the
        end of the run when it never grokked) or the last evaluated step.
    min_points : int
        Fewest evaluations in the window for a fit.

    Returns
    -------
    ContractionFit or None
        None when the window holds fewer than ``min_points`` evaluations (for
        instance when the norm peaks at the end: the weak regime).
    """
    check_type(history, "history", History, owner="contraction_rate")
    check_choice(stop, "stop", ("grok", "end"), owner="contraction_rate")
    events = find_events(history)
    steps = history.column("step")
    norm = history.column("norm")
    end = events.t_grok if (stop == "grok" and events.t_grok is not None) else int(steps[-1])
    start = max(events.peak_step, events.t_mem if events.t_mem is not None else events.peak_step)
    window = (steps >= start) & (steps <= end) & np.isfinite(norm) & (norm > 0)
    if window.sum() < min_points or end <= start:
        return None
    fit = linear_fit(steps[window], np.log(norm[window]))
    eta_lambda = float(history.config["lr"]) * float(history.config["weight_decay"])
    rate = -fit.slope
    return ContractionFit(rate, eta_lambda, rate / eta_lambda if eta_lambda > 0 else math.inf, fit.r2,
                          int(start), int(end))
