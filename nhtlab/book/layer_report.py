"""Chapter 05's readings over seeds: the layer order, the border's fate and the early warnings, as records.

Runs keyed by ``(setting, seed)`` become table records and readings counted over seeds. Nothing here trains.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..history import History, first_step_at_least
from ..thresholds import FITTED_ACCURACY, IMAGE_GENERALISED
from ..training.image_grok_run import ImageGrokRun
from ..validation import require_type
from .claims import Check, Reading, over_seeds, reading_rows
from ..analysis.events import border_times, find_events
from ..analysis.scorecard import delay_scaling
from ..analysis.layers import (
    CONTRACTION_VERDICTS,
    ContractionOrder,
    contraction_order,
    head_to_first_ratio,
    layer_label,
    layer_transitions,
    normalised_layer_norms,
    warning_times,
)
from .report import Markdown, evidence, table, what_we_found
from .shortcut_report import border_reading

__all__ = ["image_run_rows", "image_readings", "signal_records", "conflict_records", "window_records",
           "order_readings", "order_determined", "layer_window_records", "order_answer", "order_reference",
           "order_cases", "embedding_scale_readings", "embedding_scale_report", "tally", "order_summary",
           "layer_findings", "modular_order_table", "image_run_table", "peak_records", "omnigrok_runs",
           "grok_run_reading", "omnigrok_record", "omnigrok_premise"]

def image_run_rows(runs: Mapping[tuple[str, int], History]) -> list[dict[str, Any]]:
    """One record per digit-border run: the border's steps and fate, the layer order over [fitted, dropped], and
    whether ‖θ_L‖²/‖θ_L(0)‖² turned down before the drop."""
    rows = []
    for (label, seed), h in runs.items():
        fitted, dropped = border_times(h)
        order = contraction_order(h, window=(fitted, dropped))
        warns = ("no drop" if dropped is None else "warns"
                 if warning_times(h, dropped)["head_over_init_lead"] > 0 else "does not warn")
        rows.append({"run": label, "seed": seed, "fitted": fitted, "dropped": dropped, "border": border_reading(h),
                     "order": " → ".join(order.order) or "none", "verdict": order.verdict,
                     "warning": warns, "conflict_acc": float(h.rows[-1]["conflict_acc"])})
    return rows


def image_readings(rows: list[dict[str, Any]], expected: Mapping[tuple[str, str], str]) -> dict[tuple[str, str], Reading]:
    """Count readings of :func:`image_run_rows` over seeds, one per (setting, field) the text states."""
    return {(label, field): over_seeds(f"{label}: {field}", {r["seed"]: r[field] for r in rows if r["run"] == label},
                                      expected=want) for (label, field), want in expected.items()}


def signal_records(runs: Mapping[str, History]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The paper's two early-warning signals and the total norm of every run, with the border's events."""
    records, events = [], []
    for label, h in runs.items():
        sig = head_to_first_ratio(h)
        norm = h.column("norm")
        for name, values in (("‖θ_L‖²/‖θ_L(0)‖²", sig["head_over_init"]), ("‖θ_L‖²/‖θ_1‖²", sig["head_over_first"]),
                             ("‖θ‖²/‖θ(0)‖²", norm / norm[0])):
            records += [{"step": int(s), "run": label, "signal": name, "value": float(v)}
                        for s, v in zip(sig["step"], values)]
        events += [{"run": label, "event": event, "step": step}
                   for event, step in zip(("border fitted", "border dropped"), border_times(h)) if step is not None]
    return records, events


def order_readings(orders: Mapping[tuple[Any, int], ContractionOrder]) -> dict[Any, Reading]:
    """The layer order of every setting counted over its seeds (:func:`nhtlab.book.over_seeds`), backward expected."""
    groups: dict[Any, dict[int, str]] = {}
    for (group, seed), order in orders.items():
        groups.setdefault(group, {})[seed] = order.verdict
    return {g: over_seeds(f"layer order at {g}", by_seed, expected="backward") for g, by_seed in groups.items()}


def order_determined(orders: Mapping[Any, ContractionOrder]) -> Check:
    """Check: every run's layer order is determined (the window exists and a layer contracts in it); fails on none."""
    open_ = [key for key, o in orders.items() if o.verdict == "undetermined"]
    detail = f"{len(orders) - len(open_)} of {len(orders)} runs determined" + (
        f"; undetermined: {open_}" if open_ else "")
    return Check("the layer order is determined in every run", bool(orders) and not open_, detail)


def layer_window_records(history: History, order: ContractionOrder, **constants: Any) -> list[dict[str, Any]]:
    """Each weight layer's ‖θ_ℓ‖² in the window [T_mem, T_end] over its own peak (``normalised``, the paper's view)
    and over its value at T_mem (``at_mem``); empty when there is no window."""
    if order.t_mem is None:
        return []
    steps = history.column("step").astype(int)
    keep = (steps >= order.t_mem) & (steps <= order.t_end)
    peaks = normalised_layer_norms(history, [c.layer for c in order.layers])
    values = {c.layer: history.column(f"norm/{c.layer}") for c in order.layers}
    return [{"step": int(steps[i]), "layer": c.layer, "normalised": float(peaks[c.layer][i]),
             "at_mem": float(values[c.layer][i] / c.at_mem) if c.at_mem > 0 else math.nan,
             "contracted": c.step is not None and int(steps[i]) >= c.step, **constants}
            for c in order.layers for i in np.nonzero(keep)[0]]


def order_answer(orders: Mapping[Any, ContractionOrder]) -> tuple[str, tuple[str, ...], str]:
    """The verdict most runs share on "which layer contracts first?" (a tie: ``"undetermined"``), for
    check_prediction."""
    require_type(orders, "orders", Mapping, owner="order_answer")
    if not orders:
        raise ValueError("order_answer: 'orders' is empty")
    counts = {v: sum(o.verdict == v for o in orders.values()) for v in CONTRACTION_VERDICTS}
    top = max(counts.values())
    leaders = [v for v, c in counts.items() if c == top]
    answer = leaders[0] if len(leaders) == 1 else "undetermined"

    def median_after(layer_of) -> str:
        steps = [layer_of(o).step - o.t_mem for o in orders.values() if o.t_mem is not None and layer_of(o).step is not None]
        return f"{float(np.median(steps)):,.0f} steps after the window opens" if steps else "never in the window"

    head = median_after(lambda o: o.layer(o.head))
    first = median_after(lambda o: o.layer(o.first))
    counted = (f"{answer} in {counts[answer]}" if len(leaders) == 1
               else "a tie, " + " and ".join(f"{v} in {counts[v]}" for v in leaders))
    return answer, CONTRACTION_VERDICTS, (f"{counted} of {len(orders)} runs; the read-out "
                                          f"lost its share at a median {head}, the first layer at a median {first}")


def _delay_change(default: History, small: History) -> str:
    """``shorter``, ``longer`` or ``the same`` delay T_grok − T_mem with small embeddings; ``no transition`` without one."""
    a, b = find_events(default).delay, find_events(small).delay
    if a is None or b is None:
        return "no transition"
    return "shorter" if b < a else "longer" if b > a else "the same"


def embedding_scale_readings(default: Mapping[tuple[float, int], History], small: Mapping[tuple[float, int], History],
                             scale: float) -> dict[tuple[str, float], Reading]:
    """Per λ over seeds, with embeddings at ``scale`` × the default: ``("order", λ)`` expects ``"backward"``, and
    ``("delay", λ)``, against the same seed's default run, ``"shorter"`` (Omnigrok: a smaller initial norm)."""
    missing = sorted(set(small) - set(default))
    if missing:
        raise ValueError(f"The 'small' parameter of embedding_scale_readings has runs without a default run: {missing}.")
    readings: dict[tuple[str, float], Reading] = {}
    for lam in dict.fromkeys(lam for lam, _ in small):
        runs = {seed: h for (lam_, seed), h in small.items() if lam_ == lam}
        readings[("order", lam)] = over_seeds(f"layer order at λ = {lam:g}, embeddings ×{scale:g}",
                                              {s: contraction_order(h).verdict for s, h in runs.items()},
                                              expected="backward")
        readings[("delay", lam)] = over_seeds(f"delay at λ = {lam:g}, embeddings ×{scale:g} against ×1",
                                              {s: _delay_change(default[(lam, s)], h) for s, h in runs.items()},
                                              expected="shorter")
    return readings


def embedding_scale_report(default: Mapping[tuple[float, int], History], small: Mapping[tuple[float, int], History],
                           readings: Mapping[tuple[str, float], Reading]) -> Markdown:
    """The experiment's verdict on the hypothesis in words, each run at both scales and the readings closed."""
    rows = []
    for (lam, seed), h in small.items():
        d, s = find_events(default[(lam, seed)]), find_events(h)
        rows.append({"λ": f"{lam:g}", "seed": seed, "T_mem ×1": d.t_mem, "T_mem small": s.t_mem,
                     "T_grok ×1": d.t_grok, "T_grok small": s.t_grok,
                     "order ×1": contraction_order(default[(lam, seed)]).verdict,
                     "order small": contraction_order(h).verdict})
    lams = [lam for what, lam in readings if what == "order"]
    turned = [lam for lam in lams if readings[("order", lam)].holds]
    if turned and turned == lams:
        verdict = ("**The hypothesis holds on these runs**: with embeddings that start small the order is "
                   "backward at every λ")
    elif turned:
        verdict = (f"**The hypothesis holds only in part**: the order turns backward at λ = "
                   f"{', '.join(f'{lam:g}' for lam in turned)} only")
    else:
        verdict = ("**The hypothesis failed on these runs**: with embeddings that start small the order does not "
                   "turn backward, so the embeddings' large start does not explain the forward order. A hypothesis this "
                   "experiment does not test: the order is set by how hard each layer's gradient steps push back "
                   "against the decay, not by where each layer starts")
    return Markdown(f"{verdict}.\n\n" + evidence("every run at both scales, and the readings over seeds",
                                                  table(rows), table(reading_rows(readings))))


def window_records(runs: Mapping[str, History], border: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What :func:`nhtlab.book.contraction_curves` draws: every run's layers in its window, and its events."""
    records, events = [], []
    for label, h in runs.items():
        if border:
            window, names = border_times(h), ("border fitted", "border dropped")
        else:
            ev = find_events(h)
            window, names = (ev.t_mem, ev.t_grok), ("T_mem", "T_grok")
        records += layer_window_records(h, contraction_order(h, window=window), run=label)
        events += [{"run": label, "event": name, "step": int(step), "align": side}
                   for name, step, side in zip(names, window, ("left", "right")) if step is not None]
    return records, events


def peak_records(runs: Mapping[str, History]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What :func:`nhtlab.book.layer_peak_chart` draws: each weight layer's ‖θ_ℓ‖² over its own peak, and the events.

    ``first`` in each record is the layer :func:`~nhtlab.analysis.layers.contraction_order` reads first over
    [border fitted, border dropped]; the events are the border fitted and dropped, and T_mem where reached.
    """
    records, events = [], []
    for label, h in runs.items():
        fitted, dropped = border_times(h)
        order = contraction_order(h, window=(fitted, dropped))
        first = (layer_label(order.order[0]) if order.order
                 else "none" if fitted is not None else "— (the border was never fitted)")
        steps = h.column("step").astype(int)
        for name, values in normalised_layer_norms(h, [c.layer for c in order.layers]).items():
            records += [{"run": label, "step": int(s), "layer": layer_label(name), "normalised": float(v),
                         "first": first, "share": order.share} for s, v in zip(steps, values)]
        # a border run has no test_acc for find_events: T_mem is its first crossing of the same threshold
        t_mem = first_step_at_least(steps, h.column("train_acc"), FITTED_ACCURACY)
        named = (("border fitted", fitted), ("border dropped", dropped), ("T_mem", t_mem))
        events += [{"run": label, "event": event, "step": int(step)} for event, step in named if step is not None]
    return records, events


def conflict_records(runs: Mapping[str, History]) -> list[dict[str, Any]]:
    """``{step, run, value}`` rows of each run's ``conflict_acc``, for :func:`nhtlab.book.warning_signals`' top panel."""
    return [{"step": int(s), "run": label, "value": float(v)} for label, h in runs.items()
            for s, v in zip(h.column("step"), h.column("conflict_acc"))]


def order_reference(history: History, layers: list[str], t_mem: int, t_end: int, share: float = 0.1) -> list[str]:
    """The contraction order nhtlab reads in the window [t_mem, t_end] (chapter 05's code exercise's answer)."""
    order = contraction_order(history, window=(t_mem, t_end), share=share)
    unknown = sorted(set(order.order) - set(layers))
    if unknown:
        raise ValueError(f"The 'layers' parameter of order_reference leaves out layers that contracted: {unknown}.")
    return order.order


def order_cases(runs: Mapping[Any, History], orders: Mapping[Any, ContractionOrder]) -> list[tuple]:
    """:func:`order_reference`'s arguments ``(history, layers, t_mem, t_end)`` for every run with a window (none
    has one: the first run's whole history, so the exercise still has a case)."""
    cases = [(runs[key], [c.layer for c in o.layers], o.t_mem, o.t_end) for key, o in orders.items()
             if o.t_mem is not None]
    if not cases:
        key, h = next(iter(runs.items()))
        steps = h.column("step")
        cases = [(h, [c.layer for c in orders[key].layers], int(steps[0]), int(steps[-1]))]
    return cases


def tally(readings: Reading | Sequence[Reading]) -> str:
    """Readings pooled over their seeds: ``"<expected> in k of n seeds (<other> j, …)"`` ("runs" when several)."""
    group = [readings] if isinstance(readings, Reading) else list(readings)
    if not group:
        raise ValueError("tally: 'readings' is empty")
    values = [v for r in group for v in r.by_seed.values()]
    want = group[0].expected
    rest = ", ".join(f"{v} {c}" for v, c in Counter(str(v) for v in values if v != want).most_common())
    unit = "seeds" if len(group) == 1 else "runs"
    return f"{want} in {sum(v == want for v in values)} of {len(values)} {unit}" + (f" ({rest})" if rest else "")


def order_summary(readings: Mapping[Any, Reading]) -> Markdown:
    """Chapter 05's sentence on the companion runs: where the paper's P4 holds, with each setting's count."""
    held = sum(r.holds for r in readings.values())
    return Markdown(f"On this setting the paper's P4 **holds at {held} of {len(readings)} λ** (backward in a strict "
                    "majority of seeds): " + "; ".join(f"{key}: {tally(r)}" for key, r in readings.items()) + ".")


def layer_findings(modular: Mapping[Any, Reading], small: Mapping[tuple[str, float], Reading],
                   images: Mapping[tuple[str, str], Reading], scale: float, mnist: Mapping[str, Any]) -> Markdown:
    """Chapter 05's "What we found" box, every sentence counted from the runs' readings (``mnist``: the real-image
    runs' :func:`omnigrok_record`)."""
    held = [key for key, r in modular.items() if r.holds]
    runs, law = mnist["runs"], mnist["delay_law"]
    mnist_orders = Counter((r["order"] or {}).get("verdict") or "not read" for r in runs)
    orders = [r for (what, _), r in small.items() if what == "order"]
    delays = [r for (what, _), r in small.items() if what == "delay"]
    return what_we_found(
        f"On the companion transformer, once the table is memorised, the layer order over all its runs reads "
        f"{tally(list(modular.values()))}: the paper's backward order (P4) holds at {len(held)} of "
        f"{len(modular)} λ.",
        f"Embeddings that start at ×{scale:g} their default scale give a layer order {tally(orders)}; the delay "
        f"T_grok − T_mem, against the same seed's default run, reads {tally(delays)} (Omnigrok predicts "
        f"shorter).",
        f"On the digit-border images the main run's border was {tally(images[('main', 'border')])} and the "
        f"control's {tally(images[('control', 'border')])}.",
        f"In the main digit runs the layer order reads {tally(images[('main', 'verdict')])}; the early warning "
        f"(the read-out's norm against its start turning down before the drop) reads "
        f"{tally(images[('main', 'warning')])}.",
        f"On real MNIST digits, from a large initialisation, {sum(r['delay'] is not None for r in runs)} of "
        f"{len(runs)} runs memorised, then generalised; from T_mem their layer order reads "
        + ", ".join(f"{verdict} in {count}" for verdict, count in mnist_orders.items())
        + f" of {len(runs)}. Across λ the delay "
        + ("cannot be tested against 1/(ηλ)" if not math.isfinite(law["alpha"]) else
           f"{'follows' if law['passed'] else 'does not follow'} 1/(ηλ)") + f" ({law['detail']}).")


def modular_order_table(orders: Mapping[tuple[float, int], ContractionOrder]) -> Markdown:
    """Every companion run's window and the steps its read-out and token embedding lost their share, as a table."""
    return table([{"λ": lam, "seed": seed, **o.to_dict()} for (lam, seed), o in orders.items()],
                 columns=["λ", "seed", "t_mem", "t_end", "head_step", "first_step", "head_lost", "first_lost", "verdict"],
                 formats={"λ": "{:g}", "head_lost": "{:.0%}", "first_lost": "{:.0%}"},
                 headers={"t_mem": "T_mem", "t_end": "T_grok", "head_step": "read-out −10% at",
                          "first_step": "embedding −10% at", "head_lost": "read-out lost by T_grok",
                          "first_lost": "embedding lost by T_grok"})


def image_run_table(rows: list[dict[str, Any]]) -> Markdown:
    """:func:`image_run_rows` as a table: each digit run's border, layer order, warning and final conflict accuracy."""
    return table(rows, columns=["run", "seed", "fitted", "dropped", "border", "verdict", "warning", "conflict_acc"],
                 formats={"conflict_acc": "{:.2f}"},
                 headers={"fitted": "border fitted", "dropped": "border dropped", "verdict": "layer order",
                          "warning": "‖θ_L‖²/‖θ_L(0)‖²", "conflict_acc": "final conflict acc."})


def omnigrok_runs(spec: Mapping[str, Any], seed: int = 0) -> dict[tuple[float, int], ImageGrokRun]:
    """The real-image grokking runs of ``spec``, keyed (λ, seed): one :class:`ImageGrokRun` per λ → steps of
    ``spec["budgets"]`` and seed ``seed + s`` for s in ``spec["seeds"]``; ``spec``'s other keys are the runs' fields."""
    require_type(spec, "spec", Mapping, owner="omnigrok_runs")
    missing = sorted({"budgets", "seeds"} - spec.keys())
    if missing or not isinstance(spec["budgets"], Mapping):
        raise ValueError(f"The 'spec' parameter of omnigrok_runs needs 'budgets' (a mapping λ → steps) and 'seeds' "
                         f"(offsets from 'seed'); missing {missing}. Got {dict(spec)!r} instead.")
    fields = {k: v for k, v in spec.items() if k not in ("budgets", "seeds")}
    return {(lam, seed + s): ImageGrokRun(**fields, weight_decay=lam, steps=steps, seed=seed + s)
            for lam, steps in spec["budgets"].items() for s in spec["seeds"]}


def grok_run_reading(run: ImageGrokRun, history: History) -> dict[str, Any]:
    """One real-image grokking run read as chapter 05 and ``benchmarks/pilot_omnigrok.py`` read it: T_mem (train
    accuracy ≥ FITTED_ACCURACY), T_gen (test ≥ IMAGE_GENERALISED, which :func:`omnigrok_record` states), the delay
    where T_gen comes later, ‖θ‖² at the start, T_mem and the end, the layer order over [T_mem, T_gen], and each
    layer's peak step and the share of its peak lost by the end (the paper's CIFAR-10 reading, which needs no T_mem)."""
    events = find_events(history)
    t_gen = first_step_at_least(history.column("step").astype(int), history.column("test_acc"), IMAGE_GENERALISED)
    delay = t_gen - events.t_mem if events.t_mem is not None and t_gen is not None and t_gen > events.t_mem else None
    last = history.rows[-1]
    return {"lam": run.weight_decay, "seed": run.seed, "steps": run.steps, "t_mem": events.t_mem, "t_gen": t_gen,
            "delay": delay, "norm_start": round(history.rows[0]["norm"]), "norm_end": round(events.final_norm),
            "norm_mem": None if events.t_mem is None else round(events.norm_at_mem),
            "train_end": round(last["train_acc"], 3), "test_end": round(last["test_acc"], 3),
            "order": contraction_order(history, window=(events.t_mem, t_gen)).to_dict() if delay else None,
            "status": history.status, "layers": {t.layer: {"peak_step": t.peak_step, "lost": round(t.contraction, 3)}
                                                 for t in layer_transitions(history)}}


def omnigrok_record(readings: Sequence[Mapping[str, Any]], spec: Mapping[str, Any],
                    about: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """:func:`grok_run_reading`'s runs of one ``spec`` (as :func:`omnigrok_runs` takes it) with the delay law over
    them (:func:`~nhtlab.analysis.scorecard.delay_scaling`), as :func:`~nhtlab.book.report.omnigrok_summary` reads
    them; ``about`` says where a pilot script wrote them (None: trained by the chapter)."""
    lams = list(spec["budgets"])
    law = delay_scaling({lam: [r["delay"] for r in readings if r["lam"] == lam] for lam in lams})
    base = {k: v for k, v in spec.items() if k not in ("budgets", "seeds")}
    # the budgets' shortest length in time scales 1/(ηλ), which the text states
    scales = min(steps * spec["lr"] * lam for lam, steps in spec["budgets"].items())
    return {"about": about, "base": {**base, "time_scales": round(scales, 2), "generalised": IMAGE_GENERALISED},
            "lams": lams, "seeds": sorted({r["seed"] for r in readings}), "runs": list(readings),
            "delay_law": {"passed": law.passed, "detail": law.detail, "alpha": law.value}}


def omnigrok_premise(record: Mapping[str, Any]) -> Check:
    """The real-image route meets the premise it is trained for (decided before its runs): at every λ a strict
    majority of the seeds memorised, then generalised, with ‖θ‖² at T_mem above its final value (P1)."""
    counts = []
    for lam in record["lams"]:
        runs = [r for r in record["runs"] if r["lam"] == lam]
        good = sum(r["delay"] is not None and r["norm_mem"] > r["norm_end"] for r in runs)
        counts.append((lam, good, len(runs)))
    return Check("the MNIST runs memorise, then generalise as ‖θ‖² falls", all(2 * k > n for _, k, n in counts),
                 "; ".join(f"λ = {lam:g}: {k} of {n}" for lam, k, n in counts))
