"""The NHT delay law, computed the way the companion paper computes it.

Khanh & Hoa (arXiv 2603.07323) bound the escape from a shortcut of squared norm V_sc to
a structure of squared norm V_st by Θ(log(V_sc/V_st)/γ_eff), γ_eff = ηλ for gradient
descent and ≥ ηλ for AdamW. The companion paper on grokking (arXiv 2603.13331, code
ClevixLab/grokking-norm-separation) turns that into numbers; its definitions are
reproduced so that a chapter's "law" means what the paper's does (``definition=``):
``"companion"`` (its code): T_escape, the first step ≥ T_mem with ‖θ‖² ≤ 1.5·V_final
(V_final at the run's end; it trains 2,000 steps past T_grok), against
log(V_mem/V_final)/(2ηλ), which is 0.34–0.85 of T_escape in its data; ``"grok"``:
T_grok − T_mem against log(V_mem/V_grok)/(ηλ), the abstract's form, with no window after T_grok.

:func:`delay_fits` also fits the two simpler laws every prediction contains (1/λ and
1/(ηλ)): a λ-only sweep cannot tell the law from 1/λ; varying η and the norm gap can.
:func:`contraction_fit` fits V_t = A·r^t + C from T_mem on and compares r with
1 − 2ηλ; the companion's "≈ 1.41 ηλ" is (1 − r)/(ηλ) (1.30–1.69 over its λ sweep).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..history import History, require_history
from ..validation import require_bool, require_choice, require_rates, require_real
from .events import find_events

__all__ = ["DEFINITIONS", "predicted_delay", "delay_point", "delay_summary", "mean_std", "LinearFit",
           "linear_fit", "delay_fits", "ContractionFit", "contraction_fit"]

#: The two definitions of "measured" and "predicted" that :func:`delay_point` knows, in words.
DEFINITIONS = {
    "companion": ("T_escape: first step ≥ T_mem with ‖θ‖² ≤ 1.5·V_final",
                  "log(V_mem/V_final)/(2ηλ), V_final = ‖θ‖² at the end of the run"),
    "grok": ("T_grok − T_mem", "log(V_mem/V_grok)/(ηλ)"),
}
#: T_escape is the first step at which ‖θ‖² is within this factor of V_final (companion: 1.5).
ESCAPE_FACTOR = 1.5


def predicted_delay(v_sc: float, v_st: float, lr: float, weight_decay: float, rate_factor: float = 1.0) -> float:
    """log(V_sc / V_st) / (rate_factor · η λ), in steps: 0 when V_sc ≤ V_st, ``inf`` when λ = 0.

    ``rate_factor`` is 1 for the abstract's form and 2 for the companion's T_escape_theory
    (‖θ‖² shrinks by (1 − ηλ)² ≈ 1 − 2ηλ per step under pure decay).

    Parameters
    ----------
    v_sc, v_st : float > 0
        ‖θ‖² of the shortcut (memorising) and of the structured solution.
    lr, weight_decay : float
        η and λ.
    rate_factor : float > 0
        The contraction rate in units of ηλ.

    Returns
    -------
    float

    Examples
    --------
    >>> round(predicted_delay(math.e * 100, 100, lr=1e-3, weight_decay=1.0))
    1000
    >>> round(predicted_delay(math.e * 100, 100, lr=1e-3, weight_decay=1.0, rate_factor=2))
    500
    """
    require_real(v_sc, "v_sc", 0.0, low_open=True, owner="predicted_delay")
    require_real(v_st, "v_st", 0.0, low_open=True, owner="predicted_delay")
    require_real(lr, "lr", 0.0, low_open=True, owner="predicted_delay")
    require_real(weight_decay, "weight_decay", 0.0, owner="predicted_delay")
    require_real(rate_factor, "rate_factor", 0.0, low_open=True, owner="predicted_delay")
    if v_sc <= v_st:
        return 0.0
    if weight_decay == 0.0:
        return math.inf
    return math.log(v_sc / v_st) / (rate_factor * lr * weight_decay)


def _setting(config: Mapping[str, Any]) -> str:
    """A run's config without its seed: the key under which seeds are averaged."""
    keep = {k: v for k, v in config.items() if k not in ("seed", "steps", "stop_after", "device")}
    return json.dumps(keep, sort_keys=True, default=str)


def delay_point(history: History, definition: str = "companion") -> dict[str, Any] | None:
    """One run's measured and predicted delay under ``definition``, or None if it did not grok (or λ = 0).

    The record also holds the run's events, norms, ``setting`` (the config without its seed),
    ``final_window`` (t_end − T_grok), ``t_escape`` (None when ‖θ‖² never came within
    :data:`ESCAPE_FACTOR`·V_final) and ``escape_theory``.
    """
    require_history(history, "delay_point", norms=["norm"], fractions=("train_acc", "test_acc"))
    require_choice(definition, "definition", DEFINITIONS, owner="delay_point")
    events = find_events(history)
    lr, wd = require_rates(history.config, "history", "delay_point")
    if events.delay is None or wd == 0.0:
        return None
    steps, norm = history.column("step"), history.column("norm")
    v_mem, v_grok, v_final = float(events.norm_at_mem), float(events.norm_at_grok), float(norm[-1])
    if not all(map(math.isfinite, (v_mem, v_grok, v_final))):
        raise ValueError(f"The 'history' parameter of delay_point has no finite norm at T_mem, T_grok or its last step "
                         f"(V_mem={v_mem}, V_grok={v_grok}, V_final={v_final}): the delay law has no gap to read.")
    escaped = np.flatnonzero((steps >= events.t_mem) & (norm <= ESCAPE_FACTOR * v_final))
    t_escape = int(steps[escaped[0]]) if escaped.size else None
    escape_theory = predicted_delay(v_mem, v_final, lr, wd, rate_factor=2.0)
    if definition == "companion":
        measured, predicted = t_escape, escape_theory
    else:
        measured, predicted = events.delay, predicted_delay(v_mem, v_grok, lr, wd)
    if measured is None:
        return None
    return {
        "definition": definition, "measured": measured, "predicted": predicted,
        "weight_decay": wd, "lr": lr, "seed": history.config.get("seed"), "setting": _setting(history.config),
        "inv_lambda": 1.0 / wd, "inv_eta_lambda": 1.0 / (lr * wd),
        "t_mem": events.t_mem, "t_grok": events.t_grok, "t_end": int(steps[-1]),
        "final_window": int(steps[-1]) - events.t_grok,
        "v_mem": v_mem, "v_grok": v_grok, "v_final": v_final,
        "t_escape": t_escape, "escape_theory": escape_theory,
    }


def delay_summary(history: History) -> dict[str, Any]:
    """Both definitions for one run, as a small table a chapter can print.

    Parameters
    ----------
    history : History
        With ``lr`` and ``weight_decay`` in its config.

    Returns
    -------
    dict
        T_mem, T_grok, the norms and, per definition, measured vs predicted and their ratio
        (None where the run never grokked).
    """
    require_history(history, "delay_summary", norms=["norm"], fractions=("train_acc", "test_acc"))
    out: dict[str, Any] = {}
    for name in DEFINITIONS:
        p = delay_point(history, name)
        if p is None:
            out[name] = None
            continue
        out.update({k: p[k] for k in ("t_mem", "t_grok", "t_end", "v_mem", "v_grok", "v_final", "t_escape")})
        ratio = p["predicted"] / p["measured"] if p["measured"] else math.nan
        out[name] = {"measured": p["measured"], "predicted": round(p["predicted"], 1), "predicted/measured": round(ratio, 3)}
    return out


def mean_std(points: Sequence[Mapping[str, Any]], key: str, **where: Any) -> tuple[float, float] | None:
    """Mean and population standard deviation of ``key`` over the points whose fields equal ``where``; None if none do.

    >>> pts = [{"lam": 1.0, "t": 10}, {"lam": 1.0, "t": 30}, {"lam": 0.5, "t": 99}]
    >>> mean_std(pts, "t", lam=1.0), mean_std(pts, "t", lam=2.0)
    ((20.0, 10.0), None)
    """
    values = [p[key] for p in points if all(p.get(k) == v for k, v in where.items())]
    return (float(np.mean(values)), float(np.std(values))) if values else None


# --- Fits over sweeps -------------------------------------------------------------------------

@dataclass
class LinearFit:
    """Least-squares line ``y ≈ slope · x + intercept``; ``r2`` is NaN when y is constant."""

    slope: float
    intercept: float
    r2: float
    n: int


def linear_fit(x: Sequence[float], y: Sequence[float]) -> LinearFit:
    """Fit ``y ≈ slope · x + intercept`` by least squares (:func:`scipy.stats.linregress`).

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
    # local: scipy.stats is slow to import
    from scipy import stats

    line = stats.linregress(xa, ya)  # rvalue is NaN when y is constant: no R² then
    return LinearFit(float(line.slope), float(line.intercept), float(line.rvalue) ** 2, len(xa))


#: What :func:`delay_fits` regresses the measured delay on.
FIT_AXES = {"vs_predicted": "predicted", "vs_inverse_lambda": "inv_lambda", "vs_inverse_eta_lambda": "inv_eta_lambda"}


def delay_fits(points: Sequence[Mapping[str, Any] | None], average_seeds: bool = False) -> dict[str, LinearFit]:
    """Measured delay against the law's prediction, against 1/λ and against 1/(ηλ).

    The law's slope is free (AdamW's γ_eff/(ηλ) is unknown); an axis that does not vary
    across the points has no fit and is left out. ``average_seeds`` fits the per-setting
    means, as the companion does.

    >>> pts = [{"measured": 2 * d, "predicted": d, "inv_lambda": 1.0, "inv_eta_lambda": 1e3, "setting": str(d),
    ...         "definition": "grok"} for d in (100.0, 200.0, 300.0)]
    >>> fits = delay_fits(pts)
    >>> sorted(fits), round(fits["vs_predicted"].slope, 6)
    (['vs_predicted'], 2.0)
    """
    require_bool(average_seeds, "average_seeds", owner="delay_fits")
    usable = [p for p in points if p is not None and math.isfinite(p["predicted"])]
    if len({p["definition"] for p in usable}) > 1:
        raise ValueError("The 'points' parameter of delay_fits mixes definitions "
                         f"{sorted({p['definition'] for p in usable})}; fit one definition at a time.")
    if average_seeds:  # settings in the order they first appear, each averaged over its seeds
        groups = [[p for p in usable if p["setting"] == s] for s in dict.fromkeys(p["setting"] for p in usable)]
        usable = [{key: float(np.mean([p[key] for p in members])) for key in ("measured", *FIT_AXES.values())}
                  for members in groups]
    if len(usable) < 2:
        raise ValueError(f"The 'points' parameter of delay_fits must hold at least 2 grokked runs (or settings). Got {len(usable)}.")
    measured = [p["measured"] for p in usable]
    return {name: linear_fit([p[axis] for p in usable], measured) for name, axis in FIT_AXES.items()
            if np.ptp([p[axis] for p in usable]) > 0}


# --- Contraction ------------------------------------------------------------------------------

@dataclass
class ContractionFit:
    """The companion's fit ‖θ_t‖² ≈ A·r^(t − start) + C over the evaluations from T_mem on.

    ``r_theory`` = 1 − 2ηλ (pure decay); ``ratio`` = (1 − r)/(ηλ), which the companion
    reports as 1.30–1.69 (≈ 1.41) for its transformer; ``r2`` is on ‖θ‖² itself.
    """

    r: float
    r_theory: float
    ratio: float
    amplitude: float
    offset: float
    r2: float
    start: int
    stop: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def _fit_offset_exponential(t: np.ndarray, v: np.ndarray, max_offset: float) -> tuple[float, float, float, float]:
    """Least squares for v ≈ A·exp(k·t) + C with A ≥ 0, 0 ≤ C ≤ max_offset, −1 ≤ k ≤ 0 (the companion's bounds).

    For a fixed k the model is linear in (A, C); k is found by a log-spaced scan
    refined by golden-section search on the residual. Returns (A, k, C, ssr).
    """
    def solve(k: float) -> tuple[float, float, float]:
        e = np.exp(k * t)
        best = (0.0, 0.0, math.inf)
        for fix in (None, "A0", "C0", "Cmax"):  # unconstrained, then each active bound
            if fix is None:
                a, c = np.linalg.lstsq(np.column_stack([e, np.ones_like(e)]), v, rcond=None)[0]
            elif fix == "A0":
                a, c = 0.0, float(np.clip(v.mean(), 0.0, max_offset))
            else:
                c = 0.0 if fix == "C0" else max_offset
                a = max(0.0, float(e @ (v - c)) / float(e @ e))
            if a < 0 or not (0.0 <= c <= max_offset):
                continue
            ssr = float(((a * e + c - v) ** 2).sum())
            if ssr < best[2]:
                best = (float(a), float(c), ssr)
        return best

    ks = -np.logspace(-7, 0, 141)
    ssrs = [solve(k)[2] for k in ks]
    i = int(np.argmin(ssrs))
    lo, hi = ks[min(i + 1, len(ks) - 1)], ks[max(i - 1, 0)]  # bracket (ks decreasing)
    golden = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    for _ in range(60):
        c1, c2 = b - golden * (b - a), a + golden * (b - a)
        if solve(c1)[2] < solve(c2)[2]:
            b = c2
        else:
            a = c1
    k = (a + b) / 2
    amp, off, ssr = solve(k)
    return amp, k, off, ssr


def contraction_fit(history: History) -> ContractionFit | None:
    """Fit ‖θ_t‖² ≈ A·r^t + C from T_mem to the run's end (the companion's choice).

    None when the run never memorised or the window has fewer than 5 evaluations (the companion needs 5).
    """
    require_history(history, "contraction_fit", norms=["norm"], fractions=("train_acc", "test_acc"))
    events = find_events(history)
    if events.t_mem is None:
        return None
    steps, norm = history.column("step"), history.column("norm")
    window = (steps >= events.t_mem) & np.isfinite(norm)
    if window.sum() < 5:
        return None
    t = steps[window] - steps[window][0]
    v = norm[window]
    amp, k, off, ssr = _fit_offset_exponential(t, v, max_offset=1.1 * float(v[0]))
    ss_tot = float(((v - v.mean()) ** 2).sum())
    lr, wd = require_rates(history.config, "history", "contraction_fit")
    eta_lambda = lr * wd
    r = math.exp(k)
    return ContractionFit(r, 1.0 - 2.0 * eta_lambda, (1.0 - r) / eta_lambda if eta_lambda > 0 else math.inf,
                          amp, off, 1.0 - ssr / ss_tot if ss_tot > 0 else math.nan,
                          int(steps[window][0]), int(steps[window][-1]))
