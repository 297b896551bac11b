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
from .scorecard import PREDICTIONS, prediction_readings, scorecard_rows
from ..analysis.separation import Separation, format_score
from ..data.images import DatasetUnavailableError, celeba
from ..papers import NHT_PAPER
from .report import table
from ..build.ledger import _label, read_ledger
from .shortcut_report import (border_reading, check_border_escape, check_rho_trend,
                                        check_separation_defined, higher_reading, rho_reading)
from ..analysis.events import border_times
from ..history import History
from ..validation import require_type
from .scorecard_runs import domain_of, score_runs, sweep_records
from ..training.cache import ResultCache
from ..training.shortcut_run import ShortcutRun
from ..training.loop import TrainConfig
from ..training.presets import companion_grid_run

__all__ = ["ShortcutStudy", "SEED_PREDICTIONS", "ledger_cpu_seconds", "ledger_cost", "CELEBA_DESIGN", "celeba_runs",
           "celeba_problem", "celeba_scorecard"]

#: The predictions read on the main run alone, hence at every seed (P2 and P6 need a whole sweep).
SEED_PREDICTIONS = tuple(name for name in PREDICTIONS if name[:2] in ("P1", "P3", "P4", "P5"))

Histories = Mapping[TrainConfig, History]


def _step(step: int | None) -> str:
    return "never" if step is None else f"{step:,}"


@dataclass(frozen=True)
class ShortcutStudy:
    """Every run of the shortcut study, built from profile settings.

    Attributes
    ----------
    base : ShortcutRun
        The border design at seed ``seeds[0]`` (its λ is replaced by each sweep).
    lam_main : float
        The main weight decay.
    seeds : tuple of int
        Seeds of every stated reading (the main run, its control, the ends of the ρ sweep,
        BatchNorm against none); the sweeps run at ``seeds[0]`` only.
    lams, control_lams, rhos, tint_lams, background_lams : tuple of float
        The λ sweep, the λ of the border-less control (``otherwise="none"``), the ρ sweep at
        the main λ, the entangled tint's λ, the background cue's λ (every seed at the main λ).
    background_strength : float
        The background cue's blend towards the class colour (1: filled).
    norms : tuple of str
        Normalisations compared at the main λ, on ``norm_model``.
    norm_model : str
        The model of the normalisation comparison (``"simple"`` or ``"resnet18"``).
    fit : float
        Training accuracy that counts as fitted in an image run's regime.
    modular : dict
        The companion runs: a :func:`nhtlab.companion_sweep` dict (its ``budgets`` give the λ,
        its ``seeds`` the seed offsets); empty, no modular domain.
    modular_main : float
        The λ of the modular domain's main run.
    celeba, celeba_lams : dict, tuple of float
        ShortcutRun fields of the CelebA runs (``kind="celeba"``) and their λ
        (:func:`celeba_runs`); empty, no CelebA runs.
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
    fit: float = 0.97
    modular: dict[str, Any] = field(default_factory=dict)
    modular_main: float = 1.0
    celeba: dict[str, Any] = field(default_factory=dict)
    celeba_lams: tuple[float, ...] = ()

    @classmethod
    def from_profile(cls, cfg: Any, seed: int = 0) -> "ShortcutStudy":
        """The study of a chapter profile (``nhtlab.book.select_profile``'s namespace or a mapping).

        Parameters
        ----------
        cfg : namespace or mapping
            ``run`` (ShortcutRun fields), ``lam_main``, ``seeds`` (offsets from ``seed``) and the
            other attributes of this class by name; unknown names (``workers``…) are ignored.
        seed : int
            The first seed.

        Returns
        -------
        ShortcutStudy
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
        """Domain name → (its λ sweep, its main run), for the domains this study trains.

        Returns
        -------
        dict
            ``"border"`` always; ``"entangled tint"`` and ``"background"`` when they run at the main λ;
            ``"modular arithmetic"`` when the companion runs hold ``modular_main``.
        """
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

        Returns
        -------
        list of ModularRun and ShortcutRun
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
        """The wrong-border and the border-less design at the control λ (first seed), one record each.

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        list of dict
            :func:`sweep_records` rows with ``otherwise`` and ``λ``.
        """
        sweep = self.sweep
        return [*sweep_records({lam: sweep[lam][0] for lam in self.control_lams if lam in sweep}, trained,
                               fit=self.fit, otherwise="other"),
                *sweep_records(self.control, trained, fit=self.fit, otherwise="none")]

    def lam_records(self, trained: Histories) -> list[dict[str, Any]]:
        """The border's, the tint's and the background's λ sweeps (first seed), one record per λ with its regime.

        Takes ``trained`` (mapping run → History). Returns list of dict: :func:`sweep_records` rows with
        ``domain`` and ``λ``.
        """
        return [*sweep_records({lam: rs[0] for lam, rs in self.sweep.items()}, trained, fit=self.fit,
                               domain="border"),
                *sweep_records({lam: rs[0] for lam, rs in self.tint.items()}, trained, fit=self.fit,
                               domain="entangled tint"),
                *sweep_records({lam: rs[0] for lam, rs in self.background.items()}, trained, fit=self.fit,
                               domain="background")]

    def design_readings(self, trained: Histories) -> list[Reading]:
        """Over seeds at the main λ: the wrong-border design drops the border, the border-less one keeps it.

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        list of Reading
            The border-less reading only when the study has a control.
        """
        pairs = [("wrong border on the 1 − ρ images", self.main, "dropped"),
                 ("no border on the 1 − ρ images", self.control_seeds, "kept")]
        return [over_seeds(f"{name}, λ = {self.lam_main:g}", {s: border_reading(trained[r]) for s, r in by.items()},
                           expected=expected) for name, by, expected in pairs if by]

    def norm_reading(self, trained: Histories) -> Reading | None:
        """Over seeds: does BatchNorm end with a higher clean accuracy than no normalisation (the paper's order)?

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        Reading or None
            None when the study does not compare both.
        """
        by = self.norm_seeds
        if not by:
            return None
        return over_seeds("clean accuracy at the end, BatchNorm against none",
                          {s: higher_reading({n: trained[by[n][s]] for n in ("batch", "none")}, "clean_acc")
                           for s in self.seeds}, expected="batch higher")

    def separations(self, trained: Histories) -> dict[str, Separation]:
        """Domain → the separation score of its main run (read as its run kind says).

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        dict of str to Separation
        """
        return {d: domain_of(m, self.fit).separation(trained[m]) for d, (_, m) in self.domains().items()}

    def scorecard(self, trained: Histories) -> dict[str, dict[str, Check]]:
        """Domain → the six predictions on its sweep (:func:`score_runs`).

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        dict of str to (dict of str to Check)
        """
        return {d: score_runs(runs, trained, main=m, fit=self.fit) for d, (runs, m) in self.domains().items()}

    def prediction_readings(self, trained: Histories, domain: str = "border") -> list[Reading]:
        """P1, P3, P4 and P5 on a domain's main run at every seed (the paper expects ✓).

        Parameters
        ----------
        trained : mapping run → History
        domain : {"border", "background"}
            The border's main runs, or the background cue's (each reading's name then ends
            with ``" (background)"``).

        Returns
        -------
        list of Reading
        """
        runs = self._seed_runs(domain)
        cards = {s: score_runs({self.lam_main: [r]}, trained, main=r, fit=self.fit) for s, r in runs.items()}
        readings = prediction_readings(cards, names=SEED_PREDICTIONS)
        if domain == "border":
            return readings
        return [Reading(f"{r.name} ({domain})", r.by_seed, r.expected, r.rule) for r in readings]

    def _seed_runs(self, domain: str) -> dict[int, ShortcutRun]:
        if domain == "border":
            return self.main
        if domain != "background" or self.lam_main not in self.background:
            raise ValueError(f"ShortcutStudy: the domain must be 'border' or 'background' (with the main λ in "
                             f"'background_lams'). Got {domain!r} with background_lams {list(self.background_lams)}.")
        return dict(zip(self.seeds, self.background[self.lam_main]))

    def background_readings(self, trained: Histories, threshold: float = 0.5) -> tuple[Check, list[Reading]]:
        """The background cue over seeds: whether it is learnt (asserted), and the law's readings (shown).

        Parameters
        ----------
        trained : mapping run → History
        threshold : float
            P5's clean-separation threshold: a score below it (or undefined) is read ``"below"``.

        Returns
        -------
        (learnt, readings) : (Check, list of Reading)
            ``learnt``: at the end the cue-agreeing (``coloured``) accuracy exceeds the cue-conflicting
            (``conflict``) accuracy, in a strict majority of seeds (decided before the runs). ``readings``:
            the separation below ``threshold`` and below the border's of the same seed (the paper's
            Waterbirds ≈ 0 against CIFAR-10's border 0.5–0.7; undefined counts as below), then P1, P3, P4
            and P5.
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

    # --- answers to the chapter's predictions (nhtlab.book.check_prediction) -----------------------

    def escape_answer(self, trained: Histories) -> tuple[str, tuple[str, str], str]:
        """Does the main run fit the border and then drop it? Over seeds, as :func:`reading_answer` reads it.

        Parameters
        ----------
        trained : mapping run → History

        Returns
        -------
        (answer, choices, why) : tuple
            ``"yes"`` or ``"no"``; the explanation gives each seed's fitted and dropped steps.
        """
        require_type(trained, "trained", Mapping, owner="ShortcutStudy.escape_answer")
        steps = {s: border_times(trained[r]) for s, r in self.main.items()}
        reading = over_seeds(f"the border at λ = {self.lam_main:g}",
                             {s: border_reading(trained[r]) for s, r in self.main.items()}, expected="dropped")
        detail = ", ".join(f"seed {s}: fitted at {_step(f)}, dropped at {_step(d)}" for s, (f, d) in steps.items())
        return reading_answer(reading, detail=detail)

    def rho_answer(self, trained: Histories, margin: float = 0.2) -> tuple[str, tuple[str, str], str]:
        """Does the worst-group accuracy at the end fall by more than ``margin`` from the smallest ρ to the largest?

        Parameters
        ----------
        trained : mapping run → History
        margin : float in (0, 1)
            The fall asked for (the chapter's check uses the same).

        Returns
        -------
        (answer, choices, why) : tuple
            ``"yes"`` or ``"no"`` over seeds; the explanation gives each seed's accuracies at both ends.

        Raises
        ------
        ValueError
            Naming ``rhos`` when the study has fewer than two ρ.
        """
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
        """Does BatchNorm end with a higher clean accuracy than no normalisation (:meth:`norm_reading`)?

        Takes ``trained`` (mapping run → History); returns ``(answer, choices, why)``: ``"yes"`` or
        ``"no"`` over seeds, the explanation giving both accuracies at each seed. Raises a ValueError
        naming ``norms`` when the study does not compare ``"batch"`` with ``"none"``.
        """
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

        Parameters
        ----------
        trained : mapping run → History
        margin : float
            The ρ trend's fall.

        Returns
        -------
        list of Check
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

    Parameters
    ----------
    runs : sequence of run configs
    cache : ResultCache, optional
        Whose ledger (:mod:`nhtlab.build.ledger`) is read; defaults to ``ResultCache()``.

    Returns
    -------
    float
    """
    root = (cache if cache is not None else ResultCache()).root
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

    Parameters
    ----------
    study : ShortcutStudy
        Its ``celeba`` fields and ``celeba_lams`` (empty: no CelebA runs, one line), ``lam_main`` and ``seeds``.
    trained : mapping run → History
        The sweep of :meth:`ShortcutStudy.runs` (which holds the CelebA runs where the data could be had).
    cache : ResultCache, optional
        Whose ledger gives the runs' CPU seconds (:func:`ledger_cost`).

    Returns
    -------
    str
        Markdown: the scorecard (main run: first seed) with the paper's 4/6; per seed the worst-group accuracy
        (the least of the four groups' ``group<t><s>_acc``), the conflict and clean accuracies and the
        separation, the paper's −0.11 beside it; the separation below 0.5 and P1, P3, P4, P5 over seeds; the
        runs' cost. Or one line: the profile trains no CelebA, or why the data could not be had.
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
    return (table(scorecard_rows({"CelebA": card})) + f"\n\nOurs: {passed}/6 (seed {study.seeds[0]}). {paper}\n\n"
            + table(rows, formats={"worst group": "{:.2f}", "conflict": "{:.2f}", "clean": "{:.2f}"})
            + "\n\n" + table(reading_rows(readings)) + f"\n\nThe CelebA runs: {ledger_cost(runs, cache)}.")
