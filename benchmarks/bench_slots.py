"""Benchmark (not a test): more training loops than cores, with and without machine-wide CPU slots.

Usage: ``python benchmarks/bench_slots.py [--runs 4] [--steps 600] [--rounds 2] [--smoke]`` (``--smoke``: 2 runs of
a few steps, seconds; checks the script runs)

The book build's chapters and their pools can run more training loops than cores. This trains
``--runs`` companion runs (one thread each) in as many warm workers at once, *free* (the kernel
time-slices them) and holding *slots* (:func:`nhtlab.plumbing.cpu_slot`, as ``make book`` does), the
two alternated ``--rounds`` times so that both see the same machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext

import torch

import nhtlab
from nhtlab.plumbing.cpu_slots import cpu_slot
from _record import cpu_model, record  # benchmarks/_record (this script's folder): the measurements page's records


def _wait(seconds: float) -> int:
    time.sleep(seconds)  # keeps this worker busy while the pool starts the others
    return os.getpid()


def _train(seed: int, steps: int, slots: int | None, folder: str) -> float:
    run = nhtlab.companion(1.0, seed=seed, steps=steps, stop_after=None)
    start = time.perf_counter()
    with cpu_slot(slots, folder) if slots else nullcontext():
        run.execute(progress="none")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="2 runs of 2 steps, one round: checks the script runs")
    args = parser.parse_args()
    warm = 20
    if args.smoke:
        args.runs, args.steps, args.rounds, warm = 2, 2, 1, 1
        os.environ.setdefault("NHTLAB_CACHE", "off")
    cores = os.cpu_count() or 1
    print(f"{cpu_model()!r}, {cores} cores, torch {torch.__version__}; "
          f"{args.runs} companion runs of {args.steps} steps, one thread each, in {args.runs} processes")
    os.environ.pop("NHTLAB_CPU_SLOTS", None)  # the workers' train() must not take slots of its own
    pool = ProcessPoolExecutor(args.runs, initializer=torch.set_num_threads, initargs=(1,))  # one thread per worker
    with tempfile.TemporaryDirectory() as folder, pool:
        pids = set(pool.map(_wait, [0.2 if args.smoke else 1.0] * args.runs))
        assert len(pids) == args.runs, "the pool did not start one worker per run"
        list(pool.map(_train, range(args.runs), [warm] * args.runs, [None] * args.runs, [folder] * args.runs))  # imports
        walls: dict[str, list[float]] = {"free": [], "slots": []}
        for _ in range(args.rounds):
            for mode, slots in (("free", None), ("slots", cores)):
                start = time.perf_counter()
                list(pool.map(_train, range(args.runs), [args.steps] * args.runs, [slots] * args.runs,
                              [folder] * args.runs))
                walls[mode].append(time.perf_counter() - start)
                print(f"  {mode:>5}: {walls[mode][-1]:6.1f} s", flush=True)
    rounds = list(enumerate(zip(walls["free"], walls["slots"]), start=1))
    for k, (free, slotted) in rounds:
        print(f"round {k}: free / slots = {free / slotted:.3f}")
    print(f"total: free {sum(walls['free']):.1f} s, slots {sum(walls['slots']):.1f} s")
    print(f"ratio free / slots (wall clock): {sum(walls['free']) / sum(walls['slots']):.3f}")
    rows = [{"round": k, "free (s)": round(free, 2), "slots (s)": round(slotted, 2), "free / slots": round(free / slotted, 3)}
            for k, (free, slotted) in rounds]
    record("bench_slots", rows, settings={"runs": args.runs, "steps": args.steps, "cores": cores},
           note="Companion runs in as many processes, free against holding the machine's CPU slots, wall clock.",
           smoke=args.smoke)


if __name__ == "__main__":
    main()
