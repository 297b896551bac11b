"""Chapter 06's CelebA section (``full`` profile): the NHT paper's CelebA task through the shortcut pipeline.

The paper (arXiv 2603.07323) scores its six predictions 4/6 on CelebA, Smiling with Blond_Hair as the
spurious attribute (SimpleCNN, AdamW lr 1e-3, cosine), with a clean norm separation of −0.11.
:func:`celeba_scorecard` trains a :class:`ShortcutStudy`'s CelebA runs
(:class:`~nhtlab.training.shortcut_run.ShortcutRun` with ``kind="celeba"``, read by
:func:`nhtlab.data.images.celeba`) in one :func:`nhtlab.sweep`, scores them as the border's, and writes the
section: the scorecard, the worst-group accuracy and the separation per seed, P1, P3, P4, P5 over seeds, the
paper's values beside them. A profile without CelebA runs, or data that cannot be had, gets one line saying so.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ..analysis.separation import format_score
from ..data.images import DatasetUnavailableError, celeba
from ..papers import NHT_PAPER
from ..training.cache import ResultCache, default_cache
from ..training.shortcut_run import ShortcutRun
from ..training.sweeps import sweep
from .claims import Reading, over_seeds, reading_rows
from .report import table
from .scorecard import prediction_readings, scorecard_rows
from .scorecard_runs import domain_of, score_runs
from .shortcut_study import SEED_PREDICTIONS, ShortcutStudy, ledger_cost

__all__ = ["CELEBA_DESIGN", "celeba_runs", "celeba_scorecard"]

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


def celeba_scorecard(study: ShortcutStudy, workers: int = 1, cache: ResultCache | None = None) -> str:
    """Train the study's CelebA runs where the data can be had; the section's markdown, paper beside ours.

    Parameters
    ----------
    study : ShortcutStudy
        Its ``celeba`` fields and ``celeba_lams`` (empty: no CelebA runs, one line), ``lam_main`` and ``seeds``.
    workers : int
        Processes of the sweep.
    cache : ResultCache, optional
        Defaults to :func:`nhtlab.default_cache`.

    Returns
    -------
    str
        Markdown: the scorecard (main run: first seed) with the paper's 4/6; per seed the worst-group accuracy
        (the least of the four groups' ``group<t><s>_acc``), the conflict accuracy and the separation, the
        paper's −0.11 beside it; P1, P3, P4, P5 over seeds; the runs' cost on the ledger. Or one line: the
        profile trains no CelebA, or why the data could not be had.
    """
    paper = f"Paper: CelebA {NHT_PAPER['scorecard']['CelebA']}/6, separation {NHT_PAPER['separation']['CelebA']}."
    runs_by_lam = celeba_runs(study)
    if study.lam_main not in runs_by_lam:
        return ("The CelebA runs are in the `full` profile and need CelebA's download (torchvision, about 1.4 GB "
                f"from Google Drive; Colab: `download=True`); this profile trains none. {paper}")
    main = dict(zip(study.seeds, runs_by_lam[study.lam_main]))
    first = main[study.seeds[0]]
    try:  # the download, once, and a read of a few faces: is the data to be had here?
        celeba(first.root, first.download, size=4, n_train=8, n_test=4)
    except DatasetUnavailableError as exc:
        return f"No CelebA scorecard here: {exc} {paper}"
    runs = list(dict.fromkeys(r for rs in runs_by_lam.values() for r in rs))
    cache = cache if cache is not None else default_cache()
    result = sweep(runs, workers=workers, cache=cache)
    trained = dict(zip(runs, result.histories))
    card = score_runs(runs_by_lam, trained, main=first, fit=study.fit)
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
