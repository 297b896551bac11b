"""Shortcut-image runs as records: the border's events, final accuracies, readings over seeds and checks.

Qualitative readings (the border dropped or kept, a ρ trend, one normalisation above another) are
stated only over seeds (:func:`nhtlab.book.claims.over_seeds`). The pilot grid that chose the border
design is kept as a small JSON file in the same row format (:func:`pilot_row`).

>>> rows = [dict(step=s, cue_acc=c, conflict_acc=d, norm=n) for s, c, d, n in
...         [(0, 0.1, 0.1, 5.0), (100, 0.6, 0.2, 8.0), (200, 0.3, 0.4, 7.0), (300, 0.1, 0.7, 6.0)]]
>>> border_reading(History(rows))
'dropped'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..history import History
from ..validation import require_real, require_type
from .claims import Check, check_reading, over_seeds
from ..analysis.events import border_times
from ..analysis.separation import Separation, format_score

__all__ = ["RECORD_COLUMNS", "RECORD_FORMATS", "SET_LABELS", "BORDER_READINGS", "border_record", "norm_record", "border_reading", "higher_reading",
           "rho_drop", "rho_reading", "final_accuracy_records", "separation_records",
           "check_border_escape", "check_rho_trend", "check_separation_defined", "pilot_row", "write_pilot",
           "read_pilot", "PILOT_COLUMNS", "REGIME_BUDGET"]

#: The test sets whose final accuracy a record reports (``<name>_acc`` columns of a shortcut run).
ACCURACIES = ("train", "clean", "conflict", "shortcut")

#: The columns of :func:`border_record` a chapter's tables show, and their formats (for :func:`nhtlab.book.table`).
RECORD_COLUMNS = ("fitted at", "dropped at", "conflict min", *ACCURACIES)
RECORD_FORMATS = {name: "{:.2f}" for name in ("conflict min", *ACCURACIES)}

#: Accuracy columns of a shortcut run → their labels in a chart of final accuracies.
SET_LABELS = {"train_acc": "train", "clean_acc": "clean", "conflict_acc": "conflict (worst group)",
              "cue_acc": "follows the border", "shortcut_acc": "border alone"}

#: Steps, in units of 1/(ηλ), a run must last before a regime that rests on something *not* happening
#: (weak: the norm never contracts; strong: the training set is never fitted) is stated: chapter 01's
#: panel budget (4,000 steps at ηλ = 10⁻³), fixed before chapter 06's runs.
REGIME_BUDGET = 4.0

#: What :func:`border_reading` can say of a run.
BORDER_READINGS = ("dropped", "kept", "never fitted")


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
    """Where ‖θ‖² peaked and how far it contracted by the end of the run.

    Examples
    --------
    >>> norm_record(History([{"step": 0, "norm": 2.0}, {"step": 100, "norm": 4.0}, {"step": 200, "norm": 3.0}]))
    {'norm peak step': 100, 'norm peak': 4.0, 'norm end': 3.0, 'contraction': 0.25}
    """
    history = _history(history, "norm_record")
    norm = history.column("norm")
    k = int(np.nanargmax(norm))
    peak, end = float(norm[k]), float(norm[-1])
    return {"norm peak step": int(history.column("step")[k]), "norm peak": peak, "norm end": end,
            "contraction": max(0.0, 1.0 - end / peak) if peak > 0 else 0.0}


def border_reading(history: History) -> str:
    """Whether the run fitted the border and then dropped it: one of :data:`BORDER_READINGS`.

    ``"dropped"``: fitted, then the digit read on half the conflict images.
    """
    fitted, dropped = border_times(_history(history, "border_reading"))
    if fitted is None:
        return "never fitted"
    return "kept" if dropped is None else "dropped"


def higher_reading(histories: Mapping[str, History], column: str) -> str:
    """Which of two runs ends higher on ``column``: ``"<name> higher"``, or ``"tie"``."""
    require_type(histories, "histories", Mapping, owner="higher_reading")
    if len(histories) != 2:
        raise ValueError(f"The 'histories' parameter of higher_reading must hold exactly two runs. "
                         f"Got {len(histories)}: {list(histories)}.")
    (a, ha), (b, hb) = histories.items()
    va = float(_history(ha, "higher_reading").column(column)[-1])
    vb = float(_history(hb, "higher_reading").column(column)[-1])
    return "tie" if va == vb else f"{a if va > vb else b} higher"


def rho_drop(low: History, high: History, column: str = "conflict_acc") -> float:
    """How far the final ``column`` accuracy falls from the lowest-ρ run to the highest (positive: more reliance)."""
    return float(_history(low, "rho_drop").column(column)[-1] - _history(high, "rho_drop").column(column)[-1])


def rho_reading(low: History, high: History, margin: float = 0.2) -> str:
    """``"falls"`` when the worst-group accuracy falls by more than ``margin`` from low to high ρ."""
    require_real(margin, "margin", 0.0, 1.0, low_open=True, high_open=True, owner="rho_reading")
    return "falls" if rho_drop(low, high) > margin else "does not fall"


def final_accuracy_records(histories: Mapping[float, History], labels: Mapping[str, str],
                           x: str = "rho") -> list[dict[str, Any]]:
    """Long-form records of final accuracies against a swept value, for a line chart."""
    require_type(labels, "labels", Mapping, owner="final_accuracy_records")
    return [{x: value, "series": label, "value": float(_history(h, "final_accuracy_records").rows[-1][col])}
            for value, h in histories.items() for col, label in labels.items()]


def separation_records(separations: Mapping[str, Separation]) -> list[dict[str, Any]]:
    """Separation scores per domain as records, for a table and for :func:`nhtlab.book.score_bars`.

    The score text reads "undefined" for a NaN score.
    """
    require_type(separations, "separations", Mapping, owner="separation_records")
    out = []
    for domain, sep in separations.items():
        require_type(sep, f"separations[{domain!r}]", Separation, owner="separation_records")
        out.append({"domain": domain, **sep.to_dict(), "score text": format_score(sep)})
    return out


def check_border_escape(by_seed: Mapping[int, History], rule: str = "majority") -> Check:
    """The border is fitted and later dropped (:func:`border_reading` is ``"dropped"``) over seeds.

    Fails too when no seed was run.
    """
    require_type(by_seed, "by_seed", Mapping, owner="check_border_escape")
    reading = over_seeds("the border is fitted, then dropped",
                         {s: border_reading(h) for s, h in by_seed.items()}, expected="dropped", rule=rule)
    return check_reading(reading)


def check_rho_trend(low: Mapping[int, History], high: Mapping[int, History], margin: float = 0.2,
                    rule: str = "majority") -> Check:
    """The worst-group accuracy at the end falls by more than ``margin`` from the lowest ρ to the highest."""
    require_type(low, "low", Mapping, owner="check_rho_trend")
    require_type(high, "high", Mapping, owner="check_rho_trend")
    if set(low) != set(high):
        raise ValueError(f"The 'low' and 'high' parameters of check_rho_trend must hold the same seeds. "
                         f"Got {sorted(low)} and {sorted(high)}.")
    reading = over_seeds(f"worst-group accuracy falls by more than {margin:g} from low to high ρ",
                         {s: rho_reading(low[s], high[s], margin) for s in low}, expected="falls", rule=rule)
    falls = ", ".join(f"seed {s}: {rho_drop(low[s], high[s]):.2f}" for s in low)
    check = check_reading(reading)
    return Check(check.name, check.passed, f"{check.detail}; falls by {falls}")


def check_separation_defined(by_seed: Mapping[int, Separation], rule: str = "majority") -> Check:
    """The separation score is defined (the shortcut was fitted and the window moved) over seeds."""
    require_type(by_seed, "by_seed", Mapping, owner="check_separation_defined")
    for s, sep in by_seed.items():
        require_type(sep, f"by_seed[{s!r}]", Separation, owner="check_separation_defined")
    reading = over_seeds("the separation score is defined",
                         {s: "defined" if sep.defined else "undefined" for s, sep in by_seed.items()},
                         expected="defined", rule=rule)
    scores = ", ".join(f"seed {s}: {format_score(sep)}" for s, sep in by_seed.items())
    return Check(reading.name, reading.holds, f"{reading.text()}; scores {scores}")


#: The columns of a pilot-grid row (:func:`pilot_row`), in order.
PILOT_COLUMNS = ("otherwise", "task", "contrast", "rho", "lam", "seed", "fitted", "dropped", "conflict min",
                 "conflict end", "clean end", "train end", "norm peak", "norm end")


def pilot_row(history: History, setting: Mapping[str, Any]) -> dict[str, Any]:
    """One pilot-grid run as a row of :data:`PILOT_COLUMNS`: its setting, the border's events, final values."""
    require_type(setting, "setting", Mapping, owner="pilot_row")
    record, norms = border_record(history), norm_record(history)
    row = {**{k: setting.get(k) for k in PILOT_COLUMNS[:6]}, "fitted": record["fitted at"],
           "dropped": record["dropped at"], "conflict min": round(record["conflict min"], 2),
           "conflict end": round(record["conflict"], 2), "clean end": round(record["clean"], 2),
           "train end": round(record["train"], 2), "norm peak": round(norms["norm peak"]),
           "norm end": round(norms["norm end"])}
    return row


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
    """Read a pilot-grid file written by :func:`write_pilot`, by default the one saved with nhtlab.

    Package data (``nhtlab/results/pilot_shortcuts.json``), so that a chapter opened in Colab reads it too.
    """
    if path is None:
        path = resources.files("nhtlab") / "results" / "pilot_shortcuts.json"
    data = json.loads(Path(os.fspath(path)).read_text(encoding="utf-8"))
    if set(data) != {"about", "columns", "rows"} or data["columns"] != list(PILOT_COLUMNS):
        raise ValueError(f"{os.fspath(path)} is not a pilot-grid file: it needs 'about', 'columns' (equal to "
                         f"{list(PILOT_COLUMNS)}) and 'rows'.")
    return data["about"], data["rows"]
