"""Pilot grid for chapter 06's border design: in which settings is the border fitted first and dropped later?

One process, one thread; a table row per run as it finishes and, with ``--out``, the JSON chapter 06
renders (:func:`nhtlab.book.shortcut_report.write_pilot`). Each run is ``BASE`` (offline digits with a
1-pixel border, SimpleCNN, constant learning rate) but for the grid's axes; the columns are
:func:`nhtlab.book.shortcut_report.pilot_row`'s. ``nhtlab/results/pilot_shortcuts.json`` holds the first
command's grid::

    PYTHONPATH=. python benchmarks/pilot_shortcuts.py --harder all n400 --out nhtlab/results/pilot_shortcuts.json
    PYTHONPATH=. python benchmarks/pilot_shortcuts.py --otherwise none --seeds 0 1 --steps 3000
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from _record import pilot_about  # benchmarks/_record (this script's folder)
from nhtlab.book.shortcut_report import PILOT_COLUMNS, pilot_row, write_pilot
from nhtlab.training.shortcut_run import ShortcutRun, run_shortcut

BASE = dict(base="digits", size=10, width=1, pad=True, clean="mean", channels=(8, 8, 16, 16, 32, 32),
            lr=3e-3, batch_size=64, schedule="constant", eval_every=100)
HARDER = {"all": dict(train_size=None, noise=0.0), "n400": dict(train_size=400, noise=0.0),
          "noise": dict(train_size=None, noise=0.3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--otherwise", nargs="+", default=["other"])
    parser.add_argument("--contrast", nargs="+", type=float, default=[0.25, 1.0])
    parser.add_argument("--rho", nargs="+", type=float, default=[0.9, 0.95])
    parser.add_argument("--lam", nargs="+", type=float, default=[0.1, 0.3])
    parser.add_argument("--harder", nargs="+", default=["all", "n400", "noise"], choices=list(HARDER))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--out", help="write the rows to this JSON file (the format chapter 06 renders)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    header = list(PILOT_COLUMNS) + ["cpu s"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header), flush=True)
    rows = []
    for otherwise, harder, contrast, rho, lam, seed in itertools.product(args.otherwise, args.harder, args.contrast,
                                                                         args.rho, args.lam, args.seeds):
        run = ShortcutRun(**BASE, **HARDER[harder], otherwise=otherwise, contrast=contrast, rho=rho,
                          weight_decay=lam, seed=seed, steps=args.steps)
        t = time.process_time()
        h = run_shortcut(run, progress="none")
        task = f"{len(run.data().y_train):,} images" + (f", noise {run.noise:g}" if run.noise else "")
        r = pilot_row(h, dict(otherwise=otherwise, task=task, contrast=contrast, rho=rho, lam=lam, seed=seed))
        r["cpu s"] = round(time.process_time() - t)
        rows.append(r)
        print("| " + " | ".join("—" if r[k] is None else str(r[k]) for k in header) + " |", flush=True)
    if args.out:
        print("wrote", write_pilot(args.out, rows, pilot_about()))


if __name__ == "__main__":
    main()
