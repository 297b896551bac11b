"""Benchmark (not a test): one 16-run grid trained sequentially, in a process pool, and batched.

Usage: ``python benchmarks/bench_sweeps.py [--steps 300] [--workers 2] [--p 31] [--width 128] [--smoke]``
(``--smoke``: a few steps of a small model, seconds; checks the script runs)

Wall seconds of each strategy side by side in one process (pool start-up included), and on CUDA the
sequential and batched ones on the GPU. Compare the ratios of one invocation, not times across them.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

import nhtlab
from nhtlab.training.sweeps import grid, sweep
from _record import cpu_model, record  # benchmarks/_record (this script's folder): the measurements page's records


def timed(label: str, runs, **kwargs) -> tuple[str, float, float, object]:
    t0 = time.perf_counter()
    result = sweep(runs, progress="none", **kwargs)
    wall = time.perf_counter() - t0
    busy = sum(row.seconds for row in result)  # training seconds summed over runs, wherever they ran
    print(f"  {label:<38} {wall:7.1f} s wall   {busy:7.1f} s summed training time", flush=True)
    return label, wall, busy, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--p", type=int, default=31)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--smoke", action="store_true", help="a few steps of a small model: checks the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.p, args.width = 4, 7, 8
        os.environ.setdefault("NHTLAB_CACHE", "off")
    torch.set_num_threads(1)
    base = nhtlab.ModularRun(p=args.p, train_fraction=0.7, model_kwargs=dict(width=args.width, embed_std=0.3),
                             steps=args.steps, eval_every=min(25, args.steps), lr=1e-2, device="cpu")
    runs = grid(base, weight_decay=[0.0, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 10.0], seed=[0, 1])
    print(f"16 runs of EmbeddingMLP p={args.p} width={args.width}, {args.steps} full-batch steps each; "
          f"{os.cpu_count()} CPUs ({cpu_model()!r}), torch {torch.__version__}, 1 thread per process")
    # the fork server starts (and imports torch) once per process: started here, so that the first pooled
    # strategy timed is not charged for it and the others are not spared it
    sweep(runs[:args.workers], strategy="parallel", workers=args.workers, progress="none")
    rows = [
        timed("sequential (1 process)", runs, strategy="sequential"),
        timed(f"parallel ({args.workers}-process pool)", runs, strategy="parallel", workers=args.workers),
        timed("batched (1 stack, 1 process)", runs, strategy="batched"),
        timed(f"batched ({args.workers} stacks, {args.workers} processes)", runs, strategy="batched", workers=args.workers),
    ]
    ref = rows[0][3]
    for _, _, _, result in rows[1:]:  # same science whichever way it ran
        for a, b in zip(ref, result):
            assert a.events.t_mem == b.events.t_mem, (a.run, a.events, b.events)
    seq_wall = rows[0][1]
    print("\nspeed-up over sequential (wall clock):")
    for label, wall, _, _ in rows[1:]:
        print(f"  {label:<38} {seq_wall / wall:5.2f}x")
    print(f"  (os.getloadavg() at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())})")
    print(f"ratio sequential / batched (1 stack) wall clock: {seq_wall / rows[2][1]:.3f}")
    if torch.cuda.is_available():
        gpu_runs = [r.replace(device="cuda") for r in runs]
        print(f"\nCUDA: {torch.cuda.get_device_name()}")
        g_seq = timed("sequential on CUDA", gpu_runs, strategy="sequential")
        g_bat = timed("batched on CUDA (1 stack)", gpu_runs, strategy="batched")
        print(f"  batched/sequential on CUDA: {g_seq[1] / g_bat[1]:.1f}x; batched CUDA vs sequential CPU: {seq_wall / g_bat[1]:.1f}x")
        rows += [g_seq, g_bat]
    table = [{"strategy": label, "wall (s)": round(wall, 2), "summed training (s)": round(busy, 2),
              "speed-up over sequential": round(seq_wall / wall, 3)} for label, wall, busy, _ in rows]
    record("bench_sweeps", table, settings={"runs": len(runs), "p": args.p, "width": args.width, "steps": args.steps,
                                            "workers": args.workers},
           note="One sweep of 16 runs four ways, side by side; each strategy's runs end with the same events.",
           smoke=args.smoke)


if __name__ == "__main__":
    main()
