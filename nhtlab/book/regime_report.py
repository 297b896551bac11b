"""A λ sweep's regimes reported: table rows, readings over seeds, and the checks a chapter asserts.

:func:`nhtlab.analysis.regimes.regime_table` diagnoses every run of a sweep; the functions here turn
its rows into what the regimes chapter shows and asserts. The budget a verdict at each λ needs is fixed
before the runs and scales as 1/(ηλ) (:func:`decision_budgets`); a run short of it is "not decided
within N steps" (:func:`budget_regimes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import groupby
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


def panel_budget(steps: int, rate: float, new_rate: float) -> int:
    """The step budget at decay rate ``new_rate`` = ηλ, scaled from ``steps`` at ``rate`` as the delay law's 1/(ηλ),
    between ``steps`` and :data:`PANEL_BUDGET_CAP` × ``steps`` (no decay gets the cap)."""
    require_int(steps, "steps", 1, owner="panel_budget")
    require_real(rate, "rate", 0.0, low_open=True, owner="panel_budget")
    require_real(new_rate, "new_rate", 0.0, owner="panel_budget")
    scale = PANEL_BUDGET_CAP if new_rate == 0.0 else min(PANEL_BUDGET_CAP, max(1.0, rate / new_rate))
    return int(round(steps * scale))


def decision_budgets(budgets: Mapping[float, int], lr: float, base_lam: float = 1.0) -> dict[float, int]:
    """λ → the steps a verdict other than intermediate needs: :func:`panel_budget` from the budget at ``base_lam``
    (chapter 01's live panel's rule); it reads only the settings, so it is fixed before the runs."""
    require_type(budgets, "budgets", Mapping, owner="decision_budgets")
    if base_lam not in budgets:
        raise ValueError(f"The 'budgets' parameter of decision_budgets must hold base_lam = {base_lam:g}; "
                         f"it holds {list(budgets)}.")
    steps = int(budgets[base_lam])
    return {lam: panel_budget(steps, lr * base_lam, lr * lam) for lam in budgets}


def budget_regimes(table: Sequence[Mapping[str, Any]], needed: Mapping[float, int]) -> list[dict[str, Any]]:
    """The rows of a regime table labelled as their budget (``needed``, λ → steps) allows, the rule's as ``rule_regime``."""
    rows = require_rows(table, "table", "budget_regimes")
    out = []
    for row in rows:
        need = int(needed[row["weight_decay"]])
        label = within_budget(row["regime"], int(row["last_step"]), need)
        reason = row["reason"] if label != NOT_DECIDED else (
            f"not decided within {row['last_step']:,} steps: a verdict at λ = {row['weight_decay']:g} "
            f"needs {need:,}; the rule alone would read {row['regime']} ({row['reason']})")
        out.append({**row, "regime": label, "rule_regime": row["regime"], "needed": need, "reason": reason})
    return out


def verdict_label(row: Mapping[str, Any]) -> str:
    """A run's label in words: its regime, or ``"not decided within N steps"`` (N its last step)."""
    return f"{NOT_DECIDED} within {int(row['last_step']):,} steps" if row["regime"] == NOT_DECIDED else row["regime"]


def regime_summary_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per λ: the verdicts counted over its seeds, how many memorised, the best accuracies."""
    return [{"λ": lam, "verdict": _verdicts(rows, "{}: {} of {}", "; "),
             "memorised": f"{sum(r['t_mem'] is not None for r in rows)} of {len(rows)}",
             "best train": _span([r["max_train_acc"] for r in rows], "{:.2f}"),
             "best test": _span([r["max_test_acc"] for r in rows], "{:.2f}")}
            for lam, rows in _by_lambda(table, "regime_summary_records").items()]


def _by_lambda(table: Sequence[Mapping[str, Any]], owner: str) -> dict[float, list[Mapping[str, Any]]]:
    """λ → its rows, λ and then seed increasing."""
    rows = sorted(require_rows(table, "table", owner), key=lambda r: (r["weight_decay"], r["seed"]))
    return {lam: list(group) for lam, group in groupby(rows, key=lambda r: r["weight_decay"])}


def _verdicts(rows: Sequence[Mapping[str, Any]], fmt: str, sep: str) -> str:
    """Each verdict among ``rows`` with its count, ``fmt`` filled with (verdict, count, runs), first seen first."""
    return sep.join(fmt.format(label, k, len(rows)) for label, k in Counter(map(verdict_label, rows)).items())


def _ends(rows: Sequence[Mapping[str, Any]]) -> str:
    """The runs' last steps, ``"1,000 / 1,500"``."""
    return " / ".join(f"{e:,}" for e in sorted({int(r["last_step"]) for r in rows}))


def _span(values: Sequence[float], fmt: str) -> str:
    """``"a–b"`` over ``values`` formatted with ``fmt``, or one value when they print the same."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def lambda_sentences(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per λ saying what its seeds did within their budget and the verdict it allows."""
    out = []
    for lam, rows in _by_lambda(table, "lambda_sentences").items():
        n, ends = len(rows), _ends(rows)
        mem = [r for r in rows if r["t_mem"] is not None]
        gen = [r for r in rows if r["t_grok"] is not None]
        fell = [r["contraction"] for r in mem if r["contraction"] is not None]
        every = "the seed" if n == 1 else f"all {n} seeds"
        if all(r["regime"] == "intermediate" for r in rows):
            delays = [r["t_grok"] - r["t_mem"] for r in rows]
            out.append(f"**λ = {lam:g}**: {every} memorised, then ‖θ‖² fell {_span(fell, '{:.0%}')} and the test "
                       f"accuracy reached 99% {_span(delays, '{:,}')} steps later: intermediate in {n} of {n}.")
            continue
        best_train, best_test = (_span([r[key] for r in rows], "{:.2f}") for key in ("max_train_acc", "max_test_acc"))
        if not mem:
            climbed = ("yet the test accuracy reached" if 2 * sum(r["max_test_acc"] >= 0.5 for r in rows) > n
                       else "and the test accuracy reached only")
            what = (f"no seed reached 99% training accuracy within {ends} steps (best {best_train}), "
                    f"{climbed} {best_test}")
        elif len(mem) == n and not gen:
            what = (f"{every} memorised and {'it did not generalise' if n == 1 else 'none generalised'} within {ends} "
                    f"steps (best test accuracy {best_test}); after memorising ‖θ‖² fell {_span(fell, '{:.0%}')}")
        else:
            what = f"{len(mem)} of {n} seeds memorised and {len(gen)} of {n} generalised within {ends} steps"
        needs = sorted({int(r["needed"]) for r in rows if r["regime"] == NOT_DECIDED})
        need = f" (a verdict needs {' / '.join(f'{v:,}' for v in needs)} steps)" if needs else ""
        out.append(f"**λ = {lam:g}**: {what}; verdict: {_verdicts(rows, '{} in {} of {}', ', ')}{need}.")
    return out


def regime_events(table: Sequence[Mapping[str, Any]], curves: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The T_mem and T_grok marks of every run, placed on its :func:`regime_curves` (train accuracy at T_mem, test
    at T_grok), for the regime charts."""
    points = {(rec["run"], rec["step"]): rec for rec in curves}
    return [{"run": i, **{k: rec[k] for k in ("weight_decay", "lam_index", "seed", "regime")}, "event": event,
             "step": step, "norm": rec["norm"], "accuracy": rec[split]}
            for i, row in enumerate(require_rows(table, "table", "regime_events"))
            for event, step, split in (("T_mem", row["t_mem"], "train_acc"), ("T_grok", row["t_grok"], "test_acc"))
            if (rec := points.get((i, step))) is not None]


def decided_readings(table: Sequence[Mapping[str, Any]], expected: Mapping[float, str]) -> list[Reading]:
    """At each λ of ``expected``, every seed's :func:`verdict_label` counted against the expected regime (rule "all")."""
    by_lam = _by_lambda(table, "decided_readings")
    return [over_seeds(f"λ = {lam:g}", {r["seed"]: verdict_label(r) for r in by_lam.get(lam, [])}, expected=regime,
                       rule="all") for lam, regime in expected.items()]


def regime_records(table: Sequence[Mapping[str, Any]],
                   grok_counts: Mapping[float, tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """One row per run of a regime table; ``grok_counts``: λ → (runs that grokked, runs) in the paper."""
    counts = grok_counts or {}
    return [{"λ": row["weight_decay"], "seed": row["seed"], "regime": verdict_label(row), "T_mem": row["t_mem"],
             "T_grok": row["t_grok"], "V_mem": row["v_mem"], "end": row["last_step"],
             "contraction": row["contraction"], "best test": row["max_test_acc"],
             "paper grokked": None if (n := counts.get(row["weight_decay"])) is None else f"{n[0]}/{n[1]}",
             "reason": row["reason"], "needs": row.get("needed")}
            for row in require_rows(table, "table", "regime_records")]


def regimes_by_lambda(table: Sequence[Mapping[str, Any]]) -> dict[float, dict[int, str]]:
    """λ → {seed: regime}, λ in increasing order."""
    return {lam: {r["seed"]: r["regime"] for r in rows} for lam, rows in _by_lambda(table, "regimes_by_lambda").items()}


def check_regime_order(table: Sequence[Mapping[str, Any]]) -> Check:
    """Sorted by λ, the diagnosed regimes never step backwards in weak → intermediate → strong (undetermined skipped)."""
    rows = require_rows(table, "table", "check_regime_order")
    ok = regime_order_ok([r["weight_decay"] for r in rows], [r["regime"] for r in rows])
    detail = "; ".join(f"λ = {lam:g}: {', '.join(seeds.values())}" for lam, seeds in regimes_by_lambda(rows).items())
    return Check("regimes in the order weak → intermediate → strong as λ grows", ok, detail)


def norm_start_records(table: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per λ, the seeds whose ‖θ‖² is largest at their first evaluation, and those whose norm rises first."""
    return [{"λ": lam, "largest at init": f"{sum(r['peak_step'] <= 0 for r in rows)} of {len(rows)}",
             "rises first": ", ".join(f"seed {r['seed']}" for r in rows if r["peak_step"] > 0) or None}
            for lam, rows in _by_lambda(table, "norm_start_records").items()]


def regime_curves(result: Any, table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long records of every run's curves, tagged with its λ, its rank among the λ (for sliders), seed and regime."""
    lams = sorted({row.run.weight_decay for row in result})
    return [{"run": i, "weight_decay": row.run.weight_decay, "lam_index": lams.index(row.run.weight_decay),
             "seed": row.run.seed, "regime": info["regime"], "step": r["step"], "norm": r["norm"],
             "train_acc": r["train_acc"], "test_acc": r.get("test_acc")}
            for i, (row, info) in enumerate(zip(result, table)) for r in row.history.rows]


def intermediate_answer(table: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[str, ...], str]:
    """The answer the sweep gives to "at which smallest λ are most (more than half) seeds intermediate?"."""
    by_lam = regimes_by_lambda(require_rows(table, "table", "intermediate_answer"))
    counts = {lam: sum(r == "intermediate" for r in seeds.values()) for lam, seeds in by_lam.items()}
    chosen = [lam for lam, seeds in by_lam.items() if 2 * counts[lam] > len(seeds)]
    answer = f"{chosen[0]:g}" if chosen else "none"
    why = "seeds diagnosed intermediate: " + ", ".join(
        f"λ = {lam:g}: {counts[lam]} of {len(seeds)}" for lam, seeds in by_lam.items())
    return answer, tuple(f"{lam:g}" for lam in by_lam) + ("none",), why


def learning_answer(table: Sequence[Mapping[str, Any]], lam: float, level: float = 0.5) -> tuple[str, tuple[str, str], str]:
    """The answer the sweep gives to "at ``lam``, does the best test accuracy of most seeds climb past ``level``?"."""
    rows = _by_lambda(table, "learning_answer").get(lam, [])
    if not rows:
        raise ValueError(f"learning_answer: the sweep has no run at 'lam' = {lam!r}")
    k = sum(r["max_test_acc"] >= level for r in rows)
    tests, trains = (", ".join(f"{r[key]:.2f}" for r in rows) for key in ("max_test_acc", "max_train_acc"))
    return ("yes" if 2 * k > len(rows) else "no"), ("yes", "no"), (
        f"at λ = {lam:g} the best test accuracy passed {level:g} in {k} of {len(rows)} seeds within {_ends(rows)} "
        f"steps ({tests}; best training accuracy {trains})")


def rule_check(table: Sequence[Mapping[str, Any]], lam: float, regime: str, words: str) -> Check:
    """Every seed at ``lam`` got the rule's label ``regime`` within its budget, whatever the budget allows: what the
    rule saw is a fact of the run even where the budget is too short to call it a regime."""
    rows = _by_lambda(table, "rule_check").get(lam, [])
    labels = {r["seed"]: r.get("rule_regime", r["regime"]) for r in rows}
    k = sum(v == regime for v in labels.values())
    seeds = ", ".join(f"seed {s}: {v}" for s, v in labels.items())
    return Check(f"λ = {lam:g} within its budget: {words}", bool(rows) and k == len(rows),
                 f"the rule alone reads {regime} in {k} of {len(rows)} seeds within {_ends(rows) or 'no'} steps "
                 f"({seeds})")


def regime_findings(table: Sequence[Mapping[str, Any]], level: float = 0.5) -> list[str]:
    """The chapter's takeaway in sentences from the budget-labelled table; ``level``: the best test accuracy that
    counts as learning where the training set was not fitted."""
    by_lam = _by_lambda(table, "regime_findings")
    rows = [r for group in by_lam.values() for r in group]
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
    clauses = []
    for lam, group in by_lam.items():
        if all(r["t_mem"] is None for r in group):
            slowed = 2 * sum(r["max_test_acc"] >= level for r in group) > len(group)
            best = _span([r["max_test_acc"] for r in group], "{:.2f}")
            clauses.append(f"{'reached' if slowed else 'stayed at'} {best} at λ = {lam:g} within {_ends(group)} steps "
                           + ("(the decay slowed learning, it did not stop it)" if slowed
                              else "(too short a run to tell slowed from stopped)"))
    if clauses:
        out.append("Where no run fitted its training set, the best test accuracy " + " and ".join(clauses) + ".")
    return out
