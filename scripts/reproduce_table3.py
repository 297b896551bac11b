"""Reproduce the companion paper's λ sweep (its Table 3) on this machine, and write the table.

    python scripts/reproduce_table3.py                      # λ ∈ {0.1, 0.3, 0.5, 1}, 10 seeds (what `make reproduce` runs)
    python scripts/reproduce_table3.py --seeds 3 --lams 0.3 0.5 1.0
    python scripts/reproduce_table3.py --edges              # also λ = 0.01 and 2.0, with --edge-steps each

The companion's runs exactly (``nhtlab.companion``), on a process pool through the result cache, so an
interrupted reproduction resumes. The table (``nhtlab.book.paper_comparison``, as chapter 3 renders it)
is printed, written to ``--out`` and recorded for the measurements page (``benchmarks/_record``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nhtlab

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from _record import record  # noqa: E402  (benchmarks/_record: the measurements page's records)


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
    result = nhtlab.sweep(runs, strategy="parallel", workers=args.workers, cache=nhtlab.book.cache(), progress="text")
    wall = time.perf_counter() - start
    comparison = nhtlab.book.paper_comparison(list(result.histories))
    header = (f"Companion λ sweep reproduced with nhtlab {nhtlab.__version__}: {len(runs)} runs, {wall / 60:.1f} min "
              f"wall, {args.workers} worker processes.")
    note = "Cells: ours, seed mean ± std (the companion's 10-seed value)."
    text = "\n\n".join([header, str(nhtlab.book.table(comparison.rows)), note, comparison.fit_text()]) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}")
    rows = [{k: str(v) for k, v in row.items()} for row in comparison.rows]
    cached = sum(row.cached for row in result)  # trained earlier (make reproduce, evaluate_eta.py) and read back
    path = record("reproduce_table3", rows, settings={"seeds": args.seeds, "runs": len(runs), "from_cache": cached,
                                                      "workers": args.workers, "wall_min": round(wall / 60, 1)},
                  note="The companion's λ sweep (its Table 3) on this machine; cells: ours, seed mean ± std "
                       "(the companion's 10-seed value). " + comparison.fit_text())
    print(f"recorded: {path}")


if __name__ == "__main__":
    main()
