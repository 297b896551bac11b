"""What a run kind's shortcut is and how its events are read, so a scorecard needs no domain names.

The NHT paper scores the same six predictions on domains whose shortcuts differ: on modular
arithmetic the shortcut is the memorised table (fitted at T_mem, dropped at T_grok); on shortcut
images it is the border (fitted and dropped as :func:`nhtlab.analysis.events.border_times` reads
them). :func:`domain_of` maps a run to the :class:`Domain` that knows these facts for its kind.

>>> from nhtlab.training.shortcut_run import ShortcutRun
>>> from nhtlab.training.modular_run import ModularRun
>>> domain_of(ModularRun(p=7)).num_classes, domain_of(ModularRun(p=7)).worst_column
(7, 'test_acc')
>>> domain_of(ShortcutRun()).worst_column
'conflict_acc'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.events import border_times, find_events
from ..analysis.layers import contraction_order
from ..analysis.regimes import diagnose_regime
from .claims import Check
from ..analysis.scorecard import score_predictions
from ..analysis.separation import Separation, separation_from_history
from .shortcut_report import border_record, norm_record
from ..history import History
from ..thresholds import CONTRACTION_DROP, SHORTCUT_FITTED_ACCURACY
from ..validation import require_real, require_type
from ..training.shortcut_run import ShortcutRun
from ..training.loop import TrainConfig
from ..training.monitor import online_regime
from ..training.modular_run import ModularRun

__all__ = ["Domain", "MemorisationDomain", "BorderDomain", "domain_of", "score_runs",
           "sweep_records"]

#: Classes of the image bases a :class:`~nhtlab.training.shortcut_run.ShortcutRun` trains on.
IMAGE_CLASSES = {"digits": 10, "cifar10": 10, "celeba": 2}


@dataclass(frozen=True)
class Domain:
    """The facts a scorecard reads off one run kind (subclasses define how its events are found)."""

    shortcut: str
    num_classes: int
    worst_column: str

    def times(self, history: History) -> tuple[int | None, int | None]:
        """(step the shortcut is fitted, step it is dropped), None where it never happened."""
        raise NotImplementedError

    def regime(self, history: History) -> str:
        """The run's regime (weak, intermediate, strong, or an unjudged label)."""
        raise NotImplementedError

    def separation(self, history: History) -> Separation:
        """The clean-norm-separation score of the run, from the step the shortcut is fitted."""
        raise NotImplementedError

    def delay(self, history: History) -> int | None:
        """Steps from fitting the shortcut to dropping it (T_grok − T_mem), None when either is missing."""
        fitted, dropped = self.times(history)
        return None if fitted is None or dropped is None else dropped - fitted


@dataclass(frozen=True)
class MemorisationDomain(Domain):
    """A modular-arithmetic run: the memorised table is the shortcut (T_mem, T_grok; regimes by diagnose_regime)."""

    def times(self, history: History) -> tuple[int | None, int | None]:
        ev = find_events(history)
        return ev.t_mem, ev.t_grok

    def regime(self, history: History) -> str:
        return diagnose_regime(history).regime

    def separation(self, history: History) -> Separation:
        return separation_from_history(history, self.num_classes, kind="generalisation")


@dataclass(frozen=True)
class BorderDomain(Domain):
    """A shortcut-image run: the cue is fitted and dropped as border_times reads it; regimes by online_regime."""

    fit: float = SHORTCUT_FITTED_ACCURACY
    drop: float = CONTRACTION_DROP

    def times(self, history: History) -> tuple[int | None, int | None]:
        return border_times(history)

    def regime(self, history: History) -> str:
        return online_regime(history.column("norm"), history.column("train_acc"), drop=self.drop, fit=self.fit)

    def separation(self, history: History) -> Separation:
        return separation_from_history(history, self.num_classes)


def domain_of(run: TrainConfig, fit: float = SHORTCUT_FITTED_ACCURACY) -> Domain:
    """The :class:`Domain` of a run kind: how its shortcut's events, regime and separation are read.

    ``fit`` is the training accuracy that counts as fitted in an image run's regime (the modular rule has its own).
    """
    require_real(fit, "fit", 0.0, 1.0, low_open=True, owner="domain_of")
    if isinstance(run, ModularRun):
        return MemorisationDomain("the memorised table", run.p, "test_acc")
    if isinstance(run, ShortcutRun):
        cue = {"border": "the border", "celeba": "blond hair"}.get(run.kind, "the tint")
        base = "celeba" if run.kind == "celeba" else run.base
        return BorderDomain(cue, IMAGE_CLASSES[base], "conflict_acc", fit=fit)
    raise TypeError(f"The 'run' parameter of domain_of must be a ModularRun or a ShortcutRun. "
                    f"Got {type(run).__name__}.")


def _history_of(histories: Mapping[TrainConfig, History], run: TrainConfig, owner: str) -> History:
    if run not in histories:
        raise ValueError(f"The 'histories' parameter of {owner} has no history for the run {run!r}.")
    return histories[run]


def score_runs(runs: Mapping[float, Sequence[TrainConfig]], histories: Mapping[TrainConfig, History],
               main: TrainConfig, fit: float = SHORTCUT_FITTED_ACCURACY) -> dict[str, Check]:
    """The six predictions of :func:`nhtlab.analysis.scorecard.score_predictions` for a λ sweep of one run kind.

    The regimes (P2) are read on the runs of ``main``'s seed, one per λ; the delays (P6) on every
    run; P1, P3, P4 and P5 on ``main``, whose shortcut counts as fitted and left as its
    :class:`Domain` reads it (P1 compares ‖θ‖² when it is fitted with ‖θ‖² at the end of the
    run, when it was dropped).
    """
    owner = "score_runs"
    require_type(runs, "runs", Mapping, owner=owner)
    domain = domain_of(main, fit)
    main_h = _history_of(histories, main, owner)
    fitted, dropped = domain.times(main_h)
    regimes = {lam: domain.regime(_history_of(histories, run, owner))
               for lam, seeds in runs.items() for run in seeds if run.seed == main.seed}
    delays = {lam: [domain.delay(_history_of(histories, run, owner)) for run in seeds] for lam, seeds in runs.items()}
    # P4 is chapter 05's reading: which layer contracts first over the shortcut's window
    order = contraction_order(main_h, window=(fitted, dropped))
    return score_predictions(
        main=main_h, regimes=regimes, shortcut_step=fitted,
        structured_step=int(main_h.rows[-1]["step"]) if dropped is not None else None,
        worst_column=domain.worst_column, order=order, separation=domain.separation(main_h), delays=delays)


def sweep_records(runs: Mapping[Any, TrainConfig], histories: Mapping[TrainConfig, History], key: str = "λ",
                  fit: float = SHORTCUT_FITTED_ACCURACY, **constants: Any) -> list[dict[str, Any]]:
    """One table record per run of a shortcut-image sweep: the swept value, its regime, events and accuracies."""
    require_type(runs, "runs", Mapping, owner="sweep_records")
    out = []
    for value, run in runs.items():
        h = _history_of(histories, run, "sweep_records")
        out.append({**constants, key: value, "regime": domain_of(run, fit).regime(h), **border_record(h),
                    **norm_record(h)})
    return out
