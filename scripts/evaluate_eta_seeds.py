"""Evaluate the grokking ETA on held-out seeds at the settings it was calibrated on (the earlier, same-λ design; the off-grid one is scripts/evaluate_eta.py), and the early warnings.

    python scripts/evaluate_eta_seeds.py                 # full: the companion's Table 3 runs, fit seeds 0-4, test 5-9
    python scripts/evaluate_eta_seeds.py --profile book  # the book's λ sweep (chapter 03), fit seeds 0-1, test seed 2
    python scripts/evaluate_eta_seeds.py --profile quick # seconds: quick-profile runs, to check the script itself

The split is fixed before any run: constants come from the fitting seeds, and each held-out run is cut
at 25%, 50% and 75% of its plateau. Runs train through the result cache (shared with ``make reproduce``
and chapter 03). Writes ``--out`` (JSON), which chapter 08 renders.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import nhtlab

PROFILES = {
    # the companion's Table 3 runs (scripts/reproduce_table3.py), and λ = 0.01 to 10,000 steps for false alarms
    "full": dict(lams=[0.1, 0.3, 0.5, 1.0], fit_seeds=range(5), test_seeds=range(5, 10), lr=1e-3, steps=50_000,
                 stop_after=2000, budgets={}, weak=dict(weight_decay=0.01, steps=10_000)),
    # chapter 03's book runs
    "book": dict(lams=[0.3, 0.5, 1.0], fit_seeds=range(2), test_seeds=[2], lr=1e-3, steps=8000, stop_after=500,
                 budgets={1.0: 4000}, weak=dict(weight_decay=0.01, steps=1500)),
    "quick": dict(lams=[1.0], fit_seeds=[0], test_seeds=[1], lr=3e-3, steps=2000, stop_after=100, budgets={},
                  weak=dict(weight_decay=0.01, steps=600)),
}


def runs_for(cfg: dict, seeds) -> list:
    return [nhtlab.companion(weight_decay=lam, seed=s, lr=cfg["lr"], steps=cfg["budgets"].get(lam, cfg["steps"]),
                             stop_after=cfg["stop_after"]) for lam in cfg["lams"] for s in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="JSON output (default nhtlab/results/eta_<profile>.json)")
    args = parser.parse_args()
    cfg = PROFILES[args.profile]
    out = args.out or Path(nhtlab.__file__).parent / "results" / f"eta_{args.profile}.json"

    fit_runs, test_runs = runs_for(cfg, cfg["fit_seeds"]), runs_for(cfg, cfg["test_seeds"])
    weak = [nhtlab.companion(seed=s, lr=cfg["lr"], stop_after=None, **cfg["weak"]) for s in cfg["test_seeds"]]
    start = time.perf_counter()
    result = nhtlab.sweep(fit_runs + test_runs + weak, strategy="parallel", workers=args.workers,
                          cache=nhtlab.book.cache(), progress="text")
    histories = [row.history for row in result]
    no_grok = histories[len(fit_runs) + len(test_runs):]
    payload = {**nhtlab.book.eta_evaluation(histories[:len(fit_runs) + len(test_runs)], cfg["test_seeds"], no_grok,
                                       profile=args.profile),
               "python": platform.python_version(), "machine": platform.machine(),
               "wall_seconds": round(time.perf_counter() - start, 1)}
    records, warnings = payload["eta"], payload["warnings"]
    verdict = nhtlab.book.Check(payload["verdict"]["name"], payload["verdict"]["passed"], payload["verdict"]["detail"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    steps = {k: "{:,.0f}" for k in ("mae", "mae_baseline", "mae_companion_fit", "median_width")}
    print(nhtlab.book.table(records, formats={**steps, "coverage": "{:.0%}", "stated_coverage": "{:.0%}"}))
    print(verdict)
    print(nhtlab.book.table(warnings, formats={"median_lead": "{:,.0f}", "median_lead_eta_lambda": "{:.2f}"}))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
