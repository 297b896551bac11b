"""Charts of layerwise signals and of shortcut sweeps, from precomputed records; interactive in the static book."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from ..charts import check_arguments
from ..charts.curves import WIDTH, layer_label

__all__ = ["warning_signals", "sweep_lines", "score_bars", "contraction_curves", "layer_peak_chart"]


def _run_param(records: Sequence[dict[str, Any]], first: bool = False) -> alt.Parameter:
    """A dropdown of the records' runs: in order with the first one picked, or sorted with the middle one picked."""
    runs = list(dict.fromkeys(r["run"] for r in records))
    options = runs if first else sorted(runs)
    value = options[0 if first else len(options) // 2]
    return alt.param(name="run", value=value, bind=alt.binding_select(options=options, name="run "))


def _event_marks(events: Sequence[dict[str, Any]], run: alt.Parameter) -> list[alt.Chart]:
    """Dashed rules at the picked run's events, each named at the top (left of the rule for ``"align": "right"``)."""
    rows = [{"align": "left", **e} for e in events]
    base = alt.Chart(alt.Data(values=rows)).transform_filter(alt.datum.run == run)
    rules = base.mark_rule(strokeDash=[4, 3], color="black").encode(x="step:Q", tooltip=["event:N", "step:Q"])
    names = [base.transform_filter(alt.datum.align == side).mark_text(
        align=side, baseline="top", dx=3 if side == "left" else -3, dy=2, fontSize=11, color="black").encode(
        x="step:Q", y=alt.value(0), text="event:N") for side in ("left", "right")]
    return [rules, *names]


def _layered(run: alt.Parameter, events: Sequence[dict[str, Any]], *charts: alt.Chart) -> alt.Chart:
    """The charts in one layer with the picked run's event marks; a lone chart without events stays itself."""
    layers = [*charts, *(_event_marks(events, run) if events else [])]
    return alt.layer(*layers) if len(layers) > 1 else layers[0]


def warning_signals(records: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]] = (),
                    title: str = "early-warning signals and the border drop",
                    accuracy: Sequence[dict[str, Any]] = ()) -> alt.Chart:
    """Early-warning signals ``{step, run, signal, value}`` against step, one run at a time, with event rules;
    ``accuracy`` rows ``{step, run, value}`` draw an accuracy in [0, 1] in a panel above."""
    run = _run_param(records)
    pick = alt.selection_point(fields=["signal"], bind="legend")
    lines = alt.Chart(alt.Data(values=list(records))).transform_filter(alt.datum.run == run).mark_line().encode(
        x=alt.X("step:Q"), y=alt.Y("value:Q", title="signal (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("signal:N", title="signal (click to pick)", legend=alt.Legend(labelLimit=200)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["signal:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).add_params(run, pick)
    chart = _layered(run, events, lines).properties(width=WIDTH, height=220, title=title)
    if not accuracy:
        return chart
    top = alt.Chart(alt.Data(values=list(accuracy))).transform_filter(alt.datum.run == run).mark_line(
        color="#333").encode(x=alt.X("step:Q"), y=alt.Y("value:Q", title="reads the digit",
                                                         scale=alt.Scale(domain=[0, 1])),
                             tooltip=["step:Q", alt.Tooltip("value:Q", format=".2f")])
    top = _layered(run, events, top).properties(width=WIDTH, height=140,
                                                    title="share of conflict images read by the digit")
    return alt.vconcat(top, chart)


def sweep_lines(records: Sequence[dict[str, Any]], x: str, x_title: str, title: str = "") -> alt.Chart:
    """Final accuracies of several test sets against a swept setting (λ, ρ, …): rows ``{<x>: value, series, value}``."""
    pick = alt.selection_point(fields=["series"], bind="legend")
    return alt.Chart(alt.Data(values=list(records))).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y("value:Q", title="final accuracy"),
        color=alt.Color("series:N", title="set (click to pick)"),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=[alt.Tooltip(f"{x}:Q", title=x_title), "series:N", alt.Tooltip("value:Q", format=".3f")],
    ).add_params(pick).properties(width=WIDTH, height=220, title=title or "final accuracy")


def score_bars(records: Sequence[dict[str, Any]], title: str = "clean norm separation (nhtlab's estimator)") -> alt.Chart:
    """Separation scores per domain as bars in [−1, 1]; an undefined score draws no bar and says so in its label."""
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
    """Each layer's ‖θ_ℓ‖² in the window [T_mem, T_grok] (:func:`~nhtlab.book.layer_report.layer_window_records`),
    one run at a time, over its own peak or over its value at T_mem with a dashed line at 1 − ``share``."""
    if not records:  # no run memorised and grokked (a capped smoke run): say so instead of an empty chart
        note = [{"text": "no run has a window from T_mem to T_grok to show"}]
        return alt.Chart(alt.Data(values=note), title=title).mark_text(size=13).encode(text="text:N")
    records = [{**r, "layer": layer_label(r["layer"])} for r in records]
    run = _run_param(records)
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
    return _layered(run, events, lines, points, level).properties(width=WIDTH, height=260, title=title)


_EVENT_ORDER = ("border fitted", "T_mem", "border dropped")


def layer_peak_chart(records: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
                     title: str = "each layer's ‖θ_ℓ‖² over its own peak", subtitle: str = "") -> alt.Chart:
    """Each layer's ‖θ_ℓ‖² over its own peak against step (:func:`~nhtlab.book.layer_report.peak_records`), one run
    at a time, events as dashed rules with their own legend, the layer that contracts first written at the top."""
    if not records:
        raise ValueError("The 'records' parameter of layer_peak_chart is empty: there is no run to pick.")
    run = _run_param(records, first=True)
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
