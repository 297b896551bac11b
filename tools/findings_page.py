"""The findings page: each paper claim, a one-word verdict, and what this build's chapters found.

Staged by ``tools/build_book.py`` as ``book/findings.md`` from the chapters' closing-check records
(``<chapter>.claims.json``): only the claims, the papers' values (:mod:`nhtlab.papers`) and the phrases a
verdict selects are typed. One row per claim, and under "How we know" every check behind it; every check
of a build appears, under its claim or among the book's own checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nhtlab import papers
from nhtlab.book.report import cell, evidence, table  # the chapters' own cells and "How we know" blocks

LAMBDA = papers.COMPANION_LAMBDA_SWEEP
ETA = papers.COMPANION_ETA_SWEEP
GROKS = papers.COMPANION_GROK_COUNTS
NHT = papers.NHT_PAPER
DLR = papers.DLR_PAPER
ORDER = papers.NHT_LAYER_ORDER["cifar10"]

#: The verdicts of a row: the paper's claim holds on the runs, fails, holds in part, or was not tested.
HOLDS, FAILS, MIXED, UNTESTED = "✓", "✗", "mixed", "—"
#: Said of a check whose record states no count of seeds or runs, where the chapter reads it on one run.
ONE_SEED = "1 seed"


@dataclass(frozen=True)
class Phrase:
    """What a row says of the checks a pattern matches, when they hold and when they fail; ``support``: the
    k of n column's word for a record that states no count (a count in the record wins)."""

    stem: str
    pattern: str  # a regular expression matching the check's name
    holds: str
    fails: str
    support: str | None = None
    tag: str = ""  # a prediction's short name ("P1"), said beside the count


@dataclass(frozen=True)
class Context:
    """A check listed under a row's evidence but not counted in its verdict, and why."""

    stem: str
    pattern: str
    why: str


#: The checks a row matched: (phrase, chapter stem, check record) in the row's order.
Found = list[tuple[Phrase, str, dict]]


def held(found: Found, pattern: str) -> bool | None:
    """Whether every matched check whose name matches ``pattern`` held; None when none matched."""
    hits = [c["passed"] for _, _, c in found if re.search(pattern, c["check"])]
    return all(hits) if hits else None


@dataclass(frozen=True)
class PaperClaim:
    """A claim of the papers, what they report, and the checks that test it; ``verdict`` decides the row
    (default: all hold ✓, none ✗, else mixed), ``ending`` may close its sentence."""

    claim: str
    cite: str  # the key in book/references.bib
    reports: str
    phrases: tuple[Phrase, ...]
    context: tuple[Context, ...] = ()
    verdict: Callable[[Found], str] | None = None
    ending: Callable[[Found, str], str] | None = None


def _agree(found: Found) -> str:
    passed = [c["passed"] for _, _, c in found]
    if not passed:
        return UNTESTED
    return HOLDS if all(passed) else FAILS if not any(passed) else MIXED


def _drop_verdict(found: Found) -> str:
    """Weight decay drops the shortcut: ✓ only when the border is dropped *and* the norm falls with it (P1, P5);
    a drop seen without those readings leaves the claim, which is about weight decay, untested."""
    dropped = held(found, r"^main: border$|fitted, then dropped")
    decay = [d for d in (held(found, r"^P1 norm ordering$"), held(found, r"^P5 clean separation$")) if d is not None]
    if dropped is None or (dropped and not decay):
        return UNTESTED
    if not dropped:
        return FAILS
    return HOLDS if all(decay) else MIXED


def _drop_ending(found: Found, verdict: str) -> str:
    if verdict == MIXED and held(found, r"^control: border$"):
        return "so chapter 6 credits the 5% exceptions, not the decay"
    if verdict == UNTESTED and found:
        return "whether weight decay drives the drop (P1, P5 in chapter 6) is not in this build"
    return ""


def _background_verdict(found: Found) -> str:
    """The law fails on an entangled cue: ✓ when its predictions fail there and the score tells it apart."""
    fails_there = held(found, r"separation below 0\.5")
    apart = held(found, r"below the border's")
    if fails_there is None:
        return UNTESTED
    if not fails_there:
        return FAILS
    return HOLDS if apart in (True, None) else MIXED


def support(phrase: Phrase, check: dict) -> str:
    """The seeds or runs in which what the row says of a check came out (for a failed check, the others).

    >>> p = Phrase("01", "x", "holds", "fails")
    >>> support(p, {"passed": True, "detail": "holds in 2 of 3 seeds (seed 0: holds); rule: majority"})
    '2 of 3 seeds'
    >>> support(p, {"passed": False, "detail": "✓ in 1 of 3 seeds (seed 0: ✗, seed 1: ✓, seed 2: ✗)"})
    '2 of 3 seeds'
    >>> support(p, {"passed": True, "detail": "λ = 0.3: 3/3, λ = 0.5: 2/3"})
    '5 of 6 runs'
    >>> support(Phrase("04", "x", "", "", ONE_SEED), {"passed": True, "detail": "0.551 − 0.035 = +0.516"})
    '1 seed'
    """
    detail = check["detail"]
    counted = re.search(r"(\d+) of (\d+) (seeds|runs)", detail)
    pairs = re.findall(r"(\d+)/(\d+)", detail)
    if counted or pairs:
        k, n = ((int(counted[1]), int(counted[2])) if counted
                else (sum(int(k) for k, _ in pairs), sum(int(n) for _, n in pairs)))
        return f"{k if check['passed'] else n - k} of {n} {counted[3] if counted else 'runs'}"
    if re.search(r"\b1 seed\b", detail):
        return ONE_SEED
    if m := re.search(r"over (\d+) runs", detail):
        return f"{m[1]} runs"
    if groups := re.findall(r"λ = [^:;]+: ([^;]+)", detail):
        sizes = {len(g.split(",")) for g in groups}
        if len(sizes) == 1:
            return f"{sizes.pop()} seeds per λ"
    return phrase.support or ""


# The patterns a claim names that no chapter records yet: the row stays on the page, marked untested
# ("not recorded by this build"), until the chapter records that reading in its closing cell.
PENDING = {
    ("06_shortcuts", r"^P2 three regimes"): "chapter 06 scores P2 on one sweep in its scorecard table",
    ("06_shortcuts", r"^P6 delay scaling"): "chapter 06 scores P6 on one sweep in its scorecard table",
    ("07_emergence", r"norm gap.*width"): "chapter 07 shows the gap's trend with width",
    ("02_regimes", r"within its budget"): "chapter 02 shows what each λ did within its budget",
}


CLAIMS = (
    PaperClaim(
        "A network memorises first and generalises much later, while ‖θ‖² contracts", "khanh2026delay",
        f"mod 97, λ = 1: T_mem {papers.paper_cell(LAMBDA[1.0]['t_mem'])}, T_grok "
        f"{papers.paper_cell(LAMBDA[1.0]['t_grok'])} ¹ (10 seeds); ‖θ‖² contracts at about "
        f"{papers.COMPANION_CONTRACTION_RATE} ηλ per step",
        (Phrase("01_grokking", r"memorises, then generalises later", "memorised first, generalised later",
                "did not memorise first and generalise later"),
         Phrase("04_dlr", r"the transformer memorises, then generalises",
                "so did chapter 4's transformer", "chapter 4's transformer did not", ONE_SEED),
         Phrase("01_grokking", r"‖θ‖² falls by a third", "‖θ‖² fell by a third in between",
                "‖θ‖² did not fall by a third in between"),
         Phrase("03_delay_law", r"‖θ‖² at T_grok ≤", "at T_grok ‖θ‖² was at most half of V_mem",
                "at T_grok ‖θ‖² was above half of V_mem"))),
    PaperClaim(
        "Without enough weight decay the network memorises and never generalises", "khanh2026delay",
        f"λ = 0.001 and 0.01: {GROKS[0.001][0]} and {GROKS[0.01][0]} of 10 runs grok in 50,000 steps",
        (Phrase("01_grokking", r"without decay", "without weight decay it memorised and stayed at low test accuracy",
                "without weight decay it generalised anyway"),)),
    PaperClaim(
        "Three regimes in λ: weak, intermediate, strong (P2)", "khanh2026nht",
        f"mod 97: λ ≤ 0.01 never groks; 0.1 to 1 grok in 10 of 10; λ = 2 in {GROKS[2.0][0]} of 10; "
        f"λ = 5 in {GROKS[5.0][0]} of 10",
        (Phrase("02_regimes", r"is intermediate$", "the middle λ was intermediate", "the middle λ was not intermediate"),
         Phrase("02_regimes", r"is (weak|strong)$", "the smallest λ read weak and the largest strong",
                "the smallest and largest λ were not decided weak and strong within their budgets"),
         Phrase("02_regimes", r"within its budget", "within their budgets the smallest λ memorised without "
                "contracting and the largest never fitted its table", "within their budgets the ends did not "
                "behave as weak and strong do"),
         Phrase("02_regimes", r"regimes in the order", "no regime came out of order as λ grew",
                "the regimes came out of order as λ grew"),
         Phrase("08_own_model", r"regime of the (smallest|largest) λ", "chapter 8's CNN read weak and strong at its "
                "smallest and largest λ", "chapter 8's CNN did not read weak and strong at its ends of λ"),
         Phrase("06_shortcuts", r"^P2 three regimes", "the border images' sweep read all three",
                "the border images' sweep did not read all three", ONE_SEED, tag="one sweep"))),
    PaperClaim(
        "The delay falls as 1/(ηλ): with λ", "khanh2026delay",
        f"T_grok against 1/λ on λ ∈ [0.1, 1]: slope {papers.COMPANION_GROK_FIT['slope']:,}, "
        f"R² {papers.COMPANION_GROK_FIT['r2']}; every λ in [0.1, 1] groks in 10 of 10",
        (Phrase("03_delay_law", r"every λ ≤ 1 groks", "every λ ≤ 1 grokked", "not every λ ≤ 1 grokked"),
         Phrase("03_delay_law", r"the delay falls as λ grows", "the delay fell as λ grew",
                "the delay did not fall as λ grew"))),
    PaperClaim(
        "The delay falls as 1/(ηλ): with η", "khanh2026delay",
        "λ = 1, T_grok: " + ", ".join(f"η = {eta:g}: {papers.paper_cell(v)}" for eta, v in ETA.items()) + " ¹",
        (Phrase("03_delay_law", r"the delay falls as η grows", "the delay fell as η grew",
                "the delay did not fall as η grew"),)),
    PaperClaim(
        "The delay grows with the norm to shed, log(V_mem/V_post)", "khanh2026nht",
        "T ≈ log(V_mem/V_post)/γ_eff, a theorem with matching upper and lower bounds",
        (Phrase("03_delay_law", r"a larger init", "a larger initial norm memorised at a larger norm and took longer",
                "a larger initial norm did not take longer"),
         Phrase("03_delay_law", r"the law fits better than 1/", "the law, with its norm gap, fitted the delays "
                "better than a plain 1/λ", "the law did not fit the delays better than a plain 1/λ in every "
                "comparison"),
         Phrase("07_emergence", r"the delay follows the norm gap", "across widths the delay followed the norm gap",
                "across widths the delay did not follow the norm gap"))),
    PaperClaim(
        "The norm gap shrinks as a model grows, so the delay does (the emergence hypothesis)", "khanh2026nht",
        "a hypothesis: if the gap shrinks with size, the delay shrinks logarithmically and a capability "
        "appears once it fits the budget",
        (Phrase("07_emergence", r"norm gap.*width", "the norm gap shrank as the width grew",
                "the norm gap did not shrink as the width grew"),)),
    PaperClaim(
        "Weight decay makes a network drop a shortcut it first fitted", "khanh2026nht",
        "the shortcut is fitted first, then left for the structured solution at intermediate λ "
        "(coloured-border CIFAR-10, ρ = 0.95: λ from 0.05 to 0.3)",
        (Phrase("05_layerwise", r"^main: border$", "the border was fitted, then dropped", "the border was kept"),
         Phrase("06_shortcuts", r"the border is fitted, then dropped", "the border was fitted, then dropped",
                "the border was kept"),
         Phrase("06_shortcuts", r"^P1 norm ordering$", "‖θ‖² was larger on the border than after it",
                "but ‖θ‖² was not larger on the border than after it", tag="P1"),
         Phrase("06_shortcuts", r"^P5 clean separation$", "reliance fell with ‖θ‖²",
                "reliance did not fall with ‖θ‖²", tag="P5"),
         Phrase("05_layerwise", r"^control: border$", "without the 5% wrong-border exceptions it was kept",
                "it was dropped without the 5% wrong-border exceptions too")),
        verdict=_drop_verdict, ending=_drop_ending),
    PaperClaim(
        "The output layer leaves the shortcut first: a backward order (P4)", "khanh2026nht",
        f"the head transitions first; CIFAR-10: the read-out peaks near epoch {ORDER['readout_peak_epoch']} "
        f"of {ORDER['epochs']} and loses {ORDER['readout_contraction']:.0%}, conv1 peaks later and loses "
        f"{ORDER['conv1_contraction']:.0%}",
        (Phrase("05_layerwise", r"layer order at λ", "the read-out contracted before the first layer",
                "the read-out did not contract before the first layer"),
         Phrase("05_layerwise", r"^main: verdict$", "so did the border images' CNN",
                "nor did the border images' CNN"),
         Phrase("06_shortcuts", r"^P4 layer hierarchy$", "so did chapter 6's CNN", "nor did chapter 6's CNN")),
        context=(Context("08_own_model", r"contracts first",
                         "*Not counted:* a layer order is read once a run has memorised (it is the order in "
                         "which the layers leave the shortcut); chapter 8 reads it on runs that do not memorise, "
                         "where a read-out turn in the first steps is an initialisation transient."),)),
    PaperClaim(
        "The embedding becomes Fourier-sparse, the circuit forming during the delay", "nanda2023progress",
        "a grokked one-layer transformer (p = 113) embeds tokens at 5 key frequencies; circuit formation "
        "between memorisation and cleanup",
        (Phrase("01_grokking", r"Fourier share", "the embedding became Fourier-sparse",
                "the embedding did not become Fourier-sparse"),
         Phrase("01_grokking", r"Fourier structure", "its structure formed between T_mem and T_grok",
                "its structure did not form between T_mem and T_grok"))),
    PaperClaim(
        "A smaller initial weight norm shortens the grokking delay", "liu2023omnigrok",
        "grokking comes from a large initial norm; at a smaller one the delay shrinks or vanishes",
        (Phrase("05_layerwise", r"^delay at λ", "embeddings started ×0.1 smaller grokked sooner at every λ tried",
                "embeddings started ×0.1 smaller did not grok sooner"),)),
    PaperClaim(
        "The read-out's norm warns before accuracy moves", "khanh2026nht",
        "‖θ_L‖²/‖θ_L(0)‖² and ‖θ_L‖²/‖θ_1‖² proposed as early-warning signals",
        (Phrase("05_layerwise", r"^main: warning$", "the read-out's norm turned down before the border was dropped",
                "the read-out's norm did not turn down before the border was dropped"),)),
    PaperClaim(
        "Where the cue is entangled with the object (a background), the law fails", "khanh2026nht",
        f"Waterbirds: separation {NHT['separation']['Waterbirds']}, {NHT['scorecard']['Waterbirds']} of 6 "
        f"predictions hold; CelebA: separation {NHT['separation']['CelebA']}, {NHT['scorecard']['CelebA']} of 6",
        (Phrase("06_shortcuts", r"^background: separation below 0\.5",
                "on a background cue the separation stayed below 0.5", "on a background cue the separation reached 0.5"),
         Phrase("06_shortcuts", r"\(background\)$", "the law's predictions held there",
                "the law's predictions failed there"),
         Phrase("06_shortcuts", r"^background: separation below the border's",
                "and the score was below the border's", "but the score was not below the border's")),
        context=(Context("06_shortcuts", r"^background: the cue is learnt",
                         "*Not counted:* a precondition, not the claim (the cue is learnt at all)."),),
        verdict=_background_verdict),
    PaperClaim(
        "The shortcut has the higher norm (P1)", "khanh2026nht",
        "one of six predictions; predictions held: " + ", ".join(f"{k} {v}/6" for k, v in NHT["scorecard"].items()),
        (Phrase("06_shortcuts", r"^P1 norm ordering$", "‖θ‖² was larger when the border was fitted than at the end",
                "‖θ‖² was not larger when the border was fitted than at the end"),)),
    PaperClaim(
        "Worst-group accuracy falls as the shortcut gets more reliable (P3)", "khanh2026nht",
        f"clean accuracy {NHT['clean_by_rho'][0.5]:.1%} at ρ = 0.5, {NHT['clean_by_rho'][1.0]:.1%} at ρ = 1",
        (Phrase("06_shortcuts", r"worst-group accuracy falls", "worst-group accuracy fell as ρ grew",
                "worst-group accuracy did not fall as ρ grew"),
         Phrase("06_shortcuts", r"^P3 clean/worst-group$", "it rose past 0.5 after the border was dropped",
                "it did not rise past 0.5 after the border was dropped", tag="P3"))),
    PaperClaim(
        "A clean norm separation says when the law applies (P5)", "khanh2026nht",
        "scores: " + ", ".join(f"{k} {v}" for k, v in NHT["separation"].items()),
        (Phrase("06_shortcuts", r"^P5 clean separation$", "the border's separation score reached 0.5",
                "the border's separation score stayed below 0.5 (or undefined)"),),
        context=(Context("06_shortcuts", r"the separation score is defined",
                         "*Not counted:* a precondition, not the claim (the score could be computed)."),)),
    PaperClaim(
        "On the border images the delay scales as 1/λ (P6)", "khanh2026nht",
        "modular arithmetic: holds; coloured-border CIFAR-10: the one prediction of six that fails there",
        (Phrase("06_shortcuts", r"^P6 delay scaling", "the border's delay scaled as 1/λ",
                "the border's delay did not scale as 1/λ", ONE_SEED, tag="one sweep"),)),
    PaperClaim(
        "DLR tells lazy from rich training without labels", "nam2026dlr",
        "MNIST: " + ", ".join(f"{kind} DLR {d} (test {a:.1%})" for kind, (d, a) in DLR["lazy_rich"].items()),
        (Phrase("04_dlr", r"lazy DLR exceeds rich DLR", "DLR was far higher on the lazy run than on the rich one",
                "DLR did not separate the lazy run from the rich one", ONE_SEED),
         Phrase("04_dlr", r"^MNIST-5k: the lazy run", "on real MNIST digits too", "not on real MNIST digits"),
         Phrase("04_dlr", r"DLR does not fall", "it never fell as the run was made lazier",
                "it fell as the run was made lazier", ONE_SEED),
         Phrase("04_dlr", r"richness is not generalisation", "on shuffled labels DLR was low at chance accuracy: "
                "richness is not generalisation", "on shuffled labels DLR was not low", ONE_SEED))),
    PaperClaim(
        "DLR falls as a grokking transformer generalises", "nam2026dlr",
        "mod 97: DLR " + ", then ".join(f"{d} at step {s:,} (test {a:.1%})" for s, (d, a) in DLR["transformer"].items()),
        (Phrase("04_dlr", r"DLR falls more between T_mem and T_grok", "DLR fell more between T_mem and T_grok "
                "than before T_mem", "DLR did not fall more between T_mem and T_grok than before", ONE_SEED),)),
    PaperClaim(
        "The best learning rate gives the lowest DLR; too small a rate is lazier, with more features", "nam2026dlr",
        "ResNet18, CIFAR-100: " + ", ".join(f"lr {lr:g}: DLR {d}, test {a:.1%}"
                                            for lr, (d, a) in DLR["learning_rate"].items()),
        (Phrase("04_dlr", r"learning-rate grid brackets", "the grid bracketed the best-accuracy rate",
                "the grid did not bracket the best-accuracy rate"),
         Phrase("04_dlr", r"^DLR paper \(a\)", "the best-accuracy rate had the lowest DLR",
                "the best-accuracy rate did not have the lowest DLR"),
         Phrase("04_dlr", r"^DLR paper \(b\)", "the smallest rate was lazier", "the smallest rate was not lazier"),
         Phrase("04_dlr", r"^DLR paper \(c\)", "it used more features", "but it did not use more features"))),
    PaperClaim(
        "BatchNorm gives richer features", "nam2026dlr",
        "VGG-16, CIFAR-100: DLR " + ", ".join(f"{k.split(', ')[-1]} {d}" for k, (d, _) in DLR["cnn"].items()
                                              if k.startswith("VGG")),
        (Phrase("04_dlr", r"BatchNorm gives the richer", "the CNN with BatchNorm was the richer and generalised better",
                "the CNN with BatchNorm was not the richer", ONE_SEED),)),
)

#: The table's column widths in percent of the page's column (claim, verdict, k of n, what this book finds,
#: the paper reports, chapter): a fixed layout, so the table fits its column and the words wrap.
TABLE_WIDTHS = (17, 11, 11, 31, 23, 7)

#: Below the table: why the paper reports two values for one setting (¹ in the table).
_GAP = LAMBDA[1.0]["t_grok"][0] - ETA[1e-3][0]
TWO_VALUES = (
    f"¹ Two values for one setting (λ = 1, η = 10⁻³). The companion paper reports T_grok from two separate "
    f"sets of runs: {papers.paper_cell(LAMBDA[1.0]['t_grok'])} is the mean of its λ sweep (10 seeds per λ, "
    f"its Table 3, `data/summary2.json`), {papers.paper_cell(ETA[1e-3])} that of its η sweep (its "
    "`scripts/s5_eta_sweep_v2.py`, `data/summary5.json`, with runs of its own). They differ by "
    f"{abs(_GAP):,.0f} steps, {'less' if abs(_GAP) < LAMBDA[1.0]['t_grok'][1] else 'more'} than one standard "
    f"deviation of the λ sweep ({LAMBDA[1.0]['t_grok'][1]:,.0f}): the seed-to-seed spread at one setting, "
    "not a change of setting.")


def load_records(executed: Path, chapters: list[str] | None = None) -> dict[str, dict]:
    """Each chapter's closing-check record (``<stem>.claims.json``) in ``executed``, of ``chapters`` (default:
    every one there); a missing one is left out."""
    if chapters is None:
        chapters = sorted(path.name.removesuffix(".claims.json") for path in executed.glob("*.claims.json"))
    paths = {stem: executed / f"{stem}.claims.json" for stem in chapters}
    return {stem: json.loads(path.read_text(encoding="utf-8")) for stem, path in paths.items() if path.exists()}



def _found(check: dict) -> str:
    verdict = ("✓ holds" if check["passed"] else "✗ fails") + (" (asserted)" if check["claim"] else " (shown)")
    return f"{verdict}, {check['check']}: {check['detail']}"


def _chapter(stem: str) -> str:
    return f"{{doc}}`{stem[:2].lstrip('0')} <{stem}>`"


def _style() -> str:
    """Fixed column widths and a smaller font, as a raw HTML block."""
    cols = " ".join(f".findings-table td:nth-child({i}), .findings-table th:nth-child({i}) {{width: {w}%}}"
                    for i, w in enumerate(TABLE_WIDTHS, start=1))
    return (f"<style>.findings-table {{table-layout: fixed; width: 100%; font-size: 0.9em; hyphens: auto}} "
            f".findings-table td, .findings-table th {{overflow-wrap: break-word; padding: 0.4em 0.45em}} {cols}</style>")


def match(claim: PaperClaim, records: dict[str, dict]) -> tuple[Found, list[tuple[Context, str, dict]]]:
    """The checks of ``records`` a claim counts (in its phrases' order) and those it lists only as context."""
    def hits(items):
        return [(it, it.stem, check) for it in items for check in records.get(it.stem, {}).get("checks", [])
                if re.search(it.pattern, check["check"])]

    return hits(claim.phrases), hits(claim.context)


def sentence(claim: PaperClaim, found: Found, verdict: str, ran: bool = False) -> str:
    """The row's sentence: each phrase its checks select, with counts where the row is mixed; when nothing
    matched, whether a chapter that would test it ran (``ran``)."""
    if not found:
        return "not recorded by this build's closing checks" if ran else "not tested in this profile"
    parts: dict[str, list[tuple[Phrase, dict]]] = {}
    for phrase, _, check in found:
        parts.setdefault(phrase.holds if check["passed"] else phrase.fails, []).append((phrase, check))
    said = []
    for text, hits in parts.items():
        counts = "; ".join(dict.fromkeys(s for p, c in hits if (s := support(p, c)))) if verdict == MIXED else ""
        note = ", ".join(filter(None, [hits[0][0].tag, counts]))
        said.append(f"{text} ({note})" if note else text)
    if claim.ending and (end := claim.ending(found, verdict)):
        said.append(end)
    text = "; ".join(said)
    return text[0].upper() + text[1:] + "."


def render(records: dict[str, dict], profile: str) -> str:
    """The page's MyST Markdown from the chapters' records (stem → record) executed in ``profile``."""
    used: set[int] = set()  # the id() of every check listed under a claim
    rows, blocks = [], []
    for claim in CLAIMS:
        found, context = match(claim, records)
        verdict = (claim.verdict or _agree)(found)
        ran = any(p.stem in records for p in claim.phrases)
        counts = "; ".join(dict.fromkeys(s for p, _, c in found if (s := support(p, c)))) or "—"
        chapters = ", ".join(_chapter(s) for s in dict.fromkeys(s for _, s, _ in found)) or "—"
        rows.append(f"| {cell(claim.claim)} | **{verdict}** | {cell(counts)} | {cell(sentence(claim, found, verdict, ran))} "
                    f"| {cell(claim.reports)} {{cite:p}}`{claim.cite}` | {chapters} |")
        items = [f"- chapter {stem[:2].lstrip('0')}: {_found(check)}" for _, stem, check in found]
        items += [f"- chapter {stem[:2].lstrip('0')}: {_found(check)}. {ctx.why}" for ctx, stem, check in context]
        missing = [PENDING[(p.stem, p.pattern)] for p in claim.phrases if (p.stem, p.pattern) in PENDING
                   and not any(q is p for q, _, _ in found)]
        items += [f"- Not recorded by this build: {why}, not in its closing checks." for why in missing]
        used |= {id(check) for _, _, check in [*found, *context]}
        blocks.append(evidence(claim.claim, "\n".join(items) or "No chapter of this build tested it."))
    lines = [
        "# Findings", "",
        ("Each claim of the papers, and what this build of the book found for it (profile "
        f"`{profile}`), read from the closing checks of its chapters. **✓**: the paper's claim holds on "
        "these runs; **✗**: it fails; **mixed**: part holds and part fails (the sentence says which); "
        "**—**: no chapter of this build tested it. **k of n** counts the seeds (or runs) in which what "
        f"the sentence says came out; **{ONE_SEED}** marks a reading made on one run. Only the claims, "
        "the papers' values and the phrases a verdict selects are typed; the rest is generated."), "",
        _style(), "",
        "```{table}", ":class: findings-table", "",
        "| claim | verdict | k of n | what this book finds | the paper reports | ch. |",
        "|---|---|---|---|---|---|", *rows, "```", "", TWO_VALUES, "",
        "## How we know, claim by claim", "",
        ("Each block lists the checks behind a row as the chapter's closing cell recorded them. *Asserted* "
        "checks fail the chapter's build when they do not hold; *shown* ones (a paper's claim that fails "
        "here, a reading that flips between seeds) are reported, never asserted."), "",
    ]
    lines += [line for block in blocks for line in (block, "")]
    own = [(stem, check) for stem, record in records.items() for check in record["checks"] if id(check) not in used]
    if own:
        holding = sum(check["passed"] for _, check in own)
        lines += ["## The book's own checks", "",
                  ("Checks of the book's methods and runs, not claims of the papers: that a measure passes the "
                  "properties it was chosen for, that runs are determined, that nothing diverged."), "",
                  evidence(f"the book's own checks ({holding} of {len(own)} hold)",
                           table([{"this book finds": _found(check), "chapter": _chapter(stem)} for stem, check in own])),
                  ""]
    return "\n".join(lines).rstrip("\n") + "\n"
