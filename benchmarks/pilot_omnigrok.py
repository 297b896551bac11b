"""Real-image grokking (Omnigrok's MNIST setting): does the delay follow 1/(ηλ), and which layer turns first?

Fixed here before any run is read (issue 57, item 5):

* **Runs**: :class:`~nhtlab.training.image_grok_run.ImageGrokRun` at 14 × 14 (MNIST-5k, 1,000 training images,
  the MLP 196-200-200-10 with every parameter × 8, squared loss, full batch), AdamW η = 2e-3, at
  λ ∈ {0.05, 0.1, 0.2} × seeds {0, 1, 2}; each budget is 2/(ηλ) steps (two time scales of the decay).
* **Events**: T_mem, the first evaluation with train accuracy ≥ 0.99 (:data:`nhtlab.thresholds.FITTED_ACCURACY`);
  T_gen, the first with test accuracy ≥ 0.8 (:data:`~nhtlab.thresholds.IMAGE_GENERALISED`: these runs top out near
  0.9, never at 0.99); the delay is T_gen − T_mem where both exist and T_gen is later.
* **Readings**: (a) the delay law, :func:`nhtlab.analysis.scorecard.delay_scaling` on the (λ, delay) pairs:
  holds when the 95% interval of the exponent α in T ∝ λ^(−α) holds 1 and excludes 0; (b) P1, ‖θ‖² at T_mem
  above ‖θ‖² at the end, per run; (c) the layer order, :func:`nhtlab.contraction_order` (the read-out against
  the first layer) from T_mem to T_gen, per run, counted k of n (the paper's reading: backward).

**The CNN variant** (``--arch cnn``, so that conv1 and the read-out fc can be compared as the paper compares them
on CIFAR-10): ``ImageGrokRun(arch="cnn")``, everything else as above. A first CNN (conv1 with 8 channels and
conv2 with 16, each with a 2 × 2 max-pool, then the read-out: about 9k parameters against the MLP's 81k) memorised
in 0 of 6 runs (its pilot at 670497c): it learned train and test together, so it did not meet the premise it stood
in for. Fixed after that pilot and before this one runs, with no probe: the CNN is the MLP with a convolution
first, conv1 (8 channels, 3 × 3, ReLU, 2 × 2 max-pool), then the hidden layer (200) and the read-out, about the
MLP's parameters and cost per image, every parameter × 8; the same λ, seeds and budgets as the MLP. One reading is
added with the CNN: (d) each layer's step of peak ‖θ_ℓ‖² and the share of that peak it has lost by the end of the
run (the paper's other reading, which needs no T_mem).

Two worker processes, one torch thread each. Writes ``--out`` (JSON: the settings, each run's readings).

    PYTHONPATH=. python benchmarks/pilot_omnigrok.py --out pilot_omnigrok.json  # chapter 05 trains its own
    PYTHONPATH=. python benchmarks/pilot_omnigrok.py --arch cnn --out nhtlab/results/pilot_omnigrok_cnn.json
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from _record import pilot_about, write_pilot  # benchmarks/_record (this script's folder)
from nhtlab.book.layer_report import grok_run_reading, omnigrok_record, omnigrok_runs
from nhtlab.training.image_grok_run import ImageGrokRun

# each budget 2/(ηλ) steps, rounded up to an evaluation
SPEC = dict(size=14, lr=2e-3, eval_every=100, budgets={0.05: 20_000, 0.1: 10_000, 0.2: 5_000}, seeds=(0, 1, 2))


def one_run(run: ImageGrokRun) -> dict:
    """Train one run and read it as chapter 05 does (its events, norms, layer order and peaks)."""
    torch.set_num_threads(1)
    start = time.process_time()
    reading = grok_run_reading(run, run.execute(progress="none"))
    return {**reading, "cpu_s": round(time.process_time() - start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the pilot to this JSON file")
    parser.add_argument("--arch", choices=("mlp", "cnn"), default="mlp", help="ImageGrokRun's network")
    args = parser.parse_args()
    spec = {**SPEC, "arch": args.arch}
    jobs = sorted(omnigrok_runs(spec).values(), key=lambda run: run.steps, reverse=True)
    with ProcessPoolExecutor(max_workers=2) as pool:
        runs = sorted(pool.map(one_run, jobs), key=lambda r: (r["lam"], r["seed"]))
    for run in runs:
        print(json.dumps(run), flush=True)
    result = omnigrok_record(runs, spec, about=pilot_about(cpu_s=sum(r["cpu_s"] for r in runs)))
    print(json.dumps(result["delay_law"]))
    write_pilot(args.out, result)


if __name__ == "__main__":
    main()
