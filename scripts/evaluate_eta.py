"""Evaluate the grokking ETA off the grid it was calibrated on (issue 46), against the delay law's own baselines.

    python scripts/evaluate_eta.py --profile book   # the CPU profile: 3 seeds, budgets sized for 2 cores
    python scripts/evaluate_eta.py --profile full   # the same design at the companion's budget, 5 seeds
    python scripts/evaluate_eta.py --profile quick  # about a minute: checks the script, not a result
    python scripts/evaluate_eta.py --profile mlp_full_batch  # the second model (also mlp_minibatch)
    python scripts/evaluate_eta.py --profile book --train-only   # train (or find cached) and stop

The design below was committed before any of its runs was trained. Runs train through the result cache,
one process at one thread, cheapest first; :func:`nhtlab.book.off_grid_eta.off_grid_evaluation` evaluates
them, and ``--out`` (default ``nhtlab/results/eta_offgrid_<profile>.json``) is what chapter 08 renders.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

import nhtlab
from nhtlab.book import off_grid_eta as ev

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from _record import cpu_model  # noqa: E402  (benchmarks/_record: lscpu's model name, else /proc/cpuinfo's)

# ---------------------------------------------------------------------------------------------
# The design, fixed and committed before any of its runs was trained (issue 46).
#
# grid:      the companion's Table 3 λ at η = 1e-3. Leave-one-setting-out: each grid λ in turn
#            is forecast (all its seeds) from constants calibrated on the other three.
# off_grid:  settings in no calibration, forecast from all four grid settings: two λ between
#            the grid's points (0.2, 0.7) and one other η (3e-3 at λ = 0.3, ηλ = 9e-4).
# fractions: each forecast run is cut at 25%, 50% and 75% of its plateau, T_mem + f·(T_grok − T_mem).
# methods:   the ETA, fixed with this design: T_mem + √(d_rate·d_law), where d_rate is the core's
#            contraction-rate ETA (nhtlab.predict_grok, L* from the calibration runs) less T_mem and
#            d_law = c/(ηλ), c the median of (T_grok − T_mem)·ηλ over the calibration runs (d_law
#            alone when predict_grok gives no estimate); the core's rate ETA alone; and the baselines
#            (a) T_mem + the nearest calibrated setting's mean delay, (b) the same × (ηλ)_near/(ηλ),
#            (c) the companion's 1/λ fit (η = 1e-3 only). "Nearest": the least |log(ηλ) − log(ηλ_c)|
#            (ties: the larger ηλ). Every method's forecast is floored at the cut's step (the run
#            has not grokked by then), so none wins by the floor alone.
# loss_rise: (issue 46 item 4; written and committed AFTER every run of every profile above was
#            trained and the other methods' results were read, BEFORE this method was evaluated on
#            any of them; not tuned after) at a cut, once the Monitor's grok-warning rule, the train
#            loss at least twice its minimum since T_mem (nhtlab.analysis.early_warnings "train_loss",
#            the signal chosen on other runs: the seed split, eta_full.json), has fired at a step
#            t_rise ≤ the cut: t_rise + c_rise/(ηλ), c_rise the median of (T_grok − t_rise)·ηλ over
#            the calibration runs whose rule fired at or before their T_grok; before it fires, or
#            when no calibration run's did, baseline (b). Floor, intervals and ship rule as the ETA's.
# intervals: split-conformal per cut on the calibration runs only (nested leave-one-setting-out
#            within them), on |log(delay/predicted delay)|, stated coverage 80%.
# budgets:   steps per setting (a run that has not grokked by then is counted and left out);
#            runs stop `stop_after` steps after T_grok. Runs train through the result cache.
# `book` is the CPU profile (3 seeds, one process at one torch thread, the λ = 0.1 runs last);
# `full` is the same design at the companion's budget and 5 seeds (not run on this machine);
# `quick` checks the script in about a minute (1 seed, η = 3e-3, a tiny grid: not a result).
# ---------------------------------------------------------------------------------------------
#: When the loss-rise method was fixed, as each record says it beside its results.
LOSS_RISE_FIXED = ("after every run of this design had been trained and the other methods' results read, before "
                   "its own evaluation (its rule is in this script's design comment, commit f702943); not tuned after")
GRID_LAMS = (0.1, 0.3, 0.5, 1.0)
PROFILES = {
    "full": dict(lr=1e-3, grid=GRID_LAMS, off_grid=((1e-3, 0.2), (1e-3, 0.7), (3e-3, 0.3)), seeds=range(5),
                 stop_after=2000, budget=50_000, budgets={}),
    "book": dict(lr=1e-3, grid=GRID_LAMS, off_grid=((1e-3, 0.2), (1e-3, 0.7), (3e-3, 0.3)), seeds=range(3),
                 stop_after=100, budget=16_000,
                 budgets={(1e-3, 1.0): 4000, (1e-3, 0.7): 5000, (1e-3, 0.5): 6000, (3e-3, 0.3): 4000,
                          (1e-3, 0.3): 9000, (1e-3, 0.2): 12_000, (1e-3, 0.1): 16_000}),
    "quick": dict(lr=3e-3, grid=(0.3, 0.5, 1.0), off_grid=((3e-3, 0.7),), seeds=range(1), stop_after=100,
                  budget=4000, budgets={}),  # 4,000: the book profile's (3e-3, 0.3) seed 0, from the cache
}
# The second model (issue 46 item 5), written before any of its runs: the package's MLP on Z_47 as
# chapter 04 trains it (width 256, embedding std 0.5, AdamW betas (0.9, 0.98)), calibrated on its
# own runs only, full batch and minibatches of 128 drawn with replacement, each evaluated on its
# own. Grid λ ∈ {0.3, 0.5, 1, 2} at η = 3e-3; off the grid λ = 0.7 and 1.4 and η = 1e-3 at λ = 1.
# λ = 0.01 runs (3,000 steps) are the runs that should never warn. On the same runs, the Monitor's
# grok warning (its train-loss rule, nhtlab.analysis.early_warnings) and its online regime()
# (nhtlab.training.monitor.online_regime on the same recorded ‖θ‖² and train accuracy) at each cut
# and at the end, against diagnose_regime's verdict on the finished run.
MLP_RUN = dict(model="mlp", model_kwargs={"width": 256, "embed_std": 0.5}, p=47, betas=(0.9, 0.98), eval_every=50)
for _name, _batch in (("mlp_full_batch", None), ("mlp_minibatch", 128)):
    PROFILES[_name] = dict(lr=3e-3, grid=(0.3, 0.5, 1.0, 2.0), off_grid=((3e-3, 0.7), (3e-3, 1.4), (1e-3, 1.0)),
                           seeds=range(3), stop_after=100, budget=8000, budgets={},
                           run=dict(MLP_RUN, batch_size=_batch), weak=dict(weight_decay=0.01, steps=3000))


def make_run(cfg: dict, lr: float, lam: float, seed: int, steps: int, stop_after: int | None):
    if "run" in cfg:  # the second model: its own settings, not the companion's
        return nhtlab.ModularRun(weight_decay=lam, seed=seed, lr=lr, steps=steps, stop_after=stop_after, **cfg["run"])
    return nhtlab.companion(weight_decay=lam, seed=seed, lr=lr, steps=steps, stop_after=stop_after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="book")
    parser.add_argument("--train-only", action="store_true", help="train (or find in the cache) and stop")
    parser.add_argument("--train-cpu-seconds", type=float, default=None,
                        help="CPU seconds of an earlier --train-only pass that trained these runs, recorded as given")
    parser.add_argument("--out", type=Path, default=None, help="JSON output (default nhtlab/results/eta_offgrid_<profile>.json)")
    args = parser.parse_args()
    cfg = PROFILES[args.profile]
    out = args.out or Path(nhtlab.__file__).parent / "results" / f"eta_offgrid_{args.profile}.json"

    torch.set_num_threads(1)  # one process, one thread: CPU seconds are the machine's cost, the cache keys on it
    cpu, wall = time.process_time(), time.perf_counter()
    # every (η, λ) of the profile, the cheapest budget first (so an interrupted run leaves the most settings)
    pairs = sorted([(cfg["lr"], lam) for lam in cfg["grid"]] + [tuple(p) for p in cfg["off_grid"]],
                   key=lambda p: cfg["budgets"].get(p, cfg["budget"]))
    runs = [make_run(cfg, lr, lam, s, cfg["budgets"].get((lr, lam), cfg["budget"]), cfg["stop_after"])
            for lr, lam in pairs for s in cfg["seeds"]]
    # the runs that should never warn (none in the companion profiles: the seed split's λ = 0.01 runs are those)
    weak = [make_run(cfg, cfg["lr"], cfg["weak"]["weight_decay"], s, cfg["weak"]["steps"], None)
            for s in cfg["seeds"]] if "weak" in cfg else []
    result = nhtlab.sweep(runs + weak, strategy="sequential", cache=nhtlab.book.cache(), progress="text")
    train_cpu = time.process_time() - cpu
    if args.train_only:
        print(f"trained {sum(row.source != 'cache' for row in result)} of {len(result)} runs, CPU {train_cpu:,.0f} s")
        return
    histories = [row.history for row in result]
    payload = ev.off_grid_evaluation(histories[:len(runs)], grid=[(cfg["lr"], lam) for lam in cfg["grid"]],
                                     off_grid=[tuple(p) for p in cfg["off_grid"]], profile=args.profile,
                                     no_grok=histories[len(runs):])
    payload.update(loss_rise_fixed=LOSS_RISE_FIXED, python=platform.python_version(), torch=torch.__version__, cpu_model=cpu_model(),
                   trained=sum(row.source != "cache" for row in result),
                   cpu_seconds=round(time.process_time() - cpu + (args.train_cpu_seconds or 0.0), 1),
                   train_cpu_seconds=round(train_cpu + (args.train_cpu_seconds or 0.0), 1),
                   wall_seconds=round(time.perf_counter() - wall, 1),
                   settings={k: (list(map(list, v)) if k == "off_grid" else list(v) if k in ("grid", "seeds")
                               else {f"{a:g},{b:g}": n for (a, b), n in v.items()} if k == "budgets" else v)
                           for k, v in cfg.items() if k != "run"},
                   model={**runs[0].to_dict(), "weight_decay": None, "seed": None, "steps": None, "lr": None})
    out.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps({k: v for k, v in payload.items() if k != "rows"}, indent=1, ensure_ascii=False)
    rows = ",\n  ".join(json.dumps(r, ensure_ascii=False) for r in payload["rows"])  # one forecast a line
    out.write_text(f'{head[:-2]},\n "rows": [\n  {rows}\n ]\n}}\n')
    print(nhtlab.book.eta_report(payload))
    print(f"CPU {payload['cpu_seconds']:,.0f} s ({payload['cpu_model']}); written to {out}")


if __name__ == "__main__":
    main()
