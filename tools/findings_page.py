"""The findings page: each paper claim, what the paper reports, and what this build's chapters found.

    python tools/findings_page.py _build/executed/book     # print the page from a build's records

Generated at build time (``tools/build_book.py`` stages it as ``book/findings.md``) from the
closing-check records each chapter writes (``nhtlab.book.closing_checks``, ``<chapter>.claims.json``):
nothing on it is typed but the claims and the papers' reported values, which come from
:mod:`nhtlab.papers`. A check the chapters assert and one they only show (a paper's claim that
fails here, a reading that flips between seeds) are told apart. Every check of a build appears
once: under the paper claim it tests, or among the book's own checks.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from nhtlab import papers

ROOT = Path(__file__).resolve().parent.parent
LAMBDA = papers.COMPANION_LAMBDA_SWEEP
ETA = papers.COMPANION_ETA_SWEEP
GROKS = papers.COMPANION_GROK_COUNTS
NHT = papers.NHT_PAPER
DLR = papers.DLR_PAPER
ORDER = papers.NHT_LAYER_ORDER["cifar10"]


@dataclass(frozen=True)
class PaperClaim:
    """A claim of the papers, what they report for it, and the chapters' checks that test it."""

    claim: str
    cite: str  # the key in book/references.bib
    reports: str
    checks: tuple[tuple[str, str], ...]  # (chapter stem, a regular expression matching the check's name)


CLAIMS = (
    PaperClaim("A network memorises first and generalises much later, while ‖θ‖² contracts", "khanh2026delay",
               f"mod 97, λ = 1: T_mem {papers.paper_cell(LAMBDA[1.0]['t_mem'])}, T_grok "
               f"{papers.paper_cell(LAMBDA[1.0]['t_grok'])} (10 seeds); ‖θ‖² contracts at about "
               f"{papers.COMPANION_CONTRACTION_RATE} ηλ per step",
               (("01_grokking", r"memorises, then generalises later"), ("01_grokking", r"‖θ‖² falls by a third"),
                ("03_delay_law", r"‖θ‖² at T_grok ≤"), ("04_dlr", r"the transformer memorises, then generalises"))),
    PaperClaim("Without enough weight decay the network memorises and never generalises", "khanh2026delay",
               f"λ = 0.001 and 0.01: {GROKS[0.001][0]} and {GROKS[0.01][0]} of 10 runs grok in 50,000 steps",
               (("01_grokking", r"without decay"),)),
    PaperClaim("Three regimes in λ: weak, intermediate, strong (P2)", "khanh2026nht",
               f"mod 97: λ ≤ 0.01 never groks; 0.1 to 1 grok in 10 of 10; λ = 2 in {GROKS[2.0][0]} of 10; "
               f"λ = 5 in {GROKS[5.0][0]} of 10",
               (("02_regimes", r"is (weak|intermediate|strong)$"), ("02_regimes", r"regimes in the order"),
                ("08_own_model", r"regime of the (smallest|largest) λ"))),
    PaperClaim("The delay falls as 1/(ηλ): with λ", "khanh2026delay",
               f"T_grok against 1/λ on λ ∈ [0.1, 1]: slope {papers.COMPANION_GROK_FIT['slope']:,}, "
               f"R² {papers.COMPANION_GROK_FIT['r2']}; every λ in [0.1, 1] groks in 10 of 10",
               (("03_delay_law", r"every λ ≤ 1 groks"), ("03_delay_law", r"the delay falls as λ grows"),
                ("03_delay_law", r"the law fits better"))),
    PaperClaim("The delay falls as 1/(ηλ): with η", "khanh2026delay",
               "λ = 1, T_grok: " + ", ".join(f"η = {eta:g}: {papers.paper_cell(v)}" for eta, v in ETA.items()),
               (("03_delay_law", r"the delay falls as η grows"),)),
    PaperClaim("The delay grows with the norm to shed, log(V_mem/V_post)", "khanh2026nht",
               "T ≈ log(V_sc/V_st)/γ_eff, a theorem with matching upper and lower bounds",
               (("03_delay_law", r"a larger init"), ("07_emergence", r"the delay follows the norm gap"))),
    PaperClaim("Weight decay makes a network drop a shortcut it first fitted", "khanh2026nht",
               "the shortcut is fitted first, then left for the structured solution at intermediate λ "
               "(coloured-border CIFAR-10, ρ = 0.95: λ from 0.05 to 0.3)",
               (("05_layerwise", r"^(main|control): border$"), ("06_shortcuts", r"the border is fitted, then dropped"))),
    PaperClaim("The output layer leaves the shortcut first: a backward order (P4)", "khanh2026nht",
               f"the head transitions first; CIFAR-10: the read-out peaks near epoch {ORDER['readout_peak_epoch']} "
               f"of {ORDER['epochs']} and loses {ORDER['readout_contraction']:.0%}, conv1 peaks later and loses "
               f"{ORDER['conv1_contraction']:.0%}",
               (("05_layerwise", r"layer order at λ"), ("05_layerwise", r"main: verdict"),
                ("06_shortcuts", r"P4 layer hierarchy"), ("08_own_model", r"which contracts first"))),
    PaperClaim("The embedding becomes Fourier-sparse, the circuit forming during the delay", "nanda2023progress",
               "a grokked one-layer transformer (p = 113) embeds tokens at 5 key frequencies; circuit formation "
               "between memorisation and cleanup",
               (("01_grokking", r"Fourier"),)),
    PaperClaim("A smaller initial weight norm shortens the grokking delay", "liu2023omnigrok",
               "grokking comes from a large initial norm; at a smaller one the delay shrinks or vanishes",
               (("05_layerwise", r"^delay at λ"),)),
    PaperClaim("The read-out's norm warns before accuracy moves", "khanh2026nht",
               "‖θ_L‖²/‖θ_L(0)‖² and ‖θ_L‖²/‖θ_1‖² proposed as early-warning signals",
               (("05_layerwise", r"main: warning"),)),
    PaperClaim("Where the cue is entangled with the object (a background), the law fails", "khanh2026nht",
               f"Waterbirds: separation {NHT['separation']['Waterbirds']}, {NHT['scorecard']['Waterbirds']} of 6 "
               f"predictions hold; CelebA: separation {NHT['separation']['CelebA']}, {NHT['scorecard']['CelebA']} of 6",
               (("06_shortcuts", r"background"),)),
    PaperClaim("The shortcut has the higher norm (P1)", "khanh2026nht",
               "one of six predictions; " + ", ".join(f"{k}: {v} of 6 hold" for k, v in NHT["scorecard"].items()),
               (("06_shortcuts", r"P1 norm ordering"),)),
    PaperClaim("Worst-group accuracy falls as the shortcut gets more reliable (P3)", "khanh2026nht",
               f"clean accuracy {NHT['clean_by_rho'][0.5]:.1%} at ρ = 0.5, {NHT['clean_by_rho'][1.0]:.1%} at ρ = 1",
               (("06_shortcuts", r"P3 clean/worst-group"), ("06_shortcuts", r"worst-group accuracy falls"))),
    PaperClaim("A clean norm separation says when the law applies (P5)", "khanh2026nht",
               "scores: " + ", ".join(f"{k} {v}" for k, v in NHT["separation"].items()),
               (("06_shortcuts", r"P5 clean separation"), ("06_shortcuts", r"the separation score is defined"))),
    PaperClaim("DLR tells lazy from rich training without labels", "nam2026dlr",
               f"MNIST: rich DLR {DLR['lazy_rich']['rich']}, lazy DLR {DLR['lazy_rich']['lazy']}",
               (("04_dlr", r"lazy DLR exceeds rich DLR"), ("04_dlr", r"DLR does not fall"),
                ("04_dlr", r"richness is not generalisation"))),
    PaperClaim("DLR falls as a grokking transformer generalises", "nam2026dlr",
               "mod 97: DLR " + ", then ".join(f"{d} at step {s:,} (test {a:.1%})"
                                               for s, (d, a) in DLR["transformer"].items()),
               (("04_dlr", r"DLR falls more between T_mem and T_grok"),)),
    PaperClaim("The best learning rate gives the lowest DLR; too small a rate is lazier, with more features",
               "nam2026dlr",
               "ResNet18, CIFAR-100: " + ", ".join(f"lr {lr:g}: DLR {d}, test {a:.1%}"
                                                   for lr, (d, a) in DLR["learning_rate"].items()),
               (("04_dlr", r"^DLR paper \("), ("04_dlr", r"learning-rate grid brackets"))),
    PaperClaim("BatchNorm gives richer features", "nam2026dlr",
               "VGG-16, CIFAR-100: DLR " + ", ".join(f"{k.split(', ')[-1]} {d}" for k, (d, _) in DLR["cnn"].items()
                                                     if k.startswith("VGG")),
               (("04_dlr", r"BatchNorm gives the richer"),)),
)


def load_records(executed: Path, chapters: list[str]) -> dict[str, dict]:
    """Each chapter's closing-check record (``<stem>.claims.json``) in ``executed``; a missing one is left out."""
    records = {}
    for stem in chapters:
        path = executed / f"{stem}.claims.json"
        if path.exists():
            records[stem] = json.loads(path.read_text(encoding="utf-8"))
    return records


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _found(check: dict) -> str:
    verdict = ("✓ holds" if check["passed"] else "✗ fails") + (" (asserted)" if check["claim"] else " (shown)")
    return f"{verdict}, {check['check']}: {check['detail']}"


def render(records: dict[str, dict], profile: str) -> str:
    """The page's MyST Markdown from the chapters' records.

    Parameters
    ----------
    records : dict
        chapter stem → its closing-check record (:func:`load_records`).
    profile : str
        The profile the records were executed in, named on the page.
    """
    used = set()
    lines = ["# Findings", "",
             f"What this build of the book found for each claim of the papers, read from the closing checks "
             f"of its chapters (profile `{profile}`): nothing here is typed but the claims and the papers' "
             "reported values. *Asserted* checks fail the chapter's build when they do not hold; *shown* ones "
             "(a paper's claim that fails here, a reading that flips between seeds) are reported, never "
             "asserted. A reading counts seeds, \"k of n\".", "",
             "| claim | the paper reports | this book finds | chapter |", "|---|---|---|---|"]
    for claim in CLAIMS:
        found, where = [], []
        for stem, pattern in claim.checks:
            for i, check in enumerate(records.get(stem, {}).get("checks", [])):
                if re.search(pattern, check["check"]) and (stem, i) not in used:
                    used.add((stem, i))
                    found.append(_found(check))
                    where.append(stem)
        book = "<br>".join(_cell(f) for f in found) or "not tested in this profile"
        chapters = ", ".join(f"{{doc}}`{s[:2].lstrip('0')} <{s}>`" for s in dict.fromkeys(where)) or "—"
        lines.append(f"| {_cell(claim.claim)} {{cite:p}}`{claim.cite}` | {_cell(claim.reports)} | {book} | {chapters} |")
    own = [(stem, check) for stem, record in records.items() for i, check in enumerate(record["checks"])
           if (stem, i) not in used]
    if own:
        lines += ["", "## The book's own checks", "",
                  "Checks of the book's methods and runs, not claims of the papers: that a measure passes the "
                  "properties it was chosen for, that runs are determined, that nothing diverged.", "",
                  "| this book finds | chapter |", "|---|---|"]
        lines += [f"| {_cell(_found(check))} | {{doc}}`{stem[:2].lstrip('0')} <{stem}>` |" for stem, check in own]
    return "\n".join(lines) + "\n"


def main() -> None:
    executed = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "executed" / "book"
    import build_book

    print(render(load_records(executed, [notebook.stem for notebook in build_book.chapters()]), executed.name))


if __name__ == "__main__":
    main()
