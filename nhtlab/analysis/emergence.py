"""Emergence with scale: norm gap, delay and the fraction of runs that generalise, against model size.

The NHT paper (arXiv 2603.07323) ends with a hypothesis: if the norm gap V_sc / V_st
shrinks as a model grows, so does the delay log(V_sc/V_st)/γ_eff, and under a fixed
budget a capability appears abruptly once the model is large enough — an *apparent*
threshold, although nothing discontinuous happens inside. These functions turn runs over
sizes and seeds into that picture: one row per run, then per-size medians and the
fraction of runs that generalised within a budget.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..history import History, require_history
from ..models import MODELS, model_defaults
from ..validation import require_int, require_type
from .delay import delay_point
from .events import find_events

__all__ = ["run_row", "scale_table", "size_summary", "fraction_generalised", "fit_gamma", "law_records",
           "between_and_within"]

def _size(history: History, key: str, default: Any = None) -> Any:
    config = history.config
    if key in config.get("model_kwargs", {}):
        return config["model_kwargs"][key]
    if key in config:
        return config[key]
    if default is not None:
        return default
    # a ModularRun keeps only the model settings that differ from the constructor's defaults
    defaults = model_defaults(config["model"]) if config.get("model") in MODELS else {}
    if defaults.get(key, inspect.Parameter.empty) is not inspect.Parameter.empty:
        return defaults[key]
    raise KeyError(f"The history's config has no {key!r} (neither in model_kwargs nor at top level), "
                   f"and its model {config.get('model')!r} has no default for it.")


def run_row(history: History, key: str = "d_model", default_size: Any = None) -> dict[str, Any]:
    """One run as a flat record: size, seed, events, norm gap and the law's delay (None without a transition).

    The norms and prediction are :func:`~nhtlab.analysis.delay.delay_point`'s ``"grok"``
    definition (V_sc at T_mem, V_st at T_grok, log(V_sc/V_st)/(ηλ)), read through
    :func:`~nhtlab.analysis.events.find_events`, the one V_sc/V_st reader; V_sc is reported
    even for a run that never generalised. The size ``key`` is looked up in
    ``config["model_kwargs"]``, then ``config``, then ``default_size``, then the model's
    default (a run's ``model_kwargs`` omits defaults).
    """
    require_history(history, "run_row", norms=["norm"], fractions=("train_acc", "test_acc"))
    events = find_events(history)
    point = delay_point(history, definition="grok")
    lr, wd = history.config["lr"], history.config["weight_decay"]
    ratio = point["v_mem"] / point["v_grok"] if point else None
    return {
        "size": _size(history, key, default_size),
        "seed": history.config.get("seed"),
        "T_mem": events.t_mem,
        "T_grok": events.t_grok,
        "delay": events.delay,
        "steps": int(history.column("step")[-1]),
        "V_sc": events.norm_at_mem,
        "V_st": point["v_grok"] if point else None,
        "ratio": ratio,
        "log_gap": math.log(ratio) if ratio else None,
        "predicted": point["predicted"] if point else None,
        "eta_lambda": lr * wd,
    }


def scale_table(histories: Sequence[History], key: str = "d_model", default_size: Any = None) -> list[dict[str, Any]]:
    """:func:`run_row` for every history, sorted by size then seed."""
    require_type(histories, "histories", (list, tuple), owner="scale_table")
    rows = [run_row(h, key, default_size) for h in histories]
    return sorted(rows, key=lambda r: (r["size"], r["seed"] if r["seed"] is not None else -1))


def _by_size(rows: Sequence[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """The rows grouped by ``size``, sizes in increasing order."""
    return {size: [r for r in rows if r["size"] == size] for size in sorted({r["size"] for r in rows})}


def fraction_generalised(rows: Sequence[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Per size, the fraction of runs with T_grok ≤ ``budget``.

    A run that stopped before ``budget`` without generalising counts as a failure, so only
    use budgets the runs reached.

    >>> rows = [{"size": 8, "T_grok": None}, {"size": 8, "T_grok": 90}, {"size": 16, "T_grok": 50}]
    >>> fraction_generalised(rows, budget=100)
    [{'size': 8, 'budget': 100, 'runs': 2, 'generalised': 1, 'fraction': 0.5}, {'size': 16, 'budget': 100, 'runs': 1, 'generalised': 1, 'fraction': 1.0}]
    """
    require_int(budget, "budget", low=0, owner="fraction_generalised")
    out = []
    for size, group in _by_size(rows).items():
        hits = sum(1 for r in group if r["T_grok"] is not None and r["T_grok"] <= budget)
        out.append({"size": size, "budget": budget, "runs": len(group), "generalised": hits, "fraction": hits / len(group)})
    return out


def _median(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return float(np.median(values)) if values else None


def size_summary(rows: Sequence[dict[str, Any]], budget: int | None = None) -> list[dict[str, Any]]:
    """Per size: medians over the runs that generalised of V_sc, V_st, ratio, delay and the law's delay.

    With ``budget``, also the fraction of runs generalised within it.
    """
    out = []
    fractions = {f["size"]: f["fraction"] for f in fraction_generalised(rows, budget)} if budget is not None else {}
    for size, group in _by_size(rows).items():
        done = [r for r in group if r["ratio"] is not None]
        entry = {"size": size, "runs": len(group), "grokked": len(done),
                 **{k: _median(done, k) for k in ("V_sc", "V_st", "ratio")}, "T_mem": _median(group, "T_mem"),
                 **{k: _median(done, k) for k in ("delay", "predicted")}}
        if budget is not None:
            entry["fraction"] = fractions[size]
        out.append(entry)
    return out


def fit_gamma(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Fit delay ≈ log(V_sc/V_st) / γ through the origin over the runs that generalised.

    Returns γ, γ / (ηλ) (the law with γ_eff = ηλ predicts 1; the paper bounds
    γ_eff ≥ ηλ for AdamW) and the R² of the fit (through-origin R² is not
    comparable with an ordinary R²; 1 is still a perfect fit).
    """
    done = [r for r in rows if r.get("log_gap") is not None and r["log_gap"] > 0]
    if len(done) < 2:
        raise ValueError(f"The 'rows' parameter of fit_gamma needs at least 2 runs that generalised with a norm gap. Got {len(done)}.")
    x = np.array([r["log_gap"] for r in done])
    y = np.array([r["delay"] for r in done], dtype=float)
    slope = float(x @ y / (x @ x))  # delay ≈ slope · log_gap, slope = 1/γ
    residual = y - slope * x
    r2 = 1.0 - float(residual @ residual) / float(y @ y)
    eta_lambda = float(np.median([r["eta_lambda"] for r in done]))
    return {"gamma": 1.0 / slope, "gamma / eta_lambda": (1.0 / slope) / eta_lambda, "r2_through_origin": r2, "runs": len(done)}


def law_records(summary: Sequence[dict[str, Any]], fit: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Curves for a delay-vs-size chart from :func:`size_summary` rows (sizes with a transition).

    Series: ``"measured (median)"``; ``"law, γ = ηλ"`` (the median of each run's
    log(V_sc/V_st)/(ηλ)); and, with ``fit`` from :func:`fit_gamma`,
    ``"law, fitted γ"`` = that prediction rescaled by ηλ/γ.
    """
    out = []
    for s in summary:
        if s["delay"] is None:
            continue
        out.append({"size": s["size"], "series": "measured (median)", "delay": s["delay"]})
        if s["predicted"]:
            out.append({"size": s["size"], "series": "law, γ = ηλ", "delay": s["predicted"]})
            if fit is not None:
                out.append({"size": s["size"], "series": "law, fitted γ", "delay": s["predicted"] / fit["gamma / eta_lambda"]})
    return out


def between_and_within(rows: Sequence[dict[str, Any]], key: str) -> dict[str, float]:
    """How much ``key`` differs between the smallest and largest size, against its seed spread.

    ``difference``: median at the largest size minus at the smallest; ``seed_spread``: the
    largest range over seeds within any size. A difference below the spread is seed noise.

    >>> rows = [{"size": 1, "g": 1.0}, {"size": 1, "g": 1.2}, {"size": 2, "g": 2.0}, {"size": 2, "g": 2.1}]
    >>> {k: round(v, 3) for k, v in between_and_within(rows, "g").items()}
    {'difference': 0.95, 'seed_spread': 0.2}
    """
    measured = _by_size([r for r in rows if r.get(key) is not None])
    by_size = {size: [float(r[key]) for r in group] for size, group in measured.items()}
    if len(by_size) < 2:
        raise ValueError(f"The 'rows' parameter of between_and_within needs {key!r} at two sizes or more. Got {sorted(by_size)}.")
    sizes = sorted(by_size)
    spread = max(max(v) - min(v) for v in by_size.values())
    return {"difference": float(np.median(by_size[sizes[-1]]) - np.median(by_size[sizes[0]])), "seed_spread": float(spread)}
