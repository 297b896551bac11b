"""What chapter 04 reports about DLR, as records and checks built from its runs.

Each function takes the runs' own measurements (history rows, lazy/rich results, spectrum
records) and returns records for :func:`nhtlab.book.table` or a :class:`~nhtlab.book.claims.Check`
verdict the chapter asserts. Nothing here trains.

>>> rows = [{"step": 0, "dlr": 0.2}, {"step": 100, "dlr": 0.25}, {"step": 200, "dlr": 0.05}]
>>> t = dlr_timing(rows, t_mem=100, t_grok=200)
>>> round(t["change_to_mem"], 2), round(t["fall_mem_to_grok"], 2), t["holds"]
(0.05, 0.2, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..data.images import ImageData
from ..history import History
from ..measures.cka import centre
from ..measures.dlr import CANDIDATE_RULES, RULE_THRESHOLDS, _check_rank, dlr, dlr_terms
from ..validation import require_int, require_type
from .claims import Check, Reading, over_seeds
from ..analysis.events import find_events

__all__ = [
    "mnist_pair_records", "mnist_pair_reading", "mnist_pair_text",
    "toy_curve", "lazy_rich_answer", "rule_records", "lazy_rich_records", "lazy_rich_ground_truth", "lazy_rich_gap",
    "lazy_rich_monotone", "dlr_marks", "dlr_timing", "timing_check", "spectra_marks", "layer_change",
    "additive_share", "cnn_settings", "final_records", "batchnorm_check", "shuffled_check", "measure_summary",
    "transformer_check", "CNN_NAMES", "TABLES", "paper_cnn_records", "chosen_rule_check",
    "timing_reading", "run_timing", "lazy_rich_checks", "cnn_checks", "dlr_fourier_text",
    # the lesson's furniture: the spectrum's knee, the learning-rate text, the exercise, the takeaway
    "spectrum_knee", "knee_text", "lr_lesson", "dlr_of_arrays", "dlr_exercise_cases", "dlr_found",
    # the rank-rule study (chapter 04's choice of rank rule), and its rules (nhtlab.measures.dlr)
    "CANDIDATE_RULES", "RULE_THRESHOLDS", "rule_band", "rule_properties", ]

#: The three CNN settings of the chapter, in order: no normalisation, BatchNorm, BatchNorm on shuffled labels.
CNN_NAMES = ("no normalisation", "BatchNorm", "BatchNorm, shuffled labels")


def toy_curve(seed: int = 0, n: int = 400, useful: int = 3, unused: int = 61, outputs: int = 10,
              points: int = 21) -> list[dict[str, float]]:
    """DLR of features α · (output span) + (1 − α) · (unused random features), for α from 0 to 1.

    The span has ``useful`` centred orthonormal dimensions; the ``outputs`` columns are random combinations of it.
    """
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, useful, generator=g, dtype=torch.float64)
    span, _ = torch.linalg.qr(z - z.mean(0))
    noise = torch.randn(n, unused, generator=g, dtype=torch.float64) / n**0.5
    out = span @ torch.randn(useful, outputs, generator=g, dtype=torch.float64)
    records = []
    for i in range(points):
        a = i / (points - 1)
        t = dlr_terms(torch.cat([a * span, (1 - a) * noise], dim=1), out)
        records.append({"alpha": a, "DLR": t.dlr, "f_in": t.f_in})
    return records


def lazy_rich_checks(records: Sequence[Mapping[str, Any]], margin: float = 0.2, slack: float = 0.02,
                     **truth: float) -> tuple[Check, Check, Check]:
    """The three lazy/rich checks, in the chapter's order: ground truth, DLR gap, DLR monotone."""
    return (lazy_rich_ground_truth(records, **truth), lazy_rich_gap(records, margin),
            lazy_rich_monotone(records, slack))


def lazy_rich_records(results: Iterable[Any]) -> list[dict[str, Any]]:
    """One record per lazy/rich run: α, DLR, the independent signals and the band of the other rules."""
    out = []
    for r in results:
        band = list(r.compare.values()) or [r.dlr]
        row = {"alpha": r.alpha, "dlr": r.dlr, "cka_to_init": r.cka_to_init, "nc1": r.nc1, "test_acc": r.test_acc,
               "train_loss": r.train_loss, "band": f"{min(band):.3f}–{max(band):.3f}"}
        row.update({f"dlr[{name}]": value for name, value in r.compare.items()})
        out.append(row)
    return out


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
    mean = {kind: {k: float(np.mean([r[k] for r in records if r["run"] == kind])) for k in ("dlr", "test_acc")}
            for kind in ("rich", "lazy")}
    paper = {r["run"]: r for r in records}
    verdict = "holds" if reading.holds else "does not hold"
    return (f"On MNIST-5k the lazy run's DLR tops the rich run's by the margin in {reading.k} of {reading.n} seeds "
            f"(the rule, every seed, {verdict}): DLR {mean['rich']['dlr']:.3f} rich against {mean['lazy']['dlr']:.3f} "
            f"lazy, seed mean, where the paper has {paper['rich']['paper_dlr']:g} and {paper['lazy']['paper_dlr']:g}. "
            f"Our rich run reaches {mean['rich']['test_acc']:.0%} test accuracy and the lazy one "
            f"{mean['lazy']['test_acc']:.0%}; the paper's rich run was at {paper['rich']['paper_acc']:.1%} "
            f"and its lazy one at {paper['lazy']['paper_acc']:.1%}.")


def _ends(records: Sequence[Mapping[str, Any]], owner: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    records = list(records)
    if len(records) < 2:
        raise ValueError(f"The 'records' parameter of {owner} needs at least two lazy/rich runs; got {len(records)}.")
    return records[0], records[-1]


def lazy_rich_ground_truth(records: Sequence[Mapping[str, Any]], rich_cka: float = 0.6, lazy_cka: float = 0.95,
                           nc1_ratio: float = 0.1) -> Check:
    """Whether the smallest α is rich and the largest lazy by CKA to init and NC1 (signals without DLR)."""
    rich, lazy = _ends(records, "lazy_rich_ground_truth")
    passed = (rich["cka_to_init"] <= rich_cka and rich["nc1"] <= nc1_ratio * lazy["nc1"]
              and lazy["cka_to_init"] >= lazy_cka)
    return Check("the lazy/rich ground truth is unambiguous by CKA to init and NC1", passed,
                 f"rich (α = {rich['alpha']:g}): CKA {rich['cka_to_init']:.3f}, NC1 {rich['nc1']:.3g}; "
                 f"lazy (α = {lazy['alpha']:g}): CKA {lazy['cka_to_init']:.3f}, NC1 {lazy['nc1']:.3g}")


def lazy_rich_gap(records: Sequence[Mapping[str, Any]], margin: float = 0.2, column: str = "dlr") -> Check:
    """Whether the lazy run's DLR exceeds the rich run's by ``margin``."""
    rich, lazy = _ends(records, "lazy_rich_gap")
    gap = lazy[column] - rich[column]
    return Check(f"lazy DLR exceeds rich DLR by {margin:g}", gap >= margin,
                 f"{lazy[column]:.3f} − {rich[column]:.3f} = {gap:+.3f}")


def lazy_rich_monotone(records: Sequence[Mapping[str, Any]], slack: float = 0.02) -> Check:
    """Whether DLR never falls by more than ``slack`` from one α to the next larger one."""
    values = [r["dlr"] for r in records]
    falls = [a - b for a, b in zip(values, values[1:])]
    return Check(f"DLR does not fall (by more than {slack:g}) as α grows", all(f <= slack for f in falls),
                 "DLR " + " → ".join(f"{v:.3f}" for v in values))


def rule_records(properties: Sequence[Mapping[str, Any]], lazy_rich: Sequence[Mapping[str, Any]] | None = None,
                 margin: float = 0.2) -> list[dict[str, Any]]:
    """The rank rules' scores on the synthetic properties, and on the lazy/rich runs when given."""
    out = []
    for row in properties:
        rec = dict(row, synthetic="passes" if row["passes"] else "fails")
        if lazy_rich is not None:
            gap = lazy_rich_gap(lazy_rich, margin, column=f"dlr[{row['rule']}]")
            rec["lazy_minus_rich"] = lazy_rich[-1][f"dlr[{row['rule']}]"] - lazy_rich[0][f"dlr[{row['rule']}]"]
            rec["all_four"] = "pass" if row["passes"] and gap.passed else "fail"
        out.append(rec)
    return out


def _at(rows: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    return {int(r["step"]): r for r in rows}


def dlr_marks(rows: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None,
              band: Sequence[Mapping[str, Any]], paper: Mapping[int, tuple[float, float]]) -> list[dict[str, Any]]:
    """DLR, its band and test accuracy at the paper's steps, T_mem, T_grok and the last step.

    ``paper`` maps step → (its DLR, its test accuracy); a mark the run did not reach has None in the run's
    columns, and ``fourier`` (the top-5 Fourier share) is None off Z_p.
    """
    at, bands = _at(rows), _at(band)
    last = int(rows[-1]["step"])
    marks = [(f"step {s:,}", s) for s in sorted(paper)]
    marks += [("T_mem", t_mem), ("T_grok", t_grok), ("last", last)]
    marks.sort(key=lambda m: (m[1] is None, m[1] if m[1] is not None else 0))
    out = []
    for label, step in marks:
        row, b = at.get(step) if step is not None else None, bands.get(step) if step is not None else None
        p_dlr, p_acc = paper.get(step, (None, None)) if step is not None else (None, None)
        out.append({"mark": label, "step": step, "paper_dlr": p_dlr, "dlr": row["dlr"] if row else None,
                    "band": f"{b['low']:.3f}–{b['high']:.3f}" if b else None, "paper_acc": p_acc,
                    "test_acc": row["test_acc"] if row else None, "fourier": row.get("fourier") if row else None})
    return out


def dlr_fourier_text(marks: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on DLR and the top-5 Fourier share at T_mem, T_grok and the last step, from :func:`dlr_marks`.

    A mark the run did not reach, or a share it did not record, is said to be missing, not guessed.
    """
    by = {m["mark"]: m for m in marks}
    parts = []
    for mark in ("T_mem", "T_grok", "last"):
        m = by.get(mark) or {}
        if m.get("dlr") is None or m.get("fourier") is None:
            parts.append(f"not read at {mark} (not reached or not recorded)")
        else:
            parts.append(f"{m['dlr']:.3f} and {m['fourier']:.3f} at {mark} (step {m['step']:,})")
    return "DLR and the top-5 Fourier share: " + "; ".join(parts)


def dlr_timing(rows: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None) -> dict[str, Any]:
    """How DLR changed before T_mem and between T_mem and T_grok (the chapter's timing claim).

    ``holds``: the fall from T_mem to T_grok exceeds the fall before T_mem; None values when an event is missing.
    """
    at = _at(rows)
    out: dict[str, Any] = {"dlr_init": rows[0]["dlr"], "dlr_mem": None, "dlr_grok": None, "change_to_mem": None,
                           "fall_mem_to_grok": None, "holds": None}
    if t_mem is None or t_grok is None:
        return out
    init, mem, grok = rows[0]["dlr"], at[t_mem]["dlr"], at[t_grok]["dlr"]
    out.update(dlr_mem=mem, dlr_grok=grok, change_to_mem=mem - init, fall_mem_to_grok=mem - grok,
               holds=(mem - grok) > (init - mem))
    return out


def timing_check(timing: Mapping[str, Any]) -> Check:
    """Whether DLR fell more between T_mem and T_grok than before T_mem (False when it cannot be read)."""
    name = "DLR falls more between T_mem and T_grok than before T_mem"
    if timing["holds"] is None:
        return Check(name, False, "the run did not both memorise and generalise")
    return Check(name, bool(timing["holds"]), f"change before T_mem {timing['change_to_mem']:+.3f}, "
                 f"fall T_mem → T_grok {timing['fall_mem_to_grok']:+.3f}")


def run_timing(history: History) -> Check:
    """:func:`timing_check` of a run's own DLR rows, read at the run's own events."""
    events = find_events(history)
    return timing_check(dlr_timing(history.rows, events.t_mem, events.t_grok))


def transformer_check(t_mem: int | None, t_grok: int | None) -> Check:
    """Whether the run memorised and then generalised (both events found)."""
    return Check("the transformer memorises, then generalises", t_mem is not None and t_grok is not None,
                 f"T_mem = {t_mem}, T_grok = {t_grok}")


def spectra_marks(records: Sequence[Mapping[str, Any]], marks: Mapping[str, int | None],
                  ks: Sequence[int] = (10, 40)) -> list[dict[str, Any]]:
    """Relative eigenvalue, quality Π* and utilisation Π̂ at ``ks`` for each marked step.

    ``ks`` are 1-based; a k beyond the kept spectrum, like a mark at None, gives None.
    """
    by = {(int(r["step"]), int(r["k"])): r for r in records}
    out = []
    for label, step in marks.items():
        if step is None:
            continue
        row: dict[str, Any] = {"mark": label, "step": step}
        for k in ks:
            r = by.get((step, k), {})
            row.update({f"rho_{k}": r.get("relative"), f"quality_{k}": r.get("quality"),
                        f"utilisation_{k}": r.get("utilisation")})
        out.append(row)
    return out


def layer_change(rows: Sequence[Mapping[str, Any]], t_mem: int | None, others: Sequence[str]) -> list[dict[str, Any]]:
    """DLR and its terms at T_mem (or the first row) and at the last row, and the other rules' values."""
    first = _at(rows)[t_mem] if t_mem is not None else rows[0]
    out = []
    for label, row in (("T_mem" if t_mem is not None else "step 0", first), ("last", rows[-1])):
        values = [row["dlr"]] + [row[f"dlr[{n}]"] for n in others]
        out.append({"mark": label, "step": row["step"], "test_acc": row["test_acc"], "dlr": row["dlr"],
                    "f_in": row["dlr_f_in"], "pr": row["dlr_pr"], "r": row["dlr_rank"],
                    "low": min(values), "high": max(values)})
    return out


def additive_share(features: torch.Tensor, pairs: torch.Tensor, p: int) -> float:
    """Share of the centred feature energy that is additive, f(a) + g(b), on the full p × p table.

    In [0, 1]: 1 when every feature is a function of a plus a function of b.
    """
    require_type(features, "features", torch.Tensor, owner="additive_share")
    table = torch.zeros(p, p, features.shape[1], dtype=torch.float64)
    table[pairs[:, 0], pairs[:, 1]] = features.double()
    centred = table - table.mean(dim=(0, 1))
    additive = centred.mean(dim=1, keepdim=True) + centred.mean(dim=0, keepdim=True)
    return float((additive**2).sum() / (centred**2).sum())


def cnn_settings(images: ImageData, seed: int = 0) -> dict[str, tuple[str, ImageData]]:
    """The chapter's three CNN settings: name → (normalisation, data); the third has shuffled training labels.

    The shuffle is seeded with ``seed + 1``.
    """
    require_type(images, "images", ImageData, owner="cnn_settings")
    order = torch.randperm(len(images.y_train), generator=torch.Generator().manual_seed(seed + 1))
    shuffled = ImageData(images.x_train, images.y_train[order], images.x_test, images.y_test, images.num_classes,
                         f"{images.name}, shuffled")
    return dict(zip(CNN_NAMES, (("none", images), ("batch", images), ("batch", shuffled))))


def final_records(runs: Mapping[str, History]) -> list[dict[str, Any]]:
    """The last row of each run: DLR, its terms, NC1, ‖θ‖² and accuracies."""
    out = []
    for name, h in runs.items():
        last = h.rows[-1]
        out.append({"run": name, "dlr": last["dlr"], "nc1": last.get("nc1"), "norm": last["norm"],
                    "train_acc": last["train_acc"], "test_acc": last["test_acc"], "f_in": last["dlr_f_in"],
                    "pr": last["dlr_pr"], "r": last["dlr_rank"]})
    return out


def _by_run(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {r["run"]: r for r in records}


def batchnorm_check(records: Sequence[Mapping[str, Any]], margin: float = 0.1) -> Check:
    """Whether BatchNorm gives the richer CNN (DLR lower by ``margin``) and the better test accuracy."""
    r = _by_run(records)
    bn, none = r[CNN_NAMES[1]], r[CNN_NAMES[0]]
    passed = bn["dlr"] < none["dlr"] - margin and bn["test_acc"] > none["test_acc"]
    return Check("BatchNorm gives the richer and better-generalising CNN", passed,
                 f"DLR {bn['dlr']:.3f} vs {none['dlr']:.3f}, test acc {bn['test_acc']:.3f} vs {none['test_acc']:.3f}")


def shuffled_check(records: Sequence[Mapping[str, Any]], chance_below: float = 0.2) -> Check:
    """Whether the shuffled-label CNN generalises nothing (test accuracy below ``chance_below``) yet is richer
    than the unnormalised one."""
    r = _by_run(records)
    sh, none = r[CNN_NAMES[2]], r[CNN_NAMES[0]]
    passed = sh["test_acc"] < chance_below and sh["dlr"] < none["dlr"]
    return Check("richness is not generalisation: shuffled labels, low DLR, chance accuracy", passed,
                 f"shuffled: DLR {sh['dlr']:.3f}, test acc {sh['test_acc']:.3f}; no normalisation DLR "
                 f"{none['dlr']:.3f}")


def cnn_checks(records: Sequence[Mapping[str, Any]], bn_margin: float = 0.1,
               chance_below: float = 0.2) -> tuple[Check, Check]:
    """:func:`batchnorm_check` and :func:`shuffled_check` of :func:`final_records`."""
    return batchnorm_check(records, bn_margin), shuffled_check(records, chance_below)


def measure_summary(runs: Sequence[tuple[str, History]]) -> list[dict[str, Any]]:
    """DLR, NC1 and ‖θ‖² at the first and last evaluation of each run, with NC1's and ‖θ‖²'s extremes."""
    out = []
    for name, h in runs:
        nc = h.column("nc1")
        out.append({"run": name, "dlr_first": h.rows[0]["dlr"], "dlr_last": h.rows[-1]["dlr"],
                    "nc1_first": float(nc[0]), "nc1_min": float(nc.min()), "nc1_max": float(nc.max()),
                    "nc1_last": float(nc[-1]), "norm_first": h.rows[0]["norm"], "norm_last": h.rows[-1]["norm"]})
    return out


def _f(fmt: str, *columns: str) -> dict[str, str]:
    return dict.fromkeys(columns, fmt)


#: kind → (columns, formats, headers) of the chapter's tables (:func:`nhtlab.book.dlr_table` renders them).
TABLES: dict[str, tuple[list[str], dict[str, str], dict[str, str]]] = {
    "rules": (["rule", "noise", "known_rank", "rank_found", "log_probs", "synthetic"],
              _f("{:.4f}", "noise", "known_rank", "log_probs"),
              {"noise": "noise |ΔDLR|", "known_rank": "known rank |ΔDLR|", "rank_found": "r found (true 5)",
               "log_probs": "logits vs log-probs |ΔDLR|", "synthetic": "three properties"}),
    "scored": (["rule", "synthetic", "lazy_minus_rich", "all_four"], {"lazy_minus_rich": "{:+.3f}"},
               {"lazy_minus_rich": "lazy − rich DLR", "all_four": "all four"}),
    "lazy_rich": (["alpha", "dlr", "cka_to_init", "nc1", "test_acc", "train_loss", "band"],
                  {"alpha": "{:g}", "nc1": "{:.3g}", "train_loss": "{:.4f}",
                   **_f("{:.3f}", "dlr", "cka_to_init", "test_acc")},
                  {"dlr": "DLR (energy 0.99)", "cka_to_init": "CKA to init", "nc1": "NC1", "test_acc": "test acc",
                   "train_loss": "train loss", "band": "other rules"}),
    "mnist_pair": (["seed", "run", "alpha", "paper_dlr", "dlr", "cka_to_init", "paper_acc", "test_acc"],
                   {"alpha": "{:g}", "paper_dlr": "{:g}", **_f("{:.3f}", "dlr", "cka_to_init"),
                    **_f("{:.1%}", "paper_acc", "test_acc")},
                   {"alpha": "α", "paper_dlr": "paper DLR", "dlr": "our DLR (energy 0.99)", "cka_to_init": "CKA to init",
                    "paper_acc": "paper test", "test_acc": "our test"}),
    "marks": (["mark", "step", "paper_dlr", "dlr", "band", "paper_acc", "test_acc", "fourier"],
              {"step": "{:,}", "paper_dlr": "{:.2f}", **_f("{:.3f}", "dlr", "fourier"), **_f("{:.1%}", "paper_acc", "test_acc")},
              {"paper_dlr": "paper DLR", "dlr": "our DLR (energy 0.99)", "band": "other rules",
               "paper_acc": "paper test", "test_acc": "our test", "fourier": "top-5 Fourier share"}),
    "terms": (["mark", "step", "test_acc", "dlr", "f_in", "pr", "r", "low", "high"],
              {"step": "{:,}", "test_acc": "{:.1%}", "r": "{:.0f}", "f_in": "{:.2f}", "pr": "{:.1f}",
               **_f("{:.3f}", "dlr", "low", "high")},
              {"dlr": "DLR", "pr": "PR", "test_acc": "test acc", "low": "band low", "high": "band high"}),
    "spectra": (["mark", "step"] + [f"{q}_{k}" for k in (10, 40) for q in ("rho", "quality", "utilisation")],
                {"step": "{:,}", **_f("{:.3f}", *(f"{q}_{k}" for k in (10, 40)
                                                   for q in ("rho", "quality", "utilisation")))},
                {f"{q}_{k}": label.format(k) for k in (10, 40)
                 for q, label in (("rho", "μ_{}/μ_1"), ("quality", "Π*({})"), ("utilisation", "Π̂({})"))}),
    "cnn": (["run", "dlr", "nc1", "norm", "train_acc", "test_acc", "f_in", "pr", "r"],
            {"nc1": "{:.3g}", "norm": "{:,.1f}", "r": "{:.0f}", "f_in": "{:.2f}", "pr": "{:.1f}",
             **_f("{:.3f}", "dlr", "train_acc", "test_acc")},
            {"dlr": "DLR", "nc1": "NC1", "norm": "‖θ‖²", "pr": "PR", "train_acc": "train acc",
             "test_acc": "test acc"}),
    "paper_cnn": (["run", "dlr", "test_acc"], {"dlr": "{:.3f}", "test_acc": "{:.1%}"},
                  {"run": "the paper's run", "dlr": "DLR", "test_acc": "test acc"}),
    "measures": (["run", "dlr_first", "dlr_last", "nc1_first", "nc1_min", "nc1_max", "nc1_last", "norm_first",
                  "norm_last"],
                 {**_f("{:.3f}", "dlr_first", "dlr_last"), **_f("{:.3g}", "nc1_first", "nc1_min", "nc1_max",
                                                                "nc1_last"),
                  **_f("{:,.0f}", "norm_first", "norm_last")},
                 {"dlr_first": "DLR first", "dlr_last": "DLR last", "nc1_first": "NC1 first", "nc1_min": "NC1 min",
                  "nc1_max": "NC1 max", "nc1_last": "NC1 last", "norm_first": "‖θ‖² first",
                  "norm_last": "‖θ‖² last"}),
}


def paper_cnn_records(paper: Mapping[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """The paper's CNN runs as records: ``run``, ``dlr``, ``test_acc``."""
    return [{"run": name, "dlr": value[0], "test_acc": value[1]} for name, value in paper.items()]


def chosen_rule_check(scored: Sequence[Mapping[str, Any]], rule: str = "energy 0.99") -> Check:
    """Whether the chosen rank rule passes all four properties."""
    row = {r["rule"]: r for r in scored}[rule]
    return Check(f"the chosen rule ({rule}) passes all four properties", row.get("all_four") == "pass",
                 f"three synthetic properties: {row['synthetic']}; lazy − rich {row.get('lazy_minus_rich', 0):+.3f}")


def timing_reading(checks: Mapping[int, Check]) -> Any:
    """The timing claim over seeds: seed → whether DLR fell with generalisation (majority rule)."""
    reading = {s: "falls with generalisation" if c else "does not" for s, c in checks.items()}
    return over_seeds("DLR timing", reading, expected="falls with generalisation", rule="majority")


def _orthonormal(n: int, r: int, g: torch.Generator) -> torch.Tensor:
    a = torch.randn(n, r, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(a - a.mean(0))
    return q


def _scaled_to_share(extra: torch.Tensor, base: torch.Tensor, share: float) -> torch.Tensor:
    """``extra`` rescaled so that its centred energy is ``share`` of ``base``'s."""
    return extra * (share * float((centre(base) ** 2).sum()) / float((centre(extra) ** 2).sum())) ** 0.5


def rule_properties(
    rules: Mapping[str, tuple[str | int, float | None]] | None = None, seed: int = 0, n: int = 600,
) -> list[dict[str, Any]]:
    """Score rank rules on three synthetic properties that do not depend on any training story.

    Each property is a number that should be (near) zero for a good rule:

    * ``noise``: abs(ΔDLR) when output directions carrying 10⁻³ of the outputs'
      energy are appended, once as pure noise (unrelated to the features) and
      once as a weak function of the features (the largest change is kept).
      Features: 24 tanh units; outputs: 10 logits of exact rank 5 read from them.
    * ``known_rank``: abs(DLR − DLR(r = k)) on outputs of known rank k = 5 whose
      singular values fall geometrically from 1 to 0.3 (plus noise of 10⁻⁸ of
      their energy), with features = the output span plus 20 unused directions
      (so the true value is known in closed form); ``rank_found`` gives the r chosen.
    * ``log_probs``: abs(DLR(logits) − DLR(log-softmax)) for confident logits
      (scale 4) of 10 classes read from the same features; softmax ignores a
      per-sample constant, so a rank rule should not let the log-sum-exp term
      change the answer much.

    A rule ``passes`` when all three are within :data:`RULE_THRESHOLDS`.
    """
    owner = "rule_properties"
    rules = CANDIDATE_RULES if rules is None else rules
    for rank, tol in rules.values():
        _check_rank(rank, tol, owner)
    require_int(seed, "seed", low=0, owner=owner)
    require_int(n, "n", low=50, owner=owner)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g, dtype=torch.float64)
    phi = torch.tanh(x @ torch.randn(12, 24, generator=g, dtype=torch.float64))  # (n, 24) features
    base = phi @ torch.randn(24, 5, generator=g, dtype=torch.float64) @ torch.randn(5, 10, generator=g, dtype=torch.float64)
    weak = phi @ torch.randn(24, 10, generator=g, dtype=torch.float64)
    noisy = [torch.cat([base, _scaled_to_share(extra, base, 1e-3)], 1)
             for extra in (torch.randn(n, 10, generator=g, dtype=torch.float64), weak)]
    q = _orthonormal(n, 25, g)
    span, unused = q[:, :5], q[:, 5:]
    sv = torch.logspace(0, float(np.log10(0.3)), 5, dtype=torch.float64)
    known = span @ torch.diag(sv) @ random_rotation(10, g)[:5]  # (n, 10), rank 5, s = 1 … 0.3
    known = known + _scaled_to_share(torch.randn(n, 10, generator=g, dtype=torch.float64), known, 1e-8)
    known_features = torch.cat([span * torch.linspace(1.0, 0.5, 5, dtype=torch.float64), 0.3 * unused], 1)
    truth = dlr_terms(known_features, known, 5).dlr
    logits = 4.0 * phi @ torch.randn(24, 10, generator=g, dtype=torch.float64) / 24 ** 0.5
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
            "raw_log_probs": abs(dlr(phi, logits, rank, tol) - dlr(phi, log_probs, rank, tol)),
        }
        row["passes"] = all(row[k] <= v for k, v in RULE_THRESHOLDS.items())
        rows.append(row)
    return rows


def random_rotation(d: int, g: torch.Generator) -> torch.Tensor:
    """A (d, d) random orthogonal matrix (float64) from generator ``g``."""
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return q


def rule_band(rows: Sequence[Mapping[str, Any]], rules: Sequence[str], column: str = "dlr") -> list[dict[str, float]]:
    """DLR under the chosen rule with the band spanned by other rules, per recorded step."""
    require_type(column, "column", str, owner="rule_band")
    out = []
    for row in rows:
        if column not in row:
            continue
        missing = [name for name in rules if f"dlr[{name}]" not in row]
        if missing:
            raise ValueError(f"The 'rules' parameter of rule_band names rules not recorded in the rows: {missing}.")
        values = [row[column]] + [row[f"dlr[{name}]"] for name in rules]
        out.append({"step": row["step"], "dlr": row[column], "low": min(values), "high": max(values)})
    return out


def lazy_rich_answer(records: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[str, str], str]:
    """The answer the lazy/rich runs give to "which has the higher DLR, lazy (large α) or rich (small α)?".

    Examples
    --------
    >>> rows = [dict(alpha=0.3, dlr=0.1, cka_to_init=0.2), dict(alpha=100.0, dlr=0.8, cka_to_init=0.99)]
    >>> lazy_rich_answer(rows)[0]
    'lazy'
    """
    rich, lazy = _ends(records, "lazy_rich_answer")
    answer = "lazy" if lazy["dlr"] > rich["dlr"] else "rich"
    return answer, ("lazy", "rich"), (f"DLR is {lazy['dlr']:.3f} at α = {lazy['alpha']:g} (CKA to its initial features "
                    f"{lazy['cka_to_init']:.3f}: lazy) and {rich['dlr']:.3f} at α = {rich['alpha']:g} "
                    f"(CKA {rich['cka_to_init']:.3f}: rich)")


def spectrum_knee(records: Sequence[Mapping[str, Any]], step: int, share: float = 0.9) -> dict[str, Any]:
    """Where the cumulative utilisation bends at ``step``: the fewest top-k eigenfunctions holding ``share`` of it.

    The utilisation Π̂(k) rises with k and levels off; the knee is the smallest k at which it reaches
    ``share`` of its value at the largest kept k. Read from the spectrum recorded nearest ``step``.

    Examples
    --------
    >>> rows = [{"step": 0, "k": k, "relative": 1 / k, "quality": 0.1 * k, "utilisation": min(1.0, k / 4)}
    ...         for k in range(1, 9)]
    >>> knee = spectrum_knee(rows, 10)
    >>> knee["step"], knee["k"], knee["top"], knee["utilisation"]
    (0, 4, 8, 1.0)
    """
    if not 0 < share <= 1:
        raise ValueError(f"The 'share' parameter of spectrum_knee must be in (0, 1]; got {share!r}.")
    steps = sorted({int(r["step"]) for r in records})
    if not steps:
        raise ValueError("The 'records' parameter of spectrum_knee holds no spectrum.")
    at = min(steps, key=lambda s: (abs(s - step), s))
    rows = sorted((r for r in records if int(r["step"]) == at), key=lambda r: r["k"])
    top = rows[-1]
    knee = next(r for r in rows if r["utilisation"] >= share * top["utilisation"])
    return {"step": at, "k": int(knee["k"]), "top": int(top["k"]), "utilisation": knee["utilisation"],
            "quality": knee.get("quality"), "relative": knee["relative"], "utilisation_top": top["utilisation"],
            "quality_top": top.get("quality")}


def knee_text(records: Sequence[Mapping[str, Any]], step: int | None, mark: str = "T_grok",
              share: float = 0.9) -> str:
    """A sentence pointing to the knee of the spectrum at ``step`` (:func:`spectrum_knee`), for the slider.

    >>> rows = [{"step": 0, "k": k, "relative": 1 / k, "quality": 0.1 * k, "utilisation": min(1.0, k / 4)}
    ...         for k in range(1, 9)]
    >>> knee_text(rows, 0).split(":")[0]
    'At T_grok (step 0) look at k = 4'
    """
    if step is None:
        return f"The run has no {mark}, so the slider opens at its first step and no knee is read."
    knee = spectrum_knee(records, step, share)
    quality = ("" if knee["quality"] is None else
               f"; the target's quality Π*({knee['k']}) is {knee['quality']:.3f} there")
    return (f"At {mark} (step {knee['step']:,}) look at k = {knee['k']}: the top {knee['k']} eigenfunctions "
            f"already express Π̂ = {knee['utilisation']:.3f} of the learned function, {share:.0%} of the "
            f"{knee['utilisation_top']:.3f} that all {knee['top']} kept ones express, while μ_{knee['k']}/μ_1 "
            f"has fallen to {knee['relative']:.2g}{quality}. Past this knee the curves flatten: the learned "
            f"function lives in a few strong directions.")


def lr_lesson(records: Sequence[Mapping[str, Any]], readings: Sequence[Any]) -> str:
    """The learning-rate section in words: the best rate by mean accuracy and the paper's readings k of n.

    Examples
    --------
    >>> from nhtlab.book.claims import over_seeds
    >>> recs = [{"lr": lr, "seed": 0, "dlr": d, "test_acc": a} for lr, d, a in ((1e-3, 0.5, 0.6), (1e-2, 0.3, 0.9))]
    >>> print(lr_lesson(recs, [over_seeds("DLR paper (a): the best rate has the lowest DLR", {0: "yes"}, "yes")]))
    By mean test accuracy the best rate is 0.01 (0.900, DLR 0.300). The paper's readings on our runs: the best rate has the lowest DLR: 1 of 1 seeds (holds).
    """
    rates = list(dict.fromkeys(r["lr"] for r in records))
    mean = {lr: {k: float(np.mean([r[k] for r in records if r["lr"] == lr])) for k in ("dlr", "test_acc")}
            for lr in rates}
    best = max(rates, key=lambda lr: mean[lr]["test_acc"])
    said = "; ".join(f"{r.name.split(': ', 1)[-1]}: {r.k} of {r.n} seeds ({'holds' if r.holds else 'fails here'})"
                     for r in readings)
    return (f"By mean test accuracy the best rate is {best:g} ({mean[best]['test_acc']:.3f}, DLR "
            f"{mean[best]['dlr']:.3f}). The paper's readings on our runs: {said}.")


def dlr_of_arrays(features: np.ndarray, outputs: np.ndarray, r: int) -> float:
    """:func:`nhtlab.dlr` of two NumPy arrays with the output span's dimension fixed at ``r``: the exercise's reference.

    >>> rng = np.random.default_rng(0)
    >>> f = rng.normal(size=(50, 4))
    >>> round(dlr_of_arrays(f, f[:, :2], 2), 3) < 1
    True
    """
    return dlr(torch.as_tensor(np.asarray(features, dtype=np.float64)),
               torch.as_tensor(np.asarray(outputs, dtype=np.float64)), rank=int(r))


def dlr_exercise_cases(features: torch.Tensor, outputs: torch.Tensor, n: int = 400,
                       seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The exercise's inputs: ``n`` random rows of a run's features and outputs, at two dimensions r.

    The first case uses the r that the chapter's rule (energy 0.99) picks on those outputs, the
    second r = 3 (a narrower output span), so a solution that ignores ``r`` is caught.
    """
    require_int(n, "n", low=3, owner="dlr_exercise_cases")
    rows = torch.randperm(features.shape[0], generator=torch.Generator().manual_seed(seed))[:n]
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


