"""The emergence chapter's two links reported: the checks it asserts and the readings it shows over seeds.

The law's link is asserted: across sizes the delay follows the norm gap, run by run
(:func:`check_law_link`), on enough sizes that generalised. The hypothesis's link (does the norm gap
shrink as the model grows?) is shown and never asserted: :func:`trend_records` sets the difference
between the largest and the smallest size against the seed spread, and reads the direction per seed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..history import History
from ..validation import require_int, require_real, require_type
from .report import Markdown, require_rows, table, what_we_found
from .claims import Check, Reading, over_seeds
from ..analysis.emergence import between_and_within, fraction_generalised, run_row, size_summary
from ..analysis.separation import spearman

__all__ = ["law_link", "check_law_link", "check_sizes_generalise", "direction_by_seed", "trend_records",
           "trend_answer", "norm_gap", "width_rows", "width_table", "run_table", "trend_reading",
           "emergence_findings"]

#: The answers to "how does this quantity change with size?" (:func:`trend_answer`).
TREND_CHOICES = ("grows", "shrinks", "no clear change")


def law_link(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Spearman's rank correlation of log(V_mem/V_grok) and the delay over the runs that generalised (NaN below 3)."""
    done = [r for r in require_rows(rows, "rows", "law_link")
            if r.get("log_gap") is not None and r.get("delay") is not None]
    corr = spearman([r["log_gap"] for r in done], [r["delay"] for r in done]) if len(done) >= 3 else math.nan
    return {"runs": len(done), "correlation": corr}


def check_law_link(rows: Sequence[Mapping[str, Any]], at_least: float = 0.5) -> Check:
    """The delay follows the norm gap: :func:`law_link`'s correlation ≥ ``at_least`` (NaN fails)."""
    require_real(at_least, "at_least", -1.0, 1.0, owner="check_law_link")
    link = law_link(rows)
    ok = not math.isnan(link["correlation"]) and link["correlation"] >= at_least
    return Check("the delay follows the norm gap across sizes", ok,
                 f"rank correlation {link['correlation']:.2f} over {link['runs']} runs (at least {at_least:g})")


def check_sizes_generalise(summary: Sequence[Mapping[str, Any]], at_least: int = 3) -> Check:
    """At least ``at_least`` sizes have a run that generalised within the step limit."""
    require_int(at_least, "at_least", low=1, owner="check_sizes_generalise")
    rows = require_rows(summary, "summary", "check_sizes_generalise")
    sizes = [r["size"] for r in rows if r["grokked"]]
    return Check(f"at least {at_least} sizes generalise", len(sizes) >= at_least,
                 f"sizes with a run that generalised: {', '.join(map(str, sizes)) or 'none'}")


def direction_by_seed(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[tuple[Any, Any] | None, dict[int, str]]:
    """The smallest and largest size at which ``key`` has a value (None below two), and each seed's direction
    between them: the two sizes :func:`trend_records` reads its difference at, so that both read the same data."""
    at = {(r["seed"], r["size"]): float(r[key]) for r in require_rows(rows, "rows", "direction_by_seed")
          if r.get(key) is not None}
    sizes = sorted({size for _, size in at})
    if len(sizes) < 2:
        return None, {}
    small, large = sizes[0], sizes[-1]
    changes = {seed: at[seed, large] - at[seed, small] for seed in sorted({seed for seed, _ in at})
               if (seed, small) in at and (seed, large) in at}
    return (small, large), {seed: "grows" if c > 0 else "shrinks" if c < 0 else "flat" for seed, c in changes.items()}


def trend_records(rows: Sequence[Mapping[str, Any]], keys: Mapping[str, str],
                  expected: str = "shrinks") -> list[dict[str, Any]]:
    """Per quantity, its change from the smallest to the largest size against the seed spread, and over seeds."""
    require_type(keys, "keys", Mapping, owner="trend_records")
    rows = require_rows(rows, "rows", "trend_records")
    out = []
    for label, key in keys.items():
        ends, by_seed = direction_by_seed(rows, key)
        change = between_and_within(rows, key) if ends else None
        verdict = None if change is None else ("within seed noise" if abs(change["difference"]) <= change["seed_spread"]
                                               else "shrinks" if change["difference"] < 0 else "grows")
        out.append({"quantity": label, "widths": f"{ends[0]} → {ends[1]}" if ends else None,
                    "difference": None if change is None else change["difference"],
                    "seed spread": None if change is None else change["seed_spread"], "verdict": verdict,
                    "seeds": over_seeds(label, by_seed, expected=expected).text() if by_seed else None})
    return out


def trend_answer(trends: Sequence[Mapping[str, Any]], quantity: str) -> tuple[str, tuple[str, ...], str]:
    """How ``quantity`` changes from the smallest size to the largest (its :func:`trend_records` verdict), as the
    answer to a prediction: within the seed spread or unread is ``"no clear change"``."""
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

    ends = f" ({row['widths']})" if row.get("widths") else ""
    why = (f"the median {quantity} at the largest size minus at the smallest{ends} is {num(row['difference'], '+')}, "
           f"against a seed spread of {num(row['seed spread'])}")
    return answer, TREND_CHOICES, why + (f"; {row['seeds']}" if row["seeds"] else "")


def norm_gap(history: History) -> float | None:
    """A run's norm gap log(V_mem/V_grok) (:func:`~nhtlab.analysis.emergence.run_row`'s ``log_gap``), chapter 07's
    exercise answer; None for a run that never generalised."""
    require_type(history, "history", History, owner="norm_gap")
    return run_row(history, default_size="any")["log_gap"]  # the size is not read here


def width_rows(rows: Sequence[Mapping[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Per width: how many seeds generalised, medians over those that did, the share generalised within ``budget``."""
    rows = require_rows(rows, "rows", "width_rows")
    gaps: dict[Any, list[float]] = {}
    for r in rows:
        if r.get("log_gap") is not None:
            gaps.setdefault(r["size"], []).append(r["log_gap"])
    median_gap = {size: statistics.median(values) for size, values in gaps.items()}
    return [{"size": w["size"], "generalised": f"{w['grokked']} of {w['runs']}", "gap": median_gap.get(w["size"]),
             "delay": w["delay"], "law": w["predicted"], "T_mem": w["T_mem"], "V_mem": w["V_sc"], "V_grok": w["V_st"],
             "within": w["fraction"]} for w in size_summary(rows, budget)]


def width_table(rows: Sequence[Mapping[str, Any]], budget: int, evidence: bool = False) -> Markdown:
    """:func:`width_rows` as a table: the lesson's columns, or with ``evidence`` the norms and T_mem behind them."""
    columns = (["size", "T_mem", "V_mem", "V_grok", "gap"] if evidence
               else ["size", "generalised", "gap", "delay", "law", "within"])
    formats = {"gap": "{:.2f}", "delay": "{:,.0f}", "law": "{:,.0f}", "within": "{:.0%}", "T_mem": "{:,.0f}",
               "V_mem": "{:,.0f}", "V_grok": "{:,.0f}"}
    return table(width_rows(rows, budget), columns=columns, formats={c: formats[c] for c in columns if c in formats},
                 headers={"size": "d_model", "generalised": "seeds generalised", "gap": "norm gap",
                          "delay": "delay (steps)", "law": "law's delay", "within": f"within {budget:,} steps",
                          "T_mem": "median T_mem", "V_mem": "median V_mem", "V_grok": "median V_grok"})


def run_table(rows: Sequence[Mapping[str, Any]]) -> Markdown:
    """Every run of the sweep: its events, norms, norm gap log(V_mem/V_grok), delay and the law's delay."""
    return table(require_rows(rows, "rows", "run_table"),
                 columns=["size", "seed", "T_mem", "T_grok", "V_sc", "V_st", "log_gap", "delay", "predicted"],
                 formats={"V_sc": "{:,.0f}", "V_st": "{:,.0f}", "log_gap": "{:.2f}", "predicted": "{:,.0f}"},
                 headers={"size": "d_model", "V_sc": "V_mem", "V_st": "V_grok", "log_gap": "norm gap",
                          "predicted": "law's delay"})


def trend_reading(rows: Sequence[Mapping[str, Any]]) -> Reading:
    """The norm gap's direction with width over seeds (:func:`direction_by_seed`), against the hypothesis: shrinks."""
    ends, by_seed = direction_by_seed(require_rows(rows, "rows", "trend_reading"), "log_gap")
    return over_seeds("the norm gap with width" + (f" ({ends[0]} → {ends[1]})" if ends else ""), by_seed,
                      expected="shrinks")


def emergence_findings(rows: Sequence[Mapping[str, Any]], trends: Sequence[Mapping[str, Any]], budget: int) -> Markdown:
    """Chapter 07's "What we found": the law's link, the gap's and the delay's direction, the budget, from the run."""
    rows = require_rows(rows, "rows", "emergence_findings")
    link = law_link(rows)
    by = {t["quantity"]: t for t in trends}
    gap, delay = by["norm gap"], by["delay"]
    gap_seeds = trend_reading(rows)
    within = ", ".join(f"{f['generalised']} of {f['runs']} at {f['size']}" for f in fraction_generalised(rows, budget))
    never = [f"{sum(r['T_mem'] is None for r in group)} of {len(group)} at {size}"
             for size in sorted({r["size"] for r in rows}) for group in [[r for r in rows if r["size"] == size]]
             if any(r["T_mem"] is None for r in group)]

    def direction(t: Mapping[str, Any]) -> str:
        if t["verdict"] is None:
            return "could not be read (fewer than two widths generalised)"
        return f"{t['verdict']} from d_model {t['widths'].replace(' → ', ' to ')}"

    corr = "not defined" if math.isnan(link["correlation"]) else f"{link['correlation']:.2f}"
    seeds = (f"; of the seeds with a gap at both widths it shrinks in {gap_seeds.k} of {gap_seeds.n}"
             if gap_seeds.n else "")
    premise = gap_seeds.holds and gap["verdict"] == "shrinks"
    v_mem = {w["size"]: w["V_mem"] for w in width_rows(rows, budget) if w["V_mem"] is not None}
    ends = (f" The median V_mem is {v_mem[min(v_mem)]:,.0f} at d_model {min(v_mem)} and {v_mem[max(v_mem)]:,.0f} at "
            f"{max(v_mem)}." if len(v_mem) >= 2 else "")
    return what_we_found(
        f"The law's link: run by run, the delay follows the norm gap log(V_mem/V_grok) with a rank correlation of "
        f"{corr} over {link['runs']} runs that generalised.",
        f"The norm gap {direction(gap)} (medians, against the spread between seeds){seeds}: the premise of apparent "
        f"emergence, a gap that shrinks as the model grows, {'holds' if premise else 'does not hold'} here.{ends}",
        f"The delay {direction(delay)}" + ("." if delay["verdict"] == "shrinks"
                                            else ", where apparent emergence needs it to shrink."),
        f"Within {budget:,} steps the seeds that generalised are {within}"
        + (f"; {', '.join(never)} never memorised at all, which is a limit of fitting the table, not a norm gap."
           if never else ": every run memorised, so where that share changes with width is set by the delay "
                         "against the budget."))
