"""Chapter 04's learning-rate experiment: DLR, the features used and test accuracy against the learning rate.

The DLR paper (Nam et al., ICLR 2026) reads DLR as a guide to hyperparameters: on ResNet18 / CIFAR-100
the best learning rate gives the lowest DLR and the best accuracy, and a rate too small leaves training
lazier, with more features used. Here the chapter's BatchNorm ``SimpleCNN`` on the digits trains at
each rate of a grid fixed before the runs, at several seeds; the paper's readings are shown seed by
seed, never asserted (:func:`lr_readings`), and :func:`lr_checks` holds what the chapter asserts.

>>> features_used([0.5, 0.8, 0.96, 0.99], share=0.95)
3
>>> features_used([0.5, 0.8], share=0.95) is None
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from .claims import Check, Reading, over_seeds, reading_rows
from .dlr_report import cnn_settings, lr_lesson
from .report import Markdown, evidence, md, table
from ..data.images import ImageData
from ..history import History
from ..models.cnn import SimpleCNN
from ..training.dlr_tracker import DLRTracker
from ..training.loop import TrainConfig, train
from ..validation import require_real, require_type

__all__ = ["cnn_runs", "features_used", "lr_run", "lr_sweep", "lr_readings", "lr_checks", "lr_section"]

#: Share of the learned outputs' energy that the features "used" must express (Π̂(k) ≥ this), fixed before the runs.
USED_SHARE = 0.95


def cnn_runs(images: ImageData, config: TrainConfig, channels: Sequence[int]) -> dict[str, History]:
    """The chapter's three CNN settings (:func:`~nhtlab.book.dlr_report.cnn_settings`), each trained with a
    :class:`~nhtlab.training.dlr_tracker.DLRTracker` on its own training images and labels.
    """
    require_type(config, "config", TrainConfig, owner="cnn_runs")
    runs = {}
    for name, (norm, dataset) in cnn_settings(images, config.seed).items():
        torch.manual_seed(config.seed)
        model = SimpleCNN(images.num_classes, norm=norm, channels=tuple(channels))
        tracker = DLRTracker(dataset.x_train, labels=dataset.y_train)
        runs[name] = train(model, dataset, config, callbacks=[tracker], desc=name)
    return runs


def features_used(utilisation: Sequence[float], share: float = USED_SHARE) -> int | None:
    """The smallest k whose top-k eigenfunctions express ``share`` of the outputs' energy (Π̂(k) ≥ share).

    None when the kept eigenpairs never reach ``share``.
    """
    share = require_real(share, "share", 0.0, 1.0, low_open=True, owner="features_used")
    return next((k + 1 for k, u in enumerate(utilisation) if u >= share), None)


def lr_run(images: ImageData, lr: float, seed: int, *, channels: Sequence[int], steps: int, norm: str = "batch",
           **training: Any) -> dict[str, Any]:
    """Train the chapter's CNN at one learning rate and read DLR, the features used and accuracy at the end.

    An ``eval_every`` among ``training`` is replaced: one evaluation, at the end.
    """
    require_type(images, "images", ImageData, owner="lr_run")
    lr = require_real(lr, "lr", 0.0, None, low_open=True, owner="lr_run")
    cpu = time.process_time()
    torch.manual_seed(seed)
    model = SimpleCNN(images.num_classes, norm=norm, channels=tuple(channels))
    config = TrainConfig(**{**training, "seed": seed, "steps": steps, "eval_every": steps, "lr": lr})
    history = train(model, images, config, progress="none", desc=f"lr {lr:g}")
    tracker = DLRTracker(images.x_train, labels=images.y_train, spectra=True, top=max(channels))
    row, spectrum = tracker.measure(model)
    last = history.rows[-1]
    return {"lr": lr, "seed": seed, "dlr": row["dlr"], "used": features_used(spectrum.utilisation),
            "pr": row["dlr_pr"], "train_acc": last["train_acc"], "test_acc": last["test_acc"],
            "cpu_s": time.process_time() - cpu}


def lr_sweep(images: ImageData, rates: Iterable[float], seeds: Iterable[int], **settings: Any) -> list[dict[str, Any]]:
    """:func:`lr_run` at every (rate, seed), rates outermost: one record each (an ``lr`` in ``settings`` is replaced)."""
    seeds, settings = list(seeds), {k: v for k, v in settings.items() if k != "lr"}
    return [lr_run(images, lr, s, **settings) for lr in rates for s in seeds]


def _by_seed(records: Sequence[Mapping[str, Any]]) -> dict[int, dict[float, Mapping[str, Any]]]:
    out: dict[int, dict[float, Mapping[str, Any]]] = {}
    for r in records:
        out.setdefault(int(r["seed"]), {})[float(r["lr"])] = r
    return out


def lr_readings(records: Sequence[Mapping[str, Any]]) -> list[Reading]:
    """The paper's three readings, seed by seed, each with the paper's answer as the expected one.

    (a) the best-accuracy rate has the lowest DLR; (b) the smallest rate has a higher DLR than the
    best-accuracy rate (lazier); (c) the smallest rate uses more features than the best-accuracy rate.
    Where the smallest rate is the best one, (b) and (c) read ``"best is smallest"``.
    """
    a, b, c = {}, {}, {}
    for seed, by_lr in _by_seed(records).items():
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
    """What the chapter asserts, decided before the runs: every run finite; the grid brackets the best rate.

    The best rate is the one of the highest mean test accuracy over the seeds; it brackets when it is
    neither the smallest nor the largest rate of the grid (so "too small" and "too large" are both in it).
    """
    finite = all(math.isfinite(r["dlr"]) and math.isfinite(r["test_acc"]) for r in records)
    mean = {lr: sum(r["test_acc"] for r in records if r["lr"] == lr) / sum(r["lr"] == lr for r in records)
            for lr in dict.fromkeys(r["lr"] for r in records)}
    best = max(mean, key=mean.get)
    return [Check("every learning-rate run ends with a finite DLR and accuracy", finite, f"{len(records)} runs"),
            Check("the learning-rate grid brackets the best-accuracy rate", min(mean) < best < max(mean),
                  "mean test accuracy: " + ", ".join(f"lr {lr:g}: {a:.3f}" for lr, a in mean.items()))]


def lr_table(records: Sequence[Mapping[str, Any]]) -> Markdown:
    """The runs' means over seeds, one row per rate: DLR, features used, PR, train and test accuracy."""
    rows = []
    for lr in dict.fromkeys(r["lr"] for r in records):
        mine = [r for r in records if r["lr"] == lr]
        rows.append({"lr": lr, "seeds": len(mine), **{k: sum(float(r[k] or math.nan) for r in mine) / len(mine)
                                                      for k in ("dlr", "used", "pr", "train_acc", "test_acc")}})
    return table(rows, columns=["lr", "seeds", "dlr", "used", "pr", "train_acc", "test_acc"],
                 formats={"lr": "{:g}", "dlr": "{:.3f}", "used": "{:.1f}", "pr": "{:.1f}", "train_acc": "{:.3f}",
                          "test_acc": "{:.3f}"},
                 headers={"lr": "learning rate", "dlr": "DLR (mean)", "used": f"features used (Π̂ ≥ {USED_SHARE:g})",
                          "pr": "PR", "train_acc": "train acc", "test_acc": "test acc"})


def lr_paper_rows(paper: Mapping[float, tuple[float, float]]) -> Markdown:
    """The paper's ResNet18 / CIFAR-100 rates (``DLR_PAPER["learning_rate"]``: rate → (DLR, test accuracy))."""
    rows = [{"lr": lr, "dlr": d, "test_acc": a} for lr, (d, a) in paper.items()]
    return table(rows, columns=["lr", "dlr", "test_acc"], formats={"lr": "{:g}", "dlr": "{:.3f}", "test_acc": "{:.1%}"},
                 headers={"lr": "the paper's rate (ResNet18, CIFAR-100)", "dlr": "DLR", "test_acc": "test acc"})


def lr_section(records: Sequence[Mapping[str, Any]], readings: Sequence[Reading],
               paper: Mapping[float, tuple[float, float]]) -> Markdown:
    """The learning-rate runs: their means per rate, the readings in words, the paper's rates and the
    readings seed by seed closed under "How we know" (no run time: a lesson page is not a build log)."""
    proof = evidence("the paper's rates and the readings seed by seed", lr_paper_rows(paper),
                     table(reading_rows(readings)))
    return md(f"{lr_table(records)}\n\n{lr_lesson(records, readings)}\n\n{proof}")
