"""Reproduce the companion paper's λ sweep (its Table 3) on this machine, and write the table.

    python scripts/reproduce_table3.py                      # λ ∈ {0.1, 0.3, 0.5, 1}, 10 seeds (what `make reproduce` runs)
    python scripts/reproduce_table3.py --seeds 3 --lams 0.3 0.5 1.0
    python scripts/reproduce_table3.py --edges              # also λ = 0.01 and 2.0, with --edge-steps each

The runs are the companion's exactly (``nhtlab.companion``: transformer, p = 97, 50% train,
AdamW lr 1e-3, default betas, batch 512 with replacement, stopped 2,000 steps after T_grok,
at most 50,000 steps), trained on a process pool (one torch thread per worker) through the
result cache, so an interrupted reproduction resumes where it stopped. The table (ours beside
the companion's 10-seed means ± std) is printed and written as markdown to ``--out``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import nhtlab
from nhtlab.papers import COMPANION_CONTRACTION, COMPANION_GROK_COUNTS, COMPANION_GROK_FIT, COMPANION_LAMBDA_SWEEP, paper_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lams", type=float, nargs="+", default=[0.1, 0.3, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0 … N−1 per λ")
    parser.add_argument("--edges", action="store_true", help="add the regime edges λ = 0.01 and 2.0")
    parser.add_argument("--edge-steps", type=int, default=10_000, help="step budget of the edge runs (paper: 50,000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("_build/reproduce/table3.md"))
    args = parser.parse_args()

    runs = [nhtlab.companion(lam, s) for lam in args.lams for s in range(args.seeds)]
    if args.edges:
        runs += [nhtlab.companion(lam, s, steps=args.edge_steps) for lam in (0.01, 2.0) for s in range(args.seeds)]
    start = time.perf_counter()
    result = nhtlab.sweep(runs, strategy="parallel", workers=args.workers, cache=nhtlab.default_cache(), progress="text")
    wall = time.perf_counter() - start

    points = [p for p in (nhtlab.delay_point(row.history) for row in result) if p is not None]
    contraction = {}
    for row in result:
        fit = nhtlab.contraction_fit(row.history)
        if fit is not None and nhtlab.find_events(row.history).t_grok is not None:
            contraction.setdefault(row.run.weight_decay, []).append(fit.ratio)
    lines = [f"Companion λ sweep reproduced with nhtlab {nhtlab.__version__}: {len(runs)} runs, {wall / 60:.1f} min wall, "
             f"{args.workers} worker processes.", "",
             "| λ | grokked | T_mem | T_grok (companion) | T_escape (companion) | theory (companion) | (1 − r)/(ηλ) (companion) |",
             "|---|---|---|---|---|---|---|"]
    for lam in sorted({r.weight_decay for r in runs}):
        mine = [p for p in points if p["weight_decay"] == lam]
        n = sum(1 for r in runs if r.weight_decay == lam)
        theirs = COMPANION_LAMBDA_SWEEP.get(lam, {})
        ratios = contraction.get(lam, [])
        count = COMPANION_GROK_COUNTS.get(lam)
        cells = [f"{len(mine)}/{n} ({'—' if count is None else f'{count[0]}/{count[1]}'})"]
        for key, paper_key in (("t_mem", "t_mem"), ("t_grok", "t_grok"), ("measured", "t_escape"), ("predicted", "escape_theory")):
            ours = nhtlab.analysis.delay.mean_std(mine, key)
            cells.append(f"{paper_cell(ours)} ({paper_cell(theirs.get(paper_key))})" if key != "t_mem" else paper_cell(ours))
        cells.append(f"{sum(ratios) / len(ratios):.2f} ({COMPANION_CONTRACTION.get(lam, '—')})" if ratios else "—")
        lines.append(f"| {lam:g} | " + " | ".join(cells) + " |")
    means = {lam: nhtlab.analysis.delay.mean_std(points, "t_grok", weight_decay=lam) for lam in args.lams if 0.1 <= lam <= 1.0}
    means = {lam: m[0] for lam, m in means.items() if m is not None}
    if len(means) >= 2:
        fit = nhtlab.linear_fit([1 / lam for lam in means], list(means.values()))
        lines += ["", f"T_grok against 1/λ on λ ∈ [0.1, 1] (seed means): slope {fit.slope:,.0f} "
                      f"(companion {COMPANION_GROK_FIT['slope']:,}), intercept {fit.intercept:,.0f} "
                      f"(companion {COMPANION_GROK_FIT['intercept']}), R² {fit.r2:.3f} (companion {COMPANION_GROK_FIT['r2']})."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
