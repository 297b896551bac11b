"""The NHT paper's six predictions, scored on a domain's own runs with rules that can fail.

Khanh & Hoa (arXiv 2603.07323) score six predictions per domain (P1 norm
ordering, P2 three regimes, P3 clean/worst-group ordering, P4 layer hierarchy,
P5 clean norm separation, P6 delay scaling) but give no operational rules. These
are nhtlab's: P1 :func:`norm_ordering`, P2 :func:`three_regimes`, P3 :func:`worst_group_rise`,
P4 :func:`contraction_rule` (the reading chapter 05 reports over seeds), P5 :func:`separation_rule`,
P6 :func:`delay_scaling`. Each returns a :class:`~nhtlab.analysis.checks.Check`: pass or fail *and* the number
it was decided on, so a ✓ or ✗ can be checked; each docstring says what makes it fail.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..history import History
from ..validation import require_int, require_real, require_type
from .checks import Check
from .events import norm_at
from .layers import ContractionOrder
from .regimes import REGIMES, UNJUDGED, regime_order_ok
from .separation import Separation, format_score

__all__ = ["PREDICTIONS", "norm_ordering", "contraction_rule", "three_regimes", "regimes_in_order", "worst_group_rise",
           "separation_rule", "delay_scaling", "DelayExponent", "fit_delay_exponent",
           "score_predictions"]

PREDICTIONS = ("P1 norm ordering", "P2 three regimes", "P3 clean/worst-group", "P4 layer hierarchy",
               "P5 clean separation", "P6 delay scaling")


def norm_ordering(history: History, shortcut_step: int | None, structured_step: int | None) -> Check:
    """P1: ‖θ‖² on the shortcut solution is larger than on the structured one.

    V_mem is ‖θ‖² at ``shortcut_step`` (the first evaluated step at or after it:
    T_mem, or the step the border is first fitted); V_post is ‖θ‖² at
    ``structured_step`` (the end of the run, after the structure was reached),
    both read by :func:`nhtlab.analysis.events.norm_at`, as the delay law reads them.
    The value is V_mem / V_post (``inf`` when V_post = 0, NaN when not measured).

    Fails when V_mem ≤ V_post (the shortcut was the *cheaper* solution in norm), or
    when either step is None (the shortcut was never fitted or the structure
    never reached: nothing to compare).
    """
    require_type(history, "history", History, owner="norm_ordering")
    if shortcut_step is None or structured_step is None:
        missing = "shortcut never fitted" if shortcut_step is None else "structure never reached"
        return Check("norm ordering", False, f"not measured ({missing})", float("nan"))
    v_mem, v_post = norm_at(history, shortcut_step), norm_at(history, structured_step)
    ratio = v_mem / v_post if v_post > 0 else float("inf")
    return Check("norm ordering", bool(ratio > 1.0), f"V_mem/V_post = {v_mem:.0f}/{v_post:.0f} = {ratio:.2f}", ratio)


def regimes_in_order(regimes: Mapping[float, str]) -> bool:
    """True when the regimes, read in increasing λ, are exactly weak → intermediate → strong.

    The order is :func:`nhtlab.analysis.regimes.regime_order_ok`'s rule (never a
    step backwards; the :data:`~nhtlab.analysis.regimes.UNJUDGED` labels
    ``"too early"`` and ``"undetermined"`` skipped); P2 adds that all three
    regimes must appear. So weak, weak, intermediate, strong passes and a regime
    that comes back after another (weak, intermediate, weak, strong) fails.
    """
    return regime_order_ok(list(regimes), list(regimes.values())) and set(_collapsed(regimes)) == set(REGIMES)


def _collapsed(regimes: Mapping[float, str]) -> list[str]:
    """Regimes in increasing λ with the unjudged labels dropped and *consecutive* repeats merged.

    Weak, intermediate, weak stays three entries: a non-monotone sweep. This is
    what P2 prints; the pass/fail is :func:`regimes_in_order`.
    """
    judged = (regimes[lam] for lam in sorted(regimes) if regimes[lam] not in UNJUDGED)
    return [r for r, _ in itertools.groupby(judged)]


def three_regimes(regimes: Mapping[float, str]) -> Check:
    """P2: the λ sweep shows weak, intermediate and strong, in that order of λ.

    Fails when any of the three is missing, or they come in another order
    (:func:`regimes_in_order`), including a regime that returns at a larger λ
    (weak → intermediate → weak → strong). The value is the number of distinct
    regimes seen.
    """
    seen = _collapsed(regimes)
    return Check("three regimes", regimes_in_order(regimes), " → ".join(seen) or "none", float(len(set(seen))))


def worst_group_rise(history: History, column: str, start_step: int | None, level: float = 0.5) -> Check:
    """P3: the worst group's accuracy starts below ``level`` and ends above it.

    "Starts" is the value at ``start_step`` (the first evaluated step at or
    after it: when the shortcut is fitted); "ends" is the last evaluated value.
    The worst group is the ``conflict`` test set on images (a wrong class's
    border: following the border is always wrong there) and the test set on
    modular arithmetic (what the memorised table gets wrong).

    Fails when the accuracy was already at or above ``level`` when the shortcut
    was fitted (nothing to escape), when it ends at or below ``level`` (no
    escape), or when ``start_step`` is None (the shortcut was never fitted).
    The value is the final accuracy.
    """
    require_type(history, "history", History, owner="worst_group_rise")
    require_real(level, "level", 0.0, 1.0, low_open=True, high_open=True, owner="worst_group_rise")
    values, steps = history.column(column), history.column("step")
    end = float(values[-1])
    if start_step is None:
        return Check("worst-group rise", False, f"shortcut never fitted; ends {end:.2f}", end)
    start = float(values[min(int(np.searchsorted(steps, start_step)), len(values) - 1)])
    return Check("worst-group rise", bool(start < level < end), f"{start:.2f} → {end:.2f} (level {level:g})", end)


def contraction_rule(order: ContractionOrder) -> Check:
    """P4: the read-out contracts before the first layer once the shortcut is fitted.

    Passes only on :func:`nhtlab.analysis.layers.contraction_order`'s ``"backward"`` verdict
    (the read-out lost its ``share`` of its value at the fitted step at an earlier evaluated
    step than the first layer, or it did and the first layer did not); ``"forward"``,
    ``"simultaneous"`` and ``"undetermined"`` (no window, or neither contracted) fail. The
    value is the first layer's contraction step minus the read-out's (NaN when either is
    missing).
    """
    require_type(order, "order", ContractionOrder, owner="contraction_rule")
    h, f = order.layer(order.head), order.layer(order.first)
    lead = float(f.step - h.step) if h.step is not None and f.step is not None else math.nan

    def step(c):
        return "not within the window" if c.step is None else f"step {c.step}"

    text = (f"{order.verdict}: {order.head} {step(h)}, {order.first} {step(f)} "
            f"(−{order.share:.0%} of the value at step {order.t_mem})")
    return Check("layer order", order.verdict == "backward", text, lead)


def separation_rule(separation: Separation, threshold: float = 0.5) -> Check:
    """P5: nhtlab's clean-norm-separation score is defined and at least ``threshold``.

    Fails when the score is below ``threshold`` or undefined (NaN: the shortcut
    was never fitted, or reliance or the norm did not move afterwards).
    """
    require_type(separation, "separation", Separation, owner="separation_rule")
    ok = separation.defined and separation.score >= threshold
    return Check("clean separation", bool(ok), f"score {format_score(separation)}", separation.score)


@dataclass
class DelayExponent:
    """Least-squares fit of log T = c − α log λ, with a confidence interval for α.

    ``alpha`` is 1 for the law's T ∝ 1/λ; ``low``–``high`` is its ``confidence`` interval (Student t, n − 2
    degrees of freedom) over ``n`` points at ``n_lams`` distinct λ.
    """

    alpha: float
    low: float
    high: float
    n: int
    n_lams: int
    confidence: float


def fit_delay_exponent(delays: Sequence[tuple[float, float]], confidence: float = 0.95) -> DelayExponent:
    """Fit T ∝ λ^(−α) to (λ, T) pairs (several seeds per λ allowed): :func:`scipy.stats.linregress` on the logs.

    Needs at least 3 positive pairs at 2 distinct λ; 3 points leave one degree of freedom, and the interval
    is then wide, as it should be.
    """
    # local: scipy.stats is slow to import; only this rule and the fits use it
    from scipy import stats

    owner = "fit_delay_exponent"
    require_real(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
    pairs = np.asarray(list(delays), dtype=float).reshape(-1, 2)
    if len(pairs) < 3 or (pairs <= 0).any() or not np.isfinite(pairs).all():
        raise ValueError(f"The 'delays' parameter of {owner} must hold at least 3 (λ, T) pairs, all positive and "
                         f"finite. Got {pairs.tolist()}.")
    x, y = np.log(pairs[:, 0]), np.log(pairs[:, 1])
    n_lams = len(np.unique(pairs[:, 0]))
    if n_lams < 2:
        raise ValueError(f"The 'delays' parameter of {owner} must hold at least 2 distinct λ values. Got {n_lams}.")
    line = stats.linregress(x, y)
    alpha, half = -float(line.slope), float(stats.t.ppf(0.5 + confidence / 2, len(x) - 2)) * float(line.stderr)
    return DelayExponent(alpha=alpha, low=alpha - half, high=alpha + half, n=len(x), n_lams=n_lams, confidence=confidence)


def delay_scaling(delays: Mapping[float, Sequence[int | None]], min_lams: int = 3) -> Check:
    """P6: the delay scales as 1/λ, by a fitted exponent and its 95% interval.

    ``delays`` maps λ → one delay per seed (None where the escape never happened, which drops that seed).
    Fails when fewer than ``min_lams`` λ values have a measured delay (scaling not shown), when the 95%
    interval of α excludes 1 (the delay does not scale as 1/λ), or when it contains 0 (the delay is not
    shown to depend on λ at all). The value is α.
    """
    require_int(min_lams, "min_lams", low=3, owner="delay_scaling")
    pairs = [(lam, t) for lam, ts in delays.items() for t in ts if t]
    n_lams = len({lam for lam, _ in pairs})
    if n_lams < min_lams or len(pairs) < 3:
        return Check("delay scaling", False, f"{n_lams} λ with a measured delay (needs {min_lams})", float("nan"))
    fit = fit_delay_exponent(pairs)
    ok = fit.low <= 1.0 <= fit.high and fit.low > 0
    return Check("delay scaling", bool(ok), f"α = {fit.alpha:.2f} [{fit.low:.2f}, {fit.high:.2f}] ({fit.n} runs, {n_lams} λ)", fit.alpha)


def score_predictions(*, main: History, regimes: Mapping[float, str], shortcut_step: int | None,
                      structured_step: int | None, worst_column: str, order: ContractionOrder,
                      separation: Separation, delays: Mapping[float, Sequence[int | None]],
                      level: float = 0.5) -> dict[str, Check]:
    """The six predictions for one domain, by the rules of this module.

    ``shortcut_step`` is when ``main`` fitted the shortcut (T_mem, the border fitted) and ``structured_step``
    a step on the structured solution (the run's end if it was reached, else None): P1 compares the norm at
    the two, P3 starts at the first. ``worst_column``: ``conflict_acc`` on images, ``test_acc`` on modular
    arithmetic. ``order`` (P4) is :func:`nhtlab.analysis.layers.contraction_order` over the shortcut window.
    """
    return {
        "P1 norm ordering": norm_ordering(main, shortcut_step, structured_step),
        "P2 three regimes": three_regimes(regimes),
        "P3 clean/worst-group": worst_group_rise(main, worst_column, shortcut_step, level),
        "P4 layer hierarchy": contraction_rule(order),
        "P5 clean separation": separation_rule(separation),
        "P6 delay scaling": delay_scaling(delays),
    }
