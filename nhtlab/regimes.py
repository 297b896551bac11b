"""Weight-decay regimes: weak, intermediate, strong, read off one training history.

The NHT paper (Khanh & Hoa, arXiv 2603.07323) predicts three regimes in the
weight decay λ:

* **weak**: the network memorises and stays on its shortcut: the squared norm
  ‖θ‖² keeps growing (or stays flat) and the test accuracy stays low;
* **intermediate**: the network memorises, ‖θ‖² peaks and then contracts, and the
  network generalises late (grokking);
* **strong**: the decay suppresses learning: the network never fits its
  training set (the paper's wording), or, as we measure it here, fits it but
  never leaves it.

:func:`diagnose_regime` applies these rules with explicit thresholds, in order:

1. train accuracy never reaches ``fit_threshold`` → **strong** (never fits);
2. test accuracy reaches ``generalise_threshold`` → **intermediate** (the
   transition happened within the budget); or it reaches
   ``transition_threshold`` → **intermediate**, transition under way (a run on
   its shortcut stays near chance on the test set);
3. after T_mem, ‖θ‖² rose by at least ``min_growth`` and then fell by at least
   ``min_contraction`` from its peak → **intermediate** with
   ``generalised = False``: the norm has turned over, the budget ended first;
4. after T_mem, ‖θ‖² rose by at least ``min_growth`` and did not turn over →
   **weak** (the shortcut inflates);
5. otherwise the network fitted its training set but the decay held ‖θ‖²
   within ``min_growth`` of its value at T_mem and no transition followed →
   **strong** (the decay suppresses learning of the structure).

Rules 2 (its second half), 3 and 5 are our choices and worth saying plainly.
Rules 2 and 3 keep a run that has clearly left its shortcut (test accuracy far
above chance, or a norm that has turned over) from being called "weak" only
because the step budget ended a little early; near both edges of the
intermediate band runs are slow, so the budget always matters there. Rule 5 covers what we measure with AdamW at this scale: above the
intermediate band the network still memorises, but the decay pins the norm near
its memorisation value (AdamW's equilibrium scale shrinks like 1/λ) and the
test accuracy stalls; the paper's "decay suppresses learning" fits that better
than "weak", whose signature is a growing norm.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .events import Events, find_events
from .train import History
from .validation import check_real, check_type

__all__ = ["REGIMES", "Regime", "diagnose_regime", "regime_order_ok", "regime_table", "regime_curves"]

REGIMES = ("weak", "intermediate", "strong")


@dataclass
class Regime:
    """The diagnosis of one run.

    Attributes
    ----------
    regime : {"weak", "intermediate", "strong"}
    memorised : bool
        Train accuracy reached ``fit_threshold``.
    generalised : bool
        Test accuracy reached ``generalise_threshold``.
    contraction : float
        Fraction by which ‖θ‖² fell from its peak to the end of the run.
    growth : float or None
        Relative rise of ‖θ‖² after T_mem: max ‖θ‖² from T_mem on over ‖θ‖² at
        T_mem, minus 1 (None when never memorised).
    reason : str
        The rule that decided, in words.
    events : Events
    """

    regime: str
    memorised: bool
    generalised: bool
    contraction: float
    growth: float | None
    reason: str
    events: Events

    def to_dict(self) -> dict:
        d = asdict(self)
        d["events"] = self.events.to_dict()
        return d


def diagnose_regime(
    history: History,
    fit_threshold: float = 0.99,
    generalise_threshold: float = 0.99,
    min_growth: float = 0.25,
    min_contraction: float = 0.05,
    transition_threshold: float = 0.9,
) -> Regime:
    """Classify a run as weak, intermediate or strong (rules in the module docstring).

    Parameters
    ----------
    history : History
        Needs ``step``, ``train_acc``, ``test_acc`` and ``norm`` columns.
    fit_threshold : float in (0, 1], default 0.99
        Train accuracy that counts as "fitted" (memorised).
    generalise_threshold : float in (0, 1], default 0.99
        Test accuracy that counts as "generalised".
    min_growth : float ≥ 0, default 0.25
        Least relative rise of ‖θ‖² above its value at T_mem (peak / V(T_mem) − 1)
        that counts as "the norm grew".
    min_contraction : float in [0, 1), default 0.05
        Least fall of ‖θ‖² from its post-T_mem peak to the end that counts as
        "the norm peaked and decayed".
    transition_threshold : float in (0, 1], default 0.9
        Test accuracy that shows the transition is under way even if it has not
        reached ``generalise_threshold`` within the budget.

    Returns
    -------
    Regime
    """
    check_type(history, "history", History, owner="diagnose_regime")
    check_real(fit_threshold, "fit_threshold", 0.0, 1.0, low_open=True, owner="diagnose_regime")
    check_real(generalise_threshold, "generalise_threshold", 0.0, 1.0, low_open=True, owner="diagnose_regime")
    check_real(min_growth, "min_growth", 0.0, owner="diagnose_regime")
    check_real(min_contraction, "min_contraction", 0.0, 1.0, high_open=True, owner="diagnose_regime")
    check_real(transition_threshold, "transition_threshold", 0.0, 1.0, low_open=True, owner="diagnose_regime")
    if len(history) == 0:
        raise ValueError("The 'history' parameter of diagnose_regime is empty: it has no evaluated step.")
    events = find_events(history, threshold=fit_threshold)
    steps = history.column("step")
    norm = history.column("norm")
    train_acc = history.column("train_acc")
    test_acc = history.column("test_acc")
    memorised = events.t_mem is not None
    generalised = bool(np.nanmax(test_acc) >= generalise_threshold)
    if memorised:
        after = steps >= events.t_mem
        peak_after = float(np.nanmax(norm[after]))
        contraction = max(0.0, 1.0 - float(norm[-1]) / peak_after) if peak_after > 0 else 0.0
        growth = peak_after / events.norm_at_mem - 1.0 if events.norm_at_mem else 0.0
    else:
        contraction, growth = events.contraction, None

    if not memorised:
        regime, reason = "strong", f"train accuracy never reached {fit_threshold:.0%} (max {np.nanmax(train_acc):.1%})"
    elif generalised:
        regime, reason = "intermediate", f"memorised, then test accuracy reached {generalise_threshold:.0%}"
    elif np.nanmax(test_acc) >= transition_threshold:
        regime, reason = "intermediate", (
            f"memorised, then test accuracy rose to {np.nanmax(test_acc):.0%} (≥ {transition_threshold:.0%}): "
            "transition under way when the budget ended")
    elif growth >= min_growth and contraction >= min_contraction:
        regime, reason = "intermediate", (
            f"memorised; ‖θ‖² rose {growth:.0%} then fell {contraction:.0%} from its peak, "
            "but the budget ended before generalisation")
    elif growth >= min_growth:
        regime, reason = "weak", f"memorised; ‖θ‖² kept rising ({growth:+.0%} after T_mem) and no generalisation"
    else:
        regime, reason = "strong", (
            f"memorised, but the decay held ‖θ‖² within {min_growth:.0%} of its T_mem value "
            f"({growth:+.0%}) and the test accuracy stalled at {np.nanmax(test_acc):.0%}")
    return Regime(regime, memorised, generalised, contraction, growth, reason, events)


def regime_order_ok(lams: list[float], regimes: list[str]) -> bool:
    """True when, sorted by λ, the regimes never step backwards in weak → intermediate → strong.

    Several runs may share a λ (seeds); they are compared by the order of λ only,
    so two seeds of one λ in different regimes count as a boundary, not a violation,
    as long as every run at a larger λ is at least as far along.

    Examples
    --------
    >>> regime_order_ok([0.0, 1.0, 10.0], ["weak", "intermediate", "strong"])
    True
    >>> regime_order_ok([0.0, 1.0, 10.0], ["intermediate", "weak", "strong"])
    False
    """
    if len(lams) != len(regimes):
        raise ValueError(f"The 'lams' and 'regimes' parameters of regime_order_ok must have the same length. Got {len(lams)} and {len(regimes)}.")
    for r in regimes:
        if r not in REGIMES:
            raise ValueError(f"The 'regimes' parameter of regime_order_ok must hold only {REGIMES}. Got {r!r}.")
    rank = {name: i for i, name in enumerate(REGIMES)}
    pairs = sorted(zip(lams, (rank[r] for r in regimes)))
    # every run at a strictly larger λ must have rank ≥ the max rank at smaller λ
    best = -1
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        group = [r for _, r in pairs[i:j]]
        if min(group) < best:
            return False
        best = max(best, max(group))
        i = j
    return True


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
        ``peak_step``, ``peak_norm``, ``final_norm``, ``growth``, ``contraction``,
        ``max_test_acc``, ``status``.
    """
    rows = []
    for i, row in enumerate(result):
        d = diagnose_regime(row.history, **thresholds)
        ev = d.events
        rows.append({
            "run": i, "weight_decay": row.run.weight_decay, "lr": row.run.lr,
            "train_fraction": row.run.train_fraction, "seed": row.run.seed,
            "regime": d.regime, "reason": d.reason, "t_mem": ev.t_mem, "t_grok": ev.t_grok, "delay": ev.delay,
            "peak_step": ev.peak_step, "peak_norm": round(ev.peak_norm, 1), "final_norm": round(ev.final_norm, 1),
            "growth": None if d.growth is None else round(d.growth, 3), "contraction": round(d.contraction, 3),
            "max_test_acc": round(float(np.nanmax(row.history.column("test_acc"))), 4), "status": row.history.status,
        })
    return rows


def regime_curves(result: Any, table: list[dict[str, Any]], every: int = 1) -> list[dict[str, Any]]:
    """Long records of every run's curves, tagged with its λ, seed and regime, for charts.

    Each record: ``run``, ``weight_decay``, ``lam_index`` (rank of its λ among the
    sweep's distinct λ, for sliders), ``seed``, ``regime``, ``step``, ``norm``,
    ``train_acc``, ``test_acc``. ``every`` keeps one evaluation in ``every``.
    """
    lams = sorted({row.run.weight_decay for row in result})
    out = []
    for i, (row, info) in enumerate(zip(result, table)):
        for k, r in enumerate(row.history.rows):
            if k % every and k != len(row.history.rows) - 1:
                continue
            out.append({"run": i, "weight_decay": row.run.weight_decay, "lam_index": lams.index(row.run.weight_decay),
                        "seed": row.run.seed, "regime": info["regime"], "step": r["step"], "norm": r["norm"],
                        "train_acc": r["train_acc"], "test_acc": r.get("test_acc")})
    return out
