"""Chapter 04's tables and text: the records of :mod:`nhtlab.book.dlr_report` rendered with their preset
columns, and the sentences built from them, with the evidence behind each closed under "How we know".

>>> print(dlr_table("paper_cnn", [{"run": "a", "dlr": 0.5, "test_acc": 0.25}]))
| the paper's run | DLR | test acc |
|---|---|---|
| a | 0.500 | 25.0% |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .claims import Check, Reading, reading_rows
from .dlr_report import (CNN_NAMES, RULE_THRESHOLDS, TABLES, dlr_fourier_text, knee_text, rule_records, spectra_marks)
from .report import Markdown, evidence, md, table

__all__ = ["dlr_table", "toy_text", "rule_evidence", "timing_text", "spectra_text", "mlp_text", "cnn_text"]


def dlr_table(kind: str, records: Iterable[Mapping[str, Any]], **headers: str) -> Markdown:
    """One of chapter 04's tables (:data:`nhtlab.book.dlr_report.TABLES`), via :func:`nhtlab.book.table`."""
    if kind not in TABLES:
        raise ValueError(f"The 'kind' parameter of dlr_table must be one of {sorted(TABLES)}; got {kind!r}.")
    columns, formats, preset = TABLES[kind]
    return table(records, columns=columns, formats=formats, headers={**preset, **headers})


def toy_text(records: Sequence[Mapping[str, Any]]) -> Markdown:
    """What the toy curve shows, read from :func:`nhtlab.book.dlr_report.toy_curve`'s records.

    >>> print(toy_text([{"alpha": 0.0, "DLR": 0.9, "f_in": 0.1}, {"alpha": 0.5, "DLR": 0.6, "f_in": 0.4},
    ...                 {"alpha": 1.0, "DLR": 0.0, "f_in": 1.0}]).split(".")[0])
    DLR starts at 0
    """
    half = min(records, key=lambda row: abs(row["alpha"] - 0.5))
    return md(f"""
        DLR starts at {records[0]["DLR"]:.2f} at α = {records[0]["alpha"]:g} (random features overlap the
        output span only by chance) and reaches {records[-1]["DLR"]:.2f} at α = {records[-1]["alpha"]:g},
        when only the output span is left. At α = {half["alpha"]:g} it is still {half["DLR"]:.2f}: the
        unused directions hold most of the energy, so $f_\\text{{in}}$ is only {half["f_in"]:.2f}.
        """)


def rule_evidence(properties: Sequence[Mapping[str, Any]], scored: Sequence[Mapping[str, Any]],
                  chosen: str = "energy 0.99") -> Markdown:
    """The rank-rule audit, closed under "How we know": the three synthetic properties and all four."""
    passing = ", ".join(f"`{r['rule']}`" for r in scored if r.get("all_four") == "pass") or "none"
    return evidence(
        "the rank rules scored on the four properties", dlr_table("rules", rule_records(properties)),
        f"Pass thresholds: {RULE_THRESHOLDS}. Property 3 compares the logits with the log-probabilities "
        "centred over the classes: raw log-probabilities add the log-sum-exp direction to the outputs.",
        dlr_table("scored", scored),
        f"Rules that pass all four: {passing}. The chapter's rule, `{chosen}`, is asserted to pass.")


def timing_text(timing: Check, seeds: Reading, by_seed: Mapping[int, Check], marks: Sequence[Mapping[str, Any]],
                same_run: Check, last_step: int) -> Markdown:
    """The transformer's DLR timing on this run and over seeds, with the per-seed evidence closed.

    From :mod:`~nhtlab.book.dlr_report`'s ``run_timing``, ``timing_reading`` and ``dlr_marks``, and
    :func:`~nhtlab.book.dlr_probes.same_run_check`.
    """
    proof = evidence("this is chapter 1's run, and every seed's timing",
                     f"{same_run}. Its last step is {last_step:,}.", table(reading_rows([seeds])),
                     "; ".join(f"seed {s}: {c}" for s, c in by_seed.items()) + ".")
    return md(f"On this run: {timing}; the timing claim {'holds' if timing else 'FAILS'}. Over seeds: "
              f"{seeds.text()}. {dlr_fourier_text(marks)}.\n\n{proof}")


def spectra_text(records: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None,
                 last_step: int) -> Markdown:
    """The knee of the spectrum at T_grok (:func:`nhtlab.book.dlr_report.knee_text`), with the marked
    steps' spectra closed under "How we know"."""
    marks = {"step 0": 0, "T_mem": t_mem, "T_grok": t_grok, "last": last_step}
    return md(f"{knee_text(records, t_grok)}\n\n"
              + evidence("the spectra at the marked steps", dlr_table("spectra", spectra_marks(records, marks))))


def mlp_text(terms: Sequence[Mapping[str, Any]], t_mem: int | None, t_grok: int | None, seed: int,
             additive: float) -> Markdown:
    """The one-hidden-layer MLP's DLR from its first mark to the end, and how much of its energy is additive.

    ``terms`` and ``additive`` come from :mod:`~nhtlab.book.dlr_report`'s ``layer_change`` and ``additive_share``.
    """
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


def cnn_text(records: Sequence[Mapping[str, Any]], checks: Sequence[Check]) -> Markdown:
    """The CNN checks and the unnormalised CNN's DLR terms, from :func:`nhtlab.book.dlr_report.final_records`."""
    none = {r["run"]: r for r in records}[CNN_NAMES[0]]
    return md(f"{'. '.join(str(c) for c in checks)}. The unnormalised CNN: $f_\\text{{in}}$ {none['f_in']:.2f}, "
              f"PR {none['pr']:.1f} against $r$ = {none['r']:.0f}.")


