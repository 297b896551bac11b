"""Chapter 04's charts of DLR and its spectra, drawn from precomputed records; nothing is measured here.

Every chart carries its data inline and uses Vega-Lite params (zoom, legend selection, a step slider), so it
stays interactive in the static HTML book.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from ..analysis.events import Events
from ..charts import check_arguments
from ..charts.curves import WIDTH, event_rules, long_records
from ..history import History

__all__ = ["dlr_timeline", "dlr_decomposition", "spectra_explorer",
           "compare_measures", "toy_chart", "dlr_band", "lr_panels"]


def dlr_timeline(history: History, events: Events | None = None, title: str = "") -> alt.VConcatChart:
    """DLR, accuracy and, on Z_p, the top-5 Fourier share (top) over ‖θ‖² (bottom) on one zoomable step axis."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    series = {"dlr": "DLR", "test_acc": "test accuracy", "train_acc": "train accuracy", "fourier": "top-5 Fourier share"}
    shown = [c for c in series if c in history.columns]
    top = alt.Chart(alt.Data(values=long_records(history, {c: series[c] for c in shown}))).mark_line().encode(
        x=alt.X("step:Q"),
        y=alt.Y("value:Q", title="DLR / accuracy / share", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title="", scale=alt.Scale(domain=[series[c] for c in shown], range=[
            {"dlr": "#d62728", "test_acc": "#f58518", "train_acc": "#9ecae9", "fourier": "#7b4ea3"}[c] for c in shown])),
        tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=WIDTH, height=200, title=title or "DLR and accuracy")
    norm = alt.Chart(alt.Data(values=long_records(history, {"norm": "‖θ‖²"}))).mark_line(color="#333").encode(
        x=alt.X("step:Q"),
        y=alt.Y("value:Q", title="‖θ‖²", scale=alt.Scale(zero=False)),
        tooltip=["step:Q", alt.Tooltip("value:Q", format=",.0f", title="‖θ‖²")],
    ).properties(width=WIDTH, height=140, title="squared weight norm")
    if events is not None:
        # independent colours: the series and the events keep their own legends
        top = alt.layer(top, event_rules(events)).resolve_scale(color="independent")
        norm = norm + event_rules(events)
    return alt.vconcat(top.add_params(zoom), norm).resolve_scale(color="independent")


def dlr_decomposition(history: History, title: str = "DLR = 1 − f_in · √(PR / r)") -> alt.VConcatChart:
    """The three numbers DLR is made of, over training: f_in, √(PR / r) with PR and r (legends below, uncut)."""
    def panel(labels: dict[str, str], colours: list[str], y_title: str, fmt: str) -> alt.Chart:
        return alt.Chart(alt.Data(values=long_records(history, labels))).mark_line().encode(
            x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title=y_title),
            color=alt.Color("series:N", legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0,
                                                          title=None),
                            sort=list(labels.values()), scale=alt.Scale(domain=list(labels.values()), range=colours)),
            tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=fmt)])

    top = panel({"dlr": "DLR", "dlr_f_in": "f_in: share of feature energy inside the output span",
                 "dlr_balance": "√(PR / r)"}, ["#d62728", "#4c78a8", "#72b7b2"], "value (√(PR / r) may pass 1)", ".3f")
    bottom = panel({"dlr_pr": "PR: effective number of features", "dlr_rank": "r: dimension of the output span"},
                   ["#f58518", "#333333"], "dimensions", ".1f")
    return alt.vconcat(top.properties(width=WIDTH, height=200, title=title),
                       bottom.properties(width=WIDTH, height=140)).resolve_scale(color="independent")


def spectra_explorer(records: Sequence[Mapping[str, Any]], title: str = "", events: Events | None = None,
                     history: History | None = None) -> alt.VConcatChart:
    """Relative eigenvalues, cumulative quality Π* and utilisation Π̂ against k, with a step slider.

    ``records`` are :meth:`nhtlab.measures.spectra.Spectrum.to_records` rows with a ``step``, at evenly spaced
    steps. The slider opens at the step nearest T_grok (else T_mem, else the first step). With ``history``, a top
    panel draws DLR and test accuracy over training, the events marked and a black rule at the slider's step.
    """
    steps = sorted({int(r["step"]) for r in records})
    spacing = steps[1] - steps[0] if len(steps) > 1 else 1
    start = None if events is None else events.t_grok if events.t_grok is not None else events.t_mem
    named = ", ".join(f"{n} = {s:,}" for n, s in (("T_mem", getattr(events, "t_mem", None)),
                                                  ("T_grok", getattr(events, "t_grok", None))) if s is not None)
    nearest = steps[0] if start is None else min(steps, key=lambda s: (abs(s - start), s))
    slider = alt.param(name="step_shown", value=nearest, bind=alt.binding_range(
        min=steps[0], max=steps[-1], step=spacing, name=f"training step ({named}) " if named else "training step "))
    base = alt.Chart(alt.Data(values=list(records))).transform_filter(alt.datum.step == slider)
    eig = base.mark_line(point=True, color="#4c78a8").encode(
        x=alt.X("k:Q", title="k (eigenfunction index)"),
        y=alt.Y("relative:Q", title="μ_k / μ_1", scale=alt.Scale(type="log", domain=[1e-4, 1])),
        tooltip=["k:Q", alt.Tooltip("relative:Q", format=".2e")],
    ).properties(width=WIDTH, height=170, title=title or "relative eigenvalues of the feature covariance")
    # the two shares as long rows with their full names, so legend and marks share one colour scale
    names = {"quality": "quality Π*(k): the target", "utilisation": "utilisation Π̂(k): the learned function"}
    shares = [{"step": r["step"], "k": r["k"], "measure": label, "share": r[key]}
              for r in records for key, label in names.items() if r.get(key) is not None]
    share_chart = alt.Chart(alt.Data(values=shares)).transform_filter(alt.datum.step == slider).mark_line(
        point=True).encode(
        x=alt.X("k:Q", title="k (top-k eigenfunctions)"),
        y=alt.Y("share:Q", title="cumulative share", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("measure:N", scale=alt.Scale(domain=list(names.values()), range=["#54a24b", "#e45756"]),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0, title=None)),
        tooltip=["measure:N", "k:Q", alt.Tooltip("share:Q", format=".3f")],
    ).properties(width=WIDTH, height=170, title="share of the target (Π*) and of the learned function (Π̂) "
                                                "in the top-k eigenfunctions")
    panels = [eig, share_chart]
    if history is not None:
        series = {"dlr": "DLR", "test_acc": "test accuracy"}
        lines = alt.Chart(alt.Data(values=long_records(history, series))).mark_line().encode(
            x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title="DLR, accuracy", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("series:N", scale=alt.Scale(domain=list(series.values()), range=["#d62728", "#f58518"]),
                            legend=alt.Legend(title=None)),
            tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".3f")])
        here = alt.Chart(alt.Data(values=[{}])).transform_calculate(step="step_shown").mark_rule(
            color="black", strokeWidth=2).encode(x="step:Q")
        layers = [lines, here] + ([event_rules(events)] if events is not None else [])
        panels.insert(0, alt.layer(*layers).resolve_scale(color="independent").properties(
            width=WIDTH, height=120, title="where the slider is (black) in training"))
    return alt.vconcat(*panels).add_params(slider).resolve_scale(color="independent")


def compare_measures(runs: Sequence[tuple[str, History]]) -> alt.VConcatChart:
    """Small multiples, one panel per measure (DLR, NC1, ‖θ‖², accuracy), one colour per labelled run."""
    measures = {"dlr": "DLR", "nc1": "NC1 (labels needed)", "norm": "‖θ‖²", "test_acc": "test accuracy"}
    pick = alt.selection_point(fields=["run"], bind="legend")
    panels = []
    for column, label in measures.items():
        records = [r for name, history in runs for r in long_records(history, {column: label}, run=name)]
        scale = alt.Scale(type="log") if column == "nc1" else alt.Scale(zero=False)
        panels.append(alt.Chart(alt.Data(values=records)).mark_line().encode(
            x="step:Q", y=alt.Y("value:Q", title=label, scale=scale),
            color=alt.Color("run:N", title="run (click to pick)",
                            legend=alt.Legend(orient="top", columns=2, labelLimit=0)),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
            tooltip=["run:N", "step:Q", alt.Tooltip("value:Q", format=".4g")],
        ).properties(width=WIDTH, height=130))
    panels[0] = panels[0].add_params(pick)  # one selection, defined once, used by every panel
    return alt.vconcat(*panels)


def toy_chart(records: Sequence[Mapping[str, Any]], title: str = "") -> alt.Chart:
    """DLR (and any other numeric fields named in the records) against the toy's mixing knob α."""
    fields = [k for k in records[0] if k != "alpha"]
    return alt.Chart(alt.Data(values=list(records))).transform_fold(fields, as_=["series", "value"]).mark_line(point=True).encode(
        x=alt.X("alpha:Q", title="alpha"),
        y=alt.Y("value:Q", title="value", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title=""),
        tooltip=["series:N", "alpha:Q", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=WIDTH, height=220, title=title)


def dlr_band(records: Sequence[Mapping[str, Any]], events: Events | None = None, title: str = "") -> alt.LayerChart:
    """DLR under the chosen rule, energy 0.99 (line), inside the band of the other rank rules (shaded).

    ``records`` are :func:`~nhtlab.book.dlr_report.rule_band`'s rows."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    base = alt.Chart(alt.Data(values=list(records)))
    band = base.mark_area(opacity=0.25, color="#d62728").encode(
        x=alt.X("step:Q"), y=alt.Y("low:Q", title="DLR", scale=alt.Scale(domain=[0, 1])), y2="high:Q",
        tooltip=["step:Q", alt.Tooltip("low:Q", format=".3f"), alt.Tooltip("high:Q", format=".3f")],
    )
    line = base.mark_line(color="#d62728", point=True).encode(
        x="step:Q", y="dlr:Q", tooltip=["step:Q", alt.Tooltip("dlr:Q", format=".3f", title="DLR (energy 0.99)")],
    )
    chart = band + line
    if events is not None:
        chart = chart + event_rules(events)
    return chart.add_params(zoom).properties(width=WIDTH, height=220, title=title or "DLR (energy 0.99) and the band of the other rank rules")


def lr_panels(records: Sequence[Mapping[str, Any]], title: str = "") -> alt.HConcatChart:
    """DLR and test accuracy against the learning rate (:func:`~nhtlab.book.dlr_report.lr_sweep`'s records), one
    panel each, one colour per seed."""
    rows = [{"lr": r["lr"], "seed": f"seed {r['seed']}", "dlr": r["dlr"], "test_acc": r["test_acc"]} for r in records]
    panels = [alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=alt.X("lr:Q", title="learning rate (AdamW)", scale=alt.Scale(type="log")),
        y=alt.Y(f"{column}:Q", title=label, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("seed:N", title="run"),
        tooltip=["seed:N", alt.Tooltip("lr:Q", format="g"), alt.Tooltip(f"{column}:Q", format=".3f", title=label)],
    ).properties(width=WIDTH // 2 - 20, height=200, title=label)
        for column, label in (("dlr", "DLR"), ("test_acc", "test accuracy"))]
    return alt.hconcat(*panels).properties(title=title or "DLR and test accuracy against the learning rate")


check_arguments(__name__)  # a wrong type gets a TypeError naming the argument, as in nhtlab.charts
