"""A λ sweep's regimes reported: table rows, readings over seeds, and the checks a chapter asserts.

:func:`nhtlab.analysis.regimes.regime_table` diagnoses every run of a sweep; the functions here turn
its rows into what the regimes chapter shows and asserts. The budget a verdict at each λ needs is fixed
before the runs and scales as 1/(ηλ) (:func:`decision_budgets`); a run short of it is "not decided
within N steps" (:func:`budget_regimes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..validation import require_int, require_real, require_type
from .report import require_rows
from .claims import Check, Reading, over_seeds
from ..analysis.regimes import NOT_DECIDED, regime_order_ok, within_budget

__all__ = ["panel_budget", "PANEL_BUDGET_CAP", "regime_records", "regimes_by_lambda", "check_regime_order",
           "norm_start_records", "regime_curves", "intermediate_answer", "decision_budgets",
           "budget_regimes", "regime_summary_records", "regime_events", "decided_readings",
           "lambda_sentences", "learning_answer", "rule_check", "regime_findings", "NOT_DECIDED"]


#: The most a live panel multiplies the chapter's step budget by (a λ near 0 would ask for ever more).
PANEL_BUDGET_CAP = 10


def panel_budget(steps: int, rate: float, new_rate: float, cap: float = PANEL_BUDGET_CAP) -> int:
    """The step budget for a run at decay rate ``new_rate`` = ηλ, scaled from ``steps`` at ``rate``.

    The delay law's time scale goes as 1/(ηλ), so a run at a tenth of the rate needs about ten times
    the steps to get as far; the budget is ``steps · rate / new_rate``, never below ``steps`` and at
    most ``cap · steps`` (ηλ = 0, no decay, gets the cap).

    Examples
    --------
    >>> panel_budget(4000, 1e-3, 1e-4)
    40000
    >>> panel_budget(4000, 1e-3, 3e-3), panel_budget(4000, 1e-3, 0.0), panel_budget(4000, 1e-3, 1e-5)
    (4000, 40000, 40000)
    """
    require_int(steps, "steps", 1, owner="panel_budget")
    require_real(rate, "rate", 0.0, low_open=True, owner="panel_budget")
    require_real(new_rate, "new_rate", 0.0, owner="panel_budget")
    require_real(cap, "cap", 1.0, owner="panel_budget")
    if new_rate == 0.0 or rate / new_rate >= cap:
        return int(round(cap * steps))
    return int(round(steps * max(1.0, rate / new_rate)))


def decision_budgets(budgets: Mapping[float, int], lr: float, base_lam: float = 1.0) -> dict[float, int]:
    """λ → the steps a verdict other than intermediate needs, scaled from the budget at ``base_lam`` as 1/(ηλ).

    The rule chapter 01's live panel trains by (:func:`nhtlab.book.panel_budget`): the budget at
    ``base_lam`` (where the grid's runs are expected to grok) times ``base_lam / λ``, never below it and
    at most :data:`~nhtlab.book.widgets.PANEL_BUDGET_CAP` times it. It reads only the settings, so it is
    fixed before the runs.

    Examples
    --------
    >>> decision_budgets({0.1: 2000, 1.0: 4000, 2.0: 2000}, 1e-3)
    {0.1: 40000, 1.0: 4000, 2.0: 4000}
    """
    require_type(budgets, "budgets", Mapping, owner="decision_budgets")
    if base_lam not in budgets:
        raise ValueError(f"The 'budgets' parameter of decision_budgets must hold base_lam = {base_lam:g}; "
                         f"it holds {list(budgets)}.")
    steps = int(budgets[base_lam])
    return {lam: panel_budget(steps, lr * base_lam, lr * lam) for lam in budgets}


def budget_regimes(table: Sequence[Mapping[str, Any]], needed: Mapping[float, int]) -> list[dict[str, Any]]:
    """The rows of a regime table, each labelled as its budget allows (:func:`~nhtlab.analysis.regimes.within_budget`).

    The rule's own label is kept as ``rule_regime``; ``needed`` is λ's budget from :func:`decision_budgets`, and
    the ``reason`` of a run not decided says so first.

    Examples
    --------
    >>> rows = budget_regimes([{"weight_decay": 0.01, "regime": "weak", "last_step": 1500, "reason": "flat"}],
    ...                       {0.01: 40_000})
    >>> rows[0]["regime"], rows[0]["rule_regime"], verdict_label(rows[0])
    ('not decided', 'weak', 'not decided within 1,500 steps')
    """
    rows = require_rows(table, "table", "budget_regimes")
    require_type(needed, "needed", Mapping, owner="budget_regimes")
    out = []
    for row in rows:
        need = int(needed[row["weight_decay"]])
        label = within_budget(row["regime"], int(row["last_step"]), need)
        reason = row["reason"]
        if label == NOT_DECIDED:
            reason = (f"not decided within {row['last_step']:,} steps: a verdict at λ = {row['weight_decay']:g} "
                      f"needs {need:,}; the rule alone would read {row['regime']} ({reason})")
        out.append({**row, "regime": label, "rule_regime": row["regime"], "needed": need, "reason": reason})
    return out


def verdict_label(row: Mapping[str, Any]) -> str:
    """A run's label in words: its regime, or ``"not decided within N steps"`` (N its last step).

    Examples
    --------
    >>> verdict_label({"regime": "not decided", "last_step": 2000}), verdict_label({"regime": "weak"})
    ('not decided within 2,000 steps', 'weak')
    """
    if row["regime"] == NOT_DECIDED:
        return f"{NOT_DECIDED} within {int(row['last_step']):,} steps"
    return row["regime"]


def regime_summary_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per λ: the verdicts counted over its seeds, how many memorised, the best accuracies.

    Examples
    --------
    >>> rows = [{"weight_decay": 5.0, "seed": s, "regime": "not decided", "last_step": 1000, "t_mem": None,
    ...          "max_train_acc": a, "max_test_acc": a / 2} for s, a in ((0, 0.5), (1, 0.6))]
    >>> regime_summary_records(rows)[0]
    {'λ': 5.0, 'verdict': 'not decided within 1,000 steps: 2 of 2', 'memorised': '0 of 2', 'best train': '0.50–0.60', 'best test': '0.25–0.30'}
    """
    by_lam = _by_lambda(table, "regime_summary_records")

    def spread(values: list[float]) -> str:
        lo, hi = min(values), max(values)
        return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"

    out = []
    for lam, rows in by_lam.items():
        labels = [verdict_label(r) for r in rows]
        counts = {label: labels.count(label) for label in dict.fromkeys(labels)}
        out.append({"λ": lam, "verdict": "; ".join(f"{label}: {k} of {len(rows)}" for label, k in counts.items()),
                    "memorised": f"{sum(r['t_mem'] is not None for r in rows)} of {len(rows)}",
                    "best train": spread([r["max_train_acc"] for r in rows]),
                    "best test": spread([r["max_test_acc"] for r in rows])})
    return out


def _by_lambda(table: Sequence[Mapping[str, Any]], owner: str) -> dict[float, list[Mapping[str, Any]]]:
    """λ → its rows, λ and then seed increasing."""
    out: dict[float, list[Mapping[str, Any]]] = {}
    for row in sorted(require_rows(table, "table", owner), key=lambda r: (r["weight_decay"], r["seed"])):
        out.setdefault(row["weight_decay"], []).append(row)
    return out


def _ends(rows: Sequence[Mapping[str, Any]]) -> str:
    """The runs' last steps, ``"1,000 / 1,500"``."""
    return " / ".join(f"{e:,}" for e in sorted({int(r["last_step"]) for r in rows}))


def _span(values: Sequence[float], fmt: str) -> str:
    """``"a–b"`` over ``values`` formatted with ``fmt``, or one value when they print the same."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def lambda_sentences(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per λ saying what its seeds did within their budget and the verdict it allows.

    Examples
    --------
    >>> rows = [{"weight_decay": 5.0, "seed": s, "regime": "not decided", "last_step": 1000, "needed": 4000,
    ...          "t_mem": None, "t_grok": None, "contraction": None, "max_train_acc": 0.5, "max_test_acc": 0.4}
    ...         for s in (0, 1)]
    >>> print(lambda_sentences(rows)[0])
    **λ = 5**: no seed reached 99% training accuracy within 1,000 steps (best 0.50), and the test accuracy reached only 0.40; verdict: not decided within 1,000 steps in 2 of 2 (a verdict needs 4,000 steps).
    """
    out = []
    for lam, rows in _by_lambda(table, "lambda_sentences").items():
        n = len(rows)
        mem = [r for r in rows if r["t_mem"] is not None]
        gen = [r for r in rows if r["t_grok"] is not None]
        ends = _ends(rows)
        fell = [r["contraction"] for r in mem if r["contraction"] is not None]
        every = "the seed" if n == 1 else f"all {n} seeds"
        if all(r["regime"] == "intermediate" for r in rows):
            delays = [r["t_grok"] - r["t_mem"] for r in rows]
            out.append(f"**λ = {lam:g}**: {every} memorised, then ‖θ‖² fell {_span(fell, '{:.0%}')} and the test "
                       f"accuracy reached 99% {_span(delays, '{:,}')} steps later: intermediate in {n} of {n}.")
            continue
        if not mem:
            tests = [r["max_test_acc"] for r in rows]
            climbed = "yet the test accuracy reached" if 2 * sum(t >= 0.5 for t in tests) > n else \
                "and the test accuracy reached only"
            what = (f"no seed reached 99% training accuracy within {ends} steps (best "
                    f"{_span([r['max_train_acc'] for r in rows], '{:.2f}')}), {climbed} {_span(tests, '{:.2f}')}")
        elif len(mem) == n and not gen:
            what = (f"{every} memorised and {'it did not generalise' if n == 1 else 'none generalised'} within {ends} steps (best test accuracy "
                    f"{_span([r['max_test_acc'] for r in rows], '{:.2f}')}); after memorising ‖θ‖² fell "
                    f"{_span(fell, '{:.0%}')}")
        else:
            what = f"{len(mem)} of {n} seeds memorised and {len(gen)} of {n} generalised within {ends} steps"
        labels = [verdict_label(r) for r in rows]
        verdict = ", ".join(f"{label} in {labels.count(label)} of {n}" for label in dict.fromkeys(labels))
        needs = sorted({int(r["needed"]) for r in rows if r["regime"] == NOT_DECIDED})
        need = f" (a verdict needs {' / '.join(f'{v:,}' for v in needs)} steps)" if needs else ""
        out.append(f"**λ = {lam:g}**: {what}; verdict: {verdict}{need}.")
    return out


def regime_events(table: Sequence[Mapping[str, Any]], curves: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The T_mem and T_grok marks of every run, placed on its curves, for the regime charts.

    One record per event a run reached, with ``norm`` (‖θ‖²) there and ``accuracy`` (training accuracy at
    T_mem, test accuracy at T_grok); ``table`` and ``curves`` (:func:`regime_curves`) are of the same sweep.
    """
    rows = require_rows(table, "table", "regime_events")
    by_run: dict[int, dict[int, Mapping[str, Any]]] = {}
    for rec in curves:
        by_run.setdefault(rec["run"], {})[rec["step"]] = rec
    out = []
    for i, row in enumerate(rows):
        points = by_run.get(i, {})
        for event, step, split in (("T_mem", row["t_mem"], "train_acc"), ("T_grok", row["t_grok"], "test_acc")):
            if step is None or step not in points:
                continue
            rec = points[step]
            out.append({"run": i, "weight_decay": rec["weight_decay"], "lam_index": rec["lam_index"],
                        "seed": rec["seed"], "regime": rec["regime"], "event": event, "step": step,
                        "norm": rec["norm"], "accuracy": rec[split]})
    return out


def decided_readings(table: Sequence[Mapping[str, Any]], expected: Mapping[float, str]) -> list[Reading]:
    """At each λ of ``expected``, every seed's label counted against the expected regime (rule "all").

    A seed not decided within its budget reads ``"not decided within N steps"`` and does not count for the
    regime.
    """
    require_type(expected, "expected", Mapping, owner="decided_readings")
    rows = require_rows(table, "table", "decided_readings")
    out = []
    for lam, regime in expected.items():
        seeds = {r["seed"]: verdict_label(r) for r in sorted(rows, key=lambda r: r["seed"]) if r["weight_decay"] == lam}
        out.append(over_seeds(f"λ = {lam:g}", seeds, expected=regime, rule="all"))
    return out


def regime_records(table: Sequence[Mapping[str, Any]],
                   grok_counts: Mapping[float, tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """One row per run of a :func:`~nhtlab.analysis.regimes.regime_table`, for :func:`nhtlab.book.table`.

    ``grok_counts``: λ → (runs that grokked, runs) in the paper. None where a value does not exist.

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
        out.append({"λ": row["weight_decay"], "seed": row["seed"], "regime": verdict_label(row), "T_mem": row["t_mem"],
                    "T_grok": row["t_grok"], "V_mem": row["v_mem"], "end": row["last_step"],
                    "contraction": row["contraction"], "best test": row["max_test_acc"],
                    "paper grokked": None if count is None else f"{count[0]}/{count[1]}", "reason": row["reason"],
                    "needs": row.get("needed")})
    return out


def regimes_by_lambda(table: Sequence[Mapping[str, Any]]) -> dict[float, dict[int, str]]:
    """λ → {seed: regime}, λ in increasing order.

    Examples
    --------
    >>> regimes_by_lambda([{"weight_decay": 5.0, "seed": 0, "regime": "strong"},
    ...                    {"weight_decay": 0.01, "seed": 0, "regime": "weak"}])
    {0.01: {0: 'weak'}, 5.0: {0: 'strong'}}
    """
    return {lam: {r["seed"]: r["regime"] for r in rows} for lam, rows in _by_lambda(table, "regimes_by_lambda").items()}


def check_regime_order(table: Sequence[Mapping[str, Any]]) -> Check:
    """Sorted by λ, the diagnosed regimes never step backwards in weak → intermediate → strong.

    Undetermined runs are skipped.
    """
    rows = require_rows(table, "table", "check_regime_order")
    ok = regime_order_ok([r["weight_decay"] for r in rows], [r["regime"] for r in rows])
    detail = "; ".join(f"λ = {lam:g}: {', '.join(seeds.values())}" for lam, seeds in regimes_by_lambda(rows).items())
    return Check("regimes in the order weak → intermediate → strong as λ grows", ok, detail)


def norm_start_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per λ, the seeds whose ‖θ‖² is largest at their first evaluation, and those whose norm rises first.

    Examples
    --------
    >>> norm_start_records([{"weight_decay": 0.01, "seed": 0, "peak_step": 300},
    ...                     {"weight_decay": 0.01, "seed": 1, "peak_step": 0}])
    [{'λ': 0.01, 'largest at init': '1 of 2', 'rises first': 'seed 0'}]
    """
    out = []
    for lam, rows in _by_lambda(table, "norm_start_records").items():
        peaks = {r["seed"]: r["peak_step"] for r in rows}
        rising = [seed for seed, step in peaks.items() if step > 0]
        out.append({"λ": lam, "largest at init": f"{len(peaks) - len(rising)} of {len(peaks)}",
                    "rises first": ", ".join(f"seed {s}" for s in rising) or None})
    return out


def regime_curves(result: Any, table: list[dict[str, Any]], every: int = 1) -> list[dict[str, Any]]:
    """Long records of every run's curves, tagged with its λ, seed and regime, for charts.

    ``lam_index`` ranks the run's λ among the sweep's (for sliders); ``every`` keeps one evaluation in ``every``.
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

    Most: more than half of the seeds; ``"none"`` when no λ has them.

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


def learning_answer(table: Sequence[Mapping[str, Any]], lam: float, level: float = 0.5) -> tuple[str, tuple[str, str], str]:
    """The answer the sweep gives to "at ``lam``, does the best test accuracy of most seeds climb past ``level``?".

    Examples
    --------
    >>> rows = [{"weight_decay": 5.0, "seed": s, "max_test_acc": a, "max_train_acc": 0.9, "last_step": 1000}
    ...         for s, a in ((0, 0.7), (1, 0.8), (2, 0.1))]
    >>> learning_answer(rows, 5.0)
    ('yes', ('yes', 'no'), 'at λ = 5 the best test accuracy passed 0.5 in 2 of 3 seeds within 1,000 steps (0.70, 0.80, 0.10; best training accuracy 0.90, 0.90, 0.90)')
    """
    rows = sorted((r for r in require_rows(table, "table", "learning_answer") if r["weight_decay"] == lam),
                  key=lambda r: r.get("seed", 0))
    if not rows:
        raise ValueError(f"learning_answer: the sweep has no run at 'lam' = {lam!r}")
    k = sum(r["max_test_acc"] >= level for r in rows)
    ends = _ends(rows)
    tests = ", ".join(f"{r['max_test_acc']:.2f}" for r in rows)
    trains = ", ".join(f"{r['max_train_acc']:.2f}" for r in rows)
    return ("yes" if 2 * k > len(rows) else "no"), ("yes", "no"), (
        f"at λ = {lam:g} the best test accuracy passed {level:g} in {k} of {len(rows)} seeds within {ends} steps "
        f"({tests}; best training accuracy {trains})")


def rule_check(table: Sequence[Mapping[str, Any]], lam: float, regime: str, words: str) -> Check:
    """Every seed at ``lam`` got the rule's label ``regime`` within its budget, whatever the budget allows.

    What the rule saw is a fact of the run even where the budget is too short to call it a regime:
    at the smallest λ "weak" means memorised with no contraction and no generalisation *within the
    budget*; at the largest, "strong" means the table was not fitted within it. Fails with no seed at ``lam``.

    Examples
    --------
    >>> rows = [{"weight_decay": 5.0, "seed": 0, "regime": "not decided", "rule_regime": "strong", "last_step": 1000}]
    >>> c = rule_check(rows, 5.0, "strong", "never fitted its table")
    >>> bool(c), c.name, c.detail
    (True, 'λ = 5 within its budget: never fitted its table', 'the rule alone reads strong in 1 of 1 seeds within 1,000 steps (seed 0: strong)')
    """
    rows = sorted((r for r in require_rows(table, "table", "rule_check") if r["weight_decay"] == lam),
                  key=lambda r: r["seed"])
    labels = {r["seed"]: r.get("rule_regime", r["regime"]) for r in rows}
    k = sum(v == regime for v in labels.values())
    ends = _ends(rows)
    seeds = ", ".join(f"seed {s}: {v}" for s, v in labels.items())
    return Check(f"λ = {lam:g} within its budget: {words}", bool(rows) and k == len(rows),
                 f"the rule alone reads {regime} in {k} of {len(rows)} seeds within {ends or 'no'} steps ({seeds})")


def regime_findings(table: Sequence[Mapping[str, Any]], level: float = 0.5) -> list[str]:
    """The chapter's takeaway in sentences, each read from the budget-labelled table.

    ``level`` is the best test accuracy that counts as learning where the training set was not fitted.

    Examples
    --------
    >>> rows = [{"weight_decay": lam, "seed": 0, "regime": r, "last_step": 1000, "t_mem": m, "max_test_acc": a}
    ...         for lam, r, m, a in ((0.01, "not decided", 300, 0.01), (1.0, "intermediate", 500, 1.0),
    ...                              (2.0, "not decided", None, 0.8), (5.0, "not decided", None, 0.01))]
    >>> for s in regime_findings(rows): print(s)
    1 of 4 runs reached a verdict within their budget, all intermediate (λ = 1).
    The other 3 runs (λ = 0.01, 2, 5) stopped before the steps their λ needs: they are not decided, and nothing here calls them weak or strong.
    Where no run fitted its training set, the best test accuracy reached 0.80 at λ = 2 within 1,000 steps (the decay slowed learning, it did not stop it) and stayed at 0.01 at λ = 5 within 1,000 steps (too short a run to tell slowed from stopped).
    """
    rows = require_rows(table, "table", "regime_findings")
    decided = [r for r in rows if r["regime"] != NOT_DECIDED]
    open_ = [r for r in rows if r["regime"] == NOT_DECIDED]

    def lams(sel: Sequence[Mapping[str, Any]]) -> str:
        return ", ".join(f"{lam:g}" for lam in sorted({r["weight_decay"] for r in sel}))

    labels = [r["regime"] for r in decided]
    kinds = ", ".join(f"{label} in {labels.count(label)} (λ = {lams([r for r in decided if r['regime'] == label])})"
                      for label in dict.fromkeys(sorted(labels)))
    if len(set(labels)) == 1:
        kinds = f", all {labels[0]} (λ = {lams(decided)})"
    elif kinds:
        kinds = f": {kinds}"
    out = [f"{len(decided)} of {len(rows)} runs reached a verdict within their budget{kinds}."]
    if open_:
        out.append(f"The other {len(open_)} runs (λ = {lams(open_)}) stopped before the steps their λ needs: they are "
                   "not decided, and nothing here calls them weak or strong.")
    by_lam: dict[float, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_lam.setdefault(r["weight_decay"], []).append(r)
    clauses = []
    for lam in sorted(by_lam):
        group = by_lam[lam]
        if any(r["t_mem"] is not None for r in group):
            continue
        best = _span([r["max_test_acc"] for r in group], "{:.2f}")
        ends = _ends(group)
        if 2 * sum(r["max_test_acc"] >= level for r in group) > len(group):
            clauses.append(f"reached {best} at λ = {lam:g} within {ends} steps (the decay slowed learning, "
                           "it did not stop it)")
        else:
            clauses.append(f"stayed at {best} at λ = {lam:g} within {ends} steps (too short a run to tell slowed "
                           "from stopped)")
    if clauses:
        out.append("Where no run fitted its training set, the best test accuracy " + " and ".join(clauses) + ".")
    return out
