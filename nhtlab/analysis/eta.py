"""A grokking ETA: when will a run that has memorised generalise? Built on the delay law, tested on held-out runs.

The delay law says the wait after memorisation is set by how far the norm must contract,
at a rate proportional to ηλ: ``T_grok − T_mem ≈ log(V_mem/V_grok)/γ_eff``. A live run knows
``V_mem`` and how fast its ‖θ‖² has contracted since ``T_mem``; it does not know ``V_grok``.
The predictor, fixed before any evaluation, is:

1. **calibration** (on fitting runs only): ``L* = log(V_mem/V_grok)``, the log-contraction a
   run needed to grok, and the spread of the predictor's own multiplicative errors;
2. **prediction** at step ``now ≥ T_mem``: the contraction rate ``k`` is the least-squares
   slope of ``−log ‖θ‖²`` over ``[T_mem, now]``; the remaining contraction
   ``max(L* − log(V_mem/V_now), 0)`` at that rate gives the point (no estimate until ‖θ‖² has
   fallen by about 1% since ``T_mem``)
   ``T̂ = now + remaining / k``; the interval scales ``T̂ − T_mem`` by the calibration
   errors' quantiles (80% by default) and never starts before ``now``.

The baselines it must beat: ``T_mem`` plus the fitting runs' mean delay at the same λ
(and η), and the companion paper's fit ``T_grok ≈ slope/λ + intercept`` (η = 10⁻³ only).
:func:`evaluate_eta` cuts each held-out run at 25%, 50% and 75% of its plateau
(``T_mem + f·(T_grok − T_mem)``) and reports median absolute errors, the interval's measured
coverage against its stated level, and its median width. :func:`nhtlab.book.eta_verdict` is the rule
for shipping the ETA: better than the same-λ baseline at 50% of the plateau, with coverage
within 10 points of the stated level.

>>> h = synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3)
>>> cal = calibrate_eta([h])
>>> est = predict_grok(cut_history(h, 1500), calibration=cal)
>>> abs(est.t_grok - 2500) < 150
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..history import History
from ..papers import COMPANION_GROK_FIT
from ..validation import require_real, require_type
from .events import find_events

__all__ = ["EtaCalibration", "GrokEstimate", "calibrate_eta", "predict_grok", "evaluate_eta", "cut_history",
           "synthetic_contraction"]

FRACTIONS = (0.25, 0.5, 0.75)
#: Least log-contraction since T_mem (about 1%) before the predictor extrapolates a rate.
MIN_CONTRACTION = 0.01


@dataclass(frozen=True)
class EtaCalibration:
    """What the fitting runs taught the predictor.

    Attributes
    ----------
    log_contraction : float
        Median over fitting runs of ``L* = log(V_mem/V_grok)``.
    error_low, error_high : float
        Quantiles of ``log((T_grok − T_mem)/(T̂ − T_mem))`` over fitting runs and cut points,
        at ``(1 − coverage)/2`` and ``(1 + coverage)/2``.
    coverage : float
        The interval's stated coverage.
    mean_delay : dict
        ``(lr, weight_decay)`` → mean ``T_grok − T_mem`` of the fitting runs (the baseline).
    n_runs : int
        Fitting runs that memorised and grokked.
    """

    log_contraction: float
    error_low: float
    error_high: float
    coverage: float
    mean_delay: dict
    n_runs: int


@dataclass(frozen=True)
class GrokEstimate:
    """A predicted T_grok, or why there is none.

    Attributes
    ----------
    step : int
        The last step the prediction saw.
    t_grok : float or None
        Point prediction.
    low, high : float or None
        The interval at the calibration's coverage.
    reason : str
        Empty when there is a prediction; otherwise why not (not memorised, diverged, not contracting).
    """

    step: int
    t_grok: float | None
    low: float | None
    high: float | None
    reason: str = ""

    def text(self) -> str:
        """``"at step N: grokking expected near step M, interval [a, b]"`` or the reason."""
        if self.t_grok is None:
            return f"at step {self.step:,}: no estimate ({self.reason})"
        return (f"at step {self.step:,}: grokking expected near step {self.t_grok:,.0f}, "
                f"interval [{self.low:,.0f}, {self.high:,.0f}]")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cut_history(history: History, step: int) -> History:
    """The history as a live run saw it at ``step`` (rows up to and including it).

    Parameters
    ----------
    history : History
    step : int

    Returns
    -------
    History
        A copy with the earlier rows, status ``"running"``.
    """
    require_type(history, "history", History, owner="cut_history")
    rows = [r for r in history.rows if r["step"] <= step]
    return History(rows=rows, status="running", config=dict(history.config))


def _rate_and_contraction(history: History, t_mem: int) -> tuple[float, float, float, int]:
    """(slope of −log‖θ‖² per step since T_mem, log(V_mem/V_now), V_mem, now)."""
    steps, norm = history.column("step"), history.column("norm")
    window = steps >= t_mem
    t, v = steps[window], norm[window]
    v_mem, v_now, now = float(v[0]), float(v[-1]), int(t[-1])
    if len(t) < 2:
        return 0.0, 0.0, v_mem, now
    slope = -float(np.polyfit(t - t[0], np.log(v), 1)[0])
    return slope, math.log(v_mem / v_now), v_mem, now


def _point(history: History, log_contraction: float) -> tuple[float | None, int, int | None, str]:
    if history.diverged or not np.all(np.isfinite(history.column("norm"))):
        return None, int(history.rows[-1]["step"]) if history.rows else 0, None, "the run diverged"
    events = find_events(history)
    now = int(history.rows[-1]["step"])
    if events.t_mem is None:
        return None, now, None, "the run has not memorised yet"
    rate, done, _, now = _rate_and_contraction(history, events.t_mem)
    # a norm that has not fallen by MIN_CONTRACTION since T_mem gives no rate to extrapolate
    if now - events.t_mem < 1 or rate <= 0 or done < MIN_CONTRACTION:
        return None, now, events.t_mem, "‖θ‖² is not contracting since T_mem"
    return now + max(log_contraction - done, 0.0) / rate, now, events.t_mem, ""


def predict_grok(history: History, calibration: EtaCalibration) -> GrokEstimate:
    """Predict T_grok of a live run from its history up to now.

    Parameters
    ----------
    history : History
        The run so far (``step``, ``norm``, ``train_acc``, ``test_acc``), past T_mem.
    calibration : EtaCalibration
        From :func:`calibrate_eta` on other runs.

    Returns
    -------
    GrokEstimate
        The point and interval, or no estimate with the reason (not memorised, diverged, not contracting).
    """
    require_type(history, "history", History, owner="predict_grok")
    require_type(calibration, "calibration", EtaCalibration, owner="predict_grok")
    point, now, t_mem, reason = _point(history, calibration.log_contraction)
    if point is None:
        return GrokEstimate(now, None, None, None, reason)
    span = point - t_mem
    low = max(float(now), t_mem + span * math.exp(calibration.error_low))
    high = max(low, t_mem + span * math.exp(calibration.error_high))
    return GrokEstimate(now, float(point), low, high)


def _plateaus(histories: Sequence[History]) -> list[tuple[History, Any]]:
    """The runs that grokked (:attr:`Events.grokked`) after a plateau to forecast on, with their events."""
    out = []
    for h in histories:
        e = find_events(h)
        if e.grokked and e.delay > 0 and not h.diverged:
            out.append((h, e))
    return out


def _setting(history: History) -> tuple[float, float]:
    return float(history.config.get("lr", math.nan)), float(history.config.get("weight_decay", math.nan))


def _cuts(events: Any, history: History, fractions: Sequence[float]) -> list[tuple[float, int]]:
    steps = history.column("step")
    cuts = []
    for f in fractions:
        target = events.t_mem + f * (events.t_grok - events.t_mem)
        seen = steps[(steps <= target) & (steps > events.t_mem)]
        if len(seen):
            cuts.append((f, int(seen[-1])))
    return cuts


def calibrate_eta(histories: Sequence[History], coverage: float = 0.8,
                  fractions: Sequence[float] = FRACTIONS) -> EtaCalibration:
    """Fit the predictor's constants on runs that memorised and grokked.

    Parameters
    ----------
    histories : sequence of History
        The fitting runs (never the runs it is evaluated on).
    coverage : float in (0, 1)
        The interval's stated coverage.
    fractions : sequence of float
        Cut points, as fractions of each run's plateau, at which the errors are measured.

    Returns
    -------
    EtaCalibration
    """
    require_real(coverage, "coverage", low=0.0, high=1.0, low_open=True, high_open=True, owner="calibrate_eta")
    runs = _plateaus(histories)
    if not runs:
        raise ValueError("The 'histories' parameter of calibrate_eta must hold at least one run that memorised "
                         "and grokked; none did.")
    log_c = float(np.median([math.log(e.norm_at_mem / e.norm_at_grok) for _, e in runs]))
    errors, delays = [], {}
    for h, e in runs:
        delays.setdefault(_setting(h), []).append(e.delay)
        for _, step in _cuts(e, h, fractions):
            point, _, t_mem, _ = _point(cut_history(h, step), log_c)
            if point is not None and point > t_mem:
                errors.append(math.log(e.delay / (point - t_mem)))
    if not errors:
        errors = [0.0]
    lo, hi = np.quantile(errors, [(1 - coverage) / 2, (1 + coverage) / 2])
    return EtaCalibration(log_c, float(lo), float(hi), coverage,
                          {k: float(np.mean(v)) for k, v in delays.items()}, len(runs))


def evaluate_eta(fit: Sequence[History], test: Sequence[History], coverage: float = 0.8,
                 fractions: Sequence[float] = FRACTIONS) -> list[dict[str, Any]]:
    """Calibrate on ``fit``, then predict each ``test`` run at fractions of its plateau; one record per fraction.

    Parameters
    ----------
    fit, test : sequence of History
        Disjoint sets of runs: constants come from ``fit`` only.
    coverage : float
        The interval's stated coverage.
    fractions : sequence of float
        Where each test run is cut: ``T_mem + f·(T_grok − T_mem)``.

    Returns
    -------
    list of dict
        Per fraction: ``fraction``, ``n`` (predictions made), ``no_estimate``, ``mae`` (predictor),
        ``mae_baseline`` (T_mem + the fitting runs' mean delay at the same η and λ; None when no fitting run
        shares it), ``mae_companion_fit`` (the companion's 1/λ fit, η = 10⁻³ runs only), ``coverage``
        (measured), ``stated_coverage``, ``median_width``.
    """
    calibration = calibrate_eta(fit, coverage, fractions)
    runs = _plateaus(test)
    records = []
    for f in fractions:
        err, base, comp, inside, widths, missing = [], [], [], [], [], 0
        for h, e in runs:
            for frac, step in _cuts(e, h, [f]):
                est = predict_grok(cut_history(h, step), calibration)
                if est.t_grok is None:
                    missing += 1
                    continue
                err.append(abs(est.t_grok - e.t_grok))
                inside.append(est.low <= e.t_grok <= est.high)
                widths.append(est.high - est.low)
                lr, lam = _setting(h)
                if (lr, lam) in calibration.mean_delay:
                    base.append(abs(e.t_mem + calibration.mean_delay[(lr, lam)] - e.t_grok))
                if math.isclose(lr, 1e-3) and lam > 0:
                    fit_t = COMPANION_GROK_FIT["slope"] / lam + COMPANION_GROK_FIT["intercept"]
                    comp.append(abs(fit_t - e.t_grok))
        med = (lambda xs: float(np.median(xs)) if xs else None)
        records.append({"fraction": f, "n": len(err), "no_estimate": missing, "mae": med(err),
                        "mae_baseline": med(base), "mae_companion_fit": med(comp),
                        "coverage": float(np.mean(inside)) if inside else None, "stated_coverage": coverage,
                        "median_width": med(widths)})
    return records


def synthetic_contraction(t_mem: int, t_grok: int | None, rate: float, v_mem: float = 1000.0,
                          end: int | None = None, every: int = 100, lr: float = 1e-3,
                          weight_decay: float = 1.0) -> History:
    """A history with a known answer: ‖θ‖² = v_mem·exp(−rate·(t − t_mem)) after T_mem, grokking at ``t_grok``.

    Parameters
    ----------
    t_mem : int
        Step at which train accuracy reaches 1.
    t_grok : int or None
        Step at which test accuracy reaches 1 (None: never).
    rate : float
        Contraction rate per step after T_mem (0: a plateau that never contracts).
    v_mem : float
        ‖θ‖² at T_mem (and before).
    end : int, optional
        Last step; ``t_grok + 500`` (or ``4·t_mem``) by default.
    every : int
        Evaluation interval.
    lr, weight_decay : float
        Recorded in the config (the baseline groups runs by them).

    Returns
    -------
    History
    """
    require_real(rate, "rate", low=0.0, owner="synthetic_contraction")
    end = end if end is not None else (t_grok + 500 if t_grok is not None else 4 * t_mem)
    rows = []
    for s in range(0, end + 1, every):
        v = v_mem * math.exp(-rate * max(s - t_mem, 0))
        rows.append({"step": s, "norm": v, "train_acc": 1.0 if s >= t_mem else 0.5,
                     "test_acc": 1.0 if (t_grok is not None and s >= t_grok) else 0.01})
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": weight_decay})
