"""Weight-decay regimes: weak, intermediate, strong, read off one training history after T_mem.

The NHT paper (Khanh & Hoa, arXiv 2603.07323) predicts three regimes in the
weight decay λ:

* **weak**: the network memorises and stays on its shortcut: after T_mem the
  squared norm ‖θ‖² keeps growing or stays flat, and the test accuracy stays low;
* **intermediate**: the network memorises, then ‖θ‖² contracts and the network
  generalises late (grokking);
* **strong**: the decay keeps the network from fitting its training set.

The paper says the norm "peaks then decays" in the intermediate regime. In the
companion setting (transformer, default init) ‖θ‖² is largest at
initialisation and falls from step 0, so the peak is step 0 for every λ and
says nothing; what separates the regimes is what the norm does *after* the
network has memorised. :func:`diagnose_regime` therefore reads everything from
T_mem on, with explicit, documented thresholds, in this order:

0. a run that diverged (``status == "diverged"``, lr·λ ≥ 1, or a non-finite ‖θ‖² or
   training loss in its history) is **diverged**: no regime is read off a broken run;
   a run without any recorded train or test accuracy is **undetermined**;
1. train accuracy never reaches ``fit_threshold`` within the budget → **strong**;
2. memorised and generalised (test accuracy ≥ ``generalise_threshold``), with a
   delay T_grok − T_mem ≥ ``min_delay`` steps and ‖θ‖² contracted by at least
   ``min_contraction`` between T_mem and T_grok → **intermediate**;
3. memorised, not generalised, and ‖θ‖² never fell more than ``min_contraction``
   below its value at T_mem → **weak**;
4. anything else → **undetermined**, with the reason: a run that generalised
   without a delay or without its norm contracting (no shortcut phase to speak
   of), or one whose norm is contracting when the budget ends without having
   generalised yet (a transition possibly under way), or ‖θ‖² = 0 at T_mem. Such runs are shown, never
   forced into a regime, and the order checks skip them.

"Within the budget" always applies: a run called strong because it had not
memorised after 3,000 steps may memorise later (the companion's λ = 2 memorises
after about 21,000 steps). :func:`within_budget` turns that into a rule: a verdict
other than intermediate is given only when the run's budget reaches one fixed before
the run, scaled as 1/(ηλ) (the decay's time scale); a shorter run is
**not decided**.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..history import History, require_history
from ..thresholds import FITTED_ACCURACY
from ..validation import require_int, require_real, require_type
from .events import Events, find_events, first_step_at_least

__all__ = ["fit_threshold", "REGIMES", "UNDETERMINED", "TOO_EARLY", "DIVERGED", "NOT_DECIDED", "UNJUDGED", "is_diverged", "Regime",
           "diagnose_regime", "regime_order_ok", "regime_table", "within_budget", "budget_regime"]

#: The three regimes, in the order of increasing λ: nhtlab's only list of them (the online
#: :func:`nhtlab.training.monitor.online_regime` returns these too).
REGIMES = ("weak", "intermediate", "strong")
#: The label of a run that fits none of the three regimes' definitions (rule 4).
UNDETERMINED = "undetermined"
#: The online monitor's label for a run with too few records to judge.
TOO_EARLY = "too early"
#: The label of a run that diverged (rule 0): a broken run gets no verdict.
DIVERGED = "diverged"
#: The label of a run whose budget is too short for the verdict it would need (:func:`within_budget`):
#: a run that has not grokked can only be called weak or strong after the time its λ's decay needs.
NOT_DECIDED = "not decided"
#: Labels that judge nothing: the order checks (:func:`regime_order_ok`) skip them.
UNJUDGED = (TOO_EARLY, UNDETERMINED, DIVERGED, NOT_DECIDED)


def is_diverged(history: History) -> str | None:
    """Why ``history`` is a broken run, or None when it is not.

    A run is broken when its status is ``"diverged"`` (:func:`nhtlab.training.loop.train`
    stops at the first non-finite loss or norm), when its config has lr·λ ≥ 1 (the decay
    alone overshoots zero), or when a recorded ‖θ‖² or training loss is NaN or infinite
    (a history recorded by another loop, e.g. :class:`nhtlab.Monitor`).

    Examples
    --------
    >>> is_diverged(History(rows=[{"step": 0, "norm": 1.0}, {"step": 10, "norm": float("nan")}]))
    '‖θ‖² is not finite from step 10'
    """
    require_type(history, "history", History, owner="is_diverged")
    if history.status == "diverged":
        return history.message or "the run diverged"
    lr, lam = history.config.get("lr"), history.config.get("weight_decay")
    if isinstance(lr, (int, float)) and isinstance(lam, (int, float)) and lr * lam >= 1:
        return f"lr·λ = {lr * lam:g} ≥ 1: the decay alone flips or zeroes θ at each step"
    for name, label in (("norm", "‖θ‖²"), ("train_loss", "the training loss")):
        # rows that lack the reading (a Monitor's step-0 row has no loss) are not evidence of divergence
        bad = [r["step"] for r in history.rows if name in r and not np.isfinite(float(r[name]))]
        if bad:
            return f"{label} is not finite from step {int(bad[0])}"
    return None


@dataclass
class Regime:
    """The diagnosis of one run: its ``regime``, and the rule that decided in words (``reason``).

    ``memorised``/``generalised``: train/test accuracy reached its threshold; ``contraction`` is
    1 − min ‖θ‖² / ‖θ‖²(T_mem) and ``growth`` max ‖θ‖² / ‖θ‖²(T_mem) − 1, both from T_mem to T_grok (to the
    run's end when it never generalised), None when never memorised; ``events`` is None for a diverged
    run with no finite ‖θ‖².
    """

    regime: str
    memorised: bool
    generalised: bool
    contraction: float | None
    growth: float | None
    reason: str
    events: Events | None


def fit_threshold(noise: float, classes: int, margin: float = 0.9) -> float:
    """The training accuracy that counts as fitted when a fraction of the labels is random.

    A perfect reader of the inputs scores ``(1 − noise) + noise / classes`` on the noisy labels (a random
    label is right one time in ``classes``); going beyond it means memorising wrong labels. Pass the result
    as :func:`diagnose_regime`'s ``fit_threshold``.

    Parameters
    ----------
    noise : float in [0, 1]
        Share of the training labels drawn at random.
    classes : int ≥ 2
    margin : float in (0, 1]
        A run counts as fitted within this share of the ceiling.

    Returns
    -------
    float

    Examples
    --------
    >>> fit_threshold(0.3, classes=10)
    0.657
    """
    require_real(noise, "noise", 0.0, 1.0, owner="fit_threshold")
    require_real(margin, "margin", 0.0, 1.0, low_open=True, owner="fit_threshold")
    require_int(classes, "classes", low=2, owner="fit_threshold")
    return round(margin * ((1 - noise) + noise / classes), 12)


def diagnose_regime(
    history: History,
    fit_threshold: float = FITTED_ACCURACY,
    generalise_threshold: float = FITTED_ACCURACY,
    min_contraction: float = 0.2,
    min_delay: int = 200,
) -> Regime:
    """Classify a run as weak, intermediate, strong, undetermined or diverged (rules in the module docstring).

    Parameters
    ----------
    history : History
        Needs ``step``, ``train_acc``, ``test_acc`` and ``norm`` columns.
    fit_threshold : float in (0, 1], default :data:`~nhtlab.thresholds.FITTED_ACCURACY`
        Train accuracy that counts as memorised (the companion's T_mem threshold).
    generalise_threshold : float in (0, 1], default :data:`~nhtlab.thresholds.FITTED_ACCURACY`
        Test accuracy that counts as generalised (the companion's T_grok threshold).
    min_contraction : float in [0, 1), default 0.2
        Least fall of ‖θ‖² below its value at T_mem that counts as "contracted".
        The companion's runs contract by 70–85% between T_mem and T_grok; a
        weak run drifts by a few percent.
    min_delay : int ≥ 0, default 200
        Least T_grok − T_mem, in steps, that counts as a delayed transition (one
        evaluation interval of the companion's code).

    Returns
    -------
    Regime
    """
    require_history(history, "diagnose_regime", norms=["norm"], fractions=("train_acc", "test_acc"))
    require_real(fit_threshold, "fit_threshold", 0.0, 1.0, low_open=True, owner="diagnose_regime")
    require_real(generalise_threshold, "generalise_threshold", 0.0, 1.0, low_open=True, owner="diagnose_regime")
    require_real(min_contraction, "min_contraction", 0.0, 1.0, high_open=True, owner="diagnose_regime")
    require_int(min_delay, "min_delay", low=0, owner="diagnose_regime")
    if len(history) == 0:
        raise ValueError("The 'history' parameter of diagnose_regime is empty: it has no evaluated step.")
    steps, norm = history.column("step"), history.column("norm")
    train_acc, test_acc = history.column("train_acc"), history.column("test_acc")
    t_grok = first_step_at_least(steps, test_acc, generalise_threshold)
    generalised = t_grok is not None
    broken = is_diverged(history)
    if broken is not None:  # its events, where it has any, are read on the evaluations before it broke
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            events = find_events(history, threshold=fit_threshold) if np.isfinite(norm).any() else None
        return Regime(DIVERGED, first_step_at_least(steps, train_acc, fit_threshold) is not None, generalised, None,
                      None, f"the run diverged ({broken}): no regime is read off a broken run", events)
    events = find_events(history, threshold=fit_threshold)
    missing = [name for name, acc in (("train_acc", train_acc), ("test_acc", test_acc)) if np.isnan(acc).all()]
    if missing:
        return Regime(UNDETERMINED, False, False, None, None, f"no {' or '.join(missing)} was recorded: no regime "
                      f"is read without accuracies", events)
    if events.t_mem is None:
        return Regime("strong", False, generalised, None, None,
                      f"train accuracy never reached {fit_threshold:.0%} within {int(steps[-1]):,} steps "
                      f"(best {np.nanmax(train_acc):.1%})", events)
    end = t_grok if (generalised and t_grok >= events.t_mem) else int(steps[-1])
    window = norm[(steps >= events.t_mem) & (steps <= end)]
    v_mem = float(events.norm_at_mem)
    if not v_mem > 0:
        return Regime(UNDETERMINED, True, generalised, None, None, f"‖θ‖² is {v_mem:g} at T_mem: no contraction "
                      f"can be measured from it", events)
    contraction = 1.0 - float(np.nanmin(window)) / v_mem
    growth = float(np.nanmax(window)) / v_mem - 1.0
    delay = None if not generalised else t_grok - events.t_mem
    if generalised and delay >= min_delay and contraction >= min_contraction:
        regime, reason = "intermediate", (f"memorised at {events.t_mem:,}; ‖θ‖² fell {contraction:.0%} and the test "
                                          f"set followed {delay:,} steps later")
    elif not generalised and contraction < min_contraction:
        regime, reason = "weak", (f"memorised at {events.t_mem:,}; ‖θ‖² then changed by {growth:+.0%} at most "
                                  f"(fell {contraction:.0%} at most) and the test accuracy stayed at "
                                  f"{np.nanmax(test_acc):.0%} or below")
    elif generalised:
        regime, reason = UNDETERMINED, (f"generalised {delay:,} steps after memorising with ‖θ‖² down {contraction:.0%}: "
                                        f"{'no delay' if delay < min_delay else 'no contraction'} to call it a transition")
    else:
        regime, reason = UNDETERMINED, (f"memorised at {events.t_mem:,}; ‖θ‖² down {contraction:.0%} but no "
                                        f"generalisation within the budget (test accuracy {np.nanmax(test_acc):.0%})")
    return Regime(regime, True, generalised, contraction, growth, reason, events)


def regime_order_ok(lams: Sequence[float], regimes: Sequence[str]) -> bool:
    """True when, sorted by λ, the regimes never step backwards in weak → intermediate → strong.

    nhtlab's one order rule: the chapters' checks and the scorecard's P2
    (:func:`nhtlab.analysis.scorecard.regimes_in_order`, which also needs all
    three regimes present) both apply it. The labels in :data:`UNJUDGED`
    (``"undetermined"`` from :func:`diagnose_regime`, ``"too early"`` from the
    online monitor) are skipped: they judge nothing.

    Several runs may share a λ (seeds); they are compared by the order of λ only,
    so two seeds of one λ in different regimes count as a boundary, not a violation,
    as long as every run at a larger λ is at least as far along. Unequal lengths or an unknown label
    are a ValueError.

    Examples
    --------
    >>> regime_order_ok([0.0, 1.0, 10.0], ["weak", "intermediate", "strong"])
    True
    >>> regime_order_ok([0.0, 1.0, 10.0], ["intermediate", "weak", "strong"])
    False
    >>> regime_order_ok([0.0, 0.5, 1.0], ["weak", "too early", "strong"])
    True
    """
    if len(lams) != len(regimes):
        raise ValueError(f"The 'lams' and 'regimes' parameters of regime_order_ok must have the same length. Got {len(lams)} and {len(regimes)}.")
    for r in regimes:
        if r not in REGIMES and r not in UNJUDGED:
            raise ValueError(f"The 'regimes' parameter of regime_order_ok must hold only {REGIMES + UNJUDGED}. Got {r!r}.")
    pairs = sorted((lam, REGIMES.index(r)) for lam, r in zip(lams, regimes) if r not in UNJUDGED)
    # every run at a strictly larger λ must have rank ≥ the max rank at smaller λ
    best = -1
    for _, group in itertools.groupby(pairs, key=lambda pair: pair[0]):
        ranks = [rank for _, rank in group]
        if min(ranks) < best:
            return False
        best = max(best, *ranks)
    return True


def budget_regime(regime: str, steps: int, rate: float, factor: float) -> str:
    """A regime label that a run's budget can back: weak or strong only after ``factor``/(ηλ) steps.

    The delay law's time scale is 1/(ηλ): a run shorter than a few of them has not had the time to
    contract its norm (weak) or to fit its training set despite the decay (strong), so those two
    labels, which say that something never happened, need ``steps · ηλ ≥ factor``. Intermediate
    (the norm contracted while the training set was fitted) is something seen, and stands at any
    budget; so do the unjudged labels. ``rate`` is ηλ; ``factor`` is fixed before the runs (chapter 06
    takes 4, chapter 08 takes 1).

    Examples
    --------
    >>> budget_regime("weak", 3000, 3e-3 * 0.1, 4), budget_regime("weak", 3000, 3e-3 * 1.0, 4)
    ('not decided within 3,000 steps', 'weak')
    >>> budget_regime("intermediate", 3000, 3e-5, 4)
    'intermediate'
    """
    require_type(regime, "regime", str, owner="budget_regime")
    require_real(rate, "rate", 0.0, owner="budget_regime")
    require_real(factor, "factor", 0.0, low_open=True, owner="budget_regime")
    if regime in ("weak", "strong") and steps * rate < factor:
        return f"not decided within {int(steps):,} steps"
    return regime


def within_budget(regime: str, last_step: int, needed: int) -> str:
    """The label a run's budget allows: its diagnosed ``regime``, or :data:`NOT_DECIDED`.

    The decay acts on a time scale of 1/(ηλ) steps, so a verdict that says something did *not*
    happen (weak: the norm did not contract; strong: the network did not fit its table; undetermined:
    no transition yet) means nothing before that time has passed: it needs a budget of at least
    ``needed`` steps, a number fixed before the run (chapter 02 takes it from
    :func:`nhtlab.book.panel_budget`). A run that grokked (intermediate) or diverged has reached its
    verdict whatever its budget; ``last_step`` is the run's last evaluated step.

    Examples
    --------
    >>> within_budget("weak", 1500, 40_000)
    'not decided'
    >>> within_budget("strong", 4000, 4000)
    'strong'
    >>> within_budget("intermediate", 3000, 13_333)
    'intermediate'
    """
    require_type(regime, "regime", str, owner="within_budget")
    require_int(last_step, "last_step", low=0, owner="within_budget")
    require_int(needed, "needed", low=1, owner="within_budget")
    if regime in ("intermediate", DIVERGED) or last_step >= needed:
        return regime
    return NOT_DECIDED


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def regime_table(result: Any, **thresholds: Any) -> list[dict[str, Any]]:
    """Diagnose every run of a sweep: one tidy row per run.

    Parameters
    ----------
    result : SweepResult
        From :func:`nhtlab.sweep`.
    **thresholds
        Passed to :func:`diagnose_regime`.

    Returns
    -------
    list of dict
        ``run`` (index in the sweep), ``weight_decay``, ``lr``, ``train_fraction``,
        ``seed``, ``regime``, ``reason``, ``t_mem``, ``t_grok``, ``delay``,
        ``peak_step``, ``peak_norm``, ``final_norm``, ``v_mem`` (‖θ‖² at T_mem),
        ``last_step``, ``growth``, ``contraction``,
        ``max_test_acc``, ``max_train_acc``, ``status``.
    """
    rows = []
    for i, row in enumerate(require_type(result, "result", Iterable, owner="regime_table")):
        if not (hasattr(row, "history") and hasattr(row, "run")):
            raise TypeError(f"The 'result' parameter of regime_table must hold a sweep's rows (with .run and .history). "
                            f"Item {i} is {type(row).__name__}.")
        d, h = diagnose_regime(row.history, **thresholds), row.history
        ev = d.events
        rows.append({
            "run": i, "weight_decay": row.run.weight_decay, "lr": row.run.lr,
            "train_fraction": row.run.train_fraction, "seed": row.run.seed,
            "regime": d.regime, "reason": d.reason, "t_mem": ev.t_mem, "t_grok": ev.t_grok, "delay": ev.delay,
            "peak_step": ev.peak_step, "peak_norm": round(ev.peak_norm, 1), "final_norm": round(ev.final_norm, 1),
            "v_mem": _rounded(ev.norm_at_mem, 1), "last_step": int(h.column("step")[-1]),
            "growth": _rounded(d.growth, 3), "contraction": _rounded(d.contraction, 3),
            "max_test_acc": round(float(np.nanmax(h.column("test_acc"))), 4),
            "max_train_acc": round(float(np.nanmax(h.column("train_acc"))), 4), "status": h.status,
        })
    return rows
