"""The training-curve charts: accuracy, ‖θ‖², per-layer norms and events, drawn from History records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt  # noqa: F401  (re-exported as charts.alt for notebooks)

from ..analysis.events import Events
from ..analysis.layers import layer_label
from ..history import History

__all__ = ["long_records", "layer_label", "training_curves", "norm_curves", "event_rules", "layer_norm_curves",
           "compare_runs"]

WIDTH = 480


def long_records(history: History, columns: Mapping[str, str], **constants: Any) -> list[dict[str, Any]]:
    """Melt ``columns`` (column → label) of a history into rows {step, series, value, …}."""
    return [{"step": row["step"], "series": label, "value": row[column], **constants}
            for row in history.rows for column, label in columns.items() if row.get(column) is not None]


def event_rules(events: Events, legend: bool = True) -> alt.Chart:
    """Vertical rules at T_mem, T_grok and the norm peak, labelled.

    A peak at step 0 (the initialisation, as in the companion's transformer) is no event and
    is not drawn. ``legend=False`` leaves the legend to another panel with the same rules.
    """
    marks = [("T_mem (memorised)", events.t_mem, "#e45756"), ("T_grok (generalised)", events.t_grok, "#54a24b"),
             ("norm peak", events.peak_step or None, "#b279a2")]
    drawn = [m for m in marks if m[1] is not None]  # the legend lists only what is drawn, each in its colour
    base = alt.Chart(alt.Data(values=[{"step": s, "event": name} for name, s, _ in drawn]))
    return base.mark_rule(strokeDash=[4, 3]).encode(
        x="step:Q",
        color=alt.Color("event:N", scale=alt.Scale(domain=[m[0] for m in drawn], range=[m[2] for m in drawn]),
                        legend=alt.Legend(title="event") if legend else None),
        tooltip=["event:N", "step:Q"],
    )


def _stacked(top: alt.Chart, bottom: alt.Chart, events: Events | None) -> alt.VConcatChart:
    """Two panels, one above the other, with the events' rules on both (the legend on the top one)."""
    if events is not None:
        # Lines and event rules keep separate colour scales, or the rules' domain hides the lines.
        top = alt.layer(top, event_rules(events)).resolve_scale(color="independent")
        bottom = alt.layer(bottom, event_rules(events, legend=False)).resolve_scale(color="independent")
    return alt.vconcat(top, bottom).resolve_scale(color="independent")


def training_curves(history: History, events: Events | None = None, title: str = "") -> alt.VConcatChart:
    """Train/test accuracy over ‖θ‖², on one zoomable step axis, with the events marked."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    acc = alt.Chart(alt.Data(values=long_records(history, {"train_acc": "train", "test_acc": "test"}))).mark_line().encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("value:Q", title="accuracy", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title="split", scale=alt.Scale(range=["#4c78a8", "#f58518"])),
        tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=WIDTH, height=180, title=title or "accuracy").add_params(zoom)
    norm = alt.Chart(alt.Data(values=long_records(history, {"norm": "‖θ‖²"}))).mark_line(color="#333").encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("value:Q", title="‖θ‖²", scale=alt.Scale(zero=False)),
        tooltip=["step:Q", alt.Tooltip("value:Q", format=",.0f", title="‖θ‖²")],
    ).properties(width=WIDTH, height=180, title="squared weight norm")
    return _stacked(acc, norm, events)


def norm_curves(histories: Sequence[tuple[str, History]], column: str = "norm", title: str = "‖θ‖²") -> alt.Chart:
    """One line per labelled history for ``column`` (hover a line to highlight it)."""
    records = [r for label, history in histories for r in long_records(history, {column: label})]
    hover = alt.selection_point(fields=["series"], on="pointerover", bind="legend")
    return alt.Chart(alt.Data(values=records)).mark_line().encode(
        x=alt.X("step:Q"),
        y=alt.Y("value:Q", title=title),
        color=alt.Color("series:N", title="run"),
        opacity=alt.condition(hover, alt.value(1.0), alt.value(0.25)),
        tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=",.1f")],
    ).add_params(hover).properties(width=WIDTH, height=220, title=title)


def layer_norm_curves(history: History, events: Events | None = None, title: str = "‖θ_ℓ‖² per layer",
                      names: Mapping[str, str] | None = None) -> alt.Chart:
    """Squared norm of every layer against step, on a log axis (layers differ by decades), layers named in
    words (``names[layer]`` where given, else :func:`layer_label`) and T_mem and T_grok marked when
    ``events`` are given; click a legend entry to highlight a layer."""
    words = dict(names or {})
    columns = {f"norm/{name}": words.get(name) or layer_label(name) for name in history.layers}
    records = [r for r in long_records(history, columns) if r["value"] > 0]  # a log axis has no zero
    pick = alt.selection_point(fields=["series"], bind="legend")
    lines = alt.Chart(alt.Data(values=records)).mark_line().encode(
        x=alt.X("step:Q"),
        y=alt.Y("value:Q", title="‖θ_ℓ‖² (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title="layer (click to pick)", sort=list(columns.values()),
                        legend=alt.Legend(labelLimit=260, orient="bottom", columns=2)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.2)),
        tooltip=[alt.Tooltip("series:N", title="layer"), "step:Q", alt.Tooltip("value:Q", format=",.1f")],
    ).add_params(pick).properties(width=WIDTH, height=260, title=title)
    if events is None:
        return lines
    return alt.layer(lines, event_rules(events)).resolve_scale(color="independent")


def compare_runs(runs: Sequence[tuple[str, History]], events: Events | None = None) -> alt.VConcatChart:
    """Test accuracy and ‖θ‖² of several labelled runs, one colour per run, shared zoom; ``events`` (of one of
    the runs, say which in its label) are marked on both panels."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    acc = [r for label, history in runs for r in long_records(history, {"test_acc": label})]
    norm = [r for label, history in runs for r in long_records(history, {"norm": label})]
    color = alt.Color("series:N", title="run")
    top = alt.Chart(alt.Data(values=acc)).mark_line().encode(
        x="step:Q", y=alt.Y("value:Q", title="test accuracy", scale=alt.Scale(domain=[0, 1])), color=color,
        tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=WIDTH, height=160).add_params(zoom)
    bottom = alt.Chart(alt.Data(values=norm)).mark_line().encode(
        x="step:Q", y=alt.Y("value:Q", title="‖θ‖²"), color=alt.Color("series:N", legend=None),
        tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=",.0f")],
    ).properties(width=WIDTH, height=160)
    return _stacked(top, bottom, events)
