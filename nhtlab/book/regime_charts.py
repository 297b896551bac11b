"""Charts for the weight-decay regimes and the delay law. They draw precomputed records only (each names its
inputs); the λ control is a Vega-Lite param, so it works in the static book with no kernel behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from ..analysis.regimes import DIVERGED, NOT_DECIDED, REGIMES, UNDETERMINED
from ..charts import check_arguments
from ..charts.curves import WIDTH
from .report import significant

__all__ = ["REGIME_COLORS", "regime_norm_curves", "lambda_slider", "delay_fit_chart",
           "contraction_chart"]

# A diverged run (stopped on a non-finite loss, no verdict) gets its own colour, not one borrowed from a regime.
REGIME_COLORS = dict(zip((*REGIMES, UNDETERMINED, DIVERGED), ("#4c78a8", "#f58518", "#e45756", "#9d9d9d", "#3b3b3b")))
#: The regimes' colours and one for a run whose budget is too short for a verdict
#: (:data:`~nhtlab.analysis.regimes.NOT_DECIDED`). On a chart that uses them, colour means the verdict only.
VERDICT_COLORS = {**REGIME_COLORS, NOT_DECIDED: "#b279a2"}
# The events marked on the time axes: shape means the event only.
_EVENT_SHAPES = {"T_mem": "circle", "T_grok": "triangle-up"}


def _regime_color(present: Sequence[str], legend: bool = True) -> alt.Color:
    """Colour by verdict; the legend lists only the verdicts ``present``."""
    domain = [r for r in VERDICT_COLORS if r in set(present)]
    return alt.Color("regime:N", title="verdict", legend=alt.Legend() if legend else None,
                     scale=alt.Scale(domain=domain, range=[VERDICT_COLORS[r] for r in domain]))


def _tooltip(value: str, title: str, fmt: str) -> list:
    return [alt.Tooltip("weight_decay:Q", title="λ"), "seed:Q", alt.Tooltip("regime:N", title="verdict"),
            alt.Tooltip("step:Q", title="step"), alt.Tooltip(f"{value}:Q", title=title, format=fmt)]


def _norm_lines(chart: alt.Chart, color: alt.Color, **encode: Any) -> alt.Chart:
    """One ‖θ‖² line per run (log scale), coloured by verdict."""
    return chart.mark_line().encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("norm:Q", title="‖θ‖² (log scale)", scale=alt.Scale(type="log")),
        color=color, detail="run:N", **encode, tooltip=_tooltip("norm", "‖θ‖²", ",.0f"))


def _event_marks(marks: alt.Chart, value: str, title: str, fmt: str, color: alt.Color, **encode: Any) -> alt.Chart:
    """T_mem (circle) and T_grok (triangle) of ``marks``' events, placed on the ``value`` curves."""
    shape = alt.Shape("event:N", title="event", scale=alt.Scale(domain=list(_EVENT_SHAPES),
                                                                range=list(_EVENT_SHAPES.values())))
    return marks.mark_point(filled=True, size=60).encode(
        x="step:Q", y=f"{value}:Q", color=color, shape=shape, **encode,
        tooltip=[alt.Tooltip("event:N", title="event"), *_tooltip(value, title, fmt)])


def regime_norm_curves(curves: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]] | None = None,
                       title: str = "‖θ‖² of every run, coloured by its verdict") -> alt.Chart | alt.LayerChart:
    """One ‖θ‖² line per run (log scale), coloured by verdict (click the legend to pick one), with
    :func:`~nhtlab.book.regime_report.regime_events`' T_mem and T_grok marked when given."""
    curves = list(curves)
    pick = alt.selection_point(fields=["regime"], bind="legend")
    color = _regime_color([r["regime"] for r in curves])
    lines = _norm_lines(alt.Chart(alt.Data(values=curves)), color,
                        opacity=alt.condition(pick, alt.value(0.9), alt.value(0.1)))
    lines = lines.add_params(pick).properties(width=WIDTH, height=260, title=title)
    if events is None:
        return lines
    marks = _event_marks(alt.Chart(alt.Data(values=list(events))), "norm", "‖θ‖²", ",.0f", color,
                         opacity=alt.condition(pick, alt.value(1.0), alt.value(0.1)))
    # each λ named once, at the end of its first seed's line: colour says the verdict, the label says λ
    names = []
    for lam in dict.fromkeys(r["weight_decay"] for r in curves):
        runs = [r for r in curves if r["weight_decay"] == lam]
        seed = min(r["seed"] for r in runs)
        end = max((r for r in runs if r["seed"] == seed), key=lambda r: r["step"])
        names.append({"step": end["step"], "norm": end["norm"], "regime": end["regime"], "name": f"λ = {lam:g}"})
    labels = alt.Chart(alt.Data(values=names)).mark_text(align="left", dx=4, fontSize=11).encode(
        x="step:Q", y="norm:Q", text="name:N", color=_regime_color([r["regime"] for r in curves], legend=False))
    return alt.layer(lines, marks, labels)


def lambda_slider(curves: Sequence[Mapping[str, Any]], lams: Sequence[float],
                  events: Sequence[Mapping[str, Any]] | None = None) -> alt.VConcatChart:
    """Accuracy and ‖θ‖² of the runs at one λ of ``lams`` (increasing), picked with buttons labelled with λ itself
    (a range slider would show its position, not λ); colour is the verdict, events marked when given."""
    curves = list(curves)
    lam_labels = [{"lam_index": i, "label": f"λ = {lam:g}"} for i, lam in enumerate(lams)]
    slider = alt.param(name="lam_index", value=len(lams) // 2,
                       bind=alt.binding_radio(options=list(range(len(lams))), labels=[f"{lam:g}" for lam in lams],
                                              name="weight decay λ: "))
    color = _regime_color([r["regime"] for r in curves])
    base = alt.Chart(alt.Data(values=curves)).transform_filter(alt.datum.lam_index == slider)
    splits = ["training accuracy", "test accuracy"]
    acc = base.transform_fold(["train_acc", "test_acc"], as_=["key", "accuracy"]).transform_calculate(
        split="datum.key == 'train_acc' ? 'training accuracy' : 'test accuracy'").mark_line().encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("accuracy:Q", title="accuracy", scale=alt.Scale(domain=[0, 1])),
        color=color,
        strokeDash=alt.StrokeDash("split:N", title="line", scale=alt.Scale(domain=splits, range=[[1, 0], [5, 3]])),
        detail="run:N",
        tooltip=[alt.Tooltip("split:N", title="line"), *_tooltip("accuracy", "accuracy", ".3f")],
    ).properties(width=WIDTH, height=170)
    norm = _norm_lines(base, color).properties(width=WIDTH, height=170)
    if events is not None:
        marks = alt.Chart(alt.Data(values=list(events))).transform_filter(alt.datum.lam_index == slider)
        acc = alt.layer(acc, _event_marks(marks, "accuracy", "accuracy", ".3f", color))
        norm = alt.layer(norm, _event_marks(marks, "norm", "‖θ‖²", ",.0f", color))
    label = alt.Chart(alt.Data(values=lam_labels)).transform_filter(alt.datum.lam_index == slider).mark_text(
        align="left", fontSize=15, fontWeight="bold").encode(text="label:N").properties(width=WIDTH, height=20)
    return alt.vconcat(label, acc, norm).add_params(slider).resolve_scale(color="shared", shape="shared")


_FAMILY_COLORS = ("#4c78a8", "#e45756", "#54a24b", "#b279a2", "#f58518")
_FAMILY_SHAPES = ("circle", "triangle-up", "square", "diamond", "cross")


def delay_fit_chart(points: Sequence[Mapping[str, Any]], fit: Any, x: str = "predicted", x_title: str = "predicted (steps)",
                    y_title: str = "measured (steps)", color: str = "weight_decay", color_title: str = "λ") -> alt.LayerChart:
    """Measured delay against ``x`` with the fitted line and its R²: every run a small mark, the mean over seeds of
    each setting (what ``fit`` averages, the companion's choice) a large one, coloured and shaped by ``color``."""
    xs = [p[x] for p in points]
    # values that span a decade or more are drawn on log axes, the fitted line sampled so that it curves there
    log = min(xs) > 0 and min(p["measured"] for p in points) > 0 and max(xs) >= 10 * min(xs)
    ends = (min(xs), max(xs))
    samples = [ends[0] * (ends[1] / ends[0]) ** (i / 40) for i in range(41)] if log else list(ends)
    line = [{x: v, "fit": fit.slope * v + fit.intercept} for v in samples]
    line = [row for row in line if row["fit"] > 0] if log else line
    scale = alt.Scale(type="log") if log else alt.Scale()
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for p in points:
        groups.setdefault(p.get("setting", id(p)), []).append(p)
    means = [{x: sum(p[x] for p in g) / len(g), "measured": sum(p["measured"] for p in g) / len(g), color: g[0][color],
              "seeds": len(g)} for g in groups.values()]
    domain = list(dict.fromkeys(str(p[color]) for p in points))
    title = alt.TitleParams(
        text=f"measured = {significant(fit.slope)} × x + {fit.intercept:,.0f}   (R² = {fit.r2:.3f} over the {fit.n} large marks)",
        subtitle=f"large marks: the mean over seeds of each of the {len(means)} settings; small: the {len(points)} runs")
    encode = {
        "x": alt.X(f"{x}:Q", title=x_title + (" (log scale)" if log else ""), scale=scale),
        "y": alt.Y("measured:Q", title=y_title + (" (log scale)" if log else ""), scale=scale),
        "color": alt.Color(f"{color}:N", title=color_title, scale=alt.Scale(domain=domain, range=list(_FAMILY_COLORS))),
        "shape": alt.Shape(f"{color}:N", title=color_title, scale=alt.Scale(domain=domain, range=list(_FAMILY_SHAPES))),
    }
    dots = alt.Chart(alt.Data(values=[{**p, color: str(p[color])} for p in points])).mark_point(
        size=45, filled=True, opacity=0.55).encode(
        **encode,
        tooltip=[alt.Tooltip("weight_decay:Q", title="λ"), alt.Tooltip("lr:Q", title="η"), "seed:Q", "t_mem:Q", "t_grok:Q",
                 "measured:Q", alt.Tooltip("predicted:Q", format=",.0f"), alt.Tooltip("v_mem:Q", format=",.0f"),
                 alt.Tooltip("v_final:Q", format=",.0f")],
    )
    big = alt.Chart(alt.Data(values=[{**m, color: str(m[color])} for m in means])).mark_point(
        size=220, filled=True, opacity=0.9, stroke="black", strokeWidth=1).encode(
        **encode, tooltip=[alt.Tooltip("measured:Q", format=",.0f", title="mean measured"), "seeds:Q"])
    fitted = alt.Chart(alt.Data(values=line)).mark_line(color="#333", strokeDash=[5, 3]).encode(
        x=alt.X(f"{x}:Q", scale=scale), y=alt.Y("fit:Q", scale=scale))
    return (fitted + big + dots).properties(width=WIDTH, height=280, title=title)


def contraction_chart(records: Sequence[Mapping[str, Any]], paper_ratio: float = 1.41) -> alt.LayerChart:
    """Fitted contraction 1 − r per step against ηλ, with the lines 1 − r = ηλ, 2ηλ and the paper's ratio; colour
    means the reference line only, the runs are blue marks, one shape per ``family``."""
    data = [{**r, "one_minus_r": r["ratio"] * r["eta_lambda"]} for r in records]
    top = max(r["eta_lambda"] for r in data)
    refs = [{"eta_lambda": v, "one_minus_r": k * v, "line": name}
            for k, name in [(1.0, "1 − r = ηλ"), (2.0, "1 − r = 2ηλ (pure decay)"), (paper_ratio, f"companion: {paper_ratio} ηλ")]
            for v in (0.0, top)]
    lines = alt.Chart(alt.Data(values=refs)).mark_line(strokeDash=[4, 3]).encode(
        x="eta_lambda:Q", y="one_minus_r:Q",
        color=alt.Color("line:N", title="reference", scale=alt.Scale(range=["#999", "#333", "#54a24b"])))
    families = list(dict.fromkeys(str(r.get("family") or "run") for r in data))
    dots = alt.Chart(alt.Data(values=[{**r, "family": str(r.get("family") or "run")} for r in data])).mark_point(
        size=70, filled=True, color="#4c78a8", opacity=0.8).encode(
        x=alt.X("eta_lambda:Q", title="ηλ (per step)"),
        y=alt.Y("one_minus_r:Q", title="fitted 1 − r (per step)"),
        shape=alt.Shape("family:N", title="runs", scale=alt.Scale(domain=families, range=list(_FAMILY_SHAPES))),
        tooltip=[alt.Tooltip("weight_decay:Q", title="λ"), "seed:Q", alt.Tooltip("ratio:Q", format=".2f", title="(1 − r)/(ηλ)"),
                 alt.Tooltip("r2:Q", format=".3f")],
    )
    return (lines + dots).properties(width=WIDTH, height=260, title="how fast ‖θ‖² contracts after T_mem: V ≈ A·rᵗ + C")


check_arguments(__name__)  # a wrong type gets a TypeError naming the argument, as in nhtlab.charts
