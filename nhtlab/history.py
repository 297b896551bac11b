"""What a run measured: :class:`History`, one row per evaluation.

The record every part of nhtlab reads (analysis, charts, the cache) without
importing the training loop that writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .validation import require_fractions, require_increasing, require_numbers, require_type

__all__ = ["History", "first_step_at_least", "require_history"]


@dataclass
class History:
    """What a run measured: one row per evaluation.

    Each row holds ``step``, ``lr``, ``<set>_loss`` and ``<set>_acc`` for every evaluation
    set, ``norm`` (‖θ‖²) and ``norm/<layer>`` (‖θ_ℓ‖²), plus whatever callbacks added.

    Attributes
    ----------
    rows : list of dict
    status : {"running", "completed", "stopped", "diverged"}
    message : str
        Why the run ended early, if it did.
    config : dict
        The training configuration and any extra settings the caller recorded.
    """

    rows: list[dict[str, float]] = field(default_factory=list)
    status: str = "running"
    message: str = ""
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Checked here, where a History is built, so that no analysis meets a row that is not a dict.
        if not isinstance(self.rows, list) or not all(isinstance(row, dict) for row in self.rows):
            raise TypeError(f"The 'rows' parameter of History must be a list of dicts (one per evaluation). "
                            f"Got {type(self.rows).__name__} {self.rows!r:.80} instead.")
        for name in ("status", "message"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"The {name!r} parameter of History must be a str. Got {getattr(self, name)!r} instead.")
        if not isinstance(self.config, dict):
            raise TypeError(f"The 'config' parameter of History must be a dict. Got {self.config!r:.80} instead.")

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.update(dict.fromkeys(row))
        return list(seen)

    @property
    def layers(self) -> list[str]:
        """Layer names, in the model's order."""
        return [c[len("norm/"):] for c in self.columns if c.startswith("norm/")]

    @property
    def diverged(self) -> bool:
        return self.status == "diverged"

    def column(self, name: str) -> np.ndarray:
        """One column as a float array (NaN where a row lacks it)."""
        if name not in self.columns:
            raise KeyError(f"History has no column {name!r}; columns are {self.columns}.")
        return np.array([row.get(name, np.nan) for row in self.rows], dtype=float)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.column(name)

    def to_records(self, columns: Sequence[str] | None = None, **constants: Any) -> list[dict[str, Any]]:
        """Rows as plain dicts (optionally only ``columns``), each extended by ``constants``."""
        keep = list(columns) if columns is not None else self.columns
        return [{**{c: row.get(c) for c in keep}, **constants} for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "status": self.status, "message": self.message, "config": self.config}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "History":
        return cls(rows=list(d["rows"]), status=d["status"], message=d["message"], config=dict(d["config"]))


def first_step_at_least(steps: Sequence[float] | np.ndarray, values: Sequence[float] | np.ndarray,
                        threshold: float) -> int | None:
    """First step whose value is ≥ threshold (NaN: not known, never), or None: nhtlab's one event finder.

    T_mem and T_grok of :func:`~nhtlab.analysis.events.find_events`, of
    :func:`~nhtlab.analysis.regimes.diagnose_regime` and the trainer's early stop all read a
    first crossing through it. It lives beside the record it reads, in the source the result
    cache's key hashes.

    >>> first_step_at_least([0, 50, 75], [0.1, float("nan"), 0.995], 0.99)
    75
    """
    hits = np.flatnonzero(np.asarray(values) >= threshold)
    return int(steps[hits[0]]) if hits.size else None


def require_history(history: Any, owner: str, norms: Iterable[str] = (), fractions: Iterable[str] = (),
                    finite: bool = False, layers: bool = False) -> History:
    """Raise unless ``history`` is a History an analysis can read: the one check where it enters the analysis.

    Steps increase strictly, in whole numbers; the ``norms`` columns (and every
    ``norm/<layer>`` when ``layers``) hold squared norms ≥ 0, finite when ``finite`` (a NaN
    norm marks a diverged run, which some readings report); the ``fractions`` columns hold
    accuracies in [0, 1], not percentages (NaN: not measured). A missing column is left to
    History's own KeyError.

    >>> h = History(rows=[{"step": 0, "norm": 1.0, "train_acc": 0.5}, {"step": 10, "norm": 2.0, "train_acc": 99.0}])
    >>> require_history(h, "f", norms=["norm"], fractions=["train_acc"])
    Traceback (most recent call last):
    ...
    ValueError: The 'history' parameter of f must hold fractions in [0, 1] (accuracies, not percentages). Got 99.0 instead.
    """
    require_type(history, "history", History, owner)
    if len(history) == 0:
        raise ValueError(f"The 'history' parameter of {owner} is empty: it has no evaluated step.")
    steps = require_increasing(history.column("step"), "history", owner)
    if not (np.isfinite(steps).all() and (steps == np.round(steps)).all()):
        raise ValueError(f"The 'history' parameter of {owner} must have whole-number steps. "
                         f"Got {steps[~(np.isfinite(steps) & (steps == np.round(steps)))][0]!r}.")
    columns = history.columns
    norms = [*norms, *([f"norm/{layer}" for layer in history.layers] if layers else [])]
    for column in dict.fromkeys(c for c in norms if c in columns):
        values = require_numbers(history.column(column), "history", owner)
        bad = ~np.isfinite(values) if finite else np.isinf(values)
        if bad.any():
            raise ValueError(f"The 'history' parameter of {owner} must hold finite squared norms; its column "
                             f"{column!r} has {values[bad][0]!r} at step {steps[bad][0]:g}.")
        if (values[~np.isnan(values)] < 0).any():
            raise ValueError(f"The 'history' parameter of {owner} must hold squared norms ≥ 0; its column "
                             f"{column!r} has {float(np.nanmin(values)):g}.")
    for column in fractions:
        if column in columns:
            require_fractions(history.column(column), "history", owner)
    return history
