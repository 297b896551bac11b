"""The emergence chapter's two links reported: the checks it asserts and the readings it shows over seeds.

:mod:`nhtlab.analysis.emergence` turns runs over model sizes into rows
(:func:`~nhtlab.analysis.emergence.scale_table`) and per-size medians
(:func:`~nhtlab.analysis.emergence.size_summary`). The chapter tests two links:

* the law's link, asserted: across sizes the delay follows the norm gap, run by run
  (:func:`check_law_link`), on enough sizes that generalised (:func:`check_sizes_generalise`);
* the hypothesis's link, shown and never asserted: does the norm gap shrink as the model
  grows? :func:`trend_records` gives, per quantity, the difference between the largest and
  the smallest size against the seed spread, and the direction read on each seed
  (:func:`direction_by_seed`, counted with :func:`~nhtlab.book.claims.over_seeds`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..validation import require_int, require_real, require_type
from .report import require_rows
from .claims import Check, over_seeds
from ..analysis.emergence import between_and_within
from ..analysis.separation import spearman

__all__ = ["law_link", "check_law_link", "check_sizes_generalise", "direction_by_seed", "trend_records",
           "TREND_CHOICES", "trend_answer"]

#: The answers to "how does this quantity change with size?" (:func:`trend_answer`).
TREND_CHOICES = ("grows", "shrinks", "no clear change")



def law_link(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Spearman's rank correlation of each run's log(V_mem/V_grok) and its delay, over the runs that generalised.

    Parameters
    ----------
    rows : sequence of dict
        :func:`~nhtlab.analysis.emergence.scale_table` rows (``log_gap``, ``delay``).

    Returns
    -------
    dict
        ``runs`` (that generalised with a gap) and ``correlation`` (NaN with fewer than 3 runs).

    Examples
    --------
    >>> law_link([{"log_gap": g, "delay": d} for g, d in [(0.1, 100), (0.5, 400), (1.0, 900)]])
    {'runs': 3, 'correlation': 1.0}
    """
    done = [r for r in require_rows(rows, "rows", "law_link")
            if r.get("log_gap") is not None and r.get("delay") is not None]
    corr = spearman([r["log_gap"] for r in done], [r["delay"] for r in done]) if len(done) >= 3 else math.nan
    return {"runs": len(done), "correlation": corr}


def check_law_link(rows: Sequence[Mapping[str, Any]], at_least: float = 0.5) -> Check:
    """The delay follows the norm gap: rank correlation of log gap and delay ≥ ``at_least``.

    Parameters
    ----------
    rows : sequence of dict
        :func:`~nhtlab.analysis.emergence.scale_table` rows.
    at_least : float in [-1, 1]
        Least rank correlation, fixed before the runs.

    Returns
    -------
    Check
        Fails for a sweep in which the delay does not rise with the gap, and with fewer than 3 runs
        that generalised (the correlation is then NaN).
    """
    require_real(at_least, "at_least", -1.0, 1.0, owner="check_law_link")
    link = law_link(rows)
    ok = not math.isnan(link["correlation"]) and link["correlation"] >= at_least
    return Check("the delay follows the norm gap across sizes", ok,
                 f"rank correlation {link['correlation']:.2f} over {link['runs']} runs (at least {at_least:g})")


def check_sizes_generalise(summary: Sequence[Mapping[str, Any]], at_least: int = 3) -> Check:
    """At least ``at_least`` sizes have a run that generalised within the step limit.

    Parameters
    ----------
    summary : sequence of dict
        :func:`~nhtlab.analysis.emergence.size_summary` rows (``size``, ``grokked``).
    at_least : int
        Least number of sizes.

    Returns
    -------
    Check
    """
    require_int(at_least, "at_least", low=1, owner="check_sizes_generalise")
    rows = require_rows(summary, "summary", "check_sizes_generalise")
    sizes = [r["size"] for r in rows if r["grokked"]]
    return Check(f"at least {at_least} sizes generalise", len(sizes) >= at_least,
                 f"sizes with a run that generalised: {', '.join(map(str, sizes)) or 'none'}")


def direction_by_seed(rows: Sequence[Mapping[str, Any]], key: str) -> dict[int, str | None]:
    """Seed → whether ``key`` is larger at that seed's largest size than at its smallest (both with a value).

    Parameters
    ----------
    rows : sequence of dict
        :func:`~nhtlab.analysis.emergence.scale_table` rows (``size``, ``seed``, ``key``).
    key : str
        The quantity, e.g. ``"log_gap"``, ``"delay"``, ``"T_mem"``.

    Returns
    -------
    dict
        ``"grows"``, ``"shrinks"`` or ``"flat"`` per seed; None for a seed with a value at fewer than two sizes.

    Examples
    --------
    >>> rows = [{"size": 32, "seed": 0, "g": 0.1}, {"size": 128, "seed": 0, "g": 1.2},
    ...         {"size": 32, "seed": 1, "g": None}, {"size": 128, "seed": 1, "g": 1.0}]
    >>> direction_by_seed(rows, "g")
    {0: 'grows', 1: None}
    """
    by_seed: dict[int, list[tuple[Any, float]]] = {}
    for r in require_rows(rows, "rows", "direction_by_seed"):
        by_seed.setdefault(r["seed"], [])
        if r.get(key) is not None:
            by_seed[r["seed"]].append((r["size"], float(r[key])))
    out: dict[int, str | None] = {}
    for seed in sorted(by_seed):
        values = sorted(by_seed[seed])
        if len({size for size, _ in values}) < 2:
            out[seed] = None
            continue
        change = values[-1][1] - values[0][1]
        out[seed] = "grows" if change > 0 else "shrinks" if change < 0 else "flat"
    return out


def trend_records(rows: Sequence[Mapping[str, Any]], keys: Mapping[str, str],
                  expected: str = "shrinks") -> list[dict[str, Any]]:
    """Per quantity, its change from the smallest to the largest size against the seed spread, and over seeds.

    Parameters
    ----------
    rows : sequence of dict
        :func:`~nhtlab.analysis.emergence.scale_table` rows.
    keys : mapping
        Quantity label → row key, e.g. ``{"log gap": "log_gap", "delay": "delay"}``.
    expected : str
        The direction the hypothesis predicts, counted over seeds.

    Returns
    -------
    list of dict
        ``quantity, difference, seed spread, verdict`` (``"within seed noise"``, ``"shrinks"`` or
        ``"grows"`` with size; None below two sizes with a value) and ``seeds``, the per-seed direction
        counted against ``expected``.
    """
    require_type(keys, "keys", Mapping, owner="trend_records")
    rows = require_rows(rows, "rows", "trend_records")
    out = []
    for label, key in keys.items():
        sizes = {r["size"] for r in rows if r.get(key) is not None}
        change = between_and_within(rows, key) if len(sizes) >= 2 else None
        verdict = None
        if change is not None:
            verdict = ("within seed noise" if abs(change["difference"]) <= change["seed_spread"]
                       else "shrinks" if change["difference"] < 0 else "grows")
        by_seed = {s: d for s, d in direction_by_seed(rows, key).items() if d is not None}
        out.append({"quantity": label, "difference": None if change is None else change["difference"],
                    "seed spread": None if change is None else change["seed_spread"], "verdict": verdict,
                    "seeds": over_seeds(label, by_seed, expected=expected).text() if by_seed else None})
    return out


def trend_answer(trends: Sequence[Mapping[str, Any]], quantity: str) -> tuple[str, tuple[str, ...], str]:
    """How ``quantity`` changes from the smallest size to the largest, as the answer to a prediction.

    Read from :func:`trend_records`: ``"grows"`` or ``"shrinks"`` when the difference between the
    medians at the largest and the smallest size exceeds the seed spread, else ``"no clear change"``
    (also when fewer than two sizes have a value, which the explanation says).

    Parameters
    ----------
    trends : sequence of dict
        Rows of :func:`trend_records`.
    quantity : str
        The row's ``quantity`` label, e.g. ``"log gap"``.

    Returns
    -------
    (answer, choices, why) : tuple
        One of :data:`TREND_CHOICES`, :data:`TREND_CHOICES`, and the difference against the
        seed spread with the direction on each seed, for :func:`nhtlab.book.check_prediction`.

    Raises
    ------
    ValueError
        Naming ``quantity`` when no row has it.

    Examples
    --------
    >>> rows = [{"size": 32, "seed": 0, "g": 0.5}, {"size": 128, "seed": 0, "g": 0.9}]
    >>> trends = trend_records(rows, {"log gap": "g"}, expected="shrinks")
    >>> answer, choices, why = trend_answer(trends, "log gap")
    >>> answer
    'grows'
    >>> why
    'the median log gap at the largest size minus at the smallest is +0.40, against a seed spread of 0.00; shrinks in 0 of 1 seeds (seed 0: grows)'
    """
    rows = require_rows(trends, "trends", "trend_answer")
    row = next((r for r in rows if r.get("quantity") == quantity), None)
    if row is None:
        raise ValueError(f"The 'quantity' parameter of trend_answer must be one of "
                         f"{[r.get('quantity') for r in rows]}. Got {quantity!r}.")
    if row["verdict"] is None:
        return TREND_CHOICES[2], TREND_CHOICES, f"no change could be read: fewer than two sizes have a {quantity}"
    answer = row["verdict"] if row["verdict"] in TREND_CHOICES else TREND_CHOICES[2]
    def num(x: float, sign: str = "") -> str:  # steps as whole numbers, a log gap to two decimals
        return f"{x:{sign},.0f}" if abs(x) >= 100 else f"{x:{sign}.2f}"

    why = (f"the median {quantity} at the largest size minus at the smallest is {num(row['difference'], '+')}, "
           f"against a seed spread of {num(row['seed spread'])}")
    return answer, TREND_CHOICES, why + (f"; {row['seeds']}" if row["seeds"] else "")
