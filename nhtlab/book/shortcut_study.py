"""The runs of a shortcut study (chapter 06) and what it reads off them: records, readings over seeds, checks.

:meth:`ShortcutStudy.runs` lists every run once for one :func:`nhtlab.sweep`; the other methods read the
``{run: History}`` mapping it returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..analysis.events import border_times
from ..analysis.regimes import REGIMES, UNDETERMINED, budget_regime
from ..analysis.scorecard import PREDICTIONS, three_regimes
from ..analysis.separation import Separation, format_score
from ..data.images import DatasetUnavailableError, celeba
from ..history import History
from ..papers import NHT_PAPER
from ..plumbing.flags import cache_dir
from ..plumbing.ledger import _label, read_ledger
from ..thresholds import SHORTCUT_FITTED_ACCURACY
from ..training.cache import ResultCache
from ..training.loop import TrainConfig
from ..training.presets import companion_grid_run
from ..training.shortcut_run import ShortcutRun
from ..validation import require_type
from .claims import Check, Reading, check_reading, over_seeds, reading_answer, reading_rows
from .report import Markdown, evidence, table
from .run_stamp import cpu_model
from .shortcut_report import (REGIME_BUDGET, RECORD_COLUMNS, RECORD_FORMATS, border_reading, check_border_escape,
                              check_rho_trend, check_separation_defined, domain_of, prediction_readings,
                              rho_reading, score_runs, scorecard_rows, separation_records, sweep_records)

__all__ = ["ShortcutStudy", "SEED_PREDICTIONS", "ledger_cpu_seconds", "CELEBA_DESIGN", "celeba_runs",
           "celeba_problem", "celeba_scorecard"]

#: The predictions read on the main run alone, hence at every seed (P2 and P6 need a whole sweep).
SEED_PREDICTIONS = tuple(name for name in PREDICTIONS if name[:2] in ("P1", "P3", "P4", "P5"))

Histories = Mapping[TrainConfig, History]


def _ratio(value: float) -> str:
    """V_mem/V_post in words: two decimals, or why it was not measured (P1's NaN)."""
    return "not measured (border never dropped)" if value != value else f"{value:.2f}"


def _ends(runs: Mapping[int, TrainConfig], trained: Histories) -> dict[int, dict[str, Any]]:
    """seed → the last evaluated row of its run."""
    return {s: trained[r].rows[-1] for s, r in runs.items()}


def _cue_against_conflict(ends: Mapping[int, Mapping[str, Any]]) -> str:
    return ", ".join(f"seed {s}: {e['coloured_acc']:.2f} against {e['conflict_acc']:.2f}" for s, e in ends.items())


def _below(seps: Mapping[int, Separation], threshold: float) -> dict[int, str]:
    """seed → ``"below"`` where the separation is undefined or under ``threshold``, else ``"above"``."""
    return {s: "above" if sep.defined and sep.score >= threshold else "below" for s, sep in seps.items()}


def _seed_readings(runs: Mapping[int, TrainConfig], trained: Histories, lam: float, fit: float,
                   suffix: str = "") -> list[Reading]:
    """P1, P3, P4 and P5 on each seed's run alone, over seeds; ``suffix`` follows each name ("(CelebA)")."""
    cards = {s: score_runs({lam: [r]}, trained, main=r, fit=fit) for s, r in runs.items()}
    return [Reading(f"{r.name}{suffix}", r.by_seed, r.expected, r.rule)
            for r in prediction_readings(cards, names=SEED_PREDICTIONS)]


@dataclass(frozen=True)
class ShortcutStudy:
    """Every run of the shortcut study, built from profile settings: one border design at a main λ over seeds, a λ
    sweep, a border-less control, a ρ sweep, normalisations, the entangled tint, the background cue (Waterbirds-like),
    the companion paper's modular runs and, where the data can be had, the NHT paper's CelebA task.

    ``base`` is the border design at ``seeds[0]``; readings run over ``seeds``, the sweeps at ``seeds[0]`` only.
    ``modular`` is a :func:`nhtlab.companion_sweep` dict and ``celeba`` ShortcutRun fields (empty: none);
    ``regime_budget`` is :func:`~nhtlab.analysis.regimes.budget_regime`'s, in units of 1/(ηλ).
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
        """The study of a chapter profile (a namespace or a mapping); ``cfg.seeds`` are offsets from ``seed``."""
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

    def _each_seed(self, **changes: Any) -> dict[int, ShortcutRun]:
        """seed → the main run with ``changes``."""
        return {s: r.replace(**changes) for s, r in self.main.items()}

    def _lam_sweep(self, by_seed: Mapping[int, ShortcutRun], lams: Sequence[float]) -> dict[float, list[ShortcutRun]]:
        """λ → runs: every seed of ``by_seed`` at the main λ, the first seed elsewhere."""
        return {lam: list(by_seed.values()) if lam == self.lam_main
                else [by_seed[self.seeds[0]].replace(weight_decay=lam)] for lam in lams}

    @property
    def sweep(self) -> dict[float, list[ShortcutRun]]:
        """λ → runs: every seed at the main λ, the first seed elsewhere."""
        return self._lam_sweep(self.main, self.lams)

    @property
    def control(self) -> dict[float, ShortcutRun]:
        """λ → the border-less design (no border on the 1 − ρ images), first seed."""
        return {lam: self.base.replace(weight_decay=lam, otherwise="none") for lam in self.control_lams}

    @property
    def control_seeds(self) -> dict[int, ShortcutRun]:
        """seed → the border-less design at the main λ (empty without ``control_lams``)."""
        return self._each_seed(otherwise="none") if self.control_lams else {}

    @property
    def rho_runs(self) -> dict[float, ShortcutRun]:
        """ρ → the main run at that ρ, first seed."""
        return {rho: self.main[self.seeds[0]].replace(rho=rho) for rho in self.rhos}

    @property
    def rho_ends(self) -> dict[float, dict[int, ShortcutRun]]:
        """The smallest and the largest ρ → seed → run."""
        return {end: self._each_seed(rho=end) for end in (min(self.rhos), max(self.rhos))} if self.rhos else {}

    @property
    def norm_runs(self) -> dict[str, ShortcutRun]:
        """Normalisation → the main run with it, on ``norm_model``, first seed."""
        return {n: self.main[self.seeds[0]].replace(norm=n, model=self.norm_model) for n in self.norms}

    @property
    def norm_seeds(self) -> dict[str, dict[int, ShortcutRun]]:
        """``"batch"`` and ``"none"`` → seed → run (empty unless both are compared)."""
        if not {"batch", "none"} <= set(self.norms):
            return {}
        return {n: self._each_seed(norm=n, model=self.norm_model) for n in ("batch", "none")}

    @property
    def tint(self) -> dict[float, list[ShortcutRun]]:
        """λ → the entangled tint at that λ, first seed."""
        return {lam: [self.base.replace(kind="tint", weight_decay=lam)] for lam in self.tint_lams}

    @property
    def background(self) -> dict[float, list[ShortcutRun]]:
        """λ → the background cue (``kind="background"``): every seed at the main λ, the first seed elsewhere."""
        return self._lam_sweep(self._each_seed(kind="background", strength=self.background_strength),
                               self.background_lams)

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
        for d, sweep, lam in (("entangled tint", self.tint, self.lam_main), ("background", self.background, self.lam_main),
                              ("modular arithmetic", self.modular_sweep, self.modular_main)):
            if sweep.get(lam):
                out[d] = (sweep, sweep[lam][0])
        return out

    def runs(self) -> list[TrainConfig]:
        """Every run of the study once, in a stable order; the CelebA runs only where :func:`celeba_problem` finds none."""
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
        """The run's regime as its kind's rule reads it, weak or strong only when its budget backs it (budget_regime)."""
        label = domain_of(run, self.fit).regime(trained[run])
        return budget_regime(label, run.steps, run.lr * run.weight_decay, self.regime_budget)

    def lam_records(self, trained: Histories) -> list[dict[str, Any]]:
        """The border's, the tint's and the background's λ sweeps (first seed), one record per λ, :meth:`regime`'s."""
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
        if not self.norm_seeds:
            return None
        batch, none = (_ends(self.norm_seeds[n], trained) for n in ("batch", "none"))
        ends = {s: (e["clean_acc"], none[s]["clean_acc"]) for s, e in batch.items()}
        return over_seeds("clean accuracy at the end, BatchNorm against none",
                          {s: "tie" if b == n else f"{'batch' if b > n else 'none'} higher" for s, (b, n) in ends.items()},
                          expected="batch higher")

    def _separations(self, runs: Mapping[Any, TrainConfig], trained: Histories) -> dict[Any, Separation]:
        """key → the separation score of its run (read as its run kind says)."""
        return {k: domain_of(r, self.fit).separation(trained[r]) for k, r in runs.items()}

    def separations(self, trained: Histories) -> dict[str, Separation]:
        """Domain → the separation score of its main run (read as its run kind says)."""
        return self._separations({d: m for d, (_, m) in self.domains().items()}, trained)

    def scorecard(self, trained: Histories) -> dict[str, dict[str, Check]]:
        """Domain → the six predictions on its sweep (:func:`score_runs`), P2 on :meth:`regime`'s budget-backed
        regimes: a λ not decided within the budget counts as undetermined, and P2's detail names it."""
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
        return _seed_readings(self._seed_runs(domain), trained, self.lam_main, self.fit,
                              "" if domain == "border" else f" ({domain})")

    def _seed_runs(self, domain: str) -> dict[int, ShortcutRun]:
        if domain == "border":
            return self.main
        if domain != "background" or self.lam_main not in self.background:
            raise ValueError(f"ShortcutStudy: the domain must be 'border' or 'background' (with the main λ in "
                             f"'background_lams'). Got {domain!r} with background_lams {list(self.background_lams)}.")
        return dict(zip(self.seeds, self.background[self.lam_main]))

    def background_readings(self, trained: Histories, threshold: float = 0.5) -> tuple[Check, list[Reading]]:
        """The background cue over seeds: whether it is learnt (asserted), and the law's readings (shown): the
        separation below ``threshold`` and below the border's of the same seed (undefined: below), P1, P3, P4, P5."""
        runs = self._seed_runs("background")
        ends = _ends(runs, trained)
        learnt = check_reading(over_seeds(
            "background: the cue is learnt (cue-agreeing accuracy above cue-conflicting)",
            {s: "learnt" if e["coloured_acc"] > e["conflict_acc"] else "not learnt" for s, e in ends.items()},
            expected="learnt"))
        seps, border = self._separations(runs, trained), self._separations(self.main, trained)
        below = over_seeds(f"background: separation below {threshold:g} (the law not expected to hold)",
                           _below(seps, threshold), expected="below")
        under = over_seeds("background: separation below the border's (same seed)",
                           {s: "below" if not sep.defined or (border[s].defined and sep.score < border[s].score)
                            else "not below" for s, sep in seps.items()}, expected="below")
        learnt = Check(learnt.name, learnt.passed, f"{learnt.detail}; {_cue_against_conflict(ends)}")
        return learnt, [below, under, *self.prediction_readings(trained, "background")]

    def worst_group_rows(self, trained: Histories) -> list[dict[str, Any]]:
        """Per seed: the worst-group accuracy at the end and the separation score, border against background."""
        runs = {"border": self.main, "background": self._seed_runs("background")}
        ends = {k: _ends(by, trained) for k, by in runs.items()}
        seps = {k: self._separations(by, trained) for k, by in runs.items()}
        return [{"seed": s, "border": ends["border"][s]["conflict_acc"], "background": ends["background"][s]["conflict_acc"],
                 "border separation": format_score(seps["border"][s]), "separation": format_score(seps["background"][s])}
                for s in self.seeds]

    # --- the lesson's text: sentences built from the runs, each with its evidence closed -----------

    def design_report(self, trained: Histories) -> Markdown:
        """Chapter 06's two designs at the main λ, in words over seeds, the per-run tables closed."""
        readings = self.design_readings(trained)
        said = [f"{r.name}: the border {r.text()}" for r in readings]
        if self.control_seeds:
            with_, without = _ends(self.main, trained), _ends(self.control_seeds, trained)
            ends = {s: (with_[s]["clean_acc"], e["clean_acc"]) for s, e in without.items()}
            said.append("clean accuracy at the end without the wrong borders, against with them: "
                        + ", ".join(f"seed {s}: {b:.2f} against {a:.2f}" for s, (a, b) in ends.items())
                        + f" (lower in {sum(b < a for a, b in ends.values())} of {len(ends)} seeds)")
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
        """seed → V_mem/V_post of the border's main run (P1's value; NaN when never fitted or never dropped)."""
        return {s: score_runs({self.lam_main: [r]}, trained, main=r, fit=self.fit)["P1 norm ordering"].value
                for s, r in self.main.items()}

    def scorecard_report(self, trained: Histories) -> Markdown:
        """The scorecard in words beside the paper's, P1 over seeds, the scorecard and per-seed readings closed."""
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
        said = [r.name.removeprefix("background: ") for r in readings[:2]]
        words = " ".join(f"{name[:1].upper() + name[1:]}: {r.k} of {r.n} seeds." for name, r in zip(said, readings))
        paper = (f"Paper: Waterbirds {NHT_PAPER['scorecard']['Waterbirds']}/6, separation "
                 f"{NHT_PAPER['separation']['Waterbirds']}.")
        ends = _ends(self._seed_runs("background"), trained)
        k = sum(e["coloured_acc"] > e["conflict_acc"] for e in ends.values())
        head = (f"The background cue is learnt in {k} of {len(ends)} seeds: at the end, cue-agreeing against "
                f"cue-conflicting accuracy {_cue_against_conflict(ends)}. {words} {paper}")
        body = evidence("the background runs, seed by seed", table(
            self.worst_group_rows(trained), formats={"border": "{:.2f}", "background": "{:.2f}"},
            headers={"separation": "background separation"}), table(reading_rows(readings)))
        return learnt, readings, Markdown(head + "\n\n" + body)

    def main_report(self, trained: Histories, seed: int) -> Markdown:
        """The border's main run at ``seed``, its P1 and P5 over seeds in words, its record closed."""
        p1, p5 = (r for r in self.prediction_readings(trained) if r.name[:2] in ("P1", "P5"))
        seps = {s: format_score(sep) for s, sep in self._separations(self.main, trained).items()}
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
            fall = self._rho_fall(trained, margin)
            out.append(f"A more reliable border leaves the worst group worse off: its accuracy fell by more than "
                       f"{margin:g} from ρ = {min(self.rhos):g} to ρ = {max(self.rhos):g} in {fall.k} of {fall.n} seeds.")
        bn = self.norm_reading(trained)
        if bn:
            out.append(f"BatchNorm ended above no normalisation in clean accuracy in {bn.k} of {bn.n} seeds.")
        return out

    # --- answers to the chapter's predictions (nhtlab.book.check_prediction) -----------------------

    def escape_answer(self, trained: Histories) -> tuple[str, tuple[str, str], str]:
        """Does the main run fit the border and then drop it? Over seeds, as :func:`reading_answer` reads it."""
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.escape_answer")
        reading = over_seeds(f"the border at λ = {self.lam_main:g}",
                             {s: border_reading(trained[r]) for s, r in self.main.items()}, expected="dropped")
        steps = {s: ["never" if t is None else f"{t:,}" for t in border_times(trained[r])] for s, r in self.main.items()}
        return reading_answer(reading, detail=", ".join(f"seed {s}: fitted at {f}, dropped at {d}"
                                                        for s, (f, d) in steps.items()))

    def _rho_fall(self, trained: Histories, margin: float) -> Reading:
        """Over seeds: does the worst-group accuracy at the end fall by more than ``margin`` across ``rho_ends``?"""
        (lo, low), (hi, high) = sorted(self.rho_ends.items())
        return over_seeds(f"the worst-group accuracy from ρ = {lo:g} to ρ = {hi:g}",
                          {s: rho_reading(trained[low[s]], trained[high[s]], margin) for s in low}, expected="falls")

    def rho_answer(self, trained: Histories, margin: float = 0.2) -> tuple[str, tuple[str, str], str]:
        """Does the worst-group accuracy at the end fall by more than ``margin`` from the smallest ρ to the largest?"""
        if len(self.rho_ends) != 2:
            raise ValueError(f"ShortcutStudy.rho_answer needs two ρ or more in 'rhos'. Got {list(self.rhos)}.")
        low, high = (_ends(self.rho_ends[k], trained) for k in sorted(self.rho_ends))
        detail = (f"it has to fall by more than {margin:g}; at the end, seed by seed: "
                  + ", ".join(f"seed {s}: {e['conflict_acc']:.2f} → {high[s]['conflict_acc']:.2f}" for s, e in low.items()))
        return reading_answer(self._rho_fall(trained, margin), detail=detail)

    def norm_answer(self, trained: Histories) -> tuple[str, tuple[str, str], str]:
        """Does BatchNorm end with a higher clean accuracy than no normalisation (:meth:`norm_reading`)?"""
        reading = self.norm_reading(trained)
        if reading is None:
            raise ValueError(f"ShortcutStudy.norm_answer needs 'batch' and 'none' in 'norms'. Got {list(self.norms)}.")
        batch, none = (_ends(self.norm_seeds[n], trained) for n in ("batch", "none"))
        return reading_answer(reading, detail="seed by seed: " + ", ".join(
            f"seed {s}: {e['clean_acc']:.2f} against {none[s]['clean_acc']:.2f}" for s, e in batch.items()))

    def checks(self, trained: Histories, margin: float = 0.2) -> list[Check]:
        """The study's pre-fixed checks over seeds: the border escaped, the ρ trend (``margin``), separation defined."""
        out = [check_border_escape({s: trained[r] for s, r in self.main.items()})]
        if len(self.rho_ends) == 2:
            low, high = ({s: trained[r] for s, r in self.rho_ends[k].items()} for k in sorted(self.rho_ends))
            out.append(check_rho_trend(low, high, margin=margin))
        return [*out, check_separation_defined(self._separations(self.main, trained))]


def ledger_cpu_seconds(runs: Sequence[TrainConfig], cache: ResultCache | None = None) -> float:
    """CPU seconds the build's ledger records for training ``runs`` (the latest training of each; 0 when none).

    Matched by the ledger's label, not the cache key, which holds the thread count of the process computing it.
    """
    root = cache.root if cache is not None else cache_dir()
    labels = {_label(r) for r in runs}
    latest = {line["label"]: line.get("cpu_s") or 0.0 for line in read_ledger(root) if line.get("label") in labels}
    return float(sum(latest.values()))


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
    return study._lam_sweep(by, study.celeba_lams)


def celeba_problem(study: ShortcutStudy) -> str | None:
    """Why the study's CelebA runs cannot train here, None when they can or there are none (reads a few faces)."""
    runs = [r for rs in celeba_runs(study).values() for r in rs]
    try:
        if runs:
            celeba(runs[0].root, runs[0].download, size=4, n_train=8, n_test=4)
    except DatasetUnavailableError as exc:
        return str(exc)
    return None


def celeba_scorecard(study: ShortcutStudy, trained: Histories, cache: ResultCache | None = None) -> str:
    """The CelebA section: our scorecard, worst groups, separations and readings beside the paper's, or why none."""
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
    seps = study._separations(main, trained)
    rows = [{"seed": s, "worst group": min(e[f"group{t}{a}_acc"] for t in (0, 1) for a in (0, 1)),
             "conflict": e["conflict_acc"], "clean": e["clean_acc"], "separation": format_score(seps[s]),
             "paper separation": NHT_PAPER["separation"]["CelebA"]} for s, e in _ends(main, trained).items()]
    readings = [over_seeds("CelebA: separation below 0.5 (the paper: −0.11)", _below(seps, 0.5), expected="below"),
                *_seed_readings(main, trained, study.lam_main, study.fit, " (CelebA)")]
    cost = f"{len(runs)} runs, {ledger_cpu_seconds(runs, cache):.0f} CPU s on the build's ledger ({cpu_model()})"
    return (f"Ours: {sum(c.passed for c in card.values())}/6 (seed {study.seeds[0]}). {paper}\n\n" + evidence(
        "the CelebA scorecard, seed by seed", table(scorecard_rows({"CelebA": card})),
        table(rows, formats={"worst group": "{:.2f}", "conflict": "{:.2f}", "clean": "{:.2f}"}),
        table(reading_rows(readings)), f"The CelebA runs: {cost}."))
