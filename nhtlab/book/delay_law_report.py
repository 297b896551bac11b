"""The delay law on our runs, beside the companion paper's: chapter 3's records, sentences and checks.

One place builds the companion's Table 3 beside ours (:func:`paper_comparison`), so that chapter 3 and
``scripts/reproduce_table3.py`` cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import pairwise
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..history import History
from ..thresholds import ETA_SHIP_CUT
from ..papers import (COMPANION_CONTRACTION, COMPANION_THEORY_RATIO, COMPANION_ETA_SWEEP, COMPANION_GROK_COUNTS, COMPANION_GROK_FIT,
                      COMPANION_LAMBDA_SWEEP, paper_cell)
from ..validation import require_real, require_type
from .claims import Check, Reading, over_seeds
from .exercises import Feedback, check_answer
from ..analysis.delay import DEFINITIONS, LinearFit, contraction_fit, delay_fits, delay_point, linear_fit, mean_std
from ..analysis.eta import plateau_runs
from ..analysis.events import find_events
from ..analysis.regimes import diagnose_regime
from .held_out_eta import eta_evaluation
from .report import Markdown, evidence, significant, table, what_we_found

__all__ = ["FIT_LAMBDA_RANGE", "MIN_FIT_LAMBDAS", "PaperComparison", "paper_comparison",
           "delay_records", "run_records", "eta_comparison", "law_fits", "fit_records", "contraction_records",
           "ratio_records", "delay_readings", "check_lambdas_grok", "check_norm_halves", "lr_scaling_exercise", "law_line",
           "escape_ratios", "forecast_report", "runs_summary", "size_summary", "contraction_summary", "delay_found",
           "fit_table"]

#: λ range of the companion's fit of T_grok against 1/λ (its regime edges 0.01 and 2 are outside).
FIT_LAMBDA_RANGE = (0.1, 1.0)
#: Fewest λ values (seed means) for the T_grok-against-1/λ fit. Three, not two: a line through two
#: points always fits exactly (R² = 1 whatever the delays), so a two-λ "fit" reports a perfect R²
#: that measures nothing; three is the fewest at which R² can come out below 1. The companion fits four.
MIN_FIT_LAMBDAS = 3
#: The learning rate of the companion's λ sweep (its Table 3 and contraction ratios are at this η).
COMPANION_LR = 1e-3

_AXIS_LABELS = {"vs_predicted": "law", "vs_inverse_lambda": "1/λ", "vs_inverse_eta_lambda": "1/(ηλ)"}


def _init_scale(history: History) -> float:
    return float((history.config.get("model_kwargs") or {}).get("init_scale", 1.0))


def _labels(histories: Sequence[History], labels: Sequence[str] | None, owner: str) -> list[str]:
    if labels is not None and len(labels) != len(histories):
        raise ValueError(f"The 'labels' parameter of {owner} must have one label per history ({len(histories)}). "
                         f"Got {len(labels)}.")
    return [""] * len(histories) if labels is None else [str(label) for label in labels]


# --- The companion's Table 3, beside ours -------------------------------------------------------

@dataclass
class PaperComparison:
    """The λ sweep beside the companion's Table 3 (:func:`paper_comparison`): ``rows`` of display cells
    ``"ours (companion)"``, and ``fit`` (None with fewer than :data:`MIN_FIT_LAMBDAS` grokked λ values).
    """

    rows: list[dict[str, Any]]
    stats: dict[float, dict[str, Any]]
    fit: dict[str, Any] | None
    fit_lambdas: list[float]

    def fit_text(self) -> str:
        """The fit as a sentence, beside the companion's, or why there is none."""
        paper = COMPANION_GROK_FIT
        lo, hi = FIT_LAMBDA_RANGE
        theirs = (f"companion: slope {paper['slope']:,} (95% CI {paper['slope_ci'][0]:,}–{paper['slope_ci'][1]:,}), "
                  f"intercept {paper['intercept']:,}, R² {paper['r2']}")
        if self.fit is None:
            return (f"T_grok against 1/λ on λ ∈ [{lo:g}, {hi:g}]: {len(self.fit_lambdas)} λ value(s) in range "
                    f"grokked, and the fit needs {MIN_FIT_LAMBDAS} ({theirs}).")
        f = self.fit
        inside = "inside" if f["slope_within_ci"] else "outside"
        fitted = ", ".join(f"{lam:g}" for lam in self.fit_lambdas)
        return (f"T_grok against 1/λ on λ = {fitted} (the λ of the companion's range [{lo:g}, {hi:g}] that this "
                f"sweep trained and that grokked; seed means of {f['n']} λ values): slope "
                f"{f['slope']:,.0f}, {inside} the companion's interval; intercept {f['intercept']:,.0f}; "
                f"R² {f['r2']:.3f} ({theirs}).")


def _pair(ours: str, theirs: str) -> str:
    return ours if theirs == "—" else f"{ours} ({theirs})"


def paper_comparison(histories: Sequence[History]) -> PaperComparison:
    """Our λ sweep beside the companion's Table 3, and the fit of T_grok (seed means) against 1/λ.

    T_mem and T_grok are averaged over the grokked runs, T_escape over those whose ‖θ‖² came within
    1.5·V_final (the companion's definition). Raises ValueError on no run, or runs that are not one λ sweep.
    """
    require_type(histories, "histories", Sequence, owner="paper_comparison")
    for i, h in enumerate(histories):
        require_type(h, f"histories[{i}]", History, owner="paper_comparison")
    if not histories:
        raise ValueError("The 'histories' parameter of paper_comparison must hold at least one run. Got none.")
    lrs = {float(h.config["lr"]) for h in histories}
    inits = {repr(sorted((h.config.get("model_kwargs") or {}).items())) for h in histories}
    if len(lrs) > 1 or len(inits) > 1:
        raise ValueError("The 'histories' parameter of paper_comparison must be one λ sweep (one η, one "
                         f"initialisation). Got η values {sorted(lrs)} and model_kwargs {sorted(inits)}.")
    rows, stats = [], {}
    for lam in sorted({float(h.config["weight_decay"]) for h in histories}):
        runs = [h for h in histories if float(h.config["weight_decay"]) == lam]
        points = [p for h in runs if (p := delay_point(h, definition="grok")) is not None]
        ratios = [c.ratio for h in runs if find_events(h).grokked and (c := contraction_fit(h)) is not None]
        ours = {"runs": len(runs), "grokked": len(points), "t_mem": mean_std(points, "t_mem"),
                "t_grok": mean_std(points, "t_grok"),
                "t_escape": mean_std([p for p in points if p["t_escape"] is not None], "t_escape"),
                "escape_theory": mean_std(points, "escape_theory"),
                "contraction": float(np.mean(ratios)) if ratios else None}
        theirs = COMPANION_LAMBDA_SWEEP.get(lam, {})
        ours["t_grok_within"] = (None if ours["t_grok"] is None or "t_grok" not in theirs
                                 else bool(abs(ours["t_grok"][0] - theirs["t_grok"][0]) <= theirs["t_grok"][1]))
        stats[lam] = ours
        count, paper_ratio = COMPANION_GROK_COUNTS.get(lam), COMPANION_CONTRACTION.get(lam)
        rows.append({"λ": f"{lam:g}", "grokked": _pair(f"{len(points)}/{len(runs)}",
                                                      "—" if count is None else f"{count[0]}/{count[1]}"),
                     # a λ where no run grokked reads "no grok"; one without a measure "—" (paper_cell(None))
                     **{label: _pair(paper_cell(ours[key]) if points else "no grok", paper_cell(theirs.get(key)))
                        for key, label in (("t_mem", "T_mem"), ("t_grok", "T_grok"), ("t_escape", "T_escape"),
                                           ("escape_theory", "theory"))},
                     "(1 − r)/(ηλ)": _pair("—" if ours["contraction"] is None else f"{ours['contraction']:.2f}",
                                           "—" if paper_ratio is None else f"{paper_ratio:.2f}")})
    lo, hi = FIT_LAMBDA_RANGE
    fit_lambdas = [lam for lam in sorted(stats) if lo <= lam <= hi and stats[lam]["t_grok"] is not None]
    fit = None
    if len(fit_lambdas) >= MIN_FIT_LAMBDAS:
        line = linear_fit([1.0 / lam for lam in fit_lambdas], [stats[lam]["t_grok"][0] for lam in fit_lambdas])
        ci = COMPANION_GROK_FIT["slope_ci"]
        fit = {"slope": line.slope, "intercept": line.intercept, "r2": line.r2, "n": line.n,
               "lambdas": fit_lambdas, "slope_within_ci": bool(ci[0] <= line.slope <= ci[1])}
    return PaperComparison(rows=rows, stats=stats, fit=fit, fit_lambdas=fit_lambdas)


# --- Records of a set of runs ---------------------------------------------------------------------

def delay_records(histories: Sequence[History], labels: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every run's :func:`~nhtlab.analysis.delay.delay_point` under each definition (runs without one left out)."""
    pairs = list(zip(histories, _labels(histories, labels, "delay_records")))
    return {name: [{**p, "family": label, "init_scale": _init_scale(h)} for h, label in pairs
                   if (p := delay_point(h, definition=name)) is not None] for name in DEFINITIONS}


def run_records(histories: Sequence[History], labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One display record per run: its events, norms and both definitions' measured and predicted times."""
    rows = []
    for h, label in zip(histories, _labels(histories, labels, "run_records")):
        grok = delay_point(h, definition="grok")
        row: dict[str, Any] = {"family": label, "λ": float(h.config["weight_decay"]), "η": float(h.config["lr"]),
                               "init": _init_scale(h), "seed": h.config.get("seed")}
        if grok is None:
            row["note"] = diagnose_regime(h).reason
        else:
            row.update({"T_mem": grok["t_mem"], "T_grok": grok["t_grok"], "V_mem": round(grok["v_mem"]),
                        "V_grok": round(grok["v_grok"]), "V_final": round(grok["v_final"]),
                        "T_escape": grok["t_escape"], "theory": round(grok["escape_theory"]),
                        "delay": grok["measured"], "law": round(grok["predicted"]), "note": None})
        rows.append(row)
    return rows


def eta_comparison(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """T_grok and the delay at λ = 1 (default init) for each η, beside the companion's η sweep."""
    at = [p for p in points if p["weight_decay"] == 1.0 and p.get("init_scale", 1.0) == 1.0]
    return [{"η": lr, "runs": len(mine), "T_grok": paper_cell(mean_std(mine, "t_grok")),
             "T_grok (companion)": paper_cell(COMPANION_ETA_SWEEP.get(lr)),
             "delay": paper_cell(delay), "mean delay": delay[0]}
            for lr in sorted({p["lr"] for p in at}) for mine in [[p for p in at if p["lr"] == lr]]
            for delay in [mean_std(mine, "measured")]]


def law_fits(points: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, LinearFit]]:
    """:func:`~nhtlab.analysis.delay.delay_fits` per definition, for the definitions with two settings or more."""
    return {name: delay_fits(pts, average_seeds=True) for name, pts in points.items()
            if len({p["setting"] for p in pts}) >= 2}


def fit_records(fits: Mapping[str, Mapping[str, LinearFit]]) -> list[dict[str, Any]]:
    """The fits of :func:`law_fits` as table records, ``best`` (``"✓"``) on each definition's highest R²."""
    best = {name: max(fitset, key=lambda k: fitset[k].r2) for name, fitset in fits.items() if fitset}
    return [{"definition": name, "x": label, "slope": f.slope, "intercept": f.intercept, "R²": f.r2, "n": f.n,
             "best": "✓" if axis == best.get(name) else ""}
            for name, fitset in fits.items() for axis, label in _AXIS_LABELS.items()
            if (f := fitset.get(axis)) is not None]


def fit_table(fits: Mapping[str, Mapping[str, LinearFit]]) -> Markdown:
    """:func:`fit_records` as a Markdown table, slopes to three significant figures in plain notation."""
    rows = [{**r, "slope": significant(r["slope"])} for r in fit_records(fits)]
    return table(rows, columns=["definition", "x", "slope", "intercept", "R²", "n", "best"],
                 formats={"intercept": "{:,.0f}", "R²": "{:.3f}"}, headers={"n": "settings"})


def contraction_records(histories: Sequence[History], labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The companion's contraction fit on every grokked run with weight decay, beside the companion's ratio."""
    return [{**fit.to_dict(), "eta_lambda": lr * wd, "weight_decay": wd, "lr": lr, "seed": h.config.get("seed"),
             "family": label, "companion": COMPANION_CONTRACTION.get(wd) if lr == COMPANION_LR else None}
            for h, label in zip(histories, _labels(histories, labels, "contraction_records"))
            for lr, wd in [(float(h.config["lr"]), float(h.config["weight_decay"]))]
            if (fit := contraction_fit(h)) is not None and wd > 0 and find_events(h).grokked]


def ratio_records(points: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Predicted over measured, per definition: median and range over the runs."""
    return [{"definition": name, "median": float(np.median(ratios)), "min": min(ratios), "max": max(ratios),
             "runs": len(ratios), "measured": DEFINITIONS[name][0], "predicted": DEFINITIONS[name][1]}
            for name, pts in points.items()
            for ratios in [[p["predicted"] / p["measured"] for p in pts if p["measured"]]] if ratios]


# --- Readings over seeds, and checks -------------------------------------------------------------

def _falls(pairs: Sequence[tuple[float, float]]) -> str | None:
    """'falls' when y strictly decreases as x increases over ≥ 2 points, else 'does not fall' (None: < 2)."""
    if len(pairs) < 2:
        return None
    ys = [y for _, y in sorted(pairs)]
    return "falls" if all(a > b for a, b in pairwise(ys)) else "does not fall"


#: The readings of :func:`delay_readings`: key → (what is read, the law's expected reading).
_READINGS = {"lambda": ("the delay falls as λ grows", "falls"), "eta": ("the delay falls as η grows", "falls"),
             "init": ("a larger init memorises at a larger norm and takes longer", "longer"),
             "law vs 1/λ": ("the law fits better than 1/λ", "law"),
             "law vs 1/(ηλ)": ("the law fits better than 1/(ηλ)", "law")}


def delay_readings(points: Sequence[Mapping[str, Any]], lr: float, max_lambda: float = 1.0,
                   rule: str = "majority") -> dict[str, Reading]:
    """The directions the law predicts and its fit against the simpler laws, read in each seed (:data:`_READINGS`).

    ``"lambda"`` reads the λ sweep up to ``max_lambda``; ``"eta"`` λ = 1 at the default init; ``"init"`` the
    largest init scale against the smallest at λ = 1, η = ``lr``. A seed with too few runs for a reading reads
    None (counted among ``n``, never as expected).
    """
    require_real(lr, "lr", 0.0, low_open=True, owner="delay_readings")
    if any(p["definition"] != "grok" for p in points):
        raise ValueError("The 'points' parameter of delay_readings must hold 'grok' definition points.")
    by: dict[str, dict[int, Any]] = {k: {} for k in _READINGS}
    for s in sorted({p["seed"] for p in points}):
        mine = [p for p in points if p["seed"] == s]
        by["lambda"][s] = _falls([(p["weight_decay"], p["measured"]) for p in mine
                                  if p["family"] == "λ sweep" and p["weight_decay"] <= max_lambda])
        by["eta"][s] = _falls([(p["lr"], p["measured"]) for p in mine
                               if p["weight_decay"] == 1.0 and p["init_scale"] == 1.0])
        gap = sorted((p["init_scale"], p["v_mem"], p["measured"]) for p in mine
                     if p["weight_decay"] == 1.0 and p["lr"] == lr)
        by["init"][s] = (None if len(gap) < 2 or gap[0][0] == gap[-1][0] else
                         "longer" if gap[-1][1] > gap[0][1] and gap[-1][2] > gap[0][2] else "not longer")
        fits = delay_fits(mine) if len({p["setting"] for p in mine}) >= 2 else {}
        for key, rival in (("law vs 1/λ", "vs_inverse_lambda"), ("law vs 1/(ηλ)", "vs_inverse_eta_lambda")):
            law, other = fits.get("vs_predicted"), fits.get(rival)
            by[key][s] = None if law is None or other is None else ("law" if law.r2 > other.r2 else "rival")
    return {key: over_seeds(name, by[key], expected=expected, rule=rule) for key, (name, expected) in _READINGS.items()}


def check_lambdas_grok(histories: Sequence[History], max_lambda: float = 1.0) -> Check:
    """Every λ ≤ ``max_lambda`` of a sweep groks in every seed (fails too when no λ is in range)."""
    runs = [(float(h.config["weight_decay"]), find_events(h).grokked) for h in histories
            if 0 < float(h.config["weight_decay"]) <= max_lambda]
    counts = {lam: [g for wd, g in runs if wd == lam] for lam in sorted({wd for wd, _ in runs})}
    detail = ", ".join(f"λ = {lam:g}: {sum(c)}/{len(c)}" for lam, c in counts.items()) or "no run in range"
    passed = bool(counts) and all(all(c) for c in counts.values())
    return Check(f"every λ ≤ {max_lambda:g} groks in every seed", passed, detail)


def check_norm_halves(points: Sequence[Mapping[str, Any]], init_scale: float = 1.0, factor: float = 0.5) -> Check:
    """In every grokked run from ``init_scale``, ‖θ‖² at T_grok is at most ``factor`` · V_mem (fails on no run)."""
    mine = [p for p in points if p.get("init_scale", 1.0) == init_scale]
    worst = max(mine, key=lambda p: p["v_grok"] / p["v_mem"], default=None)
    if worst is None:
        return Check(f"‖θ‖² at T_grok ≤ {factor:g} · V_mem", False, f"no grokked run from init scale {init_scale:g}")
    ratio = worst["v_grok"] / worst["v_mem"]
    detail = (f"largest V_grok/V_mem {ratio:.2f} over {len(mine)} runs (λ = {worst['weight_decay']:g}, "
              f"η = {worst['lr']:g}, seed {worst['seed']})")
    return Check(f"‖θ‖² at T_grok ≤ {factor:g} · V_mem", bool(ratio <= factor and math.isfinite(ratio)), detail)


def lr_scaling_exercise(answer: float | None, points: Sequence[Mapping[str, Any]], lr: float, new_lr: float,
                        seed: int, rel_tol: float = 0.1) -> Any:
    """Check a reader's answer to "predict the delay at η = ``new_lr`` from the λ = 1 run at η = ``lr``".

    The law's delay goes as 1/η at fixed λ and norm gap, so its answer is the base run's measured
    delay scaled by ``lr / new_lr``; ``unanswered`` when the base run did not grok.
    """
    require_real(lr, "lr", 0.0, low_open=True, owner="lr_scaling_exercise")
    require_real(new_lr, "new_lr", 0.0, low_open=True, owner="lr_scaling_exercise")

    def delay(at: float) -> Any:
        found = [p["measured"] for p in points if p["weight_decay"] == 1.0 and p["init_scale"] == 1.0
                 and p["seed"] == seed and math.isclose(p["lr"], at)]
        return found[0] if found else None

    base = delay(lr)
    if base is None:
        return Feedback("unanswered", f"Seed {seed}'s λ = 1 run at η = {lr:g} did not grok: no delay to scale.")
    expected, measured = base * lr / new_lr, delay(new_lr)
    why = (f"the λ = 1 run at η = {lr:g} waited {base:,} steps, and {base:,} · {lr:g} / {new_lr:g} = {expected:,.0f}; the run at "
           f"η = {new_lr:g} " + (f"measured {measured:,}" if measured is not None else "did not grok"))
    return check_answer(answer, expected, rel_tol=rel_tol, why=why)


def law_line(points: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """The line of the measured delay against the law's prediction, one point per run: the code exercise's reference."""
    fit = linear_fit([p["predicted"] for p in points], [p["measured"] for p in points])
    return float(fit.slope), float(fit.intercept)


def escape_ratios(comparison: PaperComparison) -> list[dict[str, Any]]:
    """Theory over T_escape (the companion's definition) per λ, ours beside the companion's."""
    rows = []
    for lam, ours in sorted(comparison.stats.items()):
        theirs = COMPANION_LAMBDA_SWEEP.get(lam, {})
        if ours["t_escape"] is None or ours["escape_theory"] is None or "t_escape" not in theirs:
            continue
        mine = ours["escape_theory"][0] / ours["t_escape"][0]
        paper = theirs["escape_theory"][0] / theirs["t_escape"][0]
        rows.append({"λ": lam, "ours": mine, "companion": paper, "higher": bool(mine > paper)})
    return rows


def forecast_report(histories: Sequence[History], test_seeds: Sequence[int], profile: str) -> tuple[Markdown, Markdown]:
    """The forecast of T_grok evaluated on a chapter's λ sweep, the seeds ``test_seeds`` held out (a warning signal
    that no held-out run recorded reads "not measured", not "fired 0 of n")."""
    seeds = sorted({int(h.config["seed"]) for h in histories})
    if len(seeds) < 2:
        return (Markdown(f"*The `{profile}` profile runs {len(seeds)} seed: nothing to hold out, so the "
                         "forecast is not evaluated on this chapter's runs.*"), Markdown(""))
    held = {int(s) for s in test_seeds}
    saved = eta_evaluation(histories, sorted(held), profile=profile)
    fit_seeds = [s for s in seeds if s not in held]
    # the λ of the fitting runs that memorised and then grokked, not of every run trained
    fitted = plateau_runs([h for h in histories if int(h.config["seed"]) not in held])
    lams = ", ".join(f"{lam:g}" for lam in sorted({float(h.config["weight_decay"]) for h, _ in fitted}))
    row = next((r for r in saved["eta"] if math.isclose(r["fraction"], ETA_SHIP_CUT)), None)
    verdict = saved["verdict"]
    if row is None or row["mae"] is None or row["mae_baseline"] is None:
        how = "too few held-out runs could be forecast to compare it with the naive forecast"
    else:
        how = (f"its median error is {row['mae']:,.0f} steps against {row['mae_baseline']:,.0f} for the naive "
               f"forecast, over {row['n']} runs")
    sentence = Markdown(
        f"Fitted on the runs of seed{'s' if len(fit_seeds) > 1 else ''} {', '.join(map(str, fit_seeds))} that "
        f"memorised and grokked (λ = {lams}) and forecasting the runs of seed "
        f"{', '.join(map(str, sorted(held)))} halfway through their plateau, {how}. By the book's rule "
        f"({verdict['name']}) the forecast {'ships' if verdict['passed'] else 'does not ship'} on these runs.")
    steps = "{:,.0f}"
    forecast = table(saved["eta"], columns=["fraction", "n", "no_estimate", "mae", "mae_baseline", "coverage",
                                            "stated_coverage", "median_width"],
                     formats={"fraction": "{:.0%}", "coverage": "{:.0%}", "stated_coverage": "{:.0%}",
                              **dict.fromkeys(["mae", "mae_baseline", "median_width"], steps)},
                     headers={"fraction": "cut", "n": "runs", "no_estimate": "no estimate", "mae": "error",
                              "mae_baseline": "naive error", "stated_coverage": "stated coverage",
                              "median_width": "median width"})
    warnings = [{**r, "fired": r["fired"] if r["recorded"] else "not measured",
                 "late": r["late"] if r["recorded"] else None} for r in saved["warnings"]]
    warned = table(warnings, columns=["signal", "rule", "fired", "late", "median_lead", "recorded"],
                   formats={"median_lead": steps},
                   headers={"fired": "fired before T_grok", "median_lead": "median lead (steps)",
                            "recorded": "runs that record it"})
    tables = Markdown(
        f"Median absolute errors of T_grok in steps, per cut of the plateau (fitted on seeds "
        f"{', '.join(map(str, fit_seeds))}, λ = {lams}; forecasting {saved['test']}):\n\n{forecast}\n\n"
        f"Measured against the rule: {verdict['detail']}.\n\n"
        f"Early-warning signals on the same held-out runs (a signal the runs did not record is not measured):"
        f"\n\n{warned}")
    return sentence, tables


# --- The lesson's sentences, each with the evidence behind it -------------------------------------

def _range(values: Sequence[float]) -> str:
    """``"a–b"`` (two decimals), one value when they agree, ``"—"`` for none."""
    if not values:
        return "—"
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _count(reading: Reading) -> str:
    """``"k of n seeds (seed 0: …, …)"``: a reading's count, without its expected value in front."""
    return reading.text().split(" in ", 1)[1]


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def runs_summary(histories: Sequence[History], labels: Sequence[str], points: Mapping[str, Sequence[Mapping[str, Any]]],
                 readings: Mapping[str, Reading], fourier: str = "") -> list[Markdown]:
    """What the runs show about the law's three directions, and the table of every run behind it (closed)."""
    sweep = [p for p in points.get("grok", []) if p["family"] == "λ sweep"]
    by_lam = {lam: [p["measured"] for p in sweep if p["weight_decay"] == lam]
              for lam in sorted({p["weight_decay"] for p in sweep})}
    delays = "; ".join(f"λ = {lam:g}: {np.mean(d):,.0f} steps ({_runs(len(d))})" for lam, d in by_lam.items())
    sentence = Markdown(
        f"The λ sweep's mean delay $T_\\text{{grok}} - T_\\text{{mem}}$, per λ: {delays or 'no run memorised and grokked'}. "
        f"At λ = 1 the delay falls as η grows in {_count(readings['eta'])}; a larger initial scale memorises at a "
        f"larger norm and waits longer in {_count(readings['init'])}.")
    rows = table(run_records(histories, labels), formats=dict.fromkeys(
        ["T_mem", "T_grok", "V_mem", "V_grok", "V_final", "T_escape", "theory", "delay", "law"], "{:,}"))
    return [sentence, evidence(
        "every run, both definitions",
        "One line per run. `companion` columns: $T_\\text{escape}$ against `theory` = "
        "$\\log(V_\\text{mem}/V_\\text{final})/(2\\eta\\lambda)$; `grok` columns: `delay` = "
        "$T_\\text{grok}-T_\\text{mem}$ against `law` = $\\log(V_\\text{mem}/V_\\text{grok})/(\\eta\\lambda)$. "
        "A run that did not memorise and generalise has its regime diagnosis as a note.",
        rows, fourier)]


def size_summary(points: Mapping[str, Sequence[Mapping[str, Any]]], comparison: PaperComparison) -> list[Markdown]:
    """How close the law's size is, under both definitions, and the companion's Table 3 beside ours (closed)."""
    ratios = table(ratio_records(points), columns=["definition", "median", "min", "max", "runs"],
                   formats={"median": "{:.2f}", "min": "{:.2f}", "max": "{:.2f}"})
    escape = escape_ratios(comparison)
    higher = sum(r["higher"] for r in escape)
    window = [p["final_window"] for p in points.get("grok", []) if p["family"] == "λ sweep"]
    within = [s["t_grok_within"] for s in comparison.stats.values() if s["t_grok_within"] is not None]
    if escape:
        pairs = "; ".join(f"λ = {r['λ']:g}: {r['ours']:.2f} against {r['companion']:.2f}" for r in escape)
        way = ("goes with a higher ratio, not a lower one" if higher == len(escape) else
               "goes with a lower ratio" if higher == 0 else "moves the ratio one way at some λ and the other at others")
        escape_text = (f"With the companion's definition, our theory over $T_\\text{{escape}}$ (seed means) is higher than "
                       f"the companion's at {higher} of {len(escape)} λ values ({pairs}): on these runs the shorter "
                       f"window {way}. ")
    else:
        escape_text = "No λ of this sweep has both a $T_\\text{escape}$ of ours and one of the companion's. "
    sentence = Markdown(
        (f"Our λ-sweep runs end a median of {np.median(window):,.0f} steps after $T_\\text{{grok}}$. " if window else "")
        + escape_text + f"Our seed-mean $T_\\text{{grok}}$ lies within the companion's ± one standard deviation at "
        f"{sum(within)} of {len(within)} λ values.")
    return [ratios, sentence, evidence(
        "the companion's Table 3, beside ours",
        "Seed means ± standard deviations of the λ sweep, each next to the companion's 10-seed value in "
        "parentheses (its runs are at η = 10⁻³). `nhtlab.book.paper_comparison` builds this table, the same "
        "function `scripts/reproduce_table3.py` writes its table with.",
        table(comparison.rows), comparison.fit_text(), "$T_\\text{grok}$ at λ = 1 against η:",
        table(eta_comparison(points.get("grok", [])), columns=["η", "runs", "T_grok", "T_grok (companion)", "delay"]))]


def contraction_summary(records: Sequence[Mapping[str, Any]]) -> list[Markdown]:
    """The fitted contraction rate of the λ sweep beside the companion's and pure decay's, and every fit (closed)."""
    ours = [c["ratio"] for c in records if c["family"] == "λ sweep"]
    paper = list(COMPANION_CONTRACTION.values())
    sentence = Markdown(
        "Fitted from $T_\\text{mem}$ on, $(1 - r)/(\\eta\\lambda)$ on the λ sweep is "
        + (f"{_range(ours)} ({_runs(len(ours))}), against {_range(paper)} in the companion; {sum(c < 2 for c in ours)} "
           f"of {len(ours)} runs contract more slowly than pure decay." if ours else "not measured: no grokked run."))
    rows = table(records, columns=["family", "weight_decay", "lr", "seed", "r", "r_theory", "ratio", "companion", "r2"],
                 headers={"weight_decay": "λ", "lr": "η", "r_theory": "1 − 2ηλ", "ratio": "(1 − r)/(ηλ)", "r2": "R²"},
                 formats={"r": "{:.5f}", "r_theory": "{:.5f}", "ratio": "{:.2f}", "r2": "{:.3f}"})
    return [sentence, evidence("the contraction fit of every run", rows)]


def delay_found(readings: Mapping[str, Reading], points: Mapping[str, Sequence[Mapping[str, Any]]],
                contraction: Sequence[Mapping[str, Any]]) -> Markdown:
    """The chapter's "What we found" box, each sentence read from the runs (k of n seeds, ranges)."""
    rows = {r["definition"]: r for r in ratio_records(points)}
    sizes = {name: f"{_range([r['min'], r['max']])} over {_runs(r['runs'])}" for name, r in rows.items()}
    grok = rows.get("grok")
    factor = "" if grok is None or grok["min"] <= 0 else (
        f": with no constant fitted, within a factor of {max(grok['max'], 1 / grok['min']):.1f} of every measured delay")
    lam, eta, init = readings["lambda"], readings["eta"], readings["init"]
    rival_1, rival_2 = readings["law vs 1/λ"], readings["law vs 1/(ηλ)"]
    ours = [c["ratio"] for c in contraction if c["family"] == "λ sweep"]
    lo, hi = COMPANION_THEORY_RATIO
    return what_we_found(
        f"The delay falls as λ grows in {lam.k} of {lam.n} seeds and as η grows in {eta.k} of {eta.n}; a larger "
        f"initial scale memorises at a larger norm and waits longer in {init.k} of {init.n}: the directions the "
        "law predicts, each counted over the seeds.",
        f"Its size: the law's prediction over the measured delay is {sizes.get('grok', 'not measured')} with the "
        f"`grok` definition{factor}; it is {sizes.get('companion', 'not measured')} with the companion's (whose own data "
        f"give {lo}–{hi}).",
        f"On all runs together the law's line fits better than 1/λ in {rival_1.k} of {rival_1.n} seeds, and "
        f"better than 1/(ηλ) in {rival_2.k} of {rival_2.n}.",
        f"After $T_\\text{{mem}}$ the norm contracts at $(1 - r)/(\\eta\\lambda)$ = {_range(ours)} on the λ sweep "
        f"(companion: {_range(list(COMPANION_CONTRACTION.values()))}; pure decay: 2).")
