"""The floor of a training step, and how close a build's trainings come to it.

The floor of a step is its matmul FLOPs (forward and backward, counted by ``torch.utils.flop_counter``)
at the machine's single-thread ``torch.mm`` rate on the same shapes: the time the step would take if
everything but its matrix products were free. A build divides ``Σ steps × floor per step`` by the
training CPU seconds its ledger recorded, per run kind (:func:`efficiency`), so that evaluations,
logging, data and model set-up and process start-up show as the share of the CPU that is not the
floor. A run's FLOPs depend on its shapes only (not on λ, lr or the seed), so :func:`step_counts`
counts one step once per :func:`shape_key`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from ..data.modular import modular_data
from ..models import make_model
from ..training.modular_run import ModularRun
from ..training.shortcut_run import ShortcutRun
from .ledger import summarise

__all__ = ["count_step", "matmul_rate", "shape_key", "step_counts", "floors", "efficiency",
           "efficiency_lines"]

#: Run fields that change no shape of a step: runs that differ only in these share one FLOP count.
VALUE_FIELDS = frozenset({"steps", "lr", "weight_decay", "betas", "eval_every", "schedule", "seed", "device",
                          "stop_after", "eval_batch_size", "fused", "compile", "rho", "otherwise", "clean",
                          "contrast", "strength", "noise", "root", "download", "init_scale", "embed_init_scale"})

Shape = tuple[int, int, int, int]  # (batch, M, K, N) of one matrix product


def count_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[int, Counter]:
    """Matmul FLOPs of one training step on the batch ``(x, y)`` (cross-entropy, forward and backward),
    and the ``(batch, M, K, N)`` shapes of its matrix products with their counts.

    A convolution is counted as its lowered product, ``(N·H_out·W_out, C_in/groups·k_h·k_w) ×
    (…, C_out)``, once in the forward and once per gradient its backward computes. The model's
    gradients are cleared afterwards.
    """
    shapes: Counter = Counter()

    class Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in ("mm", "addmm", "bmm", "baddbmm"):
                a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
                shapes[(a.shape[0] if a.dim() == 3 else 1, a.shape[-2], a.shape[-1], b.shape[-1])] += 1
            elif name in ("convolution", "convolution_backward"):
                w, result = args[1 if name == "convolution" else 2], out if name == "convolution" else args[0]
                gemm = (1, result.shape[0] * result[0, 0].numel(), w[0].numel(), w.shape[0])
                shapes[gemm] += 1 if name == "convolution" else sum(args[10][:2])  # output_mask: grad input, weight
            return out

    with FlopCounterMode(display=False) as counter, Shapes():
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops(), shapes


def _seconds_per_call(shape: Shape, seconds: float) -> float:
    b, m, k, n = shape
    a, w = (torch.randn(b, m, k), torch.randn(b, k, n)) if b > 1 else (torch.randn(m, k), torch.randn(k, n))
    op = torch.bmm if b > 1 else torch.mm
    for _ in range(3):
        op(a, w)
    reps, t0 = 0, time.thread_time()  # this thread's CPU time: other load on the machine does not count
    while time.thread_time() - t0 < seconds:
        op(a, w)
        reps += 1
    return (time.thread_time() - t0) / reps


def matmul_rate(shapes: Mapping[Shape, int], seconds: float = 0.3, _timed: dict | None = None) -> float:
    """Single-thread GFLOP/s of ``torch.mm``/``torch.bmm`` over ``shapes`` (FLOP-weighted, each shape timed
    alone for ``seconds`` of CPU time, at one thread; ``_timed`` keeps timings between calls)."""
    timed = {} if _timed is None else _timed
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for shape in shapes:
            if shape not in timed:
                timed[shape] = _seconds_per_call(tuple(shape), seconds)
    finally:
        torch.set_num_threads(threads)
    flops = sum(2.0 * b * m * k * n * count for (b, m, k, n), count in shapes.items())
    return flops / sum(timed[shape] * count for shape, count in shapes.items()) / 1e9


def shape_key(config: Mapping[str, Any], kind: str) -> str:
    """A short hash of what sets a run's step shapes: its kind and every field outside :data:`VALUE_FIELDS`."""
    kept = {k: v for k, v in config.items() if k not in VALUE_FIELDS}
    if isinstance(kept.get("model_kwargs"), dict):
        kept["model_kwargs"] = {k: v for k, v in kept["model_kwargs"].items() if k not in VALUE_FIELDS}
    return hashlib.sha256(json.dumps([kind, kept], sort_keys=True).encode()).hexdigest()[:16]


def step_sample(run: Any) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor] | None:
    """A fresh model of ``run`` and one training batch of its size (the first rows, repeated when the batch
    is larger than the training set); None for a run kind it does not know. The global RNG is left as it was."""
    with torch.random.fork_rng():
        if isinstance(run, ModularRun):
            data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
            model = make_model(run.model, run.p, **run.model_kwargs)
        elif isinstance(run, ShortcutRun):
            data = run.data()
            model = run.build_model(data.num_classes)
        else:
            return None
    index = torch.arange(run.batch_size or len(data.y_train)) % len(data.y_train)
    return model, data.x_train[index], data.y_train[index]


def step_counts(kind: str, config: Mapping[str, Any], folder: str | Path) -> dict[str, Any] | None:
    """``{"flops", "shapes": [[batch, M, K, N, count], …]}`` of one step of the run ``kind(**config)``, counted
    once per :func:`shape_key` and kept as ``<folder>/<key>.json``; None for a run it cannot rebuild."""
    path = Path(folder) / f"{shape_key(config, kind)}.json"
    if path.exists():
        return json.loads(path.read_text())
    kinds = {"ModularRun": ModularRun, "ShortcutRun": ShortcutRun}
    try:
        sample = step_sample(kinds[kind](**config)) if kind in kinds else None
    except (OSError, ValueError, RuntimeError):  # data it cannot build here (CIFAR-10 not downloaded)
        sample = None
    if sample is None:
        return None
    flops, shapes = count_step(*sample)
    counts = {"flops": flops, "shapes": [[*shape, count] for shape, count in shapes.items()]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(counts))
    return counts


def floors(lines: Iterable[Mapping[str, Any]], folder: str | Path, seconds: float = 0.05) -> dict[str, float]:
    """Floor seconds per step of each run in ledger ``lines`` that records its config: run key → seconds.

    FLOPs from :func:`step_counts` (kept in ``folder``); each distinct product shape timed once
    (:func:`matmul_rate`, ``seconds`` of CPU each), so a build times its ``torch.mm`` rate once.
    """
    timed: dict = {}
    out = {}
    for line in lines:
        if line["run"] in out or not isinstance(line.get("config"), dict):
            continue
        counts = step_counts(line["kind"], line["config"], folder)
        if counts and counts["shapes"]:
            shapes = {tuple(s[:4]): s[4] for s in counts["shapes"]}
            out[line["run"]] = counts["flops"] / (matmul_rate(shapes, seconds, timed) * 1e9)
    return out


def efficiency(lines: Iterable[Mapping[str, Any]], floor_s: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Per run kind: ``Σ steps × floor per step / Σ training CPU seconds``, over the ledger ``lines`` whose
    run has a floor (``floor_s``: run key → seconds per step) and whose CPU seconds are known.
    """
    kept = [line for line in lines if line["run"] in floor_s and line.get("cpu_s")]
    by_kind = summarise(kept).by_kind  # trainings, steps and CPU seconds by kind, as the ledger's summary counts them
    for line in kept:
        totals = by_kind[line["kind"]]
        totals["floor_s"] = totals.get("floor_s", 0.0) + (line.get("steps") or 0) * floor_s[line["run"]]
    for totals in by_kind.values():
        totals["share"] = totals["floor_s"] / totals["cpu_s"]
    return by_kind


def efficiency_lines(by_kind: Mapping[str, Mapping[str, float]]) -> list[str]:
    """:func:`efficiency`'s result as printable lines (what ``tools/build_book.py`` prints)."""
    if not by_kind:
        return ["  no training with a known floor and CPU time"]
    return [f"  {kind}: {t['steps']:,.0f} steps in {t['cpu_s']:,.0f} CPU s, floor {t['floor_s']:,.0f} s "
            f"({t['floor_s'] / max(t['steps'], 1) * 1e3:.2f} ms per step): {t['share']:.0%} of the floor"
            for kind, t in by_kind.items()]
