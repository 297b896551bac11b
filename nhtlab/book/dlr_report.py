"""What chapter 04 reports about DLR: records, checks, tables (:func:`dlr_table`) and sentences read from its runs.

Only the CNN runs train here (:func:`cnn_runs`, and :func:`lr_sweep` for the learning-rate experiment).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..analysis.events import find_events
from ..data.images import ImageData
from ..history import History
from ..measures.cka import centre
from ..measures.dlr import CANDIDATE_RULES, RULE_THRESHOLDS, _check_rank, dlr, dlr_terms
from ..models.cnn import SimpleCNN
from ..training.dlr_tracker import DLRTracker
from ..training.loop import TrainConfig, train
from ..validation import require_int, require_type
from .claims import Check, Reading, over_seeds, reading_rows
from .dlr_probes import companion_probe, tracked_run
from .report import Markdown, evidence, md, table

__all__ = [
    "mnist_pair_records", "mnist_pair_reading", "mnist_pair_text", "toy_curve", "lazy_rich_answer", "rule_records",
    "lazy_rich_records", "dlr_marks", "timing_check", "spectra_marks", "layer_change",
    "additive_share", "cnn_settings", "final_records", "measure_summary",
    "transformer_check", "CNN_NAMES", "TABLES", "paper_cnn_records", "chosen_rule_check",
    "timing_reading", "run_timing", "seed_timings", "lazy_rich_checks", "cnn_checks", "dlr_fourier_text",
    # the chapter's tables and text
    "dlr_table", "toy_text", "rule_evidence", "timing_text", "spectra_text", "mlp_text", "cnn_text",
    # the CNNs and the learning-rate experiment
    "cnn_runs", "features_used", "lr_sweep", "lr_readings", "lr_checks", "lr_section",
    # the lesson's furniture: the spectrum's knee, the exercise, the takeaway
    "spectrum_knee", "dlr_of_arrays", "dlr_exercise_cases", "dlr_found",
    # the rank-rule study (chapter 04's choice of rank rule), and its rules (nhtlab.measures.dlr)
    "CANDIDATE_RULES", "RULE_THRESHOLDS", "rule_band", "rule_properties", ]

#: The three CNN settings of the chapter, in order: no normalisation, BatchNorm, BatchNorm on shuffled labels.
CNN_NAMES = ("no normalisation", "BatchNorm", "BatchNorm, shuffled labels")

#: Share of the learned outputs' energy that the features "used" must express (Π̂(k) ≥ this), fixed before the runs.
USED_SHARE = 0.95

_SPECTRA_KS = (10, 40)  # the ranks k at which the spectra table reads each marked step
_KNEE_SHARE = 0.9  # the share of the utilisation at the largest kept k that the knee holds


def _orthonormal(n: int, r: int, g: torch.Generator) -> torch.Tensor:
    a = torch.randn(n, r, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(a - a.mean(0))
    return q


def _at(rows: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    return {int(r["step"]): r for r in rows}


def _by_run(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {r["run"]: r for r in records}


def _means(records: Iterable[Mapping[str, Any]], by: str, columns: Sequence[str]) -> dict[Any, dict[str, float]]:
    """Per value of ``by``, in first-seen order: ``seeds`` (how many records) and each column's mean (None as NaN)."""
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault(r[by], []).append(r)
    return {key: {"seeds": len(rows), **{c: sum(math.nan if r[c] is None else float(r[c]) for r in rows) / len(rows)
                                         for c in columns}} for key, rows in groups.items()}


def toy_curve(seed: int = 0, n: int = 400, useful: int = 3, unused: int = 61,
              outputs: int = 10) -> list[dict[str, float]]:
    """DLR of features α · (output span) + (1 − α) · (unused random features), for α from 0 to 1 in 21 steps;
    the outputs are random combinations of ``useful`` centred orthonormal directions."""
    g = torch.Generator().manual_seed(seed)
    span = _orthonormal(n, useful, g)
    noise = torch.randn(n, unused, generator=g, dtype=torch.float64) / n**0.5
    out = span @ torch.randn(useful, outputs, generator=g, dtype=torch.float64)
    alphas = [i / 20 for i in range(21)]
    terms = [dlr_terms(torch.cat([a * span, (1 - a) * noise], dim=1), out) for a in alphas]
    return [{"alpha": a, "DLR": t.dlr, "f_in": t.f_in} for a, t in zip(alphas, terms)]


def toy_text(records: Sequence[Mapping[str, Any]]) -> Markdown:
    """What the toy curve shows, read from :func:`toy_curve`'s records."""
    half = min(records, key=lambda row: abs(row["alpha"] - 0.5))
    return md(f"""
        DLR starts at {records[0]["DLR"]:.2f} at α = {records[0]["alpha"]:g} (random features overlap the
        output span only by chance) and reaches {records[-1]["DLR"]:.2f} at α = {records[-1]["alpha"]:g},
        when only the output span is left. At α = {half["alpha"]:g} it is still {half["DLR"]:.2f}: the
        unused directions hold most of the energy, so $f_\\text{{in}}$ is only {half["f_in"]:.2f}.
        """)


def lazy_rich_records(results: Iterable[Any]) -> list[dict[str, Any]]:
    """One record per lazy/rich run: α, DLR, the independent signals and the band of the other rules."""
    return [{"alpha": r.alpha, "dlr": r.dlr, "cka_to_init": r.cka_to_init, "nc1": r.nc1, "test_acc": r.test_acc,
             "train_loss": r.train_loss, "band": f"{min(band):.3f}–{max(band):.3f}",
             **{f"dlr[{name}]": value for name, value in r.compare.items()}}
            for r in results for band in [list(r.compare.values()) or [r.dlr]]]


def _ends(records: Sequence[Mapping[str, Any]], owner: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    records = list(records)
    if len(records) < 2:
        raise ValueError(f"The 'records' parameter of {owner} needs at least two lazy/rich runs; got {len(records)}.")
    return records[0], records[-1]


def lazy_rich_checks(records: Sequence[Mapping[str, Any]], margin: float = 0.2, slack: float = 0.02,
                     rich_cka: float = 0.6, lazy_cka: float = 0.95, nc1_ratio: float = 0.1) -> tuple[Check, Check, Check]:
    """The three lazy/rich checks, in the chapter's order: ground truth, DLR gap, DLR monotone.

    The ground truth: the smallest α is rich and the largest lazy by CKA to init and NC1 (signals without DLR).
    The gap: the lazy run's DLR exceeds the rich run's by ``margin``. Monotone: DLR never falls by more than
    ``slack`` from one α to the next larger one.
    """
    rich, lazy = _ends(records, "lazy_rich_checks")
    truth = (rich["cka_to_init"] <= rich_cka and rich["nc1"] <= nc1_ratio * lazy["nc1"]
             and lazy["cka_to_init"] >= lazy_cka)
    gap = lazy["dlr"] - rich["dlr"]
    values = [r["dlr"] for r in records]
    falls = [a - b for a, b in zip(values, values[1:])]
    return (Check("the lazy/rich ground truth is unambiguous by CKA to init and NC1", truth,
                  f"rich (α = {rich['alpha']:g}): CKA {rich['cka_to_init']:.3f}, NC1 {rich['nc1']:.3g}; "
                  f"lazy (α = {lazy['alpha']:g}): CKA {lazy['cka_to_init']:.3f}, NC1 {lazy['nc1']:.3g}"),
            Check(f"lazy DLR exceeds rich DLR by {margin:g}", gap >= margin,
                  f"{lazy['dlr']:.3f} − {rich['dlr']:.3f} = {gap:+.3f}"),
            Check(f"DLR does not fall (by more than {slack:g}) as α grows", all(f <= slack for f in falls),
                  "DLR " + " → ".join(f"{v:.3f}" for v in values)))


def lazy_rich_answer(records: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[str, str], str]:
    """The answer the lazy/rich runs give to "which has the higher DLR, lazy (large α) or rich (small α)?"."""
    rich, lazy = _ends(records, "lazy_rich_answer")
    answer = "lazy" if lazy["dlr"] > rich["dlr"] else "rich"
    return answer, ("lazy", "rich"), (f"DLR is {lazy['dlr']:.3f} at α = {lazy['alpha']:g} (CKA to its initial features "
                    f"{lazy['cka_to_init']:.3f}: lazy) and {rich['dlr']:.3f} at α = {rich['alpha']:g} "
                    f"(CKA {rich['cka_to_init']:.3f}: rich)")


def mnist_pair_records(pairs: Mapping[int, tuple[Any, Any]], paper: Mapping[str, tuple[float, float]]
                       ) -> list[dict[str, Any]]:
    """The DLR paper's MNIST pair beside ours: per seed, the rich (smallest α) and the lazy (largest α) run."""
    return [{"seed": seed, "run": kind, "alpha": r.alpha, "paper_dlr": paper[kind][0], "dlr": r.dlr,
             "cka_to_init": r.cka_to_init, "paper_acc": paper[kind][1], "test_acc": r.test_acc}
            for seed, pair in pairs.items() for kind, r in zip(("rich", "lazy"), pair)]


def mnist_pair_reading(pairs: Mapping[int, tuple[Any, Any]], margin: float) -> Reading:
    """Whether the lazy run's DLR tops the rich run's by ``margin``, seed by seed (the digits' claim, on MNIST)."""
    return over_seeds(f"MNIST-5k: the lazy run's DLR tops the rich run's by {margin:g}",
                      {seed: "yes" if lazy.dlr >= rich.dlr + margin else "no"
                       for seed, (rich, lazy) in pairs.items()}, expected="yes", rule="all")


def mnist_pair_text(reading: Reading, records: Sequence[Mapping[str, Any]]) -> str:
    """What the MNIST pair shows, beside the paper's pair, read from :func:`mnist_pair_records`."""
    mean = _means(records, "run", ("dlr", "test_acc"))
    paper = _by_run(records)
    verdict = "holds" if reading.holds else "does not hold"
    return (f"On MNIST-5k the lazy run's DLR tops the rich run's by the margin in {reading.k} of {reading.n} seeds "
            f"(the rule, every seed, {verdict}): DLR {mean['rich']['dlr']:.3f} rich against {mean['lazy']['dlr']:.3f} "
            f"lazy, seed mean, where the paper has {paper['rich']['paper_dlr']:g} and {paper['lazy']['paper_dlr']:g}. "
            f"Our rich run reaches {mean['rich']['test_acc']:.0%} test accuracy and the lazy one "
            f"{mean['lazy']['test_acc']:.0%}; the paper's rich run was at {paper['rich']['paper_acc']:.1%} "
            f"and its lazy one at {paper['lazy']['paper_acc']:.1%}.")


def _scaled_to_share(extra: torch.Tensor, base: torch.Tensor, share: float) -> torch.Tensor:
    """``extra`` rescaled so that its centred energy is ``share`` of ``base``'s."""
    return extra * (share * float((centre(base) ** 2).sum()) / float((centre(extra) ** 2).sum())) ** 0.5


def rule_properties(rules: Mapping[str, tuple[str | int, float | None]] | None = None,
                    seed: int = 0) -> list[dict[str, Any]]:
    """Score rank rules on three synthetic properties, each (near) zero for a good rule, on 600 samples:

    * ``noise``: abs(ΔDLR) when output directions carrying 10⁻³ of the outputs' energy are appended, once as pure
      noise and once as a weak function of the features (the larger change is kept). Features: 24 tanh units;
      outputs: 10 logits of exact rank 5 read from them.
    * ``known_rank``: abs(DLR − DLR(r = 5)) on outputs of known rank 5 whose singular values fall geometrically from
      1 to 0.3 (plus noise of 10⁻⁸ of their energy), the features being the output span plus 20 unused directions;
      ``rank_found`` is the r chosen.
    * ``log_probs``: abs(DLR(logits) − DLR(log-softmax)) for confident logits (scale 4) of 10 classes: softmax
      ignores a per-sample constant, so the log-sum-exp term should not change the answer much.

    A rule ``passes`` when all three are within :data:`RULE_THRESHOLDS`.
    """
    rules = CANDIDATE_RULES if rules is None else rules
    for rank, tol in rules.values():
        _check_rank(rank, tol, "rule_properties")
    require_int(seed, "seed", low=0, owner="rule_properties")
    n, g = 600, torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    phi = torch.tanh(randn(n, 12) @ randn(12, 24))  # (n, 24) features
    base = phi @ randn(24, 5) @ randn(5, 10)
    weak = phi @ randn(24, 10)
    noisy = [torch.cat([base, _scaled_to_share(extra, base, 1e-3)], 1) for extra in (randn(n, 10), weak)]
    q = _orthonormal(n, 25, g)
    span, unused = q[:, :5], q[:, 5:]
    sv = torch.logspace(0, float(np.log10(0.3)), 5, dtype=torch.float64)
    rotation, _ = torch.linalg.qr(randn(10, 10))
    known = span @ torch.diag(sv) @ rotation[:5]  # (n, 10), rank 5, s = 1 … 0.3
    known = known + _scaled_to_share(randn(n, 10), known, 1e-8)
    known_features = torch.cat([span * torch.linspace(1.0, 0.5, 5, dtype=torch.float64), 0.3 * unused], 1)
    truth = dlr_terms(known_features, known, 5).dlr
    logits = 4.0 * phi @ randn(24, 10) / 24 ** 0.5
    log_probs = torch.log_softmax(logits, 1)
    centred_log_probs = log_probs - log_probs.mean(1, keepdim=True)  # = logits − their mean over classes
    rows = []
    for name, (rank, tol) in rules.items():
        plain = dlr(phi, base, rank, tol)
        known_terms = dlr_terms(known_features, known, rank, tol)
        row = {
            "rule": name,
            "noise": max(abs(dlr(phi, f, rank, tol) - plain) for f in noisy),
            "known_rank": abs(known_terms.dlr - truth),
            "rank_found": known_terms.rank,
            "log_probs": abs(dlr(phi, logits, rank, tol) - dlr(phi, centred_log_probs, rank, tol)),
        }
        row["passes"] = all(row[k] <= v for k, v in RULE_THRESHOLDS.items())
        rows.append(row)
    return rows


def rule_records(properties: Sequence[Mapping[str, Any]], lazy_rich: Sequence[Mapping[str, Any]] | None = None,
                 margin: float = 0.2) -> list[dict[str, Any]]:
    """The rank rules' scores on the synthetic properties, and on the lazy/rich runs when given."""
    out = [dict(row, synthetic="passes" if row["passes"] else "fails") for row in properties]
    if lazy_rich is not None:
        rich, lazy = _ends(lazy_rich, "rule_records")
        for rec in out:
            rec["lazy_minus_rich"] = lazy[f"dlr[{rec['rule']}]"] - rich[f"dlr[{rec['rule']}]"]
            rec["all_four"] = "pass" if rec["passes"] and rec["lazy_minus_rich"] >= margin else "fail"
    return out


def chosen_rule_check(scored: Sequence[Mapping[str, Any]], rule: str = "energy 0.99") -> Check:
    """Whether the chosen rank rule passes all four properties."""
    row = {r["rule"]: r for r in scored}[rule]
    return Check(f"the chosen rule ({rule}) passes all four properties", row.get("all_four") == "pass",
                 f"three synthetic properties: {row['synthetic']}; lazy − rich {row.get('lazy_minus_rich', 0):+.3f}")


def rule_evidence(properties: Sequence[Mapping[str, Any]], scored: Sequence[Mapping[str, Any]]) -> Markdown:
    """The rank-rule audit, closed under "How we know": the three synthetic properties and all four."""
    passing = ", ".join(f"`{r['rule']}`" for r in scored if r.get("all_four") == "pass") or "none"
    return evidence(
        "the rank rules scored on the four properties", dlr_table("rules", rule_records(properties)),
        f"Pass thresholds: {RULE_THRESHOLDS}. Property 3 compares the logits with the log-probabilities "
        "centred over the classes: raw log-probabilities add the log-sum-exp direction to the outputs.",
        dlr_table("scored", scored),
        f"Rules that pass all four: {passing}. The chapter's rule, `energy 0.99`, is asserted to pass.")


def rule_band(rows: Sequence[Mapping[str, Any]], rules: Sequence[str]) -> list[dict[str, float]]:
    """DLR under the chosen rule with the band spanned by other rules, per recorded step."""
    out = []
    for row in (r for r in rows if "dlr" in r):
        missing = [name for name in rules if f"dlr[{name}]" not in row]
        if missing:
            raise ValueError(f"The 'rules' parameter of rule_band names rules not recorded in the rows: {missing}.")
        values = [row["dlr"]] + [row[f"dlr[{name}]"] for name in rules]
        out.append({"step": row["step"], "dlr": row["dlr"], "low": min(values), "high": max(values)})
    return out


def timing_check(rows: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None) -> Check:
    """Whether DLR fell more between T_mem and T_grok than before T_mem (the chapter's timing claim; False when an
    event is missing)."""
    name = "DLR falls more between T_mem and T_grok than before T_mem"
    if t_mem is None or t_grok is None:
        return Check(name, False, "the run did not both memorise and generalise")
    at = _at(rows)
    init, mem, grok = rows[0]["dlr"], at[t_mem]["dlr"], at[t_grok]["dlr"]
    return Check(name, bool((mem - grok) > (init - mem)),
                 f"change before T_mem {mem - init:+.3f}, fall T_mem → T_grok {mem - grok:+.3f}")


def run_timing(history: History) -> Check:
    """:func:`timing_check` of a run's own DLR rows, read at the run's own events."""
    events = find_events(history)
    return timing_check(history.rows, events.t_mem, events.t_grok)


def seed_timings(run: Any, first: Check, seeds: Sequence[int]) -> dict[int, Check]:
    """:func:`run_timing` of ``run`` (``first``, already read) and of its seeds ``run.seed + s``, with its probe."""
    others = [run.replace(seed=run.seed + s) for s in seeds]
    return {run.seed: first, **{o.seed: run_timing(tracked_run(o, companion_probe(o))) for o in others}}


def timing_reading(checks: Mapping[int, Check]) -> Any:
    """The timing claim over seeds: seed → whether DLR fell with generalisation (majority rule)."""
    reading = {s: "falls with generalisation" if c else "does not" for s, c in checks.items()}
    return over_seeds("DLR timing", reading, expected="falls with generalisation", rule="majority")


def transformer_check(t_mem: int | None, t_grok: int | None) -> Check:
    """Whether the run memorised and then generalised (both events found)."""
    return Check("the transformer memorises, then generalises", t_mem is not None and t_grok is not None,
                 f"T_mem = {t_mem}, T_grok = {t_grok}")


def dlr_marks(rows: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None,
              band: Sequence[Mapping[str, Any]], paper: Mapping[int, tuple[float, float]]) -> list[dict[str, Any]]:
    """DLR, its band, test accuracy and the top-5 Fourier share at the paper's steps (``paper``: step → (DLR, test
    accuracy)), T_mem, T_grok and the last step; None where the run did not reach a mark or record a column."""
    at, bands = _at(rows), _at(band)
    marks = [(f"step {s:,}", s) for s in sorted(paper)]
    marks += [("T_mem", t_mem), ("T_grok", t_grok), ("last", int(rows[-1]["step"]))]
    marks.sort(key=lambda m: (m[1] is None, m[1] or 0))
    return [{"mark": label, "step": step, "paper_dlr": paper.get(step, (None, None))[0], "dlr": row.get("dlr"),
             "band": f"{b['low']:.3f}–{b['high']:.3f}" if b else None, "paper_acc": paper.get(step, (None, None))[1],
             "test_acc": row.get("test_acc"), "fourier": row.get("fourier")}
            for label, step in marks for row, b in [(at.get(step, {}), bands.get(step))]]


def dlr_fourier_text(marks: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on DLR and the top-5 Fourier share at T_mem, T_grok and the last step (a missing one said so)."""
    by = {m["mark"]: m for m in marks}
    parts = [f"not read at {mark} (not reached or not recorded)" if m.get("dlr") is None or m.get("fourier") is None
             else f"{m['dlr']:.3f} and {m['fourier']:.3f} at {mark} (step {m['step']:,})"
             for mark in ("T_mem", "T_grok", "last") for m in [by.get(mark, {})]]
    return "DLR and the top-5 Fourier share: " + "; ".join(parts)


def timing_text(timing: Check, seeds: Reading, by_seed: Mapping[int, Check], marks: Sequence[Mapping[str, Any]],
                same_run: Check, last_step: int) -> Markdown:
    """The transformer's DLR timing on this run and over seeds (:func:`run_timing`, :func:`timing_reading`), with
    the per-seed evidence closed."""
    proof = evidence("this is chapter 1's run, and every seed's timing",
                     f"{same_run}. Its last step is {last_step:,}.", table(reading_rows([seeds])),
                     "; ".join(f"seed {s}: {c}" for s, c in by_seed.items()) + ".")
    return md(f"On this run: {timing}; the timing claim {'holds' if timing else 'FAILS'}. Over seeds: "
              f"{seeds.text()}. {dlr_fourier_text(marks)}.\n\n{proof}")


def spectra_marks(records: Sequence[Mapping[str, Any]], marks: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """Relative eigenvalue, quality Π* and utilisation Π̂ at k = 10 and 40 per marked step (None past the spectrum)."""
    by = {(int(r["step"]), int(r["k"])): r for r in records}
    names = {"rho": "relative", "quality": "quality", "utilisation": "utilisation"}
    return [{"mark": label, "step": step, **{f"{q}_{k}": by.get((step, k), {}).get(key)
                                             for k in _SPECTRA_KS for q, key in names.items()}}
            for label, step in marks.items() if step is not None]


def spectrum_knee(records: Sequence[Mapping[str, Any]], step: int) -> dict[str, Any]:
    """Where the cumulative utilisation bends at ``step``: the fewest top-k eigenfunctions holding
    :data:`_KNEE_SHARE` of its value at the largest kept k, read from the spectrum recorded nearest ``step``."""
    steps = sorted({int(r["step"]) for r in records})
    if not steps:
        raise ValueError("The 'records' parameter of spectrum_knee holds no spectrum.")
    at = min(steps, key=lambda s: (abs(s - step), s))
    rows = sorted((r for r in records if int(r["step"]) == at), key=lambda r: r["k"])
    top = rows[-1]
    knee = next(r for r in rows if r["utilisation"] >= _KNEE_SHARE * top["utilisation"])
    return {"step": at, "k": int(knee["k"]), "top": int(top["k"]), "utilisation": knee["utilisation"],
            "quality": knee.get("quality"), "relative": knee["relative"], "utilisation_top": top["utilisation"],
            "quality_top": top.get("quality")}


def spectra_text(records: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None,
                 last_step: int) -> Markdown:
    """A sentence pointing to the knee of the spectrum at T_grok (:func:`spectrum_knee`), for the slider, with
    the marked steps' spectra closed under "How we know"."""
    if t_grok is None:
        knee_text = "The run has no T_grok, so the slider opens at its first step and no knee is read."
    else:
        knee = spectrum_knee(records, t_grok)
        quality = ("" if knee["quality"] is None else
                   f"; the target's quality Π*({knee['k']}) is {knee['quality']:.3f} there")
        knee_text = (
            f"At T_grok (step {knee['step']:,}) look at k = {knee['k']}: the top {knee['k']} eigenfunctions "
            f"already express Π̂ = {knee['utilisation']:.3f} of the learned function, {_KNEE_SHARE:.0%} of the "
            f"{knee['utilisation_top']:.3f} that all {knee['top']} kept ones express, while μ_{knee['k']}/μ_1 "
            f"has fallen to {knee['relative']:.2g}{quality}. Past this knee the curves flatten: the learned "
            f"function lives in a few strong directions.")
    marks = {"step 0": 0, "T_mem": t_mem, "T_grok": t_grok, "last": last_step}
    return md(f"{knee_text}\n\n"
              + evidence("the spectra at the marked steps", dlr_table("spectra", spectra_marks(records, marks))))


def layer_change(rows: Sequence[Mapping[str, Any]], t_mem: int | None, others: Sequence[str]) -> list[dict[str, Any]]:
    """DLR and its terms at T_mem (or the first row) and at the last row, and the other rules' values."""
    first = _at(rows)[t_mem] if t_mem is not None else rows[0]
    return [{"mark": label, "step": row["step"], "test_acc": row["test_acc"], "dlr": row["dlr"],
             "f_in": row["dlr_f_in"], "pr": row["dlr_pr"], "r": row["dlr_rank"], "low": min(values), "high": max(values)}
            for label, row in (("T_mem" if t_mem is not None else "step 0", first), ("last", rows[-1]))
            for values in [[row["dlr"]] + [row[f"dlr[{n}]"] for n in others]]]


def additive_share(features: torch.Tensor, pairs: torch.Tensor, p: int) -> float:
    """Share (in [0, 1]) of the centred feature energy that is additive, f(a) + g(b), on the full p × p table."""
    require_type(features, "features", torch.Tensor, owner="additive_share")
    table = torch.zeros(p, p, features.shape[1], dtype=torch.float64)
    table[pairs[:, 0], pairs[:, 1]] = features.double()
    centred = table - table.mean(dim=(0, 1))
    additive = centred.mean(dim=1, keepdim=True) + centred.mean(dim=0, keepdim=True)
    return float((additive**2).sum() / (centred**2).sum())


def mlp_text(terms: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None, seed: int,
             additive: float) -> Markdown:
    """The one-hidden-layer MLP's DLR from its first mark to the end (:func:`layer_change`), and how much of its
    energy is additive (:func:`additive_share`)."""
    first, last = terms[0], terms[-1]
    move = "rises" if last["dlr"] > first["dlr"] else "falls"
    prose = md(f"""
        In this run (seed {seed}; $T_\\text{{mem}}$ = {t_mem}, $T_\\text{{grok}}$ = {t_grok}) the MLP's DLR
        **{move}** from {first["dlr"]:.3f} at {first["mark"]} to {last["dlr"]:.3f} at the end: a finding
        of one run, not a check. The pre-activation $E_a[a] + E_b[b]$ is *additive* (a function of $a$
        plus one of $b$), and on the full table additive functions are orthogonal to every function of
        $(a + b) \\bmod p$, all the logits need. Share of the centred hidden energy that is additive:
        **{additive:.2f}**; share inside the logits' span, $f_\\text{{in}}$: **{last["f_in"]:.2f}** (end
        of the run).
        """)
    return md(f"{prose}\n\n{evidence('the MLP’s DLR terms and its band of rank rules', dlr_table('terms', terms))}")


def cnn_settings(images: ImageData, seed: int = 0) -> dict[str, tuple[str, ImageData]]:
    """The chapter's three CNN settings: name → (normalisation, data); the third's training labels shuffled."""
    require_type(images, "images", ImageData, owner="cnn_settings")
    order = torch.randperm(len(images.y_train), generator=torch.Generator().manual_seed(seed + 1))
    shuffled = ImageData(images.x_train, images.y_train[order], images.x_test, images.y_test, images.num_classes,
                         f"{images.name}, shuffled")
    return dict(zip(CNN_NAMES, (("none", images), ("batch", images), ("batch", shuffled))))


def cnn_runs(images: ImageData, config: TrainConfig, channels: Sequence[int]) -> dict[str, History]:
    """The chapter's three CNN settings (:func:`cnn_settings`), each trained with a DLR tracker on its own training
    images and labels."""
    require_type(config, "config", TrainConfig, owner="cnn_runs")
    runs = {}
    for name, (norm, dataset) in cnn_settings(images, config.seed).items():
        torch.manual_seed(config.seed)
        model = SimpleCNN(images.num_classes, norm=norm, channels=tuple(channels))
        tracker = DLRTracker(dataset.x_train, labels=dataset.y_train)
        runs[name] = train(model, dataset, config, callbacks=[tracker], desc=name)
    return runs


def final_records(runs: Mapping[str, History]) -> list[dict[str, Any]]:
    """The last row of each run: DLR, its terms, NC1, ‖θ‖² and accuracies."""
    return [{"run": name, "dlr": last["dlr"], "nc1": last.get("nc1"), "norm": last["norm"],
             "train_acc": last["train_acc"], "test_acc": last["test_acc"], "f_in": last["dlr_f_in"],
             "pr": last["dlr_pr"], "r": last["dlr_rank"]} for name, h in runs.items() for last in [h.rows[-1]]]


def cnn_checks(records: Sequence[Mapping[str, Any]], bn_margin: float = 0.1,
               chance_below: float = 0.2) -> tuple[Check, Check]:
    """Two checks of :func:`final_records`: BatchNorm gives the richer CNN (DLR lower by ``bn_margin``) and the
    better test accuracy; the shuffled-label CNN generalises nothing (test accuracy below ``chance_below``) yet is
    richer than the unnormalised one."""
    r = _by_run(records)
    none, bn, sh = (r[name] for name in CNN_NAMES)
    return (Check("BatchNorm gives the richer and better-generalising CNN",
                  bn["dlr"] < none["dlr"] - bn_margin and bn["test_acc"] > none["test_acc"],
                  f"DLR {bn['dlr']:.3f} vs {none['dlr']:.3f}, test acc {bn['test_acc']:.3f} vs {none['test_acc']:.3f}"),
            Check("richness is not generalisation: shuffled labels, low DLR, chance accuracy",
                  sh["test_acc"] < chance_below and sh["dlr"] < none["dlr"],
                  f"shuffled: DLR {sh['dlr']:.3f}, test acc {sh['test_acc']:.3f}; no normalisation DLR "
                  f"{none['dlr']:.3f}"))


def cnn_text(records: Sequence[Mapping[str, Any]], checks: Sequence[Check]) -> Markdown:
    """The CNN checks and the unnormalised CNN's DLR terms, from :func:`final_records`."""
    none = _by_run(records)[CNN_NAMES[0]]
    return md(f"{'. '.join(str(c) for c in checks)}. The unnormalised CNN: $f_\\text{{in}}$ {none['f_in']:.2f}, "
              f"PR {none['pr']:.1f} against $r$ = {none['r']:.0f}.")


def paper_cnn_records(paper: Mapping[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """The paper's CNN runs as records: ``run``, ``dlr``, ``test_acc``."""
    return [{"run": name, "dlr": value[0], "test_acc": value[1]} for name, value in paper.items()]


def measure_summary(runs: Sequence[tuple[str, History]]) -> list[dict[str, Any]]:
    """DLR, NC1 and ‖θ‖² at the first and last evaluation of each run, with NC1's and ‖θ‖²'s extremes."""
    return [{"run": name, "dlr_first": h.rows[0]["dlr"], "dlr_last": h.rows[-1]["dlr"], "nc1_first": float(nc[0]),
             "nc1_min": float(nc.min()), "nc1_max": float(nc.max()), "nc1_last": float(nc[-1]),
             "norm_first": h.rows[0]["norm"], "norm_last": h.rows[-1]["norm"]}
            for name, h in runs for nc in [h.column("nc1")]]


def features_used(utilisation: Sequence[float]) -> int | None:
    """The smallest k whose top-k eigenfunctions express :data:`USED_SHARE` of the outputs' energy, else None."""
    return next((k + 1 for k, u in enumerate(utilisation) if u >= USED_SHARE), None)


def lr_sweep(images: ImageData, rates: Iterable[float], seeds: Iterable[int], *, channels: Sequence[int], steps: int,
             **training: Any) -> list[dict[str, Any]]:
    """The chapter's BatchNorm CNN trained at every (rate, seed), rates outermost, and read at the end: DLR, the
    features used and accuracy (one evaluation, at the end: an ``lr`` or ``eval_every`` in ``training`` is replaced)."""
    require_type(images, "images", ImageData, owner="lr_sweep")
    records = []
    for lr, seed in itertools.product(rates, seeds):
        torch.manual_seed(seed)
        model = SimpleCNN(images.num_classes, norm="batch", channels=tuple(channels))
        config = TrainConfig(**{**training, "seed": seed, "steps": steps, "eval_every": steps, "lr": lr})
        last = train(model, images, config, progress="none", desc=f"lr {lr:g}").rows[-1]
        row, spectrum = DLRTracker(images.x_train, labels=images.y_train, spectra=True, top=max(channels)).measure(model)
        records.append({"lr": lr, "seed": seed, "dlr": row["dlr"], "used": features_used(spectrum.utilisation),
                        "pr": row["dlr_pr"], "train_acc": last["train_acc"], "test_acc": last["test_acc"]})
    return records


# The DLR paper (Nam et al., ICLR 2026) reads DLR as a guide to the learning rate; its readings are shown seed by
# seed, never asserted (lr_readings), and lr_checks holds what the chapter asserts.
def lr_readings(records: Sequence[Mapping[str, Any]]) -> list[Reading]:
    """The paper's three readings, seed by seed, each with the paper's answer as the expected one.

    (a) the best-accuracy rate has the lowest DLR; (b) the smallest rate has a higher DLR than the
    best-accuracy rate (lazier); (c) the smallest rate uses more features than the best-accuracy rate.
    Where the smallest rate is the best one, (b) and (c) read ``"best is smallest"``.
    """
    by_seed: dict[int, dict[float, Mapping[str, Any]]] = {}
    for r in records:
        by_seed.setdefault(int(r["seed"]), {})[float(r["lr"])] = r
    a, b, c = {}, {}, {}
    for seed, by_lr in by_seed.items():
        best = max(by_lr, key=lambda lr: by_lr[lr]["test_acc"])
        low, small = by_lr[best], by_lr[min(by_lr)]
        a[seed] = "yes" if best == min(by_lr, key=lambda lr: by_lr[lr]["dlr"]) else "no"
        same = best == min(by_lr)
        b[seed] = "best is smallest" if same else ("lazier" if small["dlr"] > low["dlr"] else "not lazier")
        more = (small["used"] or math.inf) > (low["used"] or math.inf)
        c[seed] = "best is smallest" if same else ("more" if more else "not more")
    return [over_seeds("DLR paper (a): the best-accuracy rate has the lowest DLR", a, expected="yes"),
            over_seeds("DLR paper (b): the smallest rate is lazier (higher DLR) than the best", b, expected="lazier"),
            over_seeds("DLR paper (c): the smallest rate uses more features than the best", c, expected="more")]


def lr_checks(records: Sequence[Mapping[str, Any]]) -> list[Check]:
    """What the chapter asserts, decided before the runs: every run finite; the best rate (highest mean test
    accuracy) is neither the grid's smallest nor its largest, so "too small" and "too large" are both in it."""
    finite = all(math.isfinite(r["dlr"]) and math.isfinite(r["test_acc"]) for r in records)
    mean = {lr: m["test_acc"] for lr, m in _means(records, "lr", ["test_acc"]).items()}
    best = max(mean, key=mean.get)
    return [Check("every learning-rate run ends with a finite DLR and accuracy", finite, f"{len(records)} runs"),
            Check("the learning-rate grid brackets the best-accuracy rate", min(mean) < best < max(mean),
                  "mean test accuracy: " + ", ".join(f"lr {lr:g}: {a:.3f}" for lr, a in mean.items()))]


def lr_section(records: Sequence[Mapping[str, Any]], readings: Sequence[Reading],
               paper: Mapping[float, tuple[float, float]]) -> Markdown:
    """The learning-rate runs: their means per rate, the best rate and the paper's readings k of n in words, the
    paper's rates (``paper``: rate → (DLR, test accuracy)) and the readings seed by seed closed under "How we know"
    (no run time on the page)."""
    means = _means(records, "lr", ("dlr", "used", "pr", "train_acc", "test_acc"))
    best = max(means, key=lambda lr: means[lr]["test_acc"])
    said = "; ".join(f"{r.name.split(': ', 1)[-1]}: {r.k} of {r.n} seeds ({'holds' if r.holds else 'fails here'})"
                     for r in readings)
    proof = evidence("the paper's rates and the readings seed by seed",
                     dlr_table("lr_paper", [{"lr": lr, "dlr": d, "test_acc": a} for lr, (d, a) in paper.items()]),
                     table(reading_rows(readings)))
    return md(f"{dlr_table('lr', [{'lr': lr, **m} for lr, m in means.items()])}\n\n"
              f"By mean test accuracy the best rate is {best:g} ({means[best]['test_acc']:.3f}, DLR "
              f"{means[best]['dlr']:.3f}). The paper's readings on our runs: {said}.\n\n{proof}")


def _f(fmt: str, *columns: str) -> dict[str, str]:
    return dict.fromkeys(columns, fmt)


# the formats and headers a column has in every table that shows it, unless the table says otherwise
_FORMATS = {"step": "{:,}", "alpha": "{:g}", "lr": "{:g}", "nc1": "{:.3g}", "norm": "{:,.1f}", "f_in": "{:.2f}",
            "pr": "{:.1f}", "r": "{:.0f}", "used": "{:.1f}", "train_loss": "{:.4f}", "lazy_minus_rich": "{:+.3f}",
            **_f("{:.3f}", "dlr", "cka_to_init", "train_acc", "fourier", "low", "high"),
            **_f("{:.1%}", "test_acc", "paper_acc"), **_f("{:.4f}", "noise", "known_rank", "log_probs")}
_HEADERS = {"dlr": "DLR", "pr": "PR", "nc1": "NC1", "cka_to_init": "CKA to init", "train_acc": "train acc",
            "test_acc": "test acc", "paper_dlr": "paper DLR", "paper_acc": "paper test", "band": "other rules"}
_OURS = {"dlr": "our DLR (energy 0.99)", "test_acc": "our test"}  # ours beside the paper's
_BY_K = [f"{q}_{k}" for k in _SPECTRA_KS for q in ("rho", "quality", "utilisation")]
_MEASURES = ["dlr_first", "dlr_last", "nc1_first", "nc1_min", "nc1_max", "nc1_last", "norm_first", "norm_last"]

#: kind → (columns, formats, headers) of the chapter's tables, beyond the shared ``_FORMATS`` and ``_HEADERS``.
TABLES: dict[str, tuple[list[str], dict[str, str], dict[str, str]]] = {
    "rules": (["rule", "noise", "known_rank", "rank_found", "log_probs", "synthetic"], {},
              {"noise": "noise |ΔDLR|", "known_rank": "known rank |ΔDLR|", "rank_found": "r found (true 5)",
               "log_probs": "logits vs log-probs |ΔDLR|", "synthetic": "three properties"}),
    "scored": (["rule", "synthetic", "lazy_minus_rich", "all_four"], {},
               {"lazy_minus_rich": "lazy − rich DLR", "all_four": "all four"}),
    "lazy_rich": (["alpha", "dlr", "cka_to_init", "nc1", "test_acc", "train_loss", "band"], {"test_acc": "{:.3f}"},
                  {"dlr": "DLR (energy 0.99)", "train_loss": "train loss"}),
    "mnist_pair": (["seed", "run", "alpha", "paper_dlr", "dlr", "cka_to_init", "paper_acc", "test_acc"],
                   {"paper_dlr": "{:g}"}, {"alpha": "α", **_OURS}),
    "marks": (["mark", "step", "paper_dlr", "dlr", "band", "paper_acc", "test_acc", "fourier"], {"paper_dlr": "{:.2f}"},
              {**_OURS, "fourier": "top-5 Fourier share"}),
    "terms": (["mark", "step", "test_acc", "dlr", "f_in", "pr", "r", "low", "high"], {},
              {"low": "band low", "high": "band high"}),
    "spectra": (["mark", "step", *_BY_K], _f("{:.3f}", *_BY_K),
                {f"{q}_{k}": label.format(k) for k in _SPECTRA_KS
                 for q, label in (("rho", "μ_{}/μ_1"), ("quality", "Π*({})"), ("utilisation", "Π̂({})"))}),
    "cnn": (["run", "dlr", "nc1", "norm", "train_acc", "test_acc", "f_in", "pr", "r"], {"test_acc": "{:.3f}"},
            {"norm": "‖θ‖²"}),
    "paper_cnn": (["run", "dlr", "test_acc"], {}, {"run": "the paper's run"}),
    "measures": (["run", *_MEASURES], {**_f("{:.3f}", *_MEASURES[:2]), **_f("{:.3g}", *_MEASURES[2:6]),
                                       **_f("{:,.0f}", *_MEASURES[6:])},
                 {c: c.replace("dlr", "DLR").replace("nc1", "NC1").replace("norm", "‖θ‖²").replace("_", " ")
                  for c in _MEASURES}),
    "lr": (["lr", "seeds", "dlr", "used", "pr", "train_acc", "test_acc"], {"test_acc": "{:.3f}"},
           {"lr": "learning rate", "dlr": "DLR (mean)", "used": f"features used (Π̂ ≥ {USED_SHARE:g})"}),
    "lr_paper": (["lr", "dlr", "test_acc"], {}, {"lr": "the paper's rate (ResNet18, CIFAR-100)"}),
}


def dlr_table(kind: str, records: Iterable[Mapping[str, Any]]) -> Markdown:
    """One of chapter 04's tables (:data:`TABLES`), via :func:`nhtlab.book.table`."""
    if kind not in TABLES:
        raise ValueError(f"The 'kind' parameter of dlr_table must be one of {sorted(TABLES)}; got {kind!r}.")
    columns, formats, headers = TABLES[kind]
    formats = {c: f for c, f in {**_FORMATS, **formats}.items() if c in columns}
    return table(records, columns=columns, formats=formats, headers={**_HEADERS, **headers})


def dlr_of_arrays(features: np.ndarray, outputs: np.ndarray, r: int) -> float:
    """:func:`nhtlab.dlr` of two NumPy arrays, the output span's dimension fixed at ``r``: the exercise's reference."""
    return dlr(torch.as_tensor(np.asarray(features, dtype=np.float64)),
               torch.as_tensor(np.asarray(outputs, dtype=np.float64)), rank=int(r))


def dlr_exercise_cases(features: torch.Tensor, outputs: torch.Tensor,
                       n: int = 400) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The exercise's inputs: ``n`` random rows (seed 0) of a run's features and outputs, at the r the chapter's rule
    picks and at r = 3, so that a solution ignoring ``r`` is caught."""
    require_int(n, "n", low=3, owner="dlr_exercise_cases")
    rows = torch.randperm(features.shape[0], generator=torch.Generator().manual_seed(0))[:n]
    f = features[rows].detach().double().cpu().numpy()
    o = outputs[rows].detach().double().cpu().numpy()
    r = dlr_terms(torch.from_numpy(f), torch.from_numpy(o)).rank
    return [(f, o, r), (f, o, 3)]


def dlr_found(lazy_rich: Sequence[Mapping[str, Any]], seeds: Any,
              mlp_terms: Sequence[Mapping[str, Any]], additive: float, cnn_end: Sequence[Mapping[str, Any]],
              lr: Sequence[Any]) -> list[str]:
    """The chapter's "What we found" sentences, each read from its runs (k of n where seeds were run)."""
    rich, lazy = _ends(lazy_rich, "dlr_found")
    r = _by_run(cnn_end)
    none, shuffled = r[CNN_NAMES[0]], r[CNN_NAMES[2]]
    richer = "lower" if shuffled["dlr"] < none["dlr"] else "not lower"
    first, last = mlp_terms[0], mlp_terms[-1]
    move = "rises" if last["dlr"] > first["dlr"] else "falls"
    held = ", ".join(f"({chr(97 + i)}) {x.k} of {x.n}" for i, x in enumerate(lr))
    return [
        f"DLR is {lazy['dlr']:.2f} for the lazy run (α = {lazy['alpha']:g}, CKA to its initial features "
        f"{lazy['cka_to_init']:.2f}) against {rich['dlr']:.2f} for the rich one (α = {rich['alpha']:g}, CKA "
        f"{rich['cka_to_init']:.2f}): {'higher' if lazy['dlr'] > rich['dlr'] else 'not higher'} for the lazy "
        f"run, {'as' if lazy['dlr'] > rich['dlr'] else 'against what'} kept random features predict.",
        f"On the grokking transformer DLR falls more between T_mem and T_grok than before T_mem in "
        f"{seeds.k} of {seeds.n} seeds: it {'times' if seeds.holds else 'does not time'} generalisation here.",
        f"Which layer is \"the features\" decides the reading: the one-hidden-layer MLP's DLR {move} from "
        f"{first['dlr']:.2f} to {last['dlr']:.2f} while its test accuracy goes from {first['test_acc']:.0%} to "
        f"{last['test_acc']:.0%}: {additive:.0%} of its hidden energy is additive, which the read-out does not use.",
        f"Richness is not generalisation: with shuffled labels the CNN's DLR is {shuffled['dlr']:.2f} at test "
        f"accuracy {shuffled['test_acc']:.2f}, {richer} than the {none['dlr']:.2f} of the unnormalised CNN that "
        f"reaches {none['test_acc']:.2f}.",
        f"The paper's learning-rate readings hold in {held} seeds on our small CNN.",
    ]
