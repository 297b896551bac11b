"""A λ sweep's regimes reported: table rows, readings over seeds, and the checks a chapter asserts.

:func:`nhtlab.analysis.regimes.regime_table` diagnoses every run of a sweep. The
functions here turn its rows into what the regimes chapter shows and asserts:

* :func:`regime_records`: one table row per run, beside the paper's count of seeds
  that grokked at that λ;
* :func:`regimes_by_lambda` and :func:`regime_readings`: the regime of each seed at a λ,
  counted against the regime the text expects there
  (:func:`~nhtlab.book.claims.over_seeds`);
* :func:`check_regime_order`: sorted by λ the regimes never step backwards in
  weak → intermediate → strong (:func:`~nhtlab.analysis.regimes.regime_order_ok`);
* :func:`norm_start_records`: per λ, in how many seeds ‖θ‖² is largest at
  initialisation and in which it first rises above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..validation import require_type
from .report import require_rows
from .claims import Check, Reading, over_seeds
from ..analysis.regimes import regime_order_ok

__all__ = ["regime_records", "regimes_by_lambda", "regime_seed_records", "regime_readings", "check_regime_order",
           "norm_start_records", "regime_curves", "intermediate_answer", "memorise_answer"]



def regime_records(table: Sequence[Mapping[str, Any]],
                   grok_counts: Mapping[float, tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """One row per run of a :func:`~nhtlab.analysis.regimes.regime_table`, for :func:`nhtlab.book.table`.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows.
    grok_counts : mapping, optional
        λ → (runs that grokked, runs) in the paper (:data:`nhtlab.papers.COMPANION_GROK_COUNTS`).

    Returns
    -------
    list of dict
        ``λ, seed, regime, T_mem, T_grok, V_mem, end, contraction, best test, paper grokked,
        reason`` (None where a value does not exist).

    Examples
    --------
    >>> row = dict(weight_decay=1.0, seed=0, regime="weak", t_mem=500, t_grok=None, v_mem=900.0,
    ...            last_step=1500, contraction=0.01, max_test_acc=0.1, reason="…")
    >>> regime_records([row], {1.0: (10, 10)})[0]["paper grokked"]
    '10/10'
    """
    rows = require_rows(table, "table", "regime_records")
    counts = dict(grok_counts or {})
    out = []
    for row in rows:
        count = counts.get(row["weight_decay"])
        out.append({"λ": row["weight_decay"], "seed": row["seed"], "regime": row["regime"], "T_mem": row["t_mem"],
                    "T_grok": row["t_grok"], "V_mem": row["v_mem"], "end": row["last_step"],
                    "contraction": row["contraction"], "best test": row["max_test_acc"],
                    "paper grokked": None if count is None else f"{count[0]}/{count[1]}", "reason": row["reason"]})
    return out


def regimes_by_lambda(table: Sequence[Mapping[str, Any]]) -> dict[float, dict[int, str]]:
    """λ → {seed: regime}, λ in increasing order.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows (``weight_decay``, ``seed``, ``regime``).

    Returns
    -------
    dict

    Examples
    --------
    >>> regimes_by_lambda([{"weight_decay": 5.0, "seed": 0, "regime": "strong"},
    ...                    {"weight_decay": 0.01, "seed": 0, "regime": "weak"}])
    {0.01: {0: 'weak'}, 5.0: {0: 'strong'}}
    """
    out: dict[float, dict[int, str]] = {}
    rows = require_rows(table, "table", "regimes_by_lambda")
    for row in sorted(rows, key=lambda r: (r["weight_decay"], r["seed"])):
        out.setdefault(row["weight_decay"], {})[row["seed"]] = row["regime"]
    return out


def regime_seed_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per λ, the regime of every seed and whether the seeds disagree, for :func:`nhtlab.book.table`.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows.

    Returns
    -------
    list of dict
        ``λ, regimes`` (``"seed 0: weak, seed 1: weak"``), ``flips`` (``"yes"`` when the seeds disagree).

    Examples
    --------
    >>> regime_seed_records([{"weight_decay": 0.1, "seed": 0, "regime": "weak"},
    ...                      {"weight_decay": 0.1, "seed": 1, "regime": "undetermined"}])
    [{'λ': 0.1, 'regimes': 'seed 0: weak, seed 1: undetermined', 'flips': 'yes'}]
    """
    return [{"λ": lam, "regimes": ", ".join(f"seed {s}: {r}" for s, r in seeds.items()),
             "flips": "yes" if len(set(seeds.values())) > 1 else "no"}
            for lam, seeds in regimes_by_lambda(table).items()]


def regime_readings(table: Sequence[Mapping[str, Any]], expected: Mapping[float, str],
                    rule: str = "all") -> list[Reading]:
    """At each λ of ``expected``, the regimes of its seeds counted against the expected regime.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows.
    expected : mapping
        λ → the regime the text states there, fixed before the run.
    rule : {"all", "majority"}
        What makes each reading a claim.

    Returns
    -------
    list of Reading
        One per λ of ``expected``, named ``"λ = <λ>"``; a λ the sweep did not train has no seed
        and does not hold.
    """
    require_type(expected, "expected", Mapping, owner="regime_readings")
    by_lam = regimes_by_lambda(table)
    return [over_seeds(f"λ = {lam:g}", by_lam.get(lam, {}), expected=regime, rule=rule)
            for lam, regime in expected.items()]


def check_regime_order(table: Sequence[Mapping[str, Any]]) -> Check:
    """Sorted by λ, the diagnosed regimes never step backwards in weak → intermediate → strong.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows; undetermined runs are skipped.

    Returns
    -------
    Check
        Fails for a sweep in which a larger λ is diagnosed earlier in the order than a smaller one.
    """
    rows = require_rows(table, "table", "check_regime_order")
    ok = regime_order_ok([r["weight_decay"] for r in rows], [r["regime"] for r in rows])
    detail = "; ".join(f"λ = {lam:g}: {', '.join(seeds.values())}" for lam, seeds in regimes_by_lambda(rows).items())
    return Check("regimes in the order weak → intermediate → strong as λ grows", ok, detail)


def norm_start_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per λ, the seeds whose ‖θ‖² is largest at their first evaluation, and those whose norm rises first.

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows (``peak_step``; the first evaluation is step 0).

    Returns
    -------
    list of dict
        ``λ, largest at init`` (``"k of n"``), ``rises first`` (the seeds, or None).

    Examples
    --------
    >>> norm_start_records([{"weight_decay": 0.01, "seed": 0, "peak_step": 300},
    ...                     {"weight_decay": 0.01, "seed": 1, "peak_step": 0}])
    [{'λ': 0.01, 'largest at init': '1 of 2', 'rises first': 'seed 0'}]
    """
    by_lam: dict[float, dict[int, int]] = {}
    rows = require_rows(table, "table", "norm_start_records")
    for row in sorted(rows, key=lambda r: (r["weight_decay"], r["seed"])):
        by_lam.setdefault(row["weight_decay"], {})[row["seed"]] = row["peak_step"]
    out = []
    for lam, peaks in by_lam.items():
        rising = [seed for seed, step in peaks.items() if step > 0]
        out.append({"λ": lam, "largest at init": f"{len(peaks) - len(rising)} of {len(peaks)}",
                    "rises first": ", ".join(f"seed {s}" for s in rising) or None})
    return out


def regime_curves(result: Any, table: list[dict[str, Any]], every: int = 1) -> list[dict[str, Any]]:
    """Long records of every run's curves, tagged with its λ, seed and regime, for charts.

    Each record: ``run``, ``weight_decay``, ``lam_index`` (rank of its λ among the
    sweep's distinct λ, for sliders), ``seed``, ``regime``, ``step``, ``norm``,
    ``train_acc``, ``test_acc``. ``every`` keeps one evaluation in ``every``.

    Parameters
    ----------
    result : SweepResult
        The λ sweep (rows with ``run`` and ``history``).
    table : list of dict
        :func:`regime_table` of the same sweep, one row per run, in the same order.
    every : int >= 1
        Keep one evaluation in ``every``.

    Returns
    -------
    list of dict
        One record per kept evaluation of every run.
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


def intermediate_answer(table: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[str, ...], str]:
    """The answer the sweep gives to "at which smallest λ are most seeds intermediate?".

    ``table`` holds :func:`~nhtlab.analysis.regimes.regime_table` rows; the result is
    ``(answer, choices, why)``: ``answer``, the smallest λ (formatted ``"{:g}"``) at which more than half
    of the seeds are diagnosed intermediate, or ``"none"``; ``choices``, every λ of the sweep, formatted
    the same, and ``"none"``; ``why``, the count of intermediate seeds at every λ.

    Examples
    --------
    >>> rows = [{"weight_decay": lam, "seed": 0, "regime": r}
    ...         for lam, r in ((0.01, "weak"), (1.0, "intermediate"), (5.0, "strong"))]
    >>> intermediate_answer(rows)
    ('1', ('0.01', '1', '5', 'none'), 'seeds diagnosed intermediate: λ = 0.01: 0 of 1, λ = 1: 1 of 1, λ = 5: 0 of 1')
    """
    by_lam = regimes_by_lambda(require_rows(table, "table", "intermediate_answer"))
    counts = {lam: sum(r == "intermediate" for r in seeds.values()) for lam, seeds in by_lam.items()}
    chosen = [lam for lam, seeds in by_lam.items() if 2 * counts[lam] > len(seeds)]
    answer = f"{chosen[0]:g}" if chosen else "none"
    why = "seeds diagnosed intermediate: " + ", ".join(
        f"λ = {lam:g}: {counts[lam]} of {len(seeds)}" for lam, seeds in by_lam.items())
    return answer, tuple(f"{lam:g}" for lam in by_lam) + ("none",), why


def memorise_answer(table: Sequence[Mapping[str, Any]], lam: float) -> tuple[str, tuple[str, str], str]:
    """The answer the sweep gives to "will the runs at ``lam`` memorise their table within the budget?".

    Parameters
    ----------
    table : sequence of dict
        :func:`~nhtlab.analysis.regimes.regime_table` rows (``weight_decay``, ``t_mem``,
        ``max_train_acc`` where present, ``last_step``).
    lam : float
        A λ of the sweep.

    Returns
    -------
    (answer, choices, why) : tuple
        ``"yes"`` when more than half of the seeds at ``lam`` reach T_mem (training accuracy ≥ 99%),
        else ``"no"``; ``("yes", "no")``; and the count over the seeds with their budgets.

    Raises
    ------
    ValueError
        Naming ``lam`` when the sweep has no run at it.

    Examples
    --------
    >>> rows = [{"weight_decay": 5.0, "seed": s, "t_mem": t, "last_step": 1000} for s, t in ((0, None), (1, None))]
    >>> memorise_answer(rows, 5.0)
    ('no', ('yes', 'no'), 'at λ = 5 training accuracy reached 99% in 0 of 2 seeds within 1,000 steps')
    """
    rows = [r for r in require_rows(table, "table", "memorise_answer") if r["weight_decay"] == lam]
    if not rows:
        raise ValueError(f"memorise_answer: the sweep has no run at 'lam' = {lam!r}")
    k = sum(r["t_mem"] is not None for r in rows)
    ends = " / ".join(f"{e:,}" for e in sorted({r["last_step"] for r in rows}))
    return ("yes" if 2 * k > len(rows) else "no"), ("yes", "no"), (f"at λ = {lam:g} training accuracy reached 99% in {k} of "
                                                     f"{len(rows)} seeds within {ends} steps")
