"""The ETA evaluated off the grid it was calibrated on (issue 46): leave-one-setting-out and unseen settings.

A user forecasting their own run has no runs at their setting, so each setting ``(η, λ)`` is forecast from
*other* settings only, by each method of :data:`ETA_METHODS`:

* ``nearest_delay`` (baseline a): ``T_mem`` + the mean delay ``T_grok − T_mem`` of the nearest calibrated
  setting (least ``|log ηλ − log η_cλ_c|``, ties to the larger ``ηλ``);
* ``law_scaled`` (baseline b): that delay × ``(ηλ)_near/(ηλ)``, the delay law's own scaling ((a) and (b) are
  the core's :func:`nhtlab.analysis.eta.law_scaled_delay`, the Monitor's formula);
* ``companion_fit`` (baseline c): the companion's ``T_grok ≈ slope/λ + intercept`` (η = 10⁻³ only);
* ``eta_rate``: the core's contraction-rate ETA (:func:`nhtlab.analysis.eta.predict_grok`);
* ``eta``, fixed with the design: ``T_mem + √(d_rate·d_law)``, the geometric mean of the rate ETA's delay and
  ``d_law = c/(ηλ)``, ``c`` the calibration runs' median ``(T_grok − T_mem)·ηλ`` (``d_law`` alone where the
  rate ETA gives no estimate);
* ``loss_rise``, fixed after the runs and before its evaluation: once the Monitor's warning (train loss twice
  its minimum since ``T_mem``) has fired at ``t_rise`` by the cut, ``t_rise + c_rise/(ηλ)``, ``c_rise`` the
  calibration runs' median ``(T_grok − t_rise)·ηλ`` where it fired by ``T_grok``; before it fires, (b).

Each forecast is made at a cut ``T_mem + f·(T_grok − T_mem)`` and floored at the cut's step. Intervals are
split-conformal per cut: the scores ``|log(d/d̂)|`` are of forecasts within the calibration settings, each
left out in turn, and the interval is ``T_mem + d̂·exp(±q)`` (:func:`~nhtlab.analysis.eta.conformal_quantile`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._version import __version__
from ..analysis.early_warnings import evaluate_warnings, warning_step
from ..analysis.eta import (FRACTIONS, EtaCalibration, calibrate_eta, conformal_quantile, cut_history,
                            law_scaled_delay, plateau_cuts, plateau_runs, predict_grok)
from ..analysis.events import find_events
from ..analysis.regimes import diagnose_regime
from ..history import History
from ..thresholds import ETA_COVERAGE, ETA_COVERAGE_TOLERANCE, ETA_SHIP_CUT
from ..training.monitor import online_regime
from ..validation import require_type
from .claims import Check
from .held_out_eta import companion_fit

__all__ = ["ETA_METHODS", "setting_of", "fit_eta_method", "wilson_interval", "leave_one_out_splits", "forecast_rows",
           "error_table", "coverage_table", "OffGridVerdict", "off_grid_verdict", "off_grid_evaluation", "monitor_readings"]

#: The methods in the order the tables show them; the first is the ETA the ship rule reads.
ETA_METHODS = ("eta", "eta_rate", "loss_rise", "nearest_delay", "law_scaled", "companion_fit")
ETA_BASELINES = ("nearest_delay", "law_scaled", "companion_fit")
Setting = tuple[float, float]
Predictor = Callable[[History, Any, int], "float | None"]


def setting_of(history: History) -> Setting:
    """``(η, λ)`` of a run, from its config's ``lr`` and ``weight_decay`` (ValueError: missing or not positive)."""
    require_type(history, "history", History, owner="setting_of")
    try:
        lr, lam = float(history.config["lr"]), float(history.config["weight_decay"])
    except (KeyError, TypeError, ValueError):
        raise ValueError("The 'history' parameter of setting_of needs 'lr' and 'weight_decay' in its config. "
                         f"Got {sorted(history.config)}.") from None
    if not (lr > 0 and lam > 0):
        raise ValueError(f"The 'history' parameter of setting_of needs a positive η and λ. Got η = {lr}, λ = {lam}.")
    return lr, lam


def _key(s: Setting) -> Setting:
    return float(f"{s[0]:.6g}"), float(f"{s[1]:.6g}")


def _eta_lambda(history: History) -> float:
    lr, lam = setting_of(history)
    return lr * lam


def fit_eta_method(method: str, calibration: Sequence[History], coverage: float = ETA_COVERAGE) -> Predictor:
    """Fit ``method`` on calibration runs; returns ``predict(history, events, step) → T̂_grok or None`` (unfloored),
    which reads the history up to ``step`` only (the baselines read ``T_mem`` and the setting)."""
    if method not in ETA_METHODS:
        raise ValueError(f"The 'method' parameter of fit_eta_method must be one of {ETA_METHODS}. Got {method!r} instead.")
    runs = plateau_runs(calibration)
    if not runs:
        raise ValueError("The 'calibration' parameter of fit_eta_method must hold at least one run that memorised and "
                         "grokked; none did.")
    delays = [(_key(setting_of(h)), e.delay) for h, e in runs]
    mean_delay = {s: float(np.mean([d for k, d in delays if k == s])) for s in dict.fromkeys(k for k, _ in delays)}
    law = float(np.median([e.delay * _eta_lambda(h) for h, e in runs]))

    if method in ("nearest_delay", "law_scaled"):  # the core's formula, as the Monitor's forecast uses it
        scaled = method == "law_scaled"
        return lambda h, e, step: e.t_mem + law_scaled_delay(_key(setting_of(h)), mean_delay, scaled)
    if method == "loss_rise":
        leads = [(e.t_grok - t) * _eta_lambda(h) for h, e in runs
                 for t in [warning_step(h, "train_loss")] if t is not None and t <= e.t_grok]
        c_rise = float(np.median(leads)) if leads else None

        def rise(h: History, e: Any, step: int) -> float:
            t_rise = None if c_rise is None else warning_step(cut_history(h, step), "train_loss")
            if t_rise is None:  # not fired by the cut (or never in calibration): baseline (b)
                return e.t_mem + law_scaled_delay(_key(setting_of(h)), mean_delay)
            return t_rise + c_rise / _eta_lambda(h)
        return rise
    if method == "companion_fit":
        return lambda h, e, step: companion_fit(*setting_of(h))
    cal: EtaCalibration = calibrate_eta([h for h, _ in runs], coverage)

    def rate(h: History, e: Any, step: int) -> float | None:
        return predict_grok(cut_history(h, step), cal).t_grok

    if method == "eta_rate":
        return rate

    def combined(h: History, e: Any, step: int) -> float:
        d_law = law / _eta_lambda(h)
        t_rate = rate(h, e, step)
        if t_rate is None or t_rate <= e.t_mem:
            return e.t_mem + d_law
        return e.t_mem + math.sqrt((t_rate - e.t_mem) * d_law)
    return combined


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (``z`` standard errors: 95% by default) of ``k`` of ``n``, by scipy's ``binomtest``."""
    # local: scipy.stats is slow to import
    from scipy import stats

    if not (0 <= k <= n):
        raise ValueError(f"The 'k' parameter of wilson_interval must lie in [0, n = {n}]. Got {k}.")
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1.0 - 2.0 * stats.norm.sf(z), method="wilson")
    return float(ci.low), float(ci.high)


def leave_one_out_splits(grid: Sequence[Setting], off_grid: Sequence[Setting] = ()) -> list[dict[str, Any]]:
    """The design's splits: each grid setting forecast from the others, each off-grid one from the whole grid."""
    grid, off_grid = [_key(s) for s in grid], [_key(s) for s in off_grid]
    if len(set(grid)) < 2:
        raise ValueError(f"The 'grid' parameter of leave_one_out_splits needs two settings or more. Got {grid}.")
    clash = sorted(set(grid) & set(off_grid))
    if clash:
        raise ValueError(f"The 'off_grid' parameter of leave_one_out_splits must hold settings in no calibration; "
                         f"{clash} are on the grid.")
    return ([{"split": "leave-one-out", "forecast": s, "calibrate": [g for g in grid if g != s]} for s in grid]
            + [{"split": "off-grid", "forecast": s, "calibrate": list(grid)} for s in off_grid])


def _by_setting(histories: Sequence[History]) -> dict[Setting, list[History]]:
    keys = [_key(setting_of(h)) for h in histories]
    return {s: [h for h, k in zip(histories, keys) if k == s] for s in dict.fromkeys(keys)}


def _scores(method: str, calibration: Sequence[History], coverage: float) -> dict:
    """Per fraction, conformal scores ``|log(d/d̂)|`` of ``method`` within ``calibration``, each setting left out."""
    groups = _by_setting(calibration)
    scores: dict[float, list[float]] = {f: [] for f in FRACTIONS}
    for s, held in groups.items():  # with one setting, nothing is left to fit on: no scores
        rest = [h for k, hs in groups.items() if k != s for h in hs]
        try:
            predict = fit_eta_method(method, rest, coverage)
        except ValueError:
            continue
        for h, e in plateau_runs(held):
            for f, step in plateau_cuts(h, e, FRACTIONS):
                t = predict(h, e, step)
                if t is not None:
                    scores[f].append(abs(math.log(e.delay / (max(t, step) - e.t_mem))))
    return scores


def forecast_rows(histories: Sequence[History], grid: Sequence[Setting], off_grid: Sequence[Setting] = (),
                  coverage: float = ETA_COVERAGE, methods: Sequence[str] = ETA_METHODS) -> list[dict[str, Any]]:
    """Every forecast of the design: one row per split, forecast run, cut and method (``forecast`` None: none), each
    split calibrated on its ``calibrate`` settings only."""
    groups = _by_setting(histories)
    rows = []
    for split in leave_one_out_splits(grid, off_grid):
        calibration = [h for s in split["calibrate"] for h in groups.get(s, [])]
        targets = plateau_runs(groups.get(split["forecast"], []))
        if not targets or not plateau_runs(calibration):
            continue
        for method in methods:
            predict = fit_eta_method(method, calibration, coverage)
            quantiles = {f: conformal_quantile(v, coverage) for f, v in _scores(method, calibration, coverage).items()}
            for h, e in targets:
                for f, step in plateau_cuts(h, e, FRACTIONS):
                    t = predict(h, e, step)
                    row = {"split": split["split"], "eta": split["forecast"][0], "lam": split["forecast"][1],
                           "seed": int(h.config.get("seed", -1)), "method": method, "fraction": f, "step": step,
                           "t_mem": int(e.t_mem), "t_grok": int(e.t_grok), "forecast": None, "error": None,
                           "low": None, "high": None, "covered": None}
                    if t is not None:
                        t = max(float(t), float(step))
                        q, d = quantiles[f], t - e.t_mem
                        low, high = max(float(step), e.t_mem + d * math.exp(-q)), e.t_mem + d * math.exp(q)
                        row.update(forecast=round(t, 1), error=round(t - e.t_grok, 1), low=round(low, 1),
                                   high=round(high, 1) if math.isfinite(high) else None,
                                   covered=bool(low <= e.t_grok <= high))
                    rows.append(row)
    return rows


def error_table(rows: Sequence[Mapping[str, Any]], split: str | None = None) -> list[dict[str, Any]]:
    """Median absolute error (steps) per cut and method, with the runs each rests on."""
    rows = [r for r in rows if split is None or r["split"] == split]
    methods = [m for m in ETA_METHODS if any(r["method"] == m for r in rows)]
    out = []
    for f in sorted({r["fraction"] for r in rows}):
        at = [r for r in rows if r["fraction"] == f]
        n = len({(r["eta"], r["lam"], r["seed"]) for r in at})
        record: dict[str, Any] = {"fraction": f, "n": n}
        for m in methods:
            mine = [r for r in at if r["method"] == m and r["error"] is not None]
            record[m] = float(np.median([abs(r["error"]) for r in mine])) if mine else None
            if len(mine) != n:
                record[f"n_{m}"] = len(mine)
        out.append(record)
    return out


def coverage_table(rows: Sequence[Mapping[str, Any]], method: str = "eta",
                   coverage: float = ETA_COVERAGE) -> list[dict[str, Any]]:
    """Measured coverage per cut of ``method``'s conformal interval: ``k of n``, the rate, its Wilson 95% interval."""
    out = []
    picked = [r for r in rows if r["method"] == method and r["covered"] is not None]
    for f in sorted({r["fraction"] for r in picked}):
        at = [r for r in picked if r["fraction"] == f]
        k, n = sum(r["covered"] for r in at), len(at)
        lo, hi = wilson_interval(k, n)
        out.append({"fraction": f, "stated": coverage, "covered": f"{k} of {n}", "coverage": k / n,
                    "wilson_low": lo, "wilson_high": hi,
                    "median_width": float(np.median([math.inf if r["high"] is None else r["high"] - r["low"]
                                                     for r in at]))})
    return out


@dataclass(frozen=True)
class OffGridVerdict(Check):
    """A :class:`~nhtlab.book.claims.Check` of the off-grid ship rule, with ``winner``, ``best_baseline`` and
    ``offer`` (:func:`off_grid_verdict` says what each is)."""

    winner: str | None = None
    best_baseline: str | None = None
    offer: str | None = None

    def record(self) -> dict[str, Any]:
        """The verdict as a saved evaluation holds it."""
        return {k: getattr(self, k) for k in ("passed", "name", "detail", "winner", "best_baseline", "offer")}


def off_grid_verdict(rows: Sequence[Mapping[str, Any]], fraction: float = ETA_SHIP_CUT, tolerance: float = ETA_COVERAGE_TOLERANCE,
                     coverage: float = ETA_COVERAGE, method: str = "eta") -> OffGridVerdict:
    """Issue 46's ship rule: at ``fraction`` of the plateau, ``method``'s median absolute error is below every
    baseline's on the runs both forecast, and its coverage is within ``tolerance`` of ``coverage`` at every cut.

    ``winner`` is the method of least error among those that forecast every run (a baseline on a tie); ``offer``
    is ``method`` if it passed, else the best baseline.
    """
    name = (f"{'the ETA' if method == 'eta' else method} beats every baseline at {fraction:.0%} of the plateau off "
            f"the grid, coverage within {tolerance * 100:.0f} points of {coverage:.0%} at every cut")
    at = [r for r in rows if math.isclose(r["fraction"], fraction) and r["error"] is not None]
    by = {m: {(r["eta"], r["lam"], r["seed"], r["split"]): abs(r["error"]) for r in at if r["method"] == m}
          for m in ETA_METHODS}
    if not by.get(method) or not any(by.get(b) for b in ETA_BASELINES):
        return OffGridVerdict(name, False, "not enough forecast runs to evaluate")
    paired, beats = [], True
    for b in ETA_BASELINES:
        shared = sorted(set(by[method]) & set(by.get(b, {})))
        if not shared:
            continue
        mine, theirs = (float(np.median([d[k] for k in shared])) for d in (by[method], by[b]))
        beats &= mine < theirs
        paired.append(f"{mine:,.0f} against {b}'s {theirs:,.0f} (n = {len(shared)})")
    n_all = max(len(v) for v in by.values())
    full = {m: float(np.median(list(v.values()))) for m, v in by.items() if v and len(v) == n_all}
    winner = min(full, key=lambda m: (full[m], m not in ETA_BASELINES)) if full else None  # a tie is no win
    baselines = {b: full[b] for b in ETA_BASELINES if b in full}
    best = min(baselines, key=baselines.get) if baselines else None
    cov = coverage_table(rows, method, coverage)
    calibrated = bool(cov) and all(abs(c["coverage"] - coverage) <= tolerance + 1e-12 for c in cov)
    passed = beats and calibrated
    detail = (f"at {fraction:.0%}: " + "; ".join(paired) + "; coverage "
              + ", ".join(f"{c['coverage']:.0%} ({c['covered']}) at {c['fraction']:.0%}" for c in cov))
    return OffGridVerdict(name, bool(passed), detail, winner=winner, best_baseline=best,
                          offer=method if passed else best)


def off_grid_evaluation(histories: Sequence[History], grid: Sequence[Setting], off_grid: Sequence[Setting] = (),
                        profile: str = "book", coverage: float = ETA_COVERAGE,
                        no_grok: Sequence[History] = ()) -> dict[str, Any]:
    """The off-grid evaluation as ``scripts/evaluate_eta.py`` saves it and :func:`nhtlab.book.eta_report` renders it."""
    rows = forecast_rows(histories, grid, off_grid, coverage)
    groups = _by_setting(histories)
    runs = [{"eta": s[0], "lam": s[1], "split": "off-grid" if s in {_key(o) for o in off_grid} else "grid",
             "runs": len(groups.get(s, [])), "grokked": len(plateau_runs(groups.get(s, [])))}
            for s in [_key(g) for g in grid] + [_key(o) for o in off_grid]]
    verdict = off_grid_verdict(rows, coverage=coverage)
    return {
        "design": "off-grid", "profile": profile, "nhtlab": __version__, "stated_coverage": coverage,
        "grid": [list(_key(g)) for g in grid], "off_grid": [list(_key(o)) for o in off_grid], "runs": runs,
        "errors": error_table(rows),
        "errors_by_split": {s: error_table(rows, s) for s in ("leave-one-out", "off-grid")},
        "coverage": coverage_table(rows, "eta", coverage),
        "coverage_baseline": coverage_table(rows, "law_scaled", coverage),
        "verdict": verdict.record(), "coverage_loss_rise": coverage_table(rows, "loss_rise", coverage),
        "verdict_loss_rise": off_grid_verdict(rows, coverage=coverage, method="loss_rise").record(),
        **monitor_readings([h for hs in groups.values() for h in hs], no_grok),
        "rows": rows,
    }


def monitor_readings(histories: Sequence[History], no_grok: Sequence[History] = ()) -> dict[str, Any]:
    """The Monitor's two online promises read on finished runs: its grok warning and its :meth:`regime`.

    The warning is the ``train_loss`` signal of :func:`~nhtlab.analysis.early_warnings.evaluate_warnings`; the online
    regime (:func:`~nhtlab.training.monitor.online_regime`), read at each cut and at the end, is set against
    :func:`~nhtlab.analysis.regimes.diagnose_regime`. A ``no_grok`` run that groks is moved (``moved``).
    """
    grokked_weak = [h for h in no_grok if find_events(h).grokked]
    never = [h for h in no_grok if not find_events(h).grokked]
    runs = list(histories) + grokked_weak

    def online(h: History) -> str:
        return online_regime(h.column("norm"), h.column("train_acc"))

    by_verdict: dict[str, list[dict[str, str]]] = {}
    for h in runs + never:
        e = find_events(h)
        cuts = plateau_cuts(h, e, FRACTIONS) if e.grokked and e.t_mem is not None and e.t_grok > e.t_mem else []
        reads = {f"at {f:.0%}": online(cut_history(h, step)) for f, step in cuts} | {"at the end": online(h)}
        by_verdict.setdefault(diagnose_regime(h).regime, []).append(reads)
    regimes = []
    for diagnosed, reads in sorted(by_verdict.items()):
        row: dict[str, Any] = {"diagnosed": diagnosed, "runs": len(reads)}
        for when in [f"at {f:.0%}" for f in FRACTIONS] + ["at the end"]:
            calls = [r[when] for r in reads if when in r]
            if calls:
                agree = sum(c == diagnosed for c in calls)
                counts = ", ".join(f"{c} {calls.count(c)}" for c in sorted(set(calls)))
                row[when] = f"{agree} of {len(calls)} ({counts})"
        regimes.append(row)
    return {"warnings": evaluate_warnings(runs, never), "regimes": regimes, "moved": len(grokked_weak)}
