"""A grokking ETA: when will a run that has memorised generalise? Built on the delay law, tested on held-out runs.

The delay law says ``T_grok − T_mem ≈ log(V_mem/V_grok)/γ_eff``, γ_eff ∝ ηλ. A live run
knows ``V_mem`` and how fast ‖θ‖² has contracted since ``T_mem``, not ``V_grok``. The
predictor, fixed before any evaluation: **calibration** (fitting runs only) takes
``L* = log(V_mem/V_grok)`` and the spread of its own multiplicative errors; **prediction**
at ``now ≥ T_mem`` takes the rate ``k``, the least-squares slope of ``−log ‖θ‖²`` over
``[T_mem, now]``, and gives ``T̂ = now + max(L* − log(V_mem/V_now), 0) / k`` (none until
‖θ‖² has fallen by about 1%); the interval scales ``T̂ − T_mem`` by the errors' quantiles
(80% by default) and never starts before ``now``.

Evaluated on held-out seeds (:func:`nhtlab.book.held_out_eta.evaluate_eta`) and off its
grid (:mod:`nhtlab.book.off_grid_eta`), it did not ship: the delay law's baseline (b),
:func:`delay_law_forecast`, had less error, and is what :meth:`nhtlab.Monitor.forecast` offers.

>>> h = synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3)
>>> cal = calibrate_eta([h])
>>> est = predict_grok(cut_history(h, 1500), calibration=cal)
>>> abs(est.t_grok - 2500) < 150
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from ..history import History, require_history
from ..thresholds import ETA_COVERAGE, FITTED_ACCURACY
from ..validation import require_real, require_type
from .delay import linear_fit
from .events import find_events

__all__ = ["EtaCalibration", "GrokEstimate", "calibrate_eta", "predict_grok", "cut_history", "synthetic_contraction",
           "plateau_runs", "plateau_cuts", "nearest_setting", "law_scaled_delay", "conformal_quantile", "delay_law_forecast", "DELAY_LAW_BASIS"]

FRACTIONS = (0.25, 0.5, 0.75)
#: Least log-contraction since T_mem (about 1%) before the predictor extrapolates a rate.
MIN_CONTRACTION = 0.01
#: What :func:`delay_law_forecast` rests on, returned with every forecast (issue 46's off-grid records).
DELAY_LAW_BASIS = ("the delay law's baseline (b), not the ETA: T_mem + the mean delay T_grok − T_mem of your nearest "
                   "calibrated setting (in log ηλ), × (ηλ)_near/(ηλ). Forecasting settings left out of calibration "
                   "(scripts/evaluate_eta.py), it had the least error at 50% of the plateau on the companion "
                   "transformer (Z_97, λ 0.1–1) and the MLP on Z_47 trained full batch (λ 0.3–2); with minibatches the "
                   "unscaled delay (a) did better. The ETA (nhtlab.predict_grok) lost to it and did not ship.")


@dataclass(frozen=True)
class EtaCalibration:
    """What the fitting runs taught the predictor.

    ``log_contraction``: median L* over fitting runs; ``error_low``/``error_high``: quantiles
    of ``log((T_grok − T_mem)/(T̂ − T_mem))`` over runs and cuts at ``(1 ∓ coverage)/2``;
    ``mean_delay``: ``(lr, weight_decay)`` → mean T_grok − T_mem (the baseline); ``n_runs``:
    runs that memorised and grokked.
    """

    log_contraction: float
    error_low: float
    error_high: float
    coverage: float
    mean_delay: dict
    n_runs: int


@dataclass(frozen=True)
class GrokEstimate:
    """A predicted T_grok and interval, or the ``reason`` there is none; ``basis`` when it is not the ETA."""

    step: int
    t_grok: float | None
    low: float | None
    high: float | None
    reason: str = ""
    basis: str = ""

    def text(self) -> str:
        """``"at step N: grokking expected near step M, interval [a, b]"`` or the reason."""
        if self.t_grok is None:
            return f"at step {self.step:,}: no estimate ({self.reason})"
        return (f"at step {self.step:,}: grokking expected near step {self.t_grok:,.0f}, "
                f"interval [{self.low:,.0f}, {self.high:,.0f}]")


def cut_history(history: History, step: int) -> History:
    """The history as a live run saw it at ``step``: a copy with the rows up to and including it, status ``"running"``."""
    require_type(history, "history", History, owner="cut_history")
    rows = [r for r in history.rows if r["step"] <= step]
    return History(rows=rows, status="running", config=dict(history.config))


def _point(history: History, log_contraction: float) -> tuple[float | None, int, int | None, str]:
    if history.diverged or not np.all(np.isfinite(history.column("norm"))):
        return None, int(history.rows[-1]["step"]) if history.rows else 0, None, "the run diverged"
    events = find_events(history)
    now = int(history.rows[-1]["step"])
    if events.t_mem is None:
        return None, now, None, "the run has not memorised yet"
    steps, norm = history.column("step"), history.column("norm")
    t, v = steps[steps >= events.t_mem], norm[steps >= events.t_mem]
    # the slope of −log‖θ‖² per step since T_mem, and log(V_mem/V_now)
    rate, done = (-linear_fit(t, np.log(v)).slope, math.log(float(v[0]) / float(v[-1]))) if len(t) > 1 else (0.0, 0.0)
    # a norm that has not fallen by MIN_CONTRACTION since T_mem gives no rate to extrapolate
    if now - events.t_mem < 1 or rate <= 0 or done < MIN_CONTRACTION:
        return None, now, events.t_mem, "‖θ‖² is not contracting since T_mem"
    return now + max(log_contraction - done, 0.0) / rate, now, events.t_mem, ""


def predict_grok(history: History, calibration: EtaCalibration) -> GrokEstimate:
    """Predict T_grok of a live run from its history up to now.

    Parameters
    ----------
    history : History
        The run so far, past T_mem.
    calibration : EtaCalibration
        From :func:`calibrate_eta` on other runs.

    Returns
    -------
    GrokEstimate
        The point and interval, or no estimate and why (not memorised, diverged, not contracting).
    """
    require_history(history, "predict_grok", norms=["norm"], fractions=("train_acc", "test_acc"))
    require_type(calibration, "calibration", EtaCalibration, owner="predict_grok")
    point, now, t_mem, reason = _point(history, calibration.log_contraction)
    if point is None:
        return GrokEstimate(now, None, None, None, reason)
    span = point - t_mem
    low = max(float(now), t_mem + span * math.exp(calibration.error_low))
    high = max(low, t_mem + span * math.exp(calibration.error_high))
    return GrokEstimate(now, float(point), low, high)


def plateau_runs(histories: Sequence[History]) -> list[tuple[History, Any]]:
    """The runs that grokked (:attr:`Events.grokked`) after a plateau to forecast on, with their events."""
    runs = [(h, find_events(h)) for h in histories]
    return [(h, e) for h, e in runs if e.grokked and e.delay > 0 and not h.diverged]


def _setting(history: History) -> tuple[float, float]:
    return float(history.config.get("lr", math.nan)), float(history.config.get("weight_decay", math.nan))


def plateau_cuts(history: History, events: Any, fractions: Sequence[float]) -> list[tuple[float, int]]:
    """The last evaluated step at or before ``T_mem + f·(T_grok − T_mem)``, after ``T_mem``, per fraction."""
    steps = history.column("step")
    cuts = []
    for f in fractions:
        target = events.t_mem + f * (events.t_grok - events.t_mem)
        seen = steps[(steps <= target) & (steps > events.t_mem)]
        if len(seen):
            cuts.append((f, int(seen[-1])))
    return cuts


def calibrate_eta(histories: Sequence[History], coverage: float = ETA_COVERAGE,
                  fractions: Sequence[float] = FRACTIONS) -> EtaCalibration:
    """Fit the predictor's constants on runs that memorised and grokked (never the runs it is evaluated on).

    ``fractions`` are the cut points, as fractions of each run's plateau, where the errors are measured.
    """
    require_real(coverage, "coverage", low=0.0, high=1.0, low_open=True, high_open=True, owner="calibrate_eta")
    runs = plateau_runs(histories)
    if not runs:
        raise ValueError("The 'histories' parameter of calibrate_eta must hold at least one run that memorised "
                         "and grokked; none did.")
    log_c = float(np.median([math.log(e.norm_at_mem / e.norm_at_grok) for _, e in runs]))
    errors, delays = [], {}
    for h, e in runs:
        delays.setdefault(_setting(h), []).append(e.delay)
        for _, step in plateau_cuts(h, e, fractions):
            point, _, t_mem, _ = _point(cut_history(h, step), log_c)
            if point is not None and point > t_mem:
                errors.append(math.log(e.delay / (point - t_mem)))
    lo, hi = np.quantile(errors or [0.0], [(1 - coverage) / 2, (1 + coverage) / 2])
    return EtaCalibration(log_c, float(lo), float(hi), coverage,
                          {k: float(np.mean(v)) for k, v in delays.items()}, len(runs))


def nearest_setting(target: tuple[float, float], calibrated: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The calibrated ``(η, λ)`` nearest ``target`` in ``log(ηλ)`` (ties: the larger ``ηλ``).

    >>> nearest_setting((1e-3, 0.2), [(1e-3, 0.1), (1e-3, 0.3)])
    (0.001, 0.3)
    """
    if not calibrated:
        raise ValueError("The 'calibrated' parameter of nearest_setting is empty: nothing to be near.")
    target_log = math.log(target[0] * target[1])
    return min(calibrated, key=lambda s: (round(abs(math.log(s[0] * s[1]) - target_log), 12), -s[0] * s[1]))


def law_scaled_delay(setting: tuple[float, float], mean_delay: Mapping[tuple[float, float], float],
                     scaled: bool = True) -> float:
    """The off-grid baselines' delay: the nearest calibrated setting's mean delay, × (ηλ)_near/(ηλ) if ``scaled`` ((b), else (a))."""
    near = nearest_setting(setting, sorted(mean_delay))
    return mean_delay[near] * (near[0] * near[1] / (setting[0] * setting[1]) if scaled else 1.0)


def conformal_quantile(scores: Sequence[float], coverage: float) -> float:
    """The split-conformal quantile: the ``⌈(n+1)·coverage⌉``-th smallest score (∞ when that exceeds ``n``).

    >>> conformal_quantile([0.1, 0.2, 0.3, 0.4], 0.5)
    0.3
    """
    require_real(coverage, "coverage", low=0.0, high=1.0, low_open=True, high_open=True, owner="conformal_quantile")
    ordered = sorted(float(s) for s in scores if np.isfinite(s))
    rank = math.ceil((len(ordered) + 1) * coverage)
    return ordered[rank - 1] if 1 <= rank <= len(ordered) else math.inf


def delay_law_forecast(calibration: Mapping[tuple[float, float], Sequence[History]], lr: float, weight_decay: float,
                       t_mem: int, now: int, coverage: float = ETA_COVERAGE) -> GrokEstimate:
    """T_grok by the delay law's baseline (b) (:data:`DELAY_LAW_BASIS`), the best tested answer, with its interval.

    ``calibration`` maps ``(η, λ)`` to finished runs of the same model (those that grokked
    count). The interval is ``T_mem + d̂·exp(±q)``, ``q`` the split-conformal quantile of
    ``|log(d/d̂)|`` over the calibration runs, each setting forecast from the others (``∞``
    with one setting). The evaluation's ``q`` is per cut of the plateau, which a live run
    cannot know; this is its ``q`` for a cut at ``T_mem``, at least as wide as every cut's: the
    conservative choice. As in the evaluation, the point is floored at ``now`` and the
    interval scales the floored delay. No estimate when no calibration run grokked.
    """
    owner = "delay_law_forecast"
    shape = "a dict {(lr, weight_decay): [History, …]} of your finished runs by setting"
    if not isinstance(calibration, Mapping):
        raise TypeError(f"The 'calibration' parameter of {owner} must be {shape}. Got {type(calibration).__name__}.")
    if not calibration:
        raise ValueError(f"The 'calibration' parameter of {owner} is empty: pass your finished runs by setting.")
    for key, runs in calibration.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(v, Real) and not isinstance(v, bool)
                                                                 and math.isfinite(v) and v > 0 for v in key)):
            raise ValueError(f"The 'calibration' parameter of {owner} must be {shape}, each key a pair of positive "
                             f"numbers (lr, weight_decay). Got the key {key!r}.")
        if isinstance(runs, History) or not isinstance(runs, Sequence) or not all(isinstance(h, History) for h in runs):
            raise TypeError(f"The 'calibration' parameter of {owner} must be {shape}: the value of {key!r} must be a "
                            f"list of History. Got {type(runs).__name__}.")
    require_real(lr, "lr", low=0.0, low_open=True, owner=owner)
    require_real(weight_decay, "weight_decay", low=0.0, low_open=True, owner=owner)
    delays = {tuple(map(float, k)): [e.delay for _, e in plateau_runs(v)] for k, v in calibration.items()}
    mean = {k: float(np.mean(v)) for k, v in delays.items() if v}
    if not mean:
        why = f"no calibration run memorised and grokked (train and test accuracy ≥ {FITTED_ACCURACY}): no delay to scale"
        return GrokEstimate(now, None, None, None, why, DELAY_LAW_BASIS)
    q = conformal_quantile([abs(math.log(d / law_scaled_delay(k, {o: m for o, m in mean.items() if o != k})))
                            for k, ds in delays.items() for d in ds if len(mean) > 1], coverage)
    d = max(float(now), t_mem + law_scaled_delay((lr, weight_decay), mean)) - t_mem  # floored, as the evaluation's
    return GrokEstimate(now, t_mem + d, max(float(now), t_mem + d * math.exp(-q)), t_mem + d * math.exp(q),
                        basis=DELAY_LAW_BASIS)


def synthetic_contraction(t_mem: int, t_grok: int | None, rate: float, v_mem: float = 1000.0,
                          end: int | None = None, every: int = 100, lr: float = 1e-3,
                          weight_decay: float = 1.0) -> History:
    """A history with a known answer: ‖θ‖² = v_mem·exp(−rate·(t − t_mem)) after T_mem, grokking at ``t_grok``.

    Train accuracy reaches 1 at ``t_mem``, test accuracy at ``t_grok`` (None: never); rows
    every ``every`` steps up to ``end`` (``t_grok + 500``, or ``4·t_mem``); ``lr`` and
    ``weight_decay`` go to the config (the baselines group runs by them).
    """
    require_real(rate, "rate", low=0.0, owner="synthetic_contraction")
    end = end if end is not None else (t_grok + 500 if t_grok is not None else 4 * t_mem)
    rows = [{"step": s, "norm": v_mem * math.exp(-rate * max(s - t_mem, 0)), "train_acc": 1.0 if s >= t_mem else 0.5,
             "test_acc": 1.0 if (t_grok is not None and s >= t_grok) else 0.01} for s in range(0, end + 1, every)]
    return History(rows=rows, status="completed", config={"lr": lr, "weight_decay": weight_decay})
