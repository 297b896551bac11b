"""Benchmark (not a test): peak memory of every ``full`` configuration, against a Colab T4's 16 GB.

Usage: ``python benchmarks/bench_memory.py [--budget-gib 16] [--smoke]`` (``--smoke``: the first configuration
only, seconds; checks the script runs)

Per ``full`` setting, a Markdown row: parameters, batches, the memory of one training step and one
evaluation batch (configured, and :func:`nhtlab.training.device.suggest_eval_batch_size`'s), and the
data on the device. Measured on CUDA; elsewhere estimated from activation sizes
(:mod:`nhtlab.training.device`): an upper bound for evaluation, a rough figure for training.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from nhtlab.models.cnn import ResNet18, SimpleCNN
from nhtlab.training.device import estimate_eval_bytes, estimate_train_bytes, suggest_eval_batch_size
from nhtlab.models import Transformer
from _record import record  # benchmarks/_record (this script's folder): the measurements page's records

GIB = 2**30
CIFAR_TRAIN, CIFAR_TEST, CIFAR_TEST_SETS = 50_000, 10_000, 5  # coloured, clean, shortcut, conflict, cue
P = 97
PAIRS = P * P


@dataclass
class Config:
    name: str
    chapters: str
    build: callable
    example: callable  # n -> inputs
    train_batch: int
    eval_n: int  # examples per evaluation set
    eval_batch: int  # the configured TrainConfig.eval_batch_size
    stacked: int = 1  # runs in one stacked model (nhtlab.training.batched)
    data_bytes: int = 0  # datasets held on the device


def _tokens(n: int) -> torch.Tensor:
    return torch.randint(0, P, (n, 2))


def _images(n: int) -> torch.Tensor:
    return torch.rand(n, 3, 32, 32)


CIFAR_BYTES = (CIFAR_TRAIN + CIFAR_TEST * CIFAR_TEST_SETS) * 3 * 32 * 32 * 4
CONFIGS = [
    Config("companion transformer (p=97, d=128)", "01, 02, 03, 06, 07", lambda: Transformer(P), _tokens, 512, PAIRS // 2, 8192),
    Config("stacked companion, 8 λ × 3 seeds", "02 (batched)", lambda: Transformer(P), _tokens, 512, PAIRS // 2, 8192, stacked=24),
    Config("stacked companion, 6 λ × 10 seeds", "03 (batched)", lambda: Transformer(P), _tokens, 512, PAIRS // 2, 8192, stacked=60),
    Config("2-layer transformer (x/y mod 97)", "04", lambda: Transformer(P, n_layers=2), _tokens, 512, PAIRS // 2, 8192),
    Config("transformer d_model=512", "07", lambda: Transformer(P, d_model=512), _tokens, 512, PAIRS // 2, 8192),
    Config("SimpleCNN 288k, CIFAR-10 32 px", "04, 05, 06", lambda: SimpleCNN(10, channels=(32, 32, 64, 64, 128, 128)),
           _images, 128, CIFAR_TEST, 8192, data_bytes=CIFAR_BYTES),
    Config("ResNet18, CIFAR-10 32 px", "06", lambda: ResNet18(10), _images, 128, CIFAR_TEST, 8192, data_bytes=CIFAR_BYTES),
]


def measured_cuda(config: Config, eval_batch: int) -> tuple[float, float]:
    """Peak GiB of one AdamW step and of one evaluation batch on CUDA (data not included)."""
    device = torch.device("cuda")
    model = config.build().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = config.example(config.train_batch).to(device)
    y = torch.randint(0, 10, (config.train_batch,), device=device)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    train_peak = torch.cuda.max_memory_allocated() / GIB
    del x, y, loss
    with torch.no_grad():
        xe = config.example(min(eval_batch, config.eval_n)).to(device)
        torch.cuda.reset_peak_memory_stats()
        model.eval()
        F.cross_entropy(model(xe).double(), torch.zeros(len(xe), dtype=torch.long, device=device))
    torch.cuda.synchronize()
    eval_peak = torch.cuda.max_memory_allocated() / GIB
    del model, opt
    torch.cuda.empty_cache()
    return train_peak * config.stacked, eval_peak * config.stacked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-gib", type=float, default=16.0, help="the GPU's memory (a T4: 16)")
    parser.add_argument("--smoke", action="store_true", help="the first configuration only: checks the script runs")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    how = f"measured on {torch.cuda.get_device_name()}" if cuda else "estimated from activation sizes (no CUDA here)"
    print(f"Peak memory of the `full` configurations, {how}; budget {args.budget_gib:g} GiB\n")
    print("| configuration | chapters | params | train batch | step (GiB) | eval batch 8192 (GiB) | suggested eval batch | eval at it (GiB) | data on device (GiB) | fits |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    worst_of_all = 0.0
    rows = []
    for c in CONFIGS[:1] if args.smoke else CONFIGS:
        model = c.build()
        example = c.example(2)
        suggested = suggest_eval_batch_size(model, example)
        n_params = sum(p.numel() for p in model.parameters())
        if cuda:
            step, eval_cfg = measured_cuda(c, c.eval_batch)
            _, eval_sug = measured_cuda(c, suggested)
        else:
            step = c.stacked * estimate_train_bytes(model, example, c.train_batch) / GIB
            eval_cfg = c.stacked * estimate_eval_bytes(model, example, min(c.eval_batch, c.eval_n)) / GIB
            eval_sug = c.stacked * estimate_eval_bytes(model, example, min(suggested, c.eval_n)) / GIB
        data = c.data_bytes / GIB
        worst = max(step, eval_sug) + data
        worst_of_all = max(worst_of_all, worst)
        fits = "yes" if worst <= args.budget_gib else "NO"
        label = c.name + (f" (×{c.stacked})" if c.stacked > 1 else "")
        print(f"| {label} | {c.chapters} | {n_params / 1e6:.2f} M | {c.train_batch} | {step:.2f} | {eval_cfg:.2f} | "
              f"{suggested} | {eval_sug:.2f} | {data:.2f} | {fits} |", flush=True)
        rows.append({"configuration": label, "params (M)": round(n_params / 1e6, 2), "train batch": c.train_batch,
                     "step (GiB)": round(step, 2), "suggested eval batch": suggested,
                     "eval at it (GiB)": round(eval_sug, 2), "fits": fits})
    print("\nEvaluation batches are capped by the set size (4,705 pairs of p = 97; 10,000 CIFAR-10 test images).")
    print(f"ratio largest peak / budget: {worst_of_all / args.budget_gib:.3f}")
    record("bench_memory", rows, settings={"budget_gib": args.budget_gib, "how": "measured" if cuda else "estimated"},
           note=f"Peak memory of the `full` configurations, {how}.", smoke=args.smoke)


if __name__ == "__main__":
    main()
