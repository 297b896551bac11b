"""Choosing weight decay from a grid of short monitored runs (the "own model" chapter), and the claims it rests on.

Train the same model briefly at each λ of a grid, over several seeds, with a :class:`nhtlab.Monitor` attached;
discard the *weak* runs (the norm still rising) and the *strong* ones (not fitted); take the smallest λ among the
*intermediate* runs (the norm peaked, then contracted); check it on held-out data against the weakest λ. Monitors
are read as records (numbers and labels, no tensors); a *weak* or *strong* label needs a budget of
:data:`DECIDED_AFTER` time scales 1/(ηλ) (:func:`nhtlab.analysis.regimes.budget_regime`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..analysis.regimes import TOO_EARLY, budget_regime
from ..analysis.events import first_step_at_least
from ..validation import require_type
from .claims import Check, Reading, over_seeds
from ..measures.norms import layer_names
from .held_out_eta import eta_verdict, saved_evaluation
from .off_grid_eta import off_grid_verdict
from .report import _METHOD_NAMES, eta_report, evidence, table

__all__ = ["contracting_step", "lambda_grid_records", "regimes_by_seed", "lambda_recipe",
           "head_reading", "lambda_readings", "lambda_checks", "norm_curve_records", "monitor_dlr_check",
           "FIRST_TURN_CHOICES", "first_turn_answer", "DECIDED_AFTER",
           "layer_words", "NOT_READ", "NOT_CONTRACTED",
           "largest_fit_answer", "contraction_sentence", "grid_evidence", "forecast_verdicts",
           "off_grid_section", "eta_record_checks"]

#: The readings a chapter asserts (keys of :func:`lambda_readings`); the others are displayed only.
ASSERTED = ("smallest λ", "largest λ", "recipe")
#: The paper's early-warning claim, as a reading: the read-out contracts before the total norm.
READOUT_FIRST = "read-out first"
#: The budget, in units of the decay's time scale 1/(ηλ), a run needs before a *weak* or *strong* label
#: stands (fixed before the runs: one time scale; chapter 01's panel scales its budgets the same way).
DECIDED_AFTER = 1.0
#: The smallest λ's expected reading: the online rule's *weak*, said as what it observes.
NOT_CONTRACTED = "not 5% below its peak"
#: The order reading of a run that never fitted its training set: an initialisation transient is no turn.
NOT_READ = "not read: the run never fitted"
#: What turned first on a shown run (the choices of :func:`first_turn_answer`).
FIRST_TURN_CHOICES = ("the read-out", "the total norm", "together", "neither", "not read")
# head_reading → the layer that contracted first ("only the read-out contracts": it did, the total never did)
_FIRST_TURN = {READOUT_FIRST: "the read-out", "only the read-out contracts": "the read-out",
               "total norm first": "the total norm", "read-out never contracts": "the total norm",
               "same record": "together", "neither contracts": "neither", NOT_READ: "not read"}


def contracting_step(steps: Sequence[int], values: Sequence[float], drop: float) -> int | None:
    """First step at which a curve is ``drop`` (a fraction) below its running peak (the Monitor's rule), or None."""
    values = np.asarray(values, dtype=float)
    below = values <= (1.0 - drop) * np.fmax.accumulate(values)  # fmax: a NaN is no peak
    return int(steps[int(below.argmax())]) if below.any() else None


def layer_words(model: Any) -> dict[str, str]:
    """Each parameter-owning layer of a model named in words for a chart (an index says nothing): class and rank."""
    names = layer_names(model)
    kinds = [type(model.get_submodule(name)).__name__ for name in names]
    words = {name: f"{kind} {kinds[:i + 1].count(kind)}" for i, (name, kind) in enumerate(zip(names, kinds))}
    words[names[-1]] = f"read-out ({words[names[-1]]})"
    return words


def lambda_grid_records(monitors: Mapping[tuple[int, float], Any], fit: float, lr: float | None = None,
                        steps: int | None = None) -> list[dict[str, Any]]:
    """One row per monitored run of a λ grid: regime, norm peak and contraction, warnings, DLR, accuracies.

    ``monitors`` maps ``(seed, λ)`` to a :class:`nhtlab.Monitor`. With ``lr``, ``regime`` is the label that a
    budget of ``steps`` (default: the last step) backs, by :data:`DECIDED_AFTER` time scales
    (:func:`~nhtlab.analysis.regimes.budget_regime`). The contracting steps are read from the fitted step on: a
    turn before the fit is an initialisation transient, not an escape.
    """
    records = []
    for (seed, lam), monitor in sorted(monitors.items()):
        summary, rows = monitor.summary(fit=fit), monitor.rows
        budget = int(steps if steps is not None else rows[-1]["step"])
        fitted = first_step_at_least([r["step"] for r in rows], [r.get("train_acc", math.nan) for r in rows], fit)
        after = [] if fitted is None else [r for r in rows if r["step"] >= fitted]
        at = [r["step"] for r in after]
        records.append({
            "seed": seed, "λ": lam, "online regime": summary["regime"],
            "regime": summary["regime"] if lr is None else budget_regime(summary["regime"], budget, lr * lam,
                                                                          DECIDED_AFTER),
            "budget × ηλ": None if lr is None else budget * lr * lam,
            "norm peak": summary["norm peak"], "norm peak step": summary["norm peak step"],
            "norm contraction": summary["norm contraction"], "fitted step": fitted,
            "norm contracting from step": contracting_step(at, [r["norm"] for r in after], monitor.warn_drop),
            "head contracting from step": contracting_step(
                at, [r[f"norm/{monitor.head}"] for r in after], monitor.warn_drop),
            "dlr": rows[-1].get("dlr"), "train acc": rows[-1]["train_acc"], "test acc": rows[-1]["test_acc"],
        })
    return records


def _by_seed(records: Sequence[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    """Each seed's records (seeds in order), by increasing λ."""
    return {seed: sorted((r for r in records if r["seed"] == seed), key=lambda r: r["λ"])
            for seed in sorted({r["seed"] for r in records})}


def regimes_by_seed(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The regime of each λ in each seed, side by side: one row per λ, one column ``seed s`` per seed."""
    by_seed = _by_seed(records)
    return [{"λ": lam, **{f"seed {seed}": r["regime"] for seed, runs in by_seed.items() for r in runs if r["λ"] == lam}}
            for lam in sorted({r["λ"] for r in records})]


def head_reading(record: Mapping[str, Any]) -> str:
    """Which contracted first in one run: the read-out layer or the total norm (:data:`NOT_READ`: never fitted)."""
    if "fitted step" in record and record["fitted step"] is None:
        return NOT_READ
    head, norm = record["head contracting from step"], record["norm contracting from step"]
    if head is None:
        return "neither contracts" if norm is None else "read-out never contracts"
    if norm is None:
        return "only the read-out contracts"
    return READOUT_FIRST if head < norm else "total norm first" if norm < head else "same record"


def lambda_recipe(records: Sequence[Mapping[str, Any]], margin: float = 0.03) -> list[dict[str, Any]]:
    """Per seed, the λ the recipe chooses (smallest intermediate λ) and its check on held-out data.

    It beats the weakest λ when its test accuracy is higher by more than ``margin``. The ``shown λ`` (shown in
    detail) is the chosen one, else the middle λ of the grid.
    """
    out = []
    for seed, runs in _by_seed(records).items():
        chosen = next((r for r in runs if r["regime"] == "intermediate"), None)
        weakest, best = runs[0], max(runs, key=lambda r: r["test acc"])
        shown = chosen if chosen is not None else runs[len(runs) // 2]
        verdict = ("no intermediate λ" if chosen is None else "beats the weakest λ"
                   if chosen["test acc"] > weakest["test acc"] + margin else "does not beat the weakest λ")
        out.append({
            "seed": seed, "chosen λ": None if chosen is None else chosen["λ"],
            "test acc": None if chosen is None else chosen["test acc"],
            "weakest λ": weakest["λ"], "weakest test acc": weakest["test acc"],
            "best λ": best["λ"], "best test acc": best["test acc"],
            "shown λ": shown["λ"], "verdict": verdict,
            "norm contracting from step": shown["norm contracting from step"],
            "head contracting from step": shown["head contracting from step"], "head": head_reading(shown),
        })
    return out


def lambda_readings(records: Sequence[Mapping[str, Any]], margin: float = 0.03,
                    rule: str = "majority") -> dict[str, Reading]:
    """The grid's readings, each counted over seeds against the one the text states: those of :data:`ASSERTED` are
    checked; :data:`READOUT_FIRST`, the paper's early warning, is shown only."""
    recipe = lambda_recipe(records, margin=margin)
    runs = _by_seed(records)
    smallest = {seed: rs[0].get("online regime", rs[0]["regime"]) for seed, rs in runs.items()}
    return {
        "smallest λ": over_seeds("the smallest λ's norm within its budget", {
            seed: NOT_CONTRACTED if r == "weak" else f"{r} (contracted)" for seed, r in smallest.items()},
            NOT_CONTRACTED, rule),
        "largest λ": over_seeds("regime of the largest λ", {seed: rs[-1]["regime"] for seed, rs in runs.items()},
                                "strong", rule),
        "recipe": over_seeds("the recipe's λ on held-out data", {r["seed"]: r["verdict"] for r in recipe},
                             "beats the weakest λ", rule),
        READOUT_FIRST: over_seeds("which contracts first on the shown run", {r["seed"]: r["head"] for r in recipe},
                                  READOUT_FIRST, rule),
    }


def lambda_checks(readings: Mapping[str, Reading]) -> list[Check]:
    """The verdicts a chapter asserts: the readings of :data:`ASSERTED`, each holding under its rule."""
    return [Check(f"{readings[key].name}: {readings[key].expected} ({readings[key].rule} of seeds)",
                  readings[key].holds, readings[key].text()) for key in ASSERTED]


def norm_curve_records(monitors: Mapping[tuple[int, float], Any], records: Sequence[Mapping[str, Any]],
                       seed: int) -> list[dict[str, Any]]:
    """The norm curves of one seed's grid, for :func:`nhtlab.book.lambda_grid`."""
    # a run not decided within its budget is drawn as the chart's "too early" (grey), not as a regime
    regime = {r["λ"]: TOO_EARLY if r["regime"].startswith("not decided") else r["regime"]
              for r in records if r["seed"] == seed}
    if not regime:
        raise ValueError(f"norm_curve_records: no run of seed {seed!r} in the records.")
    return [{"step": row["step"], "lambda": lam, "regime": regime[lam], "norm": row["norm"]}
            for (s, lam), monitor in sorted(monitors.items()) if s == seed for row in monitor.rows]


def monitor_dlr_check(row: Mapping[str, Any], recomputed: float, last_step: int, tol: float = 1e-9) -> Check:
    """Whether the monitor's last DLR is the DLR recomputed independently on the final model: it fails if the
    monitor hooked the wrong layer, read a stale model or missed the last step."""
    recorded = row.get("dlr")
    passed = (row.get("step") == last_step and recorded is not None
              and bool(np.isfinite(recorded)) and abs(recorded - recomputed) <= tol)
    gap = abs(recorded - recomputed) if recorded is not None else None
    detail = (f"monitor at step {row.get('step')} (last step {last_step}): DLR {recorded}; "
              f"recomputed from the model: {recomputed}; |difference| {gap} (tolerance {tol})")
    return Check("the monitor's DLR is the DLR of the read-out input", passed, detail)


def first_turn_answer(recipe: Sequence[Mapping[str, Any]], seed: int) -> tuple[str, tuple[str, ...], str]:
    """Which contracted first on a seed's shown run, the read-out or the total norm, as the answer to a prediction."""
    require_type(recipe, "recipe", (list, tuple), owner="first_turn_answer")
    row = next((r for r in recipe if r["seed"] == seed), None)
    if row is None:
        raise ValueError(f"The 'seed' parameter of first_turn_answer must be a seed of the recipe "
                         f"({[r['seed'] for r in recipe]}). Got {seed!r}.")

    def began(who: str, step: int | None) -> str:
        return f"{who} never contracted" if step is None else f"{who} contracted from step {step:,}"

    what = ("the run never fitted its training set, so no turn is read (a fall before a fit is the "
            "initialisation settling, not an escape)") if row["head"] == NOT_READ else (
        f"{began('the read-out', row['head contracting from step'])} and "
        f"{began('the total norm', row['norm contracting from step'])}")
    why = (f"on the shown run (seed {seed}, λ = {row['shown λ']:g}) {what}; "
           "by seed: " + ", ".join(f"seed {r['seed']}: {_FIRST_TURN[r['head']]}" for r in recipe))
    return _FIRST_TURN[row["head"]], FIRST_TURN_CHOICES, why


#: The choices of :func:`largest_fit_answer`.
FIT_CHOICES = ("fits", "does not fit")


def largest_fit_answer(records: Sequence[Mapping[str, Any]], seed: int, fit: float) -> tuple[str, tuple[str, ...], str]:
    """Whether the run at the grid's largest λ reached the fit threshold in its budget, as the answer to a prediction."""
    last = {s: runs[-1] for s, runs in _by_seed(records).items()}
    if seed not in last:
        raise ValueError(f"The 'seed' parameter of largest_fit_answer must be a seed of the records "
                         f"({sorted(last)}). Got {seed!r}.")
    answers = {s: FIT_CHOICES[run["fitted step"] is None] for s, run in last.items()}
    run = last[seed]
    why = (f"at λ = {run['λ']:g} (seed {seed}) the training accuracy ended at {run['train acc']:.3f} against the "
           f"fit threshold {fit:.3f}; by seed: " + ", ".join(f"seed {s}: {a}" for s, a in answers.items()))
    return answers[seed], FIT_CHOICES, why


def contraction_sentence(record: Mapping[str, Any]) -> str:
    """The shown run's norm contraction in words, for the chart whose ‖θ‖² axis does not start at zero."""
    return (f"‖θ‖² peaked at {record['norm peak']:,.1f} (step {record['norm peak step']:,}) and ended "
            f"{record['norm contraction']:.1%} below its peak; the panel's axis does not start at zero, so the fall "
            "looks larger than it is.")


def grid_evidence(records: Sequence[Mapping[str, Any]], recipe: Sequence[Mapping[str, Any]]) -> str:
    """Every run of the grid and the recipe in every seed, closed under "How we know" (:func:`nhtlab.book.evidence`)."""
    runs = table(records, columns=["seed", "λ", "online regime", "budget × ηλ", "regime", "norm peak",
                                   "norm contraction", "fitted step", "head contracting from step",
                                   "norm contracting from step", "dlr", "train acc", "test acc"],
                 formats={"budget × ηλ": "{:.3g}", "norm peak": "{:,.1f}", "norm contraction": "{:.1%}",
                          **dict.fromkeys(["fitted step", "head contracting from step", "norm contracting from step"],
                                          "{:,}"),
                          **dict.fromkeys(["dlr", "train acc", "test acc"], "{:.3f}")})
    chosen = table(recipe, columns=["seed", "chosen λ", "test acc", "weakest λ", "weakest test acc", "best λ",
                                    "best test acc", "verdict", "shown λ", "head"],
                   formats=dict.fromkeys(["test acc", "weakest test acc", "best test acc"], "{:.3f}"))
    return evidence("every run of the grid, and the recipe in every seed",
                    "Every run (contracting steps counted from the step the run fitted):", runs,
                    "The recipe per seed, the best λ of the whole grid beside it, and the run shown in detail:",
                    chosen)


def forecast_verdicts() -> dict[str, Any]:
    """The saved ETA evaluations found, how many ``shipped`` the ETA, and the off-grid ones' ``offers`` (in words)."""
    found = {name: v for name, profile, off_grid in
             (("held-out seeds", "full", False), ("companion transformer", "book", True),
              ("MLP, full batch", "mlp_full_batch", True), ("MLP, minibatches", "mlp_minibatch", True))
             if (v := saved_evaluation(profile, off_grid)) is not None}
    return {"evaluations": len(found), "shipped": sum(bool(v["verdict"]["passed"]) for v in found.values()),
            "offers": {k: _METHOD_NAMES.get(v["verdict"].get("offer"), "none") for k, v in found.items()
                       if v.get("design") == "off-grid"}}


#: The off-grid records a chapter renders, with the heading each gets.
_OFF_GRID_MODELS = {"book": "The companion transformer on Z_97", "mlp_full_batch": "The MLP on Z_47, full batch",
                    "mlp_minibatch": "The MLP on Z_47, minibatches"}


def off_grid_section(model: str) -> str:
    """One saved off-grid ETA record under its heading (:func:`nhtlab.book.eta_report`), for the evidence page."""
    if model not in _OFF_GRID_MODELS:
        raise ValueError(f"The 'model' parameter of off_grid_section must be one of {list(_OFF_GRID_MODELS)}. "
                         f"Got {model!r}.")
    return f"### {_OFF_GRID_MODELS[model]}\n\n{eta_report(model, off_grid=True)}"


def _ships(passed: bool) -> str:
    return "ships" if passed else "does not ship"


def eta_record_checks(models: Sequence[str]) -> list[Check]:
    """The evidence page's claims: each saved verdict, recomputed from its record's own forecasts, is the saved one
    (a missing record fails), and no ETA shipped."""
    checks, shipped = [], []
    held, name = saved_evaluation("full"), "held-out seeds: the saved verdict follows from the saved forecasts"
    if held is None:
        checks.append(Check(name, False, "no saved record"))
    else:
        again = eta_verdict(held["eta"])
        same = again.passed == held["verdict"]["passed"] and again.detail == held["verdict"]["detail"]
        checks.append(Check(name, same, f"recomputed: {_ships(again.passed)} ({again.detail})"))
        shipped.append(("held-out seeds", held["verdict"]["passed"]))
    for model in models:
        saved = saved_evaluation(model, off_grid=True)
        name = f"{_OFF_GRID_MODELS.get(model, model)}: the saved verdicts follow from the saved forecasts"
        if saved is None:
            checks.append(Check(name, False, "no saved record"))
            continue
        parts, same = [], True
        for method, key in (("eta", "verdict"), ("loss_rise", "verdict_loss_rise")):
            again = off_grid_verdict(saved["rows"], coverage=saved["stated_coverage"], method=method)
            same &= all(again.record()[k] == saved[key][k] for k in ("passed", "detail", "offer"))
            parts.append(f"{method}: {_ships(again.passed)}, offer {again.offer}")
        checks.append(Check(name, same, "recomputed: " + "; ".join(parts)))
        shipped.append((model, saved["verdict"]["passed"]))
    checks.append(Check("no evaluation shipped the ETA", not any(p for _, p in shipped),
                        ", ".join(f"{m}: {_ships(p)}" for m, p in shipped)))
    return checks
