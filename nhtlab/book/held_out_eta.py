"""The core's ETA (:mod:`nhtlab.analysis.eta`) evaluated on held-out seeds: the shipping rule, the saved payload,
its loader. The off-grid evaluation (issue 46) is :mod:`nhtlab.book.off_grid_eta`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from .._version import __version__
from .claims import Check
from ..analysis.early_warnings import evaluate_warnings
from ..analysis.eta import FRACTIONS, _setting, calibrate_eta, cut_history, plateau_cuts, plateau_runs, predict_grok
from ..history import History
from ..papers import COMPANION_GROK_FIT
from ..thresholds import ETA_COVERAGE, ETA_COVERAGE_TOLERANCE, ETA_SHIP_CUT
from ..validation import require_choice

__all__ = ["evaluate_eta", "eta_verdict", "eta_evaluation", "saved_evaluation"]


def companion_fit(lr: float, lam: float) -> float | None:
    """The companion's T_grok ≈ slope/λ + intercept, a fit of η = 10⁻³ runs (None at another η)."""
    fit = COMPANION_GROK_FIT
    return fit["slope"] / lam + fit["intercept"] if math.isclose(lr, 1e-3) and lam > 0 else None


def evaluate_eta(fit: Sequence[History], test: Sequence[History], coverage: float = ETA_COVERAGE) -> list[dict[str, Any]]:
    """Calibrate on ``fit``, then predict each ``test`` run at fractions of its plateau; one record per fraction.

    ``fit`` and ``test`` are disjoint: the constants come from ``fit`` only. ``mae_baseline`` is T_mem +
    the fitting runs' mean delay at the same η and λ (None when no fitting run shares it);
    ``mae_companion_fit`` the companion's 1/λ fit (η = 10⁻³ runs only).
    """
    calibration = calibrate_eta(fit, coverage, FRACTIONS)
    runs = plateau_runs(test)
    records = []
    med = (lambda xs: float(np.median(xs)) if xs else None)
    for f in FRACTIONS:
        err, base, comp, inside, widths, missing = [], [], [], [], [], 0
        for h, e in runs:
            for frac, step in plateau_cuts(h, e, [f]):
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
                if (fit_t := companion_fit(lr, lam)) is not None:
                    comp.append(abs(fit_t - e.t_grok))
        records.append({"fraction": f, "n": len(err), "no_estimate": missing, "mae": med(err),
                        "mae_baseline": med(base), "mae_companion_fit": med(comp),
                        "coverage": float(np.mean(inside)) if inside else None, "stated_coverage": coverage,
                        "median_width": med(widths)})
    return records


def eta_verdict(records: Sequence[Mapping[str, Any]], fraction: float = ETA_SHIP_CUT,
                tolerance: float = ETA_COVERAGE_TOLERANCE) -> Check:
    """Whether the ETA may ship: it beats the same-λ baseline at ``fraction``, coverage within ``tolerance`` of its level."""
    row = next((r for r in records if math.isclose(r["fraction"], fraction)), None)
    name = f"the ETA beats the baseline at {fraction:.0%} of the plateau, coverage within {tolerance * 100:.0f} points of its stated level"
    if row is None or row["mae"] is None or row["mae_baseline"] is None or row["coverage"] is None:
        return Check(name, False, "not enough held-out runs to evaluate")
    better = row["mae"] < row["mae_baseline"]
    calibrated = abs(row["coverage"] - row["stated_coverage"]) <= tolerance + 1e-12
    return Check(name, better and calibrated,
                 f"error {row['mae']:,.0f} against the baseline's {row['mae_baseline']:,.0f} steps; coverage "
                 f"{row['coverage']:.0%} against the stated {row['stated_coverage']:.0%} (n = {row['n']})")


def eta_evaluation(histories: Sequence[History], test_seeds: Sequence[int], no_grok: Sequence[History] = (),
                   profile: str = "book", coverage: float = ETA_COVERAGE) -> dict[str, Any]:
    """The ETA and early-warning evaluation of runs split by seed, as ``scripts/evaluate_eta_seeds.py`` saves it: the
    constants come from the runs not of ``test_seeds`` only, and the warnings are scored on the held-out runs."""
    def seeds(hs: Sequence[History]) -> list[int]:
        return sorted({int(h.config["seed"]) for h in hs})

    held = {int(s) for s in test_seeds}
    fit = [h for h in histories if int(h.config["seed"]) not in held]
    test = [h for h in histories if int(h.config["seed"]) in held]
    if not fit or not test:
        raise ValueError(f"The 'test_seeds' parameter of eta_evaluation must hold out some runs and keep others for "
                         f"fitting. Got {sorted(held)} for runs of seeds {seeds(histories)}.")
    records = evaluate_eta(fit, test, coverage)
    verdict = eta_verdict(records)

    lams = sorted({float(h.config["weight_decay"]) for h in fit})
    # the horizon: the run's step budget, else (a history without one) its last recorded step
    weak = sorted({(float(h.config["weight_decay"]), int(h.config.get("steps") or h.rows[-1]["step"])) for h in no_grok})
    return {
        "profile": profile, "nhtlab": __version__, "fit": f"λ ∈ {lams}, seeds {seeds(fit)}",
        "test": f"seeds {seeds(test)}",
        "no_grok": "; ".join(f"λ = {lam:g}, {steps:,} steps" for lam, steps in weak) or "none",
        "eta": records, "verdict": {k: getattr(verdict, k) for k in ("passed", "detail", "name")},
        "warnings": evaluate_warnings(test, no_grok),
    }


def saved_evaluation(profile: str = "book", off_grid: bool = False) -> dict[str, Any] | None:
    """The evaluation saved with the package, or None: the off-grid ``eta_offgrid_<profile>.json`` (issue 46; the
    ``mlp_*`` profiles are off-grid only) or the held-out-seed ``eta_<profile>.json``."""
    require_choice(profile, "profile", ("quick", "book", "full", "mlp_full_batch", "mlp_minibatch"),
                   owner="saved_evaluation")
    path = resources.files("nhtlab") / "results" / f"eta_{'offgrid_' if off_grid else ''}{profile}.json"
    return json.loads(path.read_text()) if path.is_file() else None
