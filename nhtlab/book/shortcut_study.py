"""The runs of a shortcut study (chapter 06) and what it reads off them: records, readings over seeds, checks.

A :class:`ShortcutStudy` is built from a chapter's profile settings: one border
design trained at a main λ over several seeds, a λ sweep, a border-less control,
a ρ sweep, a normalisation comparison, the entangled tint, the background cue
(Waterbirds-like: the class colour fills the pixels behind the digit) and the companion
paper's modular runs. :meth:`ShortcutStudy.runs` lists every run once, for one
:func:`nhtlab.sweep`; the other methods take the ``{run: History}`` mapping the
sweep returned and give table records (:func:`nhtlab.book.table`), readings over seeds
(:func:`nhtlab.book.over_seeds`), the scorecard per domain (:func:`score_runs`) and
the study's pre-fixed checks (:class:`nhtlab.book.Check`). The study holds the NHT paper's CelebA task
(Smiling, Blond_Hair the spurious cue; scored 4/6, separation −0.11) where the data can be had (the ``full``
profile's :data:`CELEBA_DESIGN`); :func:`celeba_scorecard` writes chapter 06's CelebA section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .run_stamp import cpu_model
from .claims import Check, Reading, check_reading, over_seeds, reading_answer, reading_rows
from ..analysis.scorecard import PREDICTIONS, three_regimes
from .scorecard import prediction_readings, scorecard_rows
from ..analysis.separation import Separation, format_score
from ..data.images import DatasetUnavailableError, celeba
from ..papers import NHT_PAPER
from .report import table
from ..plumbing.flags import cache_dir
from ..plumbing.ledger import _label, read_ledger
from .shortcut_report import (REGIME_BUDGET, RECORD_COLUMNS, RECORD_FORMATS, border_reading,
                              check_border_escape, check_rho_trend, check_separation_defined, higher_reading,
                              rho_reading, separation_records)
from .report import Markdown, evidence
from ..analysis.regimes import REGIMES, UNDETERMINED, budget_regime
from ..analysis.events import border_times
from ..history import History
from ..thresholds import SHORTCUT_FITTED_ACCURACY
from ..validation import require_type
from .scorecard_runs import domain_of, score_runs, sweep_records
from ..training.cache import ResultCache
from ..training.shortcut_run import ShortcutRun
from ..training.loop import TrainConfig
from ..training.presets import companion_grid_run

__all__ = ["ShortcutStudy", "SEED_PREDICTIONS", "ledger_cpu_seconds", "CELEBA_DESIGN", "celeba_runs",
           "celeba_problem", "celeba_scorecard"]

#: The predictions read on the main run alone, hence at every seed (P2 and P6 need a whole sweep).
SEED_PREDICTIONS = tuple(name for name in PREDICTIONS if name[:2] in ("P1", "P3", "P4", "P5"))

Histories = Mapping[TrainConfig, History]


def _step(step: int | None) -> str:
    return "never" if step is None else f"{step:,}"


def _ratio(value: float) -> str:
    """V_mem/V_post in words: two decimals, or why it was not measured (P1's NaN)."""
    return "not measured (border never dropped)" if value != value else f"{value:.2f}"


@dataclass(frozen=True)
class ShortcutStudy:
    """Every run of the shortcut study, built from profile settings.

    ``base`` is the border design at ``seeds[0]``; every stated reading runs over ``seeds``, the sweeps at
    ``seeds[0]`` only. ``control_lams`` train the border-less control (``otherwise="none"``);
    ``background_strength`` blends the background towards the class colour (1: filled); ``modular`` is a
    :func:`nhtlab.companion_sweep` dict (empty: no modular domain); ``celeba`` holds ShortcutRun fields of the
    CelebA runs (empty: none). ``regime_budget``: the steps, in units of 1/(ηλ), a run needs before it is
    called weak or strong (:func:`~nhtlab.analysis.regimes.budget_regime`).
    """

    base: ShortcutRun
    lam_main: float
    seeds: tuple[int, ...]
    lams: tuple[float, ...] = ()
    control_lams: tuple[float, ...] = ()
    rhos: tuple[float, ...] = ()
    norms: tuple[str, ...] = ()
    norm_model: str = "simple"
    tint_lams: tuple[float, ...] = ()
    background_lams: tuple[float, ...] = ()
    background_strength: float = 1.0
    fit: float = SHORTCUT_FITTED_ACCURACY
    modular: dict[str, Any] = field(default_factory=dict)
    modular_main: float = 1.0
    celeba: dict[str, Any] = field(default_factory=dict)
    celeba_lams: tuple[float, ...] = ()
    regime_budget: float = REGIME_BUDGET

    @classmethod
    def from_profile(cls, cfg: Any, seed: int = 0) -> "ShortcutStudy":
        """The study of a chapter profile (``nhtlab.book.select_profile``'s namespace or a mapping).

        ``cfg.seeds`` are offsets from ``seed``; names that are not fields (``workers``…) are ignored.
        """
        settings = dict(cfg) if isinstance(cfg, Mapping) else dict(vars(cfg))
        names = {f for f in cls.__dataclass_fields__ if f not in ("base", "seeds")}
        kept = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items() if k in names}
        seeds = tuple(seed + s for s in settings.get("seeds", [0]))
        return cls(base=ShortcutRun(seed=seeds[0], **settings["run"]), seeds=seeds, **kept)

    # --- the runs ---------------------------------------------------------------------------------

    @property
    def main(self) -> dict[int, ShortcutRun]:
        """seed → the main run (the border design at the main λ)."""
        return {s: self.base.replace(weight_decay=self.lam_main, seed=s) for s in self.seeds}

    @property
    def sweep(self) -> dict[float, list[ShortcutRun]]:
        """λ → runs: every seed at the main λ, the first seed elsewhere."""
        return {lam: list(self.main.values()) if lam == self.lam_main else [self.base.replace(weight_decay=lam)]
                for lam in self.lams}

    @property
    def control(self) -> dict[float, ShortcutRun]:
        """λ → the border-less design (no border on the 1 − ρ images), first seed."""
        return {lam: self.base.replace(weight_decay=lam, otherwise="none") for lam in self.control_lams}

    @property
    def control_seeds(self) -> dict[int, ShortcutRun]:
        """seed → the border-less design at the main λ (empty without ``control_lams``)."""
        return {s: r.replace(otherwise="none") for s, r in self.main.items()} if self.control_lams else {}

    @property
    def rho_runs(self) -> dict[float, ShortcutRun]:
        """ρ → the main run at that ρ, first seed."""
        return {rho: self.main[self.seeds[0]].replace(rho=rho) for rho in self.rhos}

    @property
    def rho_ends(self) -> dict[float, dict[int, ShortcutRun]]:
        """The smallest and the largest ρ → seed → run."""
        if not self.rhos:
            return {}
        return {end: {s: r.replace(rho=end) for s, r in self.main.items()} for end in (min(self.rhos), max(self.rhos))}

    @property
    def norm_runs(self) -> dict[str, ShortcutRun]:
        """Normalisation → the main run with it, on ``norm_model``, first seed."""
        return {n: self.main[self.seeds[0]].replace(norm=n, model=self.norm_model) for n in self.norms}

    @property
    def norm_seeds(self) -> dict[str, dict[int, ShortcutRun]]:
        """``"batch"`` and ``"none"`` → seed → run (empty unless both are compared)."""
        if not {"batch", "none"} <= set(self.norms):
            return {}
        return {n: {s: r.replace(norm=n, model=self.norm_model) for s, r in self.main.items()}
                for n in ("batch", "none")}

    @property
    def tint(self) -> dict[float, list[ShortcutRun]]:
        """λ → the entangled tint at that λ, first seed."""
        return {lam: [self.base.replace(kind="tint", weight_decay=lam)] for lam in self.tint_lams}

    @property
    def background(self) -> dict[float, list[ShortcutRun]]:
        """λ → the background cue (``kind="background"``): every seed at the main λ, the first seed elsewhere."""
        by = {s: r.replace(kind="background", strength=self.background_strength) for s, r in self.main.items()}
        return {lam: list(by.values()) if lam == self.lam_main else [by[self.seeds[0]].replace(weight_decay=lam)]
                for lam in self.background_lams}

    @property
    def modular_sweep(self) -> dict[float, list[TrainConfig]]:
        """λ → the companion runs at that λ, one per seed offset."""
        if not self.modular:
            return {}
        return {lam: [companion_grid_run(self.modular, lam, self.seeds[0] + s) for s in self.modular["seeds"]]
                for lam in self.modular["budgets"]}

    def domains(self) -> dict[str, tuple[dict[float, list[TrainConfig]], TrainConfig]]:
        """Domain name → (its λ sweep, its main run), for the domains this study trains."""
        out: dict[str, tuple[dict[float, list[TrainConfig]], TrainConfig]] = {
            "border": (self.sweep, self.main[self.seeds[0]])}
        if self.lam_main in self.tint:
            out["entangled tint"] = (self.tint, self.tint[self.lam_main][0])
        if self.lam_main in self.background:
            out["background"] = (self.background, self.background[self.lam_main][0])
        mod = self.modular_sweep
        if mod.get(self.modular_main):
            out["modular arithmetic"] = (mod, mod[self.modular_main][0])
        return out

    def runs(self) -> list[TrainConfig]:
        """Every run of the study once, in a stable order (for one :func:`nhtlab.sweep`).

        The CelebA runs only where their data can be had (:func:`celeba_problem`, which downloads it
        when their ``download`` is True).
        """
        groups: list[Sequence[TrainConfig]] = [
            list(self.main.values()), *self.sweep.values(), list(self.control.values()),
            list(self.control_seeds.values()), list(self.rho_runs.values()),
            *[list(by.values()) for by in self.rho_ends.values()], list(self.norm_runs.values()),
            *[list(by.values()) for by in self.norm_seeds.values()], *self.tint.values(),
            *self.background.values(), *self.modular_sweep.values(),
            *(celeba_runs(self).values() if celeba_problem(self) is None else ())]
        return list(dict.fromkeys(r for g in groups for r in g))

    # --- what is read off them --------------------------------------------------------------------

    def small_grid(self, trained: Histories) -> list[dict[str, Any]]:
        """The wrong-border and the border-less design at the control λ (first seed), one record each."""
        sweep = self.sweep
        return [*sweep_records({lam: sweep[lam][0] for lam in self.control_lams if lam in sweep}, trained,
                               fit=self.fit, otherwise="other"),
                *sweep_records(self.control, trained, fit=self.fit, otherwise="none")]

    def regime(self, run: TrainConfig, trained: Histories) -> str:
        """The run's regime as its kind's rule reads it, weak or strong only when its budget backs it.

        :func:`~nhtlab.analysis.regimes.budget_regime`'s label: ``"not decided within N steps"`` for a weak or
        strong reading of a run shorter than ``regime_budget``/(ηλ) steps.
        """
        label = domain_of(run, self.fit).regime(trained[run])
        return budget_regime(label, run.steps, run.lr * run.weight_decay, self.regime_budget)

    def lam_records(self, trained: Histories) -> list[dict[str, Any]]:
        """The border's, the tint's and the background's λ sweeps (first seed), one record per λ with its regime.

        The regime is :meth:`regime`'s (budget-backed).
        """
        out = []
        for domain, sweep in (("border", self.sweep), ("entangled tint", self.tint), ("background", self.background)):
            runs = {lam: rs[0] for lam, rs in sweep.items()}
            rows = sweep_records(runs, trained, fit=self.fit, domain=domain)
            out += [{**row, "regime": self.regime(run, trained)} for row, run in zip(rows, runs.values())]
        return out

    def design_readings(self, trained: Histories) -> list[Reading]:
        """Over seeds at the main λ: the wrong-border design drops the border, the border-less one keeps it."""
        pairs = [("wrong border on the 1 − ρ images", self.main, "dropped"),
                 ("no border on the 1 − ρ images", self.control_seeds, "kept")]
        return [over_seeds(f"{name}, λ = {self.lam_main:g}", {s: border_reading(trained[r]) for s, r in by.items()},
                           expected=expected) for name, by, expected in pairs if by]

    def norm_reading(self, trained: Histories) -> Reading | None:
        """Over seeds: does BatchNorm end with a higher clean accuracy than no normalisation (the paper's order)?"""
        by = self.norm_seeds
        if not by:
            return None
        return over_seeds("clean accuracy at the end, BatchNorm against none",
                          {s: higher_reading({n: trained[by[n][s]] for n in ("batch", "none")}, "clean_acc")
                           for s in self.seeds}, expected="batch higher")

    def separations(self, trained: Histories) -> dict[str, Separation]:
        """Domain → the separation score of its main run (read as its run kind says)."""
        return {d: domain_of(m, self.fit).separation(trained[m]) for d, (_, m) in self.domains().items()}

    def scorecard(self, trained: Histories) -> dict[str, dict[str, Check]]:
        """Domain → the six predictions on its sweep (:func:`score_runs`), P2 on budget-backed regimes.

        P2 reads each λ's regime through :meth:`regime`: a run too short to be called weak or strong
        (``regime_budget``/(ηλ) steps) counts as undetermined, which P2 skips, and its detail names
        those λ.
        """
        out = {}
        for d, (runs, m) in self.domains().items():
            card = score_runs(runs, trained, main=m, fit=self.fit)
            labels = {lam: self.regime(r, trained) for lam, rs in runs.items() for r in rs if r.seed == m.seed}
            p2 = three_regimes({lam: r if r in REGIMES else UNDETERMINED for lam, r in labels.items()})
            open_ = [f"{lam:g}" for lam, r in labels.items() if r.startswith("not decided")]
            more = f"; not decided within the budget: λ = {', '.join(open_)}" if open_ else ""
            card["P2 three regimes"] = Check(p2.name, p2.passed, p2.detail + more, p2.value)
            out[d] = card
        return out

    def prediction_readings(self, trained: Histories, domain: str = "border") -> list[Reading]:
        """P1, P3, P4 and P5 on a domain's main run at every seed (the paper expects ✓)."""
        readings = prediction_readings(self._seed_cards(trained, domain), names=SEED_PREDICTIONS)
        if domain == "border":
            return readings
        return [Reading(f"{r.name} ({domain})", r.by_seed, r.expected, r.rule) for r in readings]

    def _seed_cards(self, trained: Histories, domain: str = "border") -> dict[int, dict[str, Check]]:
        runs = self._seed_runs(domain)
        return {s: score_runs({self.lam_main: [r]}, trained, main=r, fit=self.fit) for s, r in runs.items()}

    def _seed_runs(self, domain: str) -> dict[int, ShortcutRun]:
        if domain == "border":
            return self.main
        if domain != "background" or self.lam_main not in self.background:
            raise ValueError(f"ShortcutStudy: the domain must be 'border' or 'background' (with the main λ in "
                             f"'background_lams'). Got {domain!r} with background_lams {list(self.background_lams)}.")
        return dict(zip(self.seeds, self.background[self.lam_main]))

    def background_readings(self, trained: Histories, threshold: float = 0.5) -> tuple[Check, list[Reading]]:
        """The background cue over seeds: whether it is learnt (asserted), and the law's readings (shown).

        Learnt: the cue-agreeing accuracy at the end exceeds the cue-conflicting one in a strict majority of
        seeds. Shown: the separation below ``threshold`` and below the border's of the same seed (the paper's
        Waterbirds ≈ 0 against CIFAR-10's border 0.5–0.7; undefined counts as below), then P1, P3, P4, P5.
        """
        runs = self._seed_runs("background")
        ends = {s: trained[r].rows[-1] for s, r in runs.items()}
        learnt = check_reading(over_seeds(
            "background: the cue is learnt (cue-agreeing accuracy above cue-conflicting)",
            {s: "learnt" if e["coloured_acc"] > e["conflict_acc"] else "not learnt" for s, e in ends.items()},
            expected="learnt"))
        detail = ", ".join(f"seed {s}: {e['coloured_acc']:.2f} against {e['conflict_acc']:.2f}" for s, e in ends.items())
        seps = {s: domain_of(r, self.fit).separation(trained[r]) for s, r in runs.items()}
        below = over_seeds(f"background: separation below {threshold:g} (the law not expected to hold)",
                           {s: "below" if not (sep.defined and sep.score >= threshold) else "above"
                            for s, sep in seps.items()}, expected="below")
        border = {s: domain_of(r, self.fit).separation(trained[r]) for s, r in self.main.items()}
        under = over_seeds("background: separation below the border's (same seed)",
                           {s: "below" if not sep.defined or (border[s].defined and sep.score < border[s].score)
                            else "not below" for s, sep in seps.items()}, expected="below")
        learnt = Check(learnt.name, learnt.passed, f"{learnt.detail}; {detail}")
        return learnt, [below, under, *self.prediction_readings(trained, "background")]

    def worst_group_rows(self, trained: Histories) -> list[dict[str, Any]]:
        """Per seed: the worst-group (``conflict``) accuracy at the end and the separation score (text:
        ``"undefined"`` for NaN), border against background."""
        border, bg = self.main, self._seed_runs("background")

        def score(run: ShortcutRun) -> str:
            return format_score(domain_of(run, self.fit).separation(trained[run]))

        return [{"seed": s, "border": trained[border[s]].rows[-1]["conflict_acc"],
                 "background": trained[bg[s]].rows[-1]["conflict_acc"], "border separation": score(border[s]),
                 "separation": score(bg[s])} for s in self.seeds]

    # --- the lesson's text: sentences built from the runs, each with its evidence closed -----------

    def design_report(self, trained: Histories) -> Markdown:
        """Chapter 06's two designs at the main λ, in words over seeds, the per-run tables closed."""
        readings = self.design_readings(trained)
        said = [f"{r.name}: the border {r.text()}" for r in readings]
        if self.control_seeds:
            ends = {s: (trained[self.main[s]].rows[-1]["clean_acc"], trained[r].rows[-1]["clean_acc"])
                    for s, r in self.control_seeds.items()}
            lower = over_seeds("", {s: "lower" if b < a else "not lower" for s, (a, b) in ends.items()},
                               expected="lower")
            said.append("clean accuracy at the end without the wrong borders, against with them: "
                        + ", ".join(f"seed {s}: {b:.2f} against {a:.2f}" for s, (a, b) in ends.items())
                        + f" (lower in {lower.k} of {lower.n} seeds)")
        grid = self.small_grid(trained)
        parts = ([table(grid, columns=["otherwise", "λ", *RECORD_COLUMNS], formats={**RECORD_FORMATS, "λ": "{:g}"})]
                 if grid else [])
        return Markdown(". ".join(x[:1].upper() + x[1:] for x in said) + ".\n\n"
                        + evidence("both designs, run by run", *parts, table(reading_rows(readings))))

    def lam_report(self, trained: Histories) -> Markdown:
        """The λ sweep of the border (seed 0) in words, regime by regime, and every domain's table closed."""
        rows = self.lam_records(trained)
        border = [r for r in rows if r["domain"] == "border"]

        def fate(r: Mapping[str, Any]) -> str:
            if r["fitted at"] is None:
                return "the border never fitted"
            return "the border kept" if r["dropped at"] is None else f"the border dropped at step {r['dropped at']:,}"

        dropped = sum(r["dropped at"] is not None for r in border)
        head = (f"Seed {self.seeds[0]}: " + "; ".join(f"λ = {r['λ']:g}, {r['regime']}, {fate(r)}" for r in border)
                + f". The border was dropped at {dropped} of {len(border)} weight decays.")
        cols = ["domain", "λ", "regime", *RECORD_COLUMNS, "contraction"]
        return Markdown(head + "\n\n" + evidence(
            "every λ's run (seed 0)", table(rows, columns=cols, formats={**RECORD_FORMATS, "λ": "{:g}",
                                                                          "contraction": "{:.1%}"})))

    def rho_report(self, trained: Histories) -> Markdown:
        """The ρ sweep's runs (seed 0) as a closed table."""
        rows = sweep_records(self.rho_runs, trained, key="ρ", fit=self.fit)
        return evidence("every ρ's run (seed 0)", table(rows, columns=["ρ", *RECORD_COLUMNS], formats=RECORD_FORMATS))

    def norm_report(self, trained: Histories) -> Markdown:
        """The normalisations: the paper's ranking and ours over seeds in words, the runs' table closed."""
        bn = self.norm_reading(trained)
        paper = ", ".join(f"{n} {v:.1%}" for n, v in NHT_PAPER["clean_by_norm"].items())
        ours = (f" Ours (SimpleCNN, digits): BatchNorm ended above no normalisation in {bn.k} of {bn.n} seeds "
                f"({', '.join(f'seed {s}: {v}' for s, v in bn.by_seed.items())})." if bn else "")
        rows = sweep_records(self.norm_runs, trained, key="norm", fit=self.fit)
        cols = ["norm", *RECORD_COLUMNS, "norm peak step", "contraction"]
        return Markdown(f"Paper (ResNet18, CIFAR-10, clean): {paper}.{ours}\n\n" + evidence(
            "each normalisation's run (seed 0)",
            table(rows, columns=cols, formats={**RECORD_FORMATS, "contraction": "{:.1%}"})))

    def separation_report(self, trained: Histories) -> Markdown:
        """Each domain's separation score beside the paper's in words, the estimator's table closed."""
        rows = separation_records(self.separations(trained))
        paper = ", ".join(f"{d} {v}" for d, v in NHT_PAPER["separation"].items())
        ours = ", ".join(f"{r['domain']} {r['score text']}" for r in rows)
        return Markdown(f"Clean norm separation, ours (main run, seed {self.seeds[0]}): {ours}. Paper: {paper}.\n\n"
                        + evidence("the separation's window per domain", table(
                            rows, columns=["domain", "score text", "start_step", "n_points", "phi_drop"],
                            headers={"score text": "score", "start_step": "from step", "n_points": "points",
                                     "phi_drop": "φ drop"}, formats={"phi_drop": "{:.2f}"})))

    def norm_ratios(self, trained: Histories) -> dict[int, float]:
        """seed → V_mem/V_post of the border's main run: ‖θ‖² when the border is fitted over ‖θ‖² at
        the end (P1's value; NaN when the border was never fitted or never dropped)."""
        return {s: card["P1 norm ordering"].value for s, card in self._seed_cards(trained).items()}

    def scorecard_report(self, trained: Histories) -> Markdown:
        """The scorecard in words (predictions held per domain, the paper's beside them; P1 over seeds),
        the scorecard's and the per-seed readings' tables closed."""
        card, per_seed = self.scorecard(trained), self.prediction_readings(trained)
        held = ", ".join(f"{d} {sum(c.passed for c in row.values())}/6" for d, row in card.items())
        paper = ", ".join(f"{d} {k}/6" for d, k in NHT_PAPER["scorecard"].items())
        ratios = ", ".join(f"seed {s}: {_ratio(v)}" for s, v in self.norm_ratios(trained).items())
        p1 = next(r for r in per_seed if r.name.startswith("P1"))
        return Markdown(
            f"Predictions that hold on each domain's sweep (main run: seed {self.seeds[0]}): {held}. Paper: {paper}. "
            f"On the border's main run, V_mem/V_post is {ratios}: P1 holds in {p1.k} of {p1.n} seeds.\n\n"
            + evidence("the scorecard, and P1, P3, P4, P5 at every seed", table(scorecard_rows(card)),
                       table(reading_rows(per_seed))))

    def background_report(self, trained: Histories) -> tuple[Check, list[Reading], Markdown]:
        """The background cue: :meth:`background_readings`' check and readings, and the section's text."""
        learnt, readings = self.background_readings(trained)
        def said(name: str) -> str:
            name = name.removeprefix("background: ")
            return name[:1].upper() + name[1:]

        words = " ".join(f"{said(r.name)}: {r.k} of {r.n} seeds." for r in readings[:2])
        paper = (f"Paper: Waterbirds {NHT_PAPER['scorecard']['Waterbirds']}/6, separation "
                 f"{NHT_PAPER['separation']['Waterbirds']}.")
        ends = {s: trained[r].rows[-1] for s, r in self._seed_runs("background").items()}
        k = sum(e["coloured_acc"] > e["conflict_acc"] for e in ends.values())
        head = (f"The background cue is learnt in {k} of {len(ends)} seeds: at "
                "the end, cue-agreeing against cue-conflicting accuracy "
                + ", ".join(f"seed {s}: {e['coloured_acc']:.2f} against {e['conflict_acc']:.2f}" for s, e in ends.items())
                + f". {words} {paper}")
        rows = self.worst_group_rows(trained)
        body = evidence("the background runs, seed by seed", table(
            rows, formats={"border": "{:.2f}", "background": "{:.2f}"}, headers={"separation": "background separation"}),
            table(reading_rows(readings)))
        return learnt, readings, Markdown(head + "\n\n" + body)

    def main_report(self, trained: Histories, seed: int) -> Markdown:
        """The border's main run at ``seed``, its P1 and P5 over seeds in words, its record closed."""
        p1, p5 = (r for r in self.prediction_readings(trained) if r.name[:2] in ("P1", "P5"))
        seps = {s: format_score(domain_of(r, self.fit).separation(trained[r])) for s, r in self.main.items()}
        rows = sweep_records({self.lam_main: self.main[seed]}, trained, fit=self.fit)
        return Markdown(f"Over seeds: P1 (V_mem > V_post) holds in {p1.k} of {p1.n}; P5 (separation defined and "
                        f"≥ 0.5) in {p5.k} of {p5.n}, the scores being "
                        + ", ".join(f"seed {s}: {v}" for s, v in seps.items()) + ".\n\n"
                        + evidence(f"the main run (seed {seed}, λ = {self.lam_main:g})",
                                   table(rows, columns=list(RECORD_COLUMNS), formats=RECORD_FORMATS)))

    def found(self, trained: Histories, margin: float = 0.2) -> list[str]:
        """The chapter's "What we found" sentences, each built from the runs (k of n); ``margin``: the ρ check's."""
        design = self.design_readings(trained)
        out = [f"At λ = {self.lam_main:g} the CNN fitted the border and then dropped it in {design[0].k} of "
               f"{design[0].n} seeds" + (f"; with no border on the other images it kept it in {design[1].k} of "
                                          f"{design[1].n} at the same λ: the drop comes with the wrong-border "
                                          "images, not with the decay alone."
                                          if len(design) > 1 else ".")]
        border = [r for r in self.lam_records(trained) if r["domain"] == "border"]
        if len(border) > 1:
            low = min(border, key=lambda r: r["λ"])
            out.append(f"The drop does not wait for strong decay: at the smallest λ, {low['λ']:g}, the border was "
                       + ("kept" if low["dropped at"] is None else f"dropped at step {low['dropped at']:,}")
                       + f" (seed {self.seeds[0]}), and {sum(r['dropped at'] is not None for r in border)} of "
                       f"{len(border)} weight decays dropped it.")
        ratios = self.norm_ratios(trained)
        p1 = sum(bool(v > 1) for v in ratios.values())
        out.append(f"The law's premise P1, a shortcut costlier in norm than what replaces it (V_mem > V_post), held "
                   f"in {p1} of {len(ratios)} seeds (V_mem/V_post: "
                   + ", ".join(_ratio(v) for v in ratios.values()) + ").")
        if len(self.rho_ends) == 2:
            (lo, low_runs), (hi, high_runs) = sorted(self.rho_ends.items())
            falls = sum(rho_reading(trained[low_runs[s]], trained[high_runs[s]], margin) == "falls" for s in low_runs)
            out.append(f"A more reliable border leaves the worst group worse off: its accuracy fell by more than "
                       f"{margin:g} from ρ = {lo:g} to ρ = {hi:g} in {falls} of {len(low_runs)} seeds.")
        bn = self.norm_reading(trained)
        if bn:
            out.append(f"BatchNorm ended above no normalisation in clean accuracy in {bn.k} of {bn.n} seeds.")
        return out

    # --- answers to the chapter's predictions (nhtlab.book.check_prediction) -----------------------

    def escape_answer(self, trained: Histories) -> tuple[str, tuple[str, str], str]:
        """Does the main run fit the border and then drop it? Over seeds, as :func:`reading_answer` reads it."""
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.escape_answer")
        steps = {s: border_times(trained[r]) for s, r in self.main.items()}
        reading = over_seeds(f"the border at λ = {self.lam_main:g}",
                             {s: border_reading(trained[r]) for s, r in self.main.items()}, expected="dropped")
        detail = ", ".join(f"seed {s}: fitted at {_step(f)}, dropped at {_step(d)}" for s, (f, d) in steps.items())
        return reading_answer(reading, detail=detail)

    def rho_answer(self, trained: Histories, margin: float = 0.2) -> tuple[str, tuple[str, str], str]:
        """Does the worst-group accuracy at the end fall by more than ``margin`` from the smallest ρ to the largest?"""
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.rho_answer")
        if len(self.rho_ends) != 2:
            raise ValueError(f"ShortcutStudy.rho_answer needs two ρ or more in 'rhos'. Got {list(self.rhos)}.")
        (lo, low), (hi, high) = sorted(self.rho_ends.items())
        reading = over_seeds(f"the worst-group accuracy from ρ = {lo:g} to ρ = {hi:g}",
                             {s: rho_reading(trained[low[s]], trained[high[s]], margin) for s in low},
                             expected="falls")
        end = {s: (trained[low[s]].rows[-1]["conflict_acc"], trained[high[s]].rows[-1]["conflict_acc"]) for s in low}
        detail = (f"it has to fall by more than {margin:g}; at the end, seed by seed: "
                  + ", ".join(f"seed {s}: {a:.2f} → {b:.2f}" for s, (a, b) in end.items()))
        return reading_answer(reading, detail=detail)

    def norm_answer(self, trained: Histories) -> tuple[str, tuple[str, str], str]:
        """Does BatchNorm end with a higher clean accuracy than no normalisation (:meth:`norm_reading`)?"""
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.norm_answer")
        reading = self.norm_reading(trained)
        if reading is None:
            raise ValueError(f"ShortcutStudy.norm_answer needs 'batch' and 'none' in 'norms'. Got {list(self.norms)}.")
        by = self.norm_seeds
        clean = {s: [trained[by[n][s]].rows[-1]["clean_acc"] for n in ("batch", "none")] for s in self.seeds}
        detail = "seed by seed: " + ", ".join(
            f"seed {s}: {b:.2f} against {n:.2f}" for s, (b, n) in clean.items())
        return reading_answer(reading, detail=detail)

    def checks(self, trained: Histories, margin: float = 0.2) -> list[Check]:
        """The study's pre-fixed checks, each over the seeds by a strict majority.

        The border is fitted then dropped in the main run; the worst-group accuracy at the end
        falls by more than ``margin`` from the smallest ρ to the largest; the main run's
        separation score is defined.
        """
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.checks")
        main = self.main
        out = [check_border_escape({s: trained[r] for s, r in main.items()})]
        if len(self.rho_ends) == 2:
            low, high = (self.rho_ends[k] for k in sorted(self.rho_ends))
            out.append(check_rho_trend({s: trained[r] for s, r in low.items()},
                                       {s: trained[r] for s, r in high.items()}, margin=margin))
        out.append(check_separation_defined({s: domain_of(r, self.fit).separation(trained[r])
                                             for s, r in main.items()}))
        return out


def ledger_cpu_seconds(runs: Sequence[TrainConfig], cache: ResultCache | None = None) -> float:
    """CPU seconds the build's ledger records for training ``runs`` (the latest training of each; 0 when none).

    Lines are matched by the ledger's label of a run, not its cache key: the key holds the torch thread
    count of the process that computes it, and a pool worker's differs from the chapter's.
    """
    root = cache.root if cache is not None else cache_dir()
    labels = {_label(r) for r in runs}
    latest = {line["label"]: line.get("cpu_s") or 0.0 for line in read_ledger(root) if line.get("label") in labels}
    return float(sum(latest.values()))


def ledger_cost(runs: Sequence[TrainConfig], cache: ResultCache | None = None) -> str:
    """'n runs, s CPU s on the build's ledger (<CPU model>)': :func:`ledger_cpu_seconds` in words."""
    return f"{len(runs)} runs, {ledger_cpu_seconds(runs, cache):.0f} CPU s on the build's ledger ({cpu_model()})"


#: The ``full`` profile's CelebA runs: the paper's SimpleCNN recipe (AdamW lr 1e-3, cosine), 8,000 training
#: faces at 64 × 64 with blond ↔ smiling on ρ = 0.95 of them (nhtlab's choice: the paper gives no ρ for
#: CelebA; its Waterbirds correlation is 95%), batch 128 for 200 epochs, downloaded into ``data/``.
CELEBA_DESIGN = MappingProxyType(dict(
    kind="celeba", root="data", download=True, size=64, train_size=8000, rho=0.95, channels=(32, 32, 64, 64, 128, 128),
    lr=1e-3, schedule="cosine", batch_size=128, steps=12_500, eval_every=125))


def celeba_runs(study: ShortcutStudy) -> dict[float, list[ShortcutRun]]:
    """λ → the study's CelebA runs (its ``celeba`` fields): every seed at the main λ, the first seed elsewhere."""
    if not study.celeba_lams:
        return {}
    by = {s: ShortcutRun(**{**study.celeba, "seed": s, "weight_decay": study.lam_main}) for s in study.seeds}
    return {lam: list(by.values()) if lam == study.lam_main else [by[study.seeds[0]].replace(weight_decay=lam)]
            for lam in study.celeba_lams}


def celeba_problem(study: ShortcutStudy) -> str | None:
    """Why the study's CelebA runs cannot train here (the data absent, or its download failed: the error's
    message), None when they can or the study has none. Reads a few faces, downloading CelebA first when
    the runs' ``download`` is True."""
    runs = [r for rs in celeba_runs(study).values() for r in rs]
    try:
        if runs:
            celeba(runs[0].root, runs[0].download, size=4, n_train=8, n_test=4)
    except DatasetUnavailableError as exc:
        return str(exc)
    return None


def celeba_scorecard(study: ShortcutStudy, trained: Histories, cache: ResultCache | None = None) -> str:
    """The CelebA section's markdown from the study's trained CelebA runs, the paper's values beside ours.

    Our count of the six predictions beside the paper's 4/6, then, closed, the scorecard, per seed the
    worst-group accuracy (the least of the four groups'), the separation beside the paper's −0.11, the
    readings over seeds and the runs' cost. Or one line: no CelebA in this profile, or why the data is missing.
    """
    paper = f"Paper: CelebA {NHT_PAPER['scorecard']['CelebA']}/6, separation {NHT_PAPER['separation']['CelebA']}."
    runs_by_lam = celeba_runs(study)
    if study.lam_main not in runs_by_lam:
        return ("The CelebA runs are in the `full` profile and need CelebA's download (torchvision, about 1.4 GB "
                f"from Google Drive; Colab: `download=True`); this profile trains none. {paper}")
    runs = list(dict.fromkeys(r for rs in runs_by_lam.values() for r in rs))
    if any(r not in trained for r in runs):
        return f"No CelebA scorecard here: {celeba_problem(study) or 'its runs were not trained.'} {paper}"
    main = dict(zip(study.seeds, runs_by_lam[study.lam_main]))
    card = score_runs(runs_by_lam, trained, main=main[study.seeds[0]], fit=study.fit)
    seps = {s: domain_of(r, study.fit).separation(trained[r]) for s, r in main.items()}
    ends: dict[int, dict[str, Any]] = {s: trained[r].rows[-1] for s, r in main.items()}
    rows = [{"seed": s, "worst group": min(e[f"group{t}{a}_acc"] for t in (0, 1) for a in (0, 1)),
             "conflict": e["conflict_acc"], "clean": e["clean_acc"], "separation": format_score(seps[s]),
             "paper separation": NHT_PAPER["separation"]["CelebA"]} for s, e in ends.items()]
    cards = {s: score_runs({study.lam_main: [r]}, trained, main=r, fit=study.fit) for s, r in main.items()}
    readings = [over_seeds("CelebA: separation below 0.5 (the paper: −0.11)",
                           {s: "below" if not (sep.defined and sep.score >= 0.5) else "above" for s, sep in seps.items()},
                           expected="below"),
                *[Reading(f"{r.name} (CelebA)", r.by_seed, r.expected, r.rule)
                  for r in prediction_readings(cards, names=SEED_PREDICTIONS)]]
    passed = sum(c.passed for c in card.values())
    return (f"Ours: {passed}/6 (seed {study.seeds[0]}). {paper}\n\n" + evidence(
        "the CelebA scorecard, seed by seed", table(scorecard_rows({"CelebA": card})),
        table(rows, formats={"worst group": "{:.2f}", "conflict": "{:.2f}", "clean": "{:.2f}"}),
        table(reading_rows(readings)), f"The CelebA runs: {ledger_cost(runs, cache)}."))
