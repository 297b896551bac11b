"""Chapter 01's Fourier charts: the token embedding's spectrum at four moments, and the share on the step axis.

Loaded on first use (``nhtlab.book.__init__``'s lazy names), as the widgets are: altair is slow to import,
and ``import nhtlab`` imports the book's layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from ..charts.curves import WIDTH, long_records
from ..analysis.events import find_events
from ..history import History
from ..measures.fourier import KEY_FREQUENCIES
from .grokking_report import MOMENTS

__all__ = ["fourier_spectrum_chart", "fourier_curves"]


def fourier_spectrum_chart(records: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Bars of :func:`~nhtlab.book.grokking_report.fourier_spectrum_records`: one panel per moment (rows) and seed (columns)."""
    return alt.Chart(alt.Data(values=list(records))).mark_bar().encode(
        x=alt.X("k:Q", title="frequency k"), y=alt.Y("share:Q", title="share of power"),
        color=alt.Color("moment:N", sort=list(MOMENTS), legend=None),
        tooltip=["seed:N", "moment:N", "k:Q", alt.Tooltip("share:Q", format=".3f")],
    ).properties(width=150, height=70).facet(
        row=alt.Row("moment:N", sort=list(MOMENTS), title=None), column=alt.Column("seed:N", title="seed"))


def fourier_curves(histories: Mapping[int, History]) -> alt.VConcatChart:
    """Test accuracy, ‖θ‖² and the top-K Fourier share of each seed on one zoomable step axis, each seed's
    T_mem (dashed) and T_grok (dotted) marked in its colour."""
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    marks = [{"step": getattr(ev, key), "series": f"seed {s}", "event": name}
             for s, ev in ((s, find_events(h)) for s, h in histories.items())
             for key, name in (("t_mem", "T_mem"), ("t_grok", "T_grok")) if getattr(ev, key) is not None]
    color = alt.Color("series:N", title="run")
    panels = []
    for column, title in (("test_acc", "test accuracy"), ("norm", "‖θ‖²"),
                          ("fourier", f"top-{KEY_FREQUENCIES} Fourier share")):
        records = [r for s, h in histories.items() for r in long_records(h, {column: f"seed {s}"})]
        lines = alt.Chart(alt.Data(values=records)).mark_line().encode(
            x=alt.X("step:Q"), y=alt.Y("value:Q", title=title, scale=alt.Scale(zero=False)), color=color,
            tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=",.3f")],
        )
        rules = alt.Chart(alt.Data(values=marks)).mark_rule(opacity=0.8).encode(
            x="step:Q", color=color,
            strokeDash=alt.StrokeDash("event:N", title="event", scale=alt.Scale(
                domain=["T_mem", "T_grok"], range=[[6, 3], [1, 2]])),
            tooltip=["series:N", "event:N", "step:Q"],
        )
        panels.append(alt.layer(lines, rules).properties(width=WIDTH, height=130))
    panels[0] = panels[0].add_params(zoom)
    return alt.vconcat(*panels)
