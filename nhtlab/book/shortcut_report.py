"""Shortcut-image runs as records (the border's events, final accuracies, readings over seeds, checks) and the
scorecard as the book shows it: the six predictions per domain, each read over seeds.

Qualitative readings are stated only over seeds; the pilot grid that chose the border design is a JSON file.
The NHT paper scores its predictions on domains whose shortcuts differ: the memorised table of modular arithmetic
(T_mem, T_grok), an image's border (:func:`~nhtlab.analysis.events.border_times`). :func:`domain_of` maps a run
to the :class:`Domain` that knows its kind's. The rules are the core's (:mod:`nhtlab.analysis.scorecard`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.events import border_times, find_events
from ..analysis.layers import contraction_order
from ..analysis.regimes import diagnose_regime
from ..analysis.scorecard import score_predictions
from ..analysis.separation import Separation, format_score, separation_from_history
from ..history import History
from ..thresholds import SHORTCUT_FITTED_ACCURACY
from ..training.loop import TrainConfig
from ..training.modular_run import ModularRun
from ..training.monitor import online_regime
from ..training.shortcut_run import ShortcutRun
from ..validation import require_real, require_type
from .claims import Check, Reading, check_reading, over_seeds

__all__ = ["RECORD_COLUMNS", "RECORD_FORMATS", "SET_LABELS", "border_record", "norm_record", "border_reading",
           "rho_drop", "rho_reading", "final_accuracy_records", "separation_records",
           "check_border_escape", "check_rho_trend", "check_separation_defined", "pilot_row", "write_pilot",
           "read_pilot", "PILOT_COLUMNS", "REGIME_BUDGET", "Domain", "domain_of",
           "score_runs", "sweep_records", "scorecard_rows", "prediction_readings", "sweep_checks"]

#: The test sets whose final accuracy a record reports (``<name>_acc`` columns of a shortcut run).
ACCURACIES = ("train", "clean", "conflict", "shortcut")

#: The columns of :func:`border_record` a chapter's tables show, and their formats (for :func:`nhtlab.book.table`).
RECORD_COLUMNS = ("fitted at", "dropped at", "conflict min", *ACCURACIES)
RECORD_FORMATS = {name: "{:.2f}" for name in ("conflict min", *ACCURACIES)}

#: Accuracy columns of a shortcut run → their labels in a chart of final accuracies.
SET_LABELS = {"train_acc": "train", "clean_acc": "clean", "conflict_acc": "conflict (worst group)",
              "cue_acc": "follows the border", "shortcut_acc": "border alone"}

#: Steps, in units of 1/(ηλ), a run must last before a regime resting on something *not* happening (weak, strong)
#: is stated: chapter 01's panel budget (4,000 steps at ηλ = 10⁻³), fixed before chapter 06's runs.
REGIME_BUDGET = 4.0


def _history(history: Any, owner: str) -> History:
    require_type(history, "history", History, owner=owner)
    if len(history) == 0:
        raise ValueError(f"The 'history' parameter of {owner} is empty: it has no evaluated step.")
    return history


def border_record(history: History) -> dict[str, Any]:
    """One shortcut run as a table record: the border's events and the final accuracies."""
    history = _history(history, "border_record")
    fitted, dropped = border_times(history)
    last = history.rows[-1]
    return {"fitted at": fitted, "dropped at": dropped,
            "conflict min": float(history.column("conflict_acc").min()),
            **{name: float(last[f"{name}_acc"]) for name in ACCURACIES}}


def norm_record(history: History) -> dict[str, Any]:
    """Where ‖θ‖² peaked and how far it contracted by the end of the run."""
    history = _history(history, "norm_record")
    norm = history.column("norm")
    k = int(np.nanargmax(norm))
    peak, end = float(norm[k]), float(norm[-1])
    return {"norm peak step": int(history.column("step")[k]), "norm peak": peak, "norm end": end,
            "contraction": max(0.0, 1.0 - end / peak) if peak > 0 else 0.0}


def border_reading(history: History) -> str:
    """``"dropped"`` (fitted, then the digit read on half the conflict images), ``"kept"`` or ``"never fitted"``."""
    fitted, dropped = border_times(_history(history, "border_reading"))
    if fitted is None:
        return "never fitted"
    return "kept" if dropped is None else "dropped"


def rho_drop(low: History, high: History) -> float:
    """How far the final worst-group accuracy falls from the lowest-ρ run to the highest (positive: more reliance)."""
    return float(_history(low, "rho_drop").column("conflict_acc")[-1]
                 - _history(high, "rho_drop").column("conflict_acc")[-1])


def rho_reading(low: History, high: History, margin: float = 0.2) -> str:
    """``"falls"`` when the worst-group accuracy falls by more than ``margin`` from low to high ρ."""
    require_real(margin, "margin", 0.0, 1.0, low_open=True, high_open=True, owner="rho_reading")
    return "falls" if rho_drop(low, high) > margin else "does not fall"


def final_accuracy_records(histories: Mapping[float, History], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Long-form records of final accuracies against ρ, for a line chart."""
    return [{"rho": value, "series": label, "value": float(_history(h, "final_accuracy_records").rows[-1][col])}
            for value, h in histories.items() for col, label in labels.items()]


def separation_records(separations: Mapping[str, Separation]) -> list[dict[str, Any]]:
    """Separation scores per domain as records (score text "undefined" for NaN), for a table and score_bars."""
    return [{"domain": domain, **sep.to_dict(), "score text": format_score(sep)} for domain, sep in separations.items()]


def check_border_escape(by_seed: Mapping[int, History], rule: str = "majority") -> Check:
    """The border is fitted and later dropped (:func:`border_reading`) over seeds; fails when no seed was run."""
    reading = over_seeds("the border is fitted, then dropped",
                         {s: border_reading(h) for s, h in by_seed.items()}, expected="dropped", rule=rule)
    return check_reading(reading)


def check_rho_trend(low: Mapping[int, History], high: Mapping[int, History], margin: float = 0.2) -> Check:
    """The worst-group accuracy at the end falls by more than ``margin`` from the lowest ρ to the highest."""
    if set(low) != set(high):
        raise ValueError(f"The 'low' and 'high' parameters of check_rho_trend must hold the same seeds. "
                         f"Got {sorted(low)} and {sorted(high)}.")
    reading = over_seeds(f"worst-group accuracy falls by more than {margin:g} from low to high ρ",
                         {s: rho_reading(low[s], high[s], margin) for s in low}, expected="falls")
    falls = ", ".join(f"seed {s}: {rho_drop(low[s], high[s]):.2f}" for s in low)
    check = check_reading(reading)
    return Check(check.name, check.passed, f"{check.detail}; falls by {falls}")


def check_separation_defined(by_seed: Mapping[int, Separation]) -> Check:
    """The separation score is defined (the shortcut was fitted and the window moved) over seeds."""
    reading = over_seeds("the separation score is defined",
                         {s: "defined" if sep.defined else "undefined" for s, sep in by_seed.items()},
                         expected="defined")
    scores = ", ".join(f"seed {s}: {format_score(sep)}" for s, sep in by_seed.items())
    return Check(reading.name, reading.holds, f"{reading.text()}; scores {scores}")


#: The columns of a pilot-grid row (:func:`pilot_row`), in order.
PILOT_COLUMNS = ("otherwise", "task", "contrast", "rho", "lam", "seed", "fitted", "dropped", "conflict min",
                 "conflict end", "clean end", "train end", "norm peak", "norm end")


def pilot_row(history: History, setting: Mapping[str, Any]) -> dict[str, Any]:
    """One pilot-grid run as a row of :data:`PILOT_COLUMNS`: its setting, the border's events, final values."""
    record, norms = border_record(history), norm_record(history)
    return {**{k: setting.get(k) for k in PILOT_COLUMNS[:6]}, "fitted": record["fitted at"],
            "dropped": record["dropped at"], "conflict min": round(record["conflict min"], 2),
            **{f"{k} end": round(record[k], 2) for k in ("conflict", "clean", "train")},
            "norm peak": round(norms["norm peak"]), "norm end": round(norms["norm end"])}


def write_pilot(path: str | os.PathLike, rows: Sequence[Mapping[str, Any]], about: Mapping[str, Any]) -> Path:
    """Write pilot-grid rows and what produced them to a JSON file (the format :func:`read_pilot` reads)."""
    require_type(about, "about", Mapping, owner="write_pilot")
    missing = [k for k in ("machine", "nhtlab", "command") if k not in about]
    if missing:
        raise ValueError(f"The 'about' parameter of write_pilot must say {missing}. Got keys {list(about)}.")
    path = Path(path)
    data = {"about": dict(about), "columns": list(PILOT_COLUMNS),
            "rows": [{c: row.get(c) for c in PILOT_COLUMNS} for row in rows]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_pilot(path: str | os.PathLike | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a pilot-grid file written by :func:`write_pilot`, by default the one saved with nhtlab (package data)."""
    if path is None:
        path = resources.files("nhtlab") / "results" / "pilot_shortcuts.json"
    data = json.loads(Path(os.fspath(path)).read_text(encoding="utf-8"))
    if set(data) != {"about", "columns", "rows"} or data["columns"] != list(PILOT_COLUMNS):
        raise ValueError(f"{os.fspath(path)} is not a pilot-grid file: it needs 'about', 'columns' (equal to "
                         f"{list(PILOT_COLUMNS)}) and 'rows'.")
    return data["about"], data["rows"]


#: Classes of the image bases a :class:`~nhtlab.training.shortcut_run.ShortcutRun` trains on.
IMAGE_CLASSES = {"digits": 10, "cifar10": 10, "celeba": 2}


@dataclass(frozen=True)
class Domain:
    """The facts a scorecard reads off one run kind: a memorised table (modular arithmetic) or an image cue."""

    shortcut: str
    num_classes: int
    worst_column: str
    memorised: bool = False
    fit: float = SHORTCUT_FITTED_ACCURACY

    def times(self, history: History) -> tuple[int | None, int | None]:
        """(step the shortcut is fitted, step it is dropped): T_mem and T_grok, or :func:`border_times`."""
        if self.memorised:
            ev = find_events(history)
            return ev.t_mem, ev.t_grok
        return border_times(history)

    def regime(self, history: History) -> str:
        """The run's regime: :func:`diagnose_regime`'s for a memorised table, :func:`online_regime`'s for a cue."""
        if self.memorised:
            return diagnose_regime(history).regime
        return online_regime(history.column("norm"), history.column("train_acc"), fit=self.fit)

    def separation(self, history: History) -> Separation:
        """The clean-norm-separation score of the run, from the step the shortcut is fitted."""
        kind = "generalisation" if self.memorised else "shortcut"
        return separation_from_history(history, self.num_classes, kind=kind)

    def delay(self, history: History) -> int | None:
        """Steps from fitting the shortcut to dropping it (T_grok − T_mem), None when either is missing."""
        fitted, dropped = self.times(history)
        return None if fitted is None or dropped is None else dropped - fitted


def domain_of(run: TrainConfig, fit: float = SHORTCUT_FITTED_ACCURACY) -> Domain:
    """The :class:`Domain` of a run kind; ``fit`` is the training accuracy an image run's regime counts as fitted."""
    require_real(fit, "fit", 0.0, 1.0, low_open=True, owner="domain_of")
    if isinstance(run, ModularRun):
        return Domain("the memorised table", run.p, "test_acc", memorised=True)
    if isinstance(run, ShortcutRun):
        cue = {"border": "the border", "celeba": "blond hair"}.get(run.kind, "the tint")
        base = "celeba" if run.kind == "celeba" else run.base
        return Domain(cue, IMAGE_CLASSES[base], "conflict_acc", fit=fit)
    raise TypeError(f"The 'run' parameter of domain_of must be a ModularRun or a ShortcutRun. "
                    f"Got {type(run).__name__}.")


def _history_of(histories: Mapping[TrainConfig, History], run: TrainConfig, owner: str) -> History:
    if run not in histories:
        raise ValueError(f"The 'histories' parameter of {owner} has no history for the run {run!r}.")
    return histories[run]


def score_runs(runs: Mapping[float, Sequence[TrainConfig]], histories: Mapping[TrainConfig, History],
               main: TrainConfig, fit: float = SHORTCUT_FITTED_ACCURACY) -> dict[str, Check]:
    """The six predictions on a λ sweep of one run kind: P2 on ``main``'s seed, P6 on every run, the others on
    ``main`` as its :class:`Domain` reads it."""
    domain = domain_of(main, fit)
    main_h = _history_of(histories, main, "score_runs")
    fitted, dropped = domain.times(main_h)
    regimes = {lam: domain.regime(_history_of(histories, run, "score_runs"))
               for lam, seeds in runs.items() for run in seeds if run.seed == main.seed}
    delays = {lam: [domain.delay(_history_of(histories, run, "score_runs")) for run in seeds]
              for lam, seeds in runs.items()}
    # P4 is chapter 05's reading: which layer contracts first over the shortcut's window
    order = contraction_order(main_h, window=(fitted, dropped))
    return score_predictions(
        main=main_h, regimes=regimes, shortcut_step=fitted,
        structured_step=int(main_h.rows[-1]["step"]) if dropped is not None else None,
        worst_column=domain.worst_column, order=order, separation=domain.separation(main_h), delays=delays)


def sweep_records(runs: Mapping[Any, TrainConfig], histories: Mapping[TrainConfig, History], key: str = "λ",
                  fit: float = SHORTCUT_FITTED_ACCURACY, **constants: Any) -> list[dict[str, Any]]:
    """One table record per run of a shortcut-image sweep: the swept value, its regime, events and accuracies."""
    hists = {value: (run, _history_of(histories, run, "sweep_records")) for value, run in runs.items()}
    return [{**constants, key: value, "regime": domain_of(run, fit).regime(h), **border_record(h), **norm_record(h)}
            for value, (run, h) in hists.items()]


def scorecard_rows(scorecard: Mapping[str, Mapping[str, Check]]) -> list[dict[str, str]]:
    """One row per prediction, one column per domain, each cell "✓ number" or "✗ number"; a last ``"passed"`` row."""
    names = list(dict.fromkeys(name for row in scorecard.values() for name in row))
    rows = [{"prediction": name, **{domain: f"{'✓' if row[name].passed else '✗'} {row[name].detail}"
                                    for domain, row in scorecard.items() if name in row}} for name in names]
    rows.append({"prediction": "passed", **{domain: f"{sum(v.passed for v in row.values())}/{len(row)}"
                                            for domain, row in scorecard.items()}})
    return rows


def prediction_readings(cards: Mapping[int, Mapping[str, Check]],
                        names: Sequence[str] | None = None) -> list[Reading]:
    """Each prediction's verdict over seeds, ``"✓"`` expected (the paper's claim; shown, not asserted)."""
    if not cards:
        return []
    names = list(names) if names is not None else list(next(iter(cards.values())))
    return [over_seeds(name, {seed: "✓" if card[name].passed else "✗" for seed, card in cards.items()},
                       expected="✓") for name in names]


def sweep_checks(card: Mapping[str, Check]) -> list[Check]:
    """P2 and P6, read on one λ sweep (one seed per λ: no count over seeds), as checks a closing cell shows."""
    return [Check(f"{name} (one sweep)", card[name].passed, f"one sweep, 1 seed: {card[name].detail}", card[name].value)
            for name in ("P2 three regimes", "P6 delay scaling") if name in card]
