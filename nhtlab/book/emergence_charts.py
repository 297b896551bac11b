"""Charts for emergence with scale and for the monitor. They draw precomputed records only.

Inputs come from :mod:`nhtlab.analysis.emergence` (per-size rows, fractions generalised
per budget, law curves) and from :class:`nhtlab.training.monitor.Monitor` histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis.regimes import TOO_EARLY
from ..history import History
from .regime_charts import REGIME_COLORS
from ..charts import check_arguments
from ..charts.curves import WIDTH, long_records

__all__ = ["gap_and_delay", "fraction_threshold", "monitor_chart", "lambda_grid"]


def gap_and_delay(rows: Sequence[dict[str, Any]], law: Sequence[dict[str, Any]], size_title: str = "width") -> alt.VConcatChart:
    """Top: each run's norm gap log(V_mem/V_grok) against size. Bottom: measured delay and the law's curves
    (``law`` rows ``{size, series, delay}``)."""
    runs = [r for r in rows if r.get("log_gap") is not None]
    x = alt.X("size:Q", title=size_title, scale=alt.Scale(type="log", base=2))
    gap = alt.Chart(alt.Data(values=runs)).mark_point(filled=True, size=60, color="#333").encode(
        x=x, y=alt.Y("log_gap:Q", title="norm gap log(V_mem/V_grok)", scale=alt.Scale(zero=False)),
        tooltip=["size:Q", "seed:Q", alt.Tooltip("log_gap:Q", format=".3f", title="norm gap"),
                 alt.Tooltip("V_sc:Q", format=",.0f", title="V_mem"), alt.Tooltip("V_st:Q", format=",.0f", title="V_grok")],
    ).properties(width=WIDTH, height=180, title="the norm gap of each run (dots)")
    hover = alt.selection_point(fields=["series"], on="pointerover", bind="legend")
    curves = alt.Chart(alt.Data(values=list(law))).mark_line(point=True).encode(
        x=x, y=alt.Y("delay:Q", title="T_grok − T_mem (steps, log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title="delay", legend=alt.Legend(orient="right", labelLimit=200)),
        opacity=alt.condition(hover, alt.value(1.0), alt.value(0.3)),
        tooltip=["series:N", "size:Q", alt.Tooltip("delay:Q", format=",.0f")],
    ).add_params(hover)
    dots = alt.Chart(alt.Data(values=runs)).mark_point(color="#333", opacity=0.5).encode(
        x=x, y="delay:Q", tooltip=["size:Q", "seed:Q", "delay:Q"])
    bottom = (curves + dots).properties(width=WIDTH, height=200,
                                        title="the delay: each run (dots), the median and the law's")
    return alt.vconcat(gap, bottom).resolve_legend(color="independent")  # the legend beside its own panel


def fraction_threshold(fractions: Sequence[dict[str, Any]], budgets: Sequence[int], start: int | None = None,
                       size_title: str = "width") -> alt.Chart:
    """Fraction of runs generalised within a budget (:func:`~nhtlab.analysis.emergence.fraction_generalised`'s
    records over several budgets) against size; a slider picks the budget."""
    budgets = sorted(budgets)
    step = min((b - a for a, b in zip(budgets, budgets[1:])), default=1)
    slider = alt.binding_range(min=budgets[0], max=budgets[-1], step=step, name="training budget (steps) ")
    pick = alt.param(name="budget", value=start if start is not None else budgets[len(budgets) // 2], bind=slider)
    return alt.Chart(alt.Data(values=list(fractions))).mark_line(point=alt.OverlayMarkDef(size=70)).encode(
        x=alt.X("size:Q", title=size_title, scale=alt.Scale(type="log", base=2)),
        y=alt.Y("fraction:Q", title="fraction of seeds that generalised", scale=alt.Scale(domain=[0, 1])),
        tooltip=["size:Q", "budget:Q", "generalised:Q", "runs:Q", alt.Tooltip("fraction:Q", format=".2f")],
    ).add_params(pick).transform_filter(alt.datum.budget == pick).properties(
        width=WIDTH, height=220, title="generalised within the budget (move the slider)")


def monitor_chart(history: History, title: str = "") -> alt.VConcatChart:
    """What a :class:`~nhtlab.training.monitor.Monitor` recorded: accuracy (if any), ‖θ‖², head signals, DLR."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    cols = history.columns

    def panel(columns: dict[str, str], y_title: str, height: int = 130, zero: bool = False) -> alt.Chart:
        present = {c: label for c, label in columns.items() if c in cols}
        return alt.Chart(alt.Data(values=long_records(history, present))).mark_line().encode(
            x=alt.X("step:Q"), y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=zero)),
            color=alt.Color("series:N", title=None),
            tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=",.3f")],
        ).properties(width=WIDTH, height=height)

    panels = []
    if any(c.endswith("_acc") for c in cols):
        panels.append(panel({c: c.replace("_acc", "") for c in cols if c.endswith("_acc")}, "accuracy", zero=True))
    panels.append(panel({"norm": "‖θ‖²"}, "‖θ‖²"))
    panels.append(panel({"head_rel": "‖θ_L‖² / ‖θ_L(0)‖²", "head_ratio": "‖θ_L‖² / ‖θ_1‖²"}, "head signals"))
    if "dlr" in cols:
        panels.append(panel({"dlr": "DLR (probe)"}, "DLR", zero=True))
    panels[0] = panels[0].add_params(zoom).properties(title=title or "monitor readings")
    return alt.vconcat(*panels).resolve_scale(color="independent")


def lambda_grid(records: Sequence[dict[str, Any]], value: str = "norm", title: str = "‖θ‖² over a λ grid") -> alt.Chart:
    """One curve per λ (records with ``step``, ``lambda``, ``regime`` and ``value``), coloured as the regimes
    chapter's; a dropdown highlights one λ."""
    lambdas = sorted({r["lambda"] for r in records})
    pick = alt.param(name="lam", value=None, bind=alt.binding_select(options=[None, *lambdas], labels=["all", *map(str, lambdas)], name="λ "))
    return alt.Chart(alt.Data(values=list(records))).mark_line().encode(
        x=alt.X("step:Q"), y=alt.Y(f"{value}:Q", title=value, scale=alt.Scale(type="log")),
        detail="lambda:N",
        color=alt.Color("regime:N", scale=alt.Scale(domain=[*REGIME_COLORS, TOO_EARLY],
                                                    range=[*REGIME_COLORS.values(), "#bab0ac"])),
        opacity=alt.condition((pick == None) | (alt.datum["lambda"] == pick), alt.value(1.0), alt.value(0.12)),  # noqa: E711
        tooltip=["lambda:Q", "regime:N", "step:Q", alt.Tooltip(f"{value}:Q", format=",.2f")],
    ).add_params(pick).properties(width=WIDTH, height=240, title=title)


check_arguments(__name__)  # a wrong type gets a TypeError naming the argument, as in nhtlab.charts
