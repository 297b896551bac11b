"""Overhead of nhtlab.Monitor on a training step, measured side by side with the bare loop.

Run: ``.venv/bin/python benchmarks/bench_monitor.py [--smoke]`` (one thread; about a minute).
The bare and the monitored loops are interleaved and repeated, the fastest repeat kept, timed in
process CPU time, which other processes disturb far less than wall time.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import nhtlab
from _record import record  # benchmarks/_record (this script's folder): the measurements page's records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--p", type=int, default=47)
    parser.add_argument("--smoke", action="store_true", help="a few steps (seconds): checks the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.repeats, args.width, args.p = 4, 1, 16, 11
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = nhtlab.modular_data(args.p, train_fraction=0.5, seed=0)
    model = nhtlab.models.EmbeddingMLP(args.p, width=args.width, embed_std=0.5)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98), weight_decay=1.0)
    probe = (data.x_test[:256],)
    records = 5 if args.smoke else 50
    configs = {
        "bare loop": None,
        "monitor every=100": dict(every=100),
        "monitor every=10": dict(every=10),
        "monitor every=1": dict(every=1),
        "monitor every=10 + DLR probe (256)": dict(every=10, probe=probe),
    }

    def loop(kwargs) -> float:
        monitor = nhtlab.Monitor(model, **kwargs) if kwargs is not None else None
        start = time.process_time()
        for step in range(1, args.steps + 1):
            loss = F.cross_entropy(model(data.x_train), data.y_train)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if monitor is not None:
                monitor(step)
        return (time.process_time() - start) / args.steps

    best = {name: float("inf") for name in configs}
    loop(None)  # warm-up
    for _ in range(args.repeats):
        for name, kwargs in configs.items():
            best[name] = min(best[name], loop(kwargs))
    bare = best["bare loop"]
    # The cost of one record, measured directly (many calls): steadier than the loop ratios,
    # whose differences at every >= 10 are within the noise of a shared CPU.
    per_record = {}
    for name, kwargs in (("record: norms + head signals", {}), ("record: + DLR on the probe", {"probe": probe})):
        monitor = nhtlab.Monitor(model, **kwargs)
        start = time.process_time()
        for i in range(1, records + 1):  # the Monitor recorded step 0 when it was built
            monitor.record(i)
        per_record[name] = (time.process_time() - start) / records
    print(f"EmbeddingMLP p={args.p} width={args.width}, full batch ({len(data.y_train)} pairs), "
          f"{args.steps} steps × {args.repeats} repeats, 1 thread; best repeat")
    for name, seconds in best.items():
        print(f"{name:38s} {seconds * 1e3:7.3f} CPU ms/step   ratio {seconds / bare:5.3f}")
    for name, seconds in per_record.items():
        implied = ", ".join(f"every={k}: +{seconds / k / bare:.1%}" for k in (1, 10, 100))
        print(f"{name:38s} {seconds * 1e3:7.3f} CPU ms/record  overhead per step {implied}")
    print(f"ratio monitor every=10 / bare loop: {best['monitor every=10'] / bare:.3f}")
    rows = [{"what": name, "CPU ms": round(seconds * 1e3, 3), "per": "step", "ratio to bare loop": round(seconds / bare, 3)}
            for name, seconds in best.items()]
    rows += [{"what": name, "CPU ms": round(seconds * 1e3, 3), "per": "record",
              "ratio to bare loop": round(seconds / 10 / bare, 3)} for name, seconds in per_record.items()]
    record("bench_monitor", rows, settings={"p": args.p, "width": args.width, "steps": args.steps,
                                            "repeats": args.repeats, "threads": 1},
           note="A training loop bare and with nhtlab.Monitor, best repeat; a record's ratio is its cost at every=10.",
           smoke=args.smoke)


if __name__ == "__main__":
    main()
