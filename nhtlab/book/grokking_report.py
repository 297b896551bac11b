"""One grokking run reported: its events and delay law beside the paper's, and the checks a chapter asserts.

Chapter 01 trains the companion paper's transformer at λ = 1 (and without weight decay) and states
its claims as functions that return a :class:`~nhtlab.book.claims.Check` on one history, so that the
chapter asserts ``assert check, check.detail`` and a unit test can name a history that fails it.
:func:`check_norm_largest_at_init` is there because the embeddings' unit variance holds most of
‖θ‖² at step 0, so a norm "peak" says nothing in this network. What the network learned is read off
the token embedding's Fourier columns that every run on Z_p records (:mod:`nhtlab.measures.fourier`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..analysis.layers import layer_label
from ..history import History
from .. import papers
from ..papers import paper_cell
from ..thresholds import FITTED_ACCURACY
from ..validation import require_int, require_type
from .claims import Check, Reading, over_seeds
from .report import Markdown, evidence, table
from ..analysis.delay import predicted_delay
from ..analysis.events import find_events, first_step_at_least
from ..analysis.regimes import diagnose_regime
from ..measures.fourier import KEY_FREQUENCIES, key_frequencies

__all__ = ["check_grokking", "check_contraction", "check_weak", "check_norm_largest_at_init", "checks_over_seeds",
           "generalise_answer", "STRUCTURE_TIMES", "fourier_timing", "fourier_table", "fourier_readings",
           "check_fourier_rises", "fourier_spectrum_records", "fourier_at_grok", "delay_window", "train_acc_reading",
           "layer_falls", "time_scale_why", "chapter_checks", "events_evidence", "delay_window_report",
           "layer_falls_report", "delay_law_text"]

HOLDS, FAILS = "holds", "fails"


def check_grokking(history: History, min_delay: int) -> Check:
    """Memorises (train accuracy ≥ 99%), then generalises (test ≥ 99%) ``min_delay`` steps later or more."""
    require_int(min_delay, "min_delay", low=0, owner="check_grokking")
    ev = find_events(history)
    name = "memorises, then generalises later"
    if ev.t_mem is None:
        return Check(name, False, f"train accuracy never reached {FITTED_ACCURACY:.0%} (best {np.nanmax(history.column('train_acc')):.1%})")
    if ev.t_grok is None:
        return Check(name, False, f"T_mem = {ev.t_mem:,}; test accuracy never reached {FITTED_ACCURACY:.0%} "
                                  f"(best {np.nanmax(history.column('test_acc')):.1%})")
    return Check(name, ev.delay >= min_delay,
                 f"T_mem = {ev.t_mem:,}, T_grok = {ev.t_grok:,}: delay {ev.delay:,} (at least {min_delay:,})")


def check_contraction(history: History, at_least: float = 1 / 3) -> Check:
    """Between T_mem and T_grok, ‖θ‖² falls by at least ``at_least`` of its value at T_mem."""
    ev = find_events(history)
    name = f"‖θ‖² falls by at least {at_least:.0%} between T_mem and T_grok"
    if ev.norm_at_mem is None or ev.norm_at_grok is None:
        return Check(name, False, f"no transition to measure (T_mem = {ev.t_mem}, T_grok = {ev.t_grok})")
    fall = 1.0 - ev.norm_at_grok / ev.norm_at_mem
    return Check(name, fall >= at_least,
                 f"‖θ‖² {ev.norm_at_mem:,.0f} at T_mem → {ev.norm_at_grok:,.0f} at T_grok: {fall:.0%} smaller")


def check_weak(history: History) -> Check:
    """The network memorises and :func:`~nhtlab.analysis.regimes.diagnose_regime` calls it weak."""
    regime = diagnose_regime(history)
    return Check("memorises and stays weak", regime.memorised and regime.regime == "weak",
                 f"{regime.regime}: {regime.reason}")


def check_norm_largest_at_init(history: History) -> Check:
    """‖θ‖² is largest at the first evaluation (step 0): no later evaluation rises above it."""
    norm, steps = history.column("norm"), history.column("step")
    peak = int(np.nanargmax(norm))
    return Check("‖θ‖² is largest at initialisation", peak == 0,
                 f"‖θ‖² {norm[0]:,.0f} at step {int(steps[0]):,}, largest {norm[peak]:,.0f} "
                 f"at step {int(steps[peak]):,}")


def checks_over_seeds(name: str, checks: Mapping[int, Check], rule: str = "majority") -> Reading:
    """One check on several seeds as a reading: ``"holds in k of n seeds (seed 0: holds, …)"``."""
    require_type(checks, "checks", Mapping, owner="checks_over_seeds")
    for seed, c in checks.items():
        require_type(c, f"checks[{seed}]", Check, owner="checks_over_seeds")
    return over_seeds(name, {seed: HOLDS if c else FAILS for seed, c in checks.items()}, expected=HOLDS, rule=rule)


def generalise_answer(histories: Mapping[int, History]) -> tuple[str, tuple[str, str], str]:
    """The answer the runs give to "will this network generalise within its budget?": a strict majority decides."""
    if not histories:
        raise ValueError("generalise_answer: 'histories' is empty")
    grokked = [find_events(h).t_grok is not None for h in histories.values()]
    ends = sorted({int(h.column("step")[-1]) for h in histories.values()})
    best = max(max(h.column("test_acc")) for h in histories.values())
    answer = "yes" if 2 * sum(grokked) > len(grokked) else "no"
    return answer, ("yes", "no"), (f"test accuracy reached {FITTED_ACCURACY:.0%} in {sum(grokked)} of {len(grokked)} runs within their budgets "
                    f"({' / '.join(f'{e:,}' for e in ends)} steps); the best it reached was {best:.2f}")


def delay_window(history: History) -> dict[str, Any] | None:
    """What a run does between T_mem and T_grok, both included: the fall of ‖θ‖² and the lowest training accuracy."""
    ev = find_events(history)
    if not ev.grokked:
        return None
    steps, acc = history.column("step"), history.column("train_acc")
    first, last = sorted((ev.t_mem, ev.t_grok))  # a run that generalises first has the window reversed
    inside = np.flatnonzero((steps >= first) & (steps <= last))
    low = inside[int(np.nanargmin(acc[inside]))]
    return {"t_mem": ev.t_mem, "t_grok": ev.t_grok, "v_mem": ev.norm_at_mem, "v_grok": ev.norm_at_grok,
            "fall": 1.0 - ev.norm_at_grok / ev.norm_at_mem, "lowest train acc": float(acc[low]),
            "at step": int(steps[low])}


def train_acc_reading(histories: Mapping[int, History]) -> Reading:
    """Whether training accuracy stays at 99% or above from T_mem to T_grok (:func:`delay_window`), over seeds."""
    stays, dips = f"stays ≥ {FITTED_ACCURACY:.0%}", f"dips below {FITTED_ACCURACY:.0%}"
    by_seed = {seed: "no transition" if (w := delay_window(h)) is None
               else stays if w["lowest train acc"] >= FITTED_ACCURACY else dips for seed, h in histories.items()}
    return over_seeds("training accuracy between T_mem and T_grok", by_seed, expected=stays)


def layer_falls(history: History) -> list[dict[str, Any]]:
    """Each layer's ‖θ_ℓ‖² at init, T_mem and T_grok and its fall from T_mem to T_grok, largest fall first."""
    at = _moments(history)  # find_events refuses a non-History by name
    if "T_mem" not in at or "T_grok" not in at:
        return []
    rows = [{"layer": layer_label(name), **{m: float(history.column(f"norm/{name}")[at[m]]) for m in MOMENTS[:3]}}
            for name in history.layers]
    rows = [{**r, "fall": 1.0 - r["T_grok"] / r["T_mem"] if r["T_mem"] else 0.0} for r in rows]
    return sorted(rows, key=lambda r: -r["fall"])


def time_scale_why(ratio: float, lr: float, weight_decay: float) -> str:
    """The working of the law's time scale log(V_mem/V_post)/(ηλ), for an exercise's revealed answer."""
    steps = predicted_delay(ratio, 1.0, lr=lr, weight_decay=weight_decay)
    return (f"that is log {ratio:g} / (ηλ) = {np.log(ratio):.3f} / {lr * weight_decay:g} ≈ {steps:,.0f} steps; "
            f"the companion code's 2ηλ would give half, {steps / 2:,.0f}")


CONTRACTION = "‖θ‖² falls by a third between T_mem and T_grok"


def chapter_checks(histories: Mapping[int, History], no_decay: Mapping[int, History],
                   min_delay: int) -> dict[str, dict[int, Check]]:
    """Chapter 01's claims on every seed: ``{claim: {seed: Check}}``, the runs with decay (``histories``)
    for the first four, those without (``no_decay``) for the last; ``min_delay`` as in :func:`check_grokking`."""
    decay = {"memorises, then generalises later": lambda h: check_grokking(h, min_delay=min_delay),
             CONTRACTION: lambda h: check_contraction(h, at_least=1 / 3),
             "‖θ‖² is largest at initialisation": check_norm_largest_at_init,
             f"the top-{KEY_FREQUENCIES} Fourier share rises": check_fourier_rises}
    checks = {name: {s: check(h) for s, h in histories.items()} for name, check in decay.items()}
    checks["without decay: memorises and stays weak"] = {s: check_weak(h) for s, h in no_decay.items()}
    return checks


def events_evidence(histories: Mapping[int, History], lr: float) -> Markdown:
    """Every seed's T_mem and T_grok beside the companion's (its λ = 1 row at η = 10⁻³, else its η sweep's at
    ``lr``), closed, with how many seeds land within one standard deviation of its T_grok (shown, not asserted)."""
    paper = dict(papers.COMPANION_LAMBDA_SWEEP[1.0]) if lr == 1e-3 else {"t_grok": papers.COMPANION_ETA_SWEEP[lr]}
    events = {s: find_events(h) for s, h in histories.items()}
    mean, std = paper["t_grok"]
    near = sum(ev.t_grok is not None and abs(ev.t_grok - mean) <= std for ev in events.values())
    rows = [{"quantity": label, **{f"seed {seed}": getattr(ev, key) for seed, ev in events.items()},
             "paper": paper_cell(paper.get(key))} for key, label in (("t_mem", "T_mem"), ("t_grok", "T_grok"))]
    return evidence("every seed's T_mem and T_grok beside the paper's",
                    table(rows, headers={"paper": "companion (10 seeds)"}),
                    f"T_grok within one standard deviation of the companion's {paper_cell(paper['t_grok'])} "
                    f"(η = {lr:g}): {near} of {len(events)} seeds. Shown, not asserted: a few seeds are not "
                    "the paper's mean over ten.")


def delay_window_report(histories: Mapping[int, History]) -> Markdown:
    """What every seed does from T_mem to T_grok in words, then every seed's :func:`delay_window` closed."""
    contraction = checks_over_seeds(CONTRACTION, {s: check_contraction(h) for s, h in histories.items()})
    train_acc = train_acc_reading(histories)
    all_windows = {s: delay_window(h) for s, h in histories.items()}
    windows = {s: w for s, w in all_windows.items() if w}
    if not windows:
        return Markdown(f"No seed memorised and generalised: {contraction.text()}.")
    falls = ", ".join(f"seed {s}: {w['fall']:.0%}" for s, w in windows.items())
    lows = "; ".join(f"{w['lowest train acc']:.2f} (seed {s}, step {w['at step']:,})" for s, w in windows.items())
    text = (f"From T_mem to T_grok, ‖θ‖² falls by at least a third in {contraction.k} of {contraction.n} seeds "
            f"({falls}). Training accuracy {train_acc.expected} over that whole window in {train_acc.k} of "
            f"{train_acc.n} seeds; the lowest training accuracy inside the window: {lows}. Test accuracy climbs to "
            f"{FITTED_ACCURACY:.0%} while the norm falls.")
    return Markdown(text + "\n\n" + evidence(
        "every seed between T_mem and T_grok",
        table([{"seed": s, **(w or {"t_mem": "no transition"})} for s, w in all_windows.items()],
              formats={"v_mem": "{:,.0f}", "v_grok": "{:,.0f}", "fall": "{:.0%}", "lowest train acc": "{:.2f}"},
              headers={"t_mem": "T_mem", "t_grok": "T_grok", "v_mem": "‖θ‖² at T_mem", "v_grok": "‖θ‖² at T_grok",
                       "fall": "fall"}),
        "The window holds every evaluation from T_mem to T_grok, both included; the fall is "
        "1 − ‖θ‖²(T_grok)/‖θ‖²(T_mem)."))


def _change(fall: float) -> str:
    return f"{fall:.0%} smaller" if fall >= 0 else f"{-fall:.0%} larger"


def layer_falls_report(history: History, seed: int) -> Markdown:
    """The run's ‖θ‖² at its moments and the layers that shrink most and least, every layer's closed."""
    rows = layer_falls(history)
    if not rows:
        return Markdown(f"Seed {seed} did not memorise and generalise within "
                        f"{int(history.column('step')[-1]):,} steps.")
    ev = find_events(history)
    text = (f"Seed {seed}: ‖θ‖² is {history.column('norm')[0]:,.0f} at initialisation, {ev.norm_at_mem:,.0f} at "
            f"T_mem and {ev.norm_at_grok:,.0f} at T_grok. From T_mem to T_grok the layer that shrinks the most is "
            f"“{rows[0]['layer']}” ({_change(rows[0]['fall'])}), the one that shrinks the least "
            f"“{rows[-1]['layer']}” ({_change(rows[-1]['fall'])}).")
    return Markdown(text + "\n\n" + evidence(
        f"every layer's squared norm, seed {seed}",
        table(rows, formats={"init": "{:,.1f}", "T_mem": "{:,.1f}", "T_grok": "{:,.1f}", "fall": "{:.0%}"})))


def delay_law_text(summary: Mapping[str, Any], seed: int) -> Markdown:
    """The delay law on one λ = 1 run (:func:`~nhtlab.analysis.delay.delay_summary`) beside the companion's range,
    both definitions, each beside the companion's value, closed."""
    paper = papers.COMPANION_LAMBDA_SWEEP[1.0]
    notes = {"companion": f"T_escape {paper_cell(paper['t_escape'])}, theory {paper_cell(paper['escape_theory'])}",
             "grok": f"delay ≈ {paper['t_grok'][0] - paper['t_mem'][0]:,.0f} (difference of the means)"}
    law = [{"definition": name, **{k: point[k] for k in ("measured", "predicted", "predicted/measured")},
            "paper": notes[name]} for name in ("companion", "grok") if (point := summary.get(name)) is not None]
    if not law:
        return Markdown("No delay to compare: the run did not generalise.")
    low, high = papers.COMPANION_THEORY_RATIO
    text = (f"Seed {seed}: between memorisation and generalisation the norm contracts by a factor "
            f"{summary['v_mem'] / summary['v_grok']:.1f}, and the law's time scale at rate ηλ is "
            f"{summary['grok']['predicted/measured']:.2f} of the measured delay. In the companion's own λ-sweep "
            f"runs, predicted / measured T_escape lies between {low:.2f} and {high:.2f}.")
    return Markdown(text + "\n\n" + evidence(
        f"the delay law's two definitions on seed {seed}",
        table(law, formats={"measured": "{:,}", "predicted": "{:,.0f}", "predicted/measured": "{:.2f}"},
              headers={"paper": "companion (10 seeds, λ = 1)"}),
        f"The run ends {summary['t_end'] - summary['t_grok']:,} steps after T_grok "
        f"(V_final = {summary['v_final']:,.0f})."))


#: Where the token embedding's Fourier share is halfway risen (:func:`fourier_timing`); the second is the
#: reading chapter 01 states before its runs (Nanda et al.'s circuit formation during the delay, before test
#: accuracy jumps): strictly after T_mem and before T_grok. "at T_grok" is the evaluation at which test
#: accuracy reaches 99% itself: the share and test accuracy cross together, at the evaluations' resolution.
STRUCTURE_TIMES = ("by T_mem", "between T_mem and T_grok", "at T_grok", "after T_grok", "no rise",
                   "no transition")
MOMENTS = ("init", "T_mem", "T_grok", "end")


def _fourier(history: History, owner: str) -> np.ndarray:
    require_type(history, "history", History, owner=owner)
    if "fourier" not in history.columns:
        raise ValueError(f"The 'history' parameter of {owner} has no 'fourier' column: a run on Z_p records it "
                         f"(nhtlab.measures.fourier); columns are {history.columns[:8]}…")
    return history.column("fourier")


def _moments(history: History) -> dict[str, int]:
    """Row index of each moment the run reached: init, T_mem, T_grok (first row at the event) and the end."""
    ev, steps = find_events(history), history.column("step")
    found = {"init": 0, "T_mem": ev.t_mem, "T_grok": ev.t_grok, "end": len(steps) - 1}
    return {m: int(np.searchsorted(steps, at)) if m in ("T_mem", "T_grok") else at
            for m, at in found.items() if at is not None}


def fourier_timing(history: History) -> dict[str, Any]:
    """When the token embedding's top-K Fourier share is halfway risen (:data:`STRUCTURE_TIMES`), as a table row.

    Halfway: the first evaluation at s₀ + (s_end − s₀)/2 or above, s₀ at init and s_end at the end (fixed before
    the runs).
    """
    share = _fourier(history, "fourier_timing")
    ev, steps, norm = find_events(history), history.column("step"), history.column("norm")
    start, end = share[0], share[-1]
    half = first_step_at_least(steps, share, start + (end - start) / 2) if end > start else None
    when = STRUCTURE_TIMES[5 if not ev.grokked else 4 if half is None else
                           0 if half <= ev.t_mem else 1 if half < ev.t_grok else 2 if half == ev.t_grok else 3]
    at = _moments(history)
    contracted = None
    if ev.grokked and half is not None and ev.norm_at_mem != ev.norm_at_grok:
        v_half = norm[int(np.searchsorted(steps, half))]
        contracted = float((ev.norm_at_mem - v_half) / (ev.norm_at_mem - ev.norm_at_grok))
    spectrum = [history.rows[-1][c] for c in history.columns if c.startswith("fourier/")]
    key = key_frequencies(torch.tensor(spectrum), min(KEY_FREQUENCIES, len(spectrum) - 1))
    return {"t_mem": ev.t_mem, "t_half": half, "t_grok": ev.t_grok,
            **{f"share {m}": float(share[at[m]]) if m in at else None for m in MOMENTS},
            "contracted": contracted, "key": ", ".join(map(str, key)), "when": when}


def fourier_table(timings: Mapping[int, Mapping[str, Any]]) -> Markdown:
    """:func:`fourier_timing` of each seed as two narrow tables: when, then the share at each moment."""
    when = table([{"seed": s, **{k: t[k] for k in ("t_mem", "t_half", "t_grok", "when", "contracted")}}
                  for s, t in timings.items()], formats={"contracted": "{:.2f}"},
                 headers={"t_mem": "T_mem", "t_half": "share halfway", "t_grok": "T_grok",
                          "contracted": "contraction done"})
    shares = [f"share {m}" for m in MOMENTS]
    moments = table([{"seed": s, **{k: t[k] for k in (*shares, "key")}} for s, t in timings.items()],
                    formats={c: "{:.2f}" for c in shares},
                    headers={**{f"share {m}": m for m in MOMENTS}, "key": f"top {KEY_FREQUENCIES} k (end)"})
    return Markdown(f"{when}\n\nThe top-{KEY_FREQUENCIES} share at each moment:\n\n{moments}")


def fourier_readings(timings: Mapping[int, Mapping[str, Any]]) -> Reading:
    """Where the Fourier share is halfway risen, over seeds; a strict majority decides."""
    return over_seeds("the embedding's Fourier structure is halfway formed",
                      {s: t["when"] for s, t in timings.items()}, expected=STRUCTURE_TIMES[1])


def check_fourier_rises(history: History) -> Check:
    """The top-K Fourier share is recorded at every evaluation, finite, and higher at the end than at init."""
    share = _fourier(history, "check_fourier_rises")
    finite = bool(np.isfinite(share).all())
    return Check(f"the top-{KEY_FREQUENCIES} Fourier share rises", finite and share[-1] > share[0],
                 f"{share[0]:.2f} at init, {share[-1]:.2f} at the end" + ("" if finite else " (not finite everywhere)"),
                 float(share[-1] - share[0]))


def fourier_spectrum_records(histories: Mapping[int, History]) -> list[dict[str, Any]]:
    """Each seed's token-embedding spectrum at its moments as chart rows: frequency k ≥ 1's share of the
    non-constant power (so that moments compare while the norm shrinks)."""
    records = []
    for seed, h in histories.items():
        _fourier(h, "fourier_spectrum_records")
        ks = [c for c in h.columns if c.startswith("fourier/")][1:]
        for moment, i in _moments(h).items():
            power = np.array([h.rows[i][c] for c in ks])
            records += [{"seed": seed, "moment": moment, "k": k + 1, "share": float(v / power.sum())}
                        for k, v in enumerate(power)]
    return records


def fourier_at_grok(histories: Sequence[History]) -> Markdown:
    """One line for a λ sweep: per λ, the medians of the top-K Fourier share at init and T_grok and the delay."""
    require_type(histories, "histories", (list, tuple), owner="fourier_at_grok")
    by_lam: dict[float, list[tuple[float, float, int]]] = {}
    for h in histories:
        share, ev = _fourier(h, "fourier_at_grok"), find_events(h)
        runs = by_lam.setdefault(float(h.config["weight_decay"]), [])
        if ev.grokked:
            runs.append((share[0], share[_moments(h)["T_grok"]], ev.delay))

    def part(runs: list[tuple[float, float, int]]) -> str:
        start, at_grok, delay = np.median(runs, axis=0)  # each column's median
        return f"{start:.2f} → {at_grok:.2f}, delay {delay:,.0f} steps ({len(runs)} run{'s' * (len(runs) != 1)})"

    parts = [f"λ = {lam:g}: " + (part(runs) if runs else "no run grokked") for lam, runs in sorted(by_lam.items())]
    return Markdown(f"The token embedding's top-{KEY_FREQUENCIES} Fourier share (chapter 01) from initialisation "
                    f"to T_grok, median per λ: {'; '.join(parts)}.")
