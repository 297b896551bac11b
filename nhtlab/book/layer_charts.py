"""Charts of layerwise signals and of shortcut sweeps. They draw precomputed records only.

Records come from :mod:`nhtlab.analysis.layers` and the sweep tables a chapter builds.
Every chart keeps its interactivity in the static book (a run dropdown, legends that select).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from ..charts import check_arguments
from ..charts.curves import WIDTH, layer_label

__all__ = ["warning_signals", "sweep_lines", "score_bars", "contraction_curves", "layer_peak_chart"]


def _lam_param(values: Sequence[Any], name: str = "lam", label: str = "λ ") -> alt.Parameter:
    options = sorted(set(values))
    return alt.param(name=name, value=options[len(options) // 2], bind=alt.binding_select(options=options, name=label))


def _event_marks(events: Sequence[dict[str, Any]], run: alt.Parameter) -> list[alt.Chart]:
    """Dashed vertical rules at each event of the picked run, with the event's name at the top: to the right of
    the rule, or to its left for an event whose row has ``"align": "right"`` (one at the axis' end)."""
    rows = [{"align": "left", **e} for e in events]
    base = alt.Chart(alt.Data(values=rows)).transform_filter(alt.datum.run == run)
    rules = base.mark_rule(strokeDash=[4, 3], color="black").encode(x="step:Q", tooltip=["event:N", "step:Q"])
    names = [base.transform_filter(alt.datum.align == side).mark_text(
        align=side, baseline="top", dx=3 if side == "left" else -3, dy=2, fontSize=11, color="black").encode(
        x="step:Q", y=alt.value(0), text="event:N") for side in ("left", "right")]
    return [rules, *names]


def warning_signals(records: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]] = (),
                    title: str = "early-warning signals and the border drop",
                    accuracy: Sequence[dict[str, Any]] = ()) -> alt.Chart:
    """Early-warning signals against step for one run at a time (dropdown), with event rules.

    ``records`` are ``{step, run, signal, value}`` (value on a log axis), ``events`` ``{run, event, step}``;
    ``accuracy`` rows ``{step, run, value}`` draw an accuracy in [0, 1] in its own panel above.
    """
    run = _lam_param([r["run"] for r in records], name="run", label="run ")
    pick = alt.selection_point(fields=["signal"], bind="legend")
    lines = alt.Chart(alt.Data(values=list(records))).transform_filter(alt.datum.run == run).mark_line().encode(
        x=alt.X("step:Q"), y=alt.Y("value:Q", title="signal (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("signal:N", title="signal (click to pick)", legend=alt.Legend(labelLimit=200)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["signal:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).add_params(run, pick)
    chart = lines
    if events:
        chart = alt.layer(lines, *_event_marks(events, run))
    chart = chart.properties(width=WIDTH, height=220, title=title)
    if not accuracy:
        return chart
    top = alt.Chart(alt.Data(values=list(accuracy))).transform_filter(alt.datum.run == run).mark_line(
        color="#333").encode(x=alt.X("step:Q"), y=alt.Y("value:Q", title="reads the digit",
                                                         scale=alt.Scale(domain=[0, 1])),
                             tooltip=["step:Q", alt.Tooltip("value:Q", format=".2f")])
    if events:
        top = alt.layer(top, *_event_marks(events, run))
    top = top.properties(width=WIDTH, height=140, title="share of conflict images read by the digit")
    return alt.vconcat(top, chart)


def sweep_lines(records: Sequence[dict[str, Any]], x: str, x_title: str, log_x: bool = False,
                y_title: str = "final accuracy", title: str = "") -> alt.Chart:
    """Final values of several test sets against a swept setting (λ, ρ, …): rows ``{<x>: value, series, value}``."""
    pick = alt.selection_point(fields=["series"], bind="legend")
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    return alt.Chart(alt.Data(values=list(records))).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=scale),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("series:N", title="set (click to pick)"),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=[alt.Tooltip(f"{x}:Q", title=x_title), "series:N", alt.Tooltip("value:Q", format=".3f")],
    ).add_params(pick).properties(width=WIDTH, height=220, title=title or y_title)


def score_bars(records: Sequence[dict[str, Any]], title: str = "clean norm separation (nhtlab's estimator)") -> alt.Chart:
    """Separation scores per domain: bars in [−1, 1], tooltips with φ's drop and the norm's contraction.

    An undefined score (``defined`` false) draws no bar and reads "undefined" in the label.
    """
    records = [{**r, "score": r["score"] if r.get("defined") else None,
                "domain": r["domain"] if r.get("defined") else f"{r['domain']} (undefined)"} for r in records]
    return alt.Chart(alt.Data(values=list(records))).mark_bar().encode(
        x=alt.X("score:Q", title="Spearman(‖θ‖², φ) from the fitted shortcut on", scale=alt.Scale(domain=[-1, 1])),
        y=alt.Y("domain:N", title=None, sort=None),
        color=alt.condition(alt.datum.score > 0, alt.value("#4c78a8"), alt.value("#e45756")),
        tooltip=["domain:N", alt.Tooltip("score:Q", format=".2f"), alt.Tooltip("phi_drop:Q", format=".2f", title="φ drop"),
                 alt.Tooltip("norm_contraction:Q", format=".1%", title="norm contraction"), "defined:N"],
    ).properties(width=WIDTH, height=30 * max(1, len({r["domain"] for r in records})), title=title)


def contraction_curves(records: Sequence[dict[str, Any]], share: float,
                       title: str = "each layer from T_mem to T_grok",
                       events: Sequence[dict[str, Any]] = ()) -> alt.Chart:
    """Each layer's ‖θ_ℓ‖² in the window [T_mem, T_grok], one run at a time (dropdown).

    A switch shows the norm over the layer's own peak over the run (the NHT paper's view) or over its
    value at T_mem, where a dashed line marks 1 − ``share``: a layer has contracted where its curve
    crosses it (filled points). ``records`` are
    :func:`~nhtlab.book.layer_report.layer_window_records` rows, ``events`` ``{run, event, step}``.
    """
    if not records:  # no run memorised and grokked (a capped smoke run): say so instead of an empty chart
        note = [{"text": "no run has a window from T_mem to T_grok to show"}]
        return alt.Chart(alt.Data(values=note), title=title).mark_text(size=13).encode(text="text:N")
    records = [{**r, "layer": layer_label(r["layer"])} for r in records]
    run = _lam_param([r["run"] for r in records], name="run", label="run ")
    view = alt.param(name="view", value="normalised",
                     bind=alt.binding_radio(options=["normalised", "at_mem"],
                                            labels=["‖θ_ℓ‖² / own peak", "‖θ_ℓ‖² / value at T_mem"], name="show "))
    pick = alt.selection_point(fields=["layer"], bind="legend")
    order = list(dict.fromkeys(r["layer"] for r in records))
    base = alt.Chart(alt.Data(values=list(records))).transform_filter(alt.datum.run == run).transform_calculate(
        value="view == 'normalised' ? datum.normalised : datum.at_mem")
    color = alt.Color("layer:N", sort=order, title="layer (click to pick)", legend=alt.Legend(labelLimit=260))
    encoding = dict(x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title="‖θ_ℓ‖² (see switch)"),
                    color=color, opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)))
    lines = base.mark_line().encode(**encoding).add_params(run, view, pick)
    # the fill repeats the colour only where a layer has contracted: no legend of its own
    points = base.mark_point(size=40).encode(
        **encoding, fill=alt.condition(alt.datum.contracted, alt.Color("layer:N", sort=order, legend=None),
                                       alt.value("white")),
        tooltip=["layer:N", "step:Q", alt.Tooltip("normalised:Q", format=".3f", title="/ own peak"),
                 alt.Tooltip("at_mem:Q", format=".3f", title="/ at T_mem"), "contracted:N"])
    level = alt.Chart(alt.Data(values=[{"level": 1.0 - share}])).transform_filter(view == "at_mem").mark_rule(
        strokeDash=[2, 2], color="#888").encode(y="level:Q")
    chart = alt.layer(lines, points, level, *(_event_marks(events, run) if events else []))
    return chart.properties(width=WIDTH, height=260, title=title)


_EVENT_ORDER = ("border fitted", "T_mem", "border dropped")


def layer_peak_chart(records: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                     title: str = "each layer's ‖θ_ℓ‖² over its own peak", subtitle: str = "") -> alt.Chart:
    """Each layer's ‖θ_ℓ‖² over its own peak against step, one run at a time (dropdown), events as rules.

    ``records`` and ``events`` are :func:`~nhtlab.book.layer_report.peak_records`'s. The events are dashed
    rules with a legend of their own (colour stays the layer's), named ``"border fitted"``, ``"T_mem"`` or
    ``"border dropped"``; the layer the contraction order reads first is written at the top of the plot and in
    every tooltip.
    """
    if not records:
        raise ValueError("The 'records' parameter of layer_peak_chart is empty: there is no run to pick.")
    labels = list(dict.fromkeys(r["run"] for r in records))
    run = alt.param(name="run", value=labels[0], bind=alt.binding_select(options=labels, name="run "))
    pick = alt.selection_point(fields=["layer"], bind="legend")
    order = list(dict.fromkeys(r["layer"] for r in records))
    # headroom above 1 holds the line that names the first layer
    y = alt.Y("normalised:Q", title="‖θ_ℓ‖² / its own peak", scale=alt.Scale(domain=[0, 1.15]))
    lines = alt.Chart(alt.Data(values=list(records))).transform_filter(alt.datum.run == run).mark_line().encode(
        x=alt.X("step:Q", title="step"), y=y,
        color=alt.Color("layer:N", sort=order, title="layer (click to pick)", legend=alt.Legend(labelLimit=200)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["layer:N", "step:Q", alt.Tooltip("normalised:Q", format=".3f", title="/ own peak"),
                 alt.Tooltip("first:N", title="contracts first")],
    ).add_params(run, pick)
    # the legend in the order events happen in a run; an event no run has is left out of it
    names = [e for e in _EVENT_ORDER if e in {e["event"] for e in events}]
    rules = alt.Chart(alt.Data(values=list(events))).transform_filter(alt.datum.run == run).mark_rule(
        color="black").encode(
        x="step:Q", strokeDash=alt.StrokeDash("event:N", title="event", scale=alt.Scale(domain=names or alt.Undefined)),
        tooltip=["event:N", "step:Q"])
    firsts = [{"run": label, "text": f"first to lose {r['share']:.0%} of its value at the fit: {r['first']}"}
              for label, r in {r["run"]: r for r in records}.items()]
    note = alt.Chart(alt.Data(values=firsts)).transform_filter(alt.datum.run == run).mark_text(
        align="left", baseline="top", fontSize=12).encode(x=alt.value(4), y=alt.value(4), text="text:N")
    return alt.layer(lines, rules, note).properties(
        width=WIDTH, height=260, title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))


check_arguments(__name__)  # a wrong type gets a TypeError naming the argument, as in nhtlab.charts
