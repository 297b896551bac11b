"""DLR wall time against n: nhtlab's feature-space estimator vs an n × n Gram-matrix implementation.

    .venv/bin/python benchmarks/bench_dlr.py [--ns 1000 5000] [--threads 2] [--smoke]

Both compute DLR = 1 − CKA(ΦΦᵀ, QQᵀ), Q the output span's basis: in feature space
(:func:`nhtlab.measures.dlr.dlr`, O(n p²) time, O(n p) memory) and from the double-centred n × n
Gram matrices (:func:`nhtlab.measures.cka.linear_cka_gram`, O(n² p) time, three n × n float64
matrices: skipped above ``--gram-max-gb``).
"""

from __future__ import annotations

import argparse
import time

import torch

from nhtlab.measures.cka import centre, linear_cka_gram
from nhtlab.measures.dlr import dlr, output_rank
from _record import record  # benchmarks/_record (this script's folder): the measurements page's records


def synthetic(n: int, p: int, c: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Features with a decaying spectrum (float32, like a network's) and logits read out from them."""
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, -2, p)  # (p,)
    phi = torch.relu(torch.randn(n, p, generator=g) * scales + 0.1)
    out = phi @ torch.randn(p, c, generator=g) / p ** 0.5 + 0.01 * torch.randn(n, c, generator=g)
    return phi, out


def timed(fn, repeats: int) -> tuple[float, float]:
    best, value = float("inf"), float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def gram_dlr(phi: torch.Tensor, out: torch.Tensor) -> float:
    r = output_rank(out)
    q = torch.linalg.svd(centre(out), full_matrices=False)[0][:, :r]  # (n, r)
    return 1.0 - linear_cka_gram(phi, q)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000, 50000])
    parser.add_argument("--p", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gram-max-gb", type=float, default=4.0)
    parser.add_argument("--smoke", action="store_true", help="two small n (seconds): checks the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.ns, args.p = [200, 400], 32
    torch.set_num_threads(args.threads)
    print(f"DLR wall time, p = {args.p}, C = {args.classes}, {args.threads} thread(s), torch {torch.__version__}, "
          f"CPU; best of 3 below n = 10,000, else 1 run")
    print(f"{'n':>7} | {'feature space (s)':>17} | {'Gram n×n (s)':>13} | {'Gram / feature':>14} | {'|ΔDLR|':>8} | DLR")
    print("-" * 80)
    ratio = float("nan")
    rows = []
    for n in args.ns:
        phi, out = synthetic(n, args.p, args.classes)
        repeats = 3 if n < 10000 else 1
        t_fast, value = timed(lambda: dlr(phi, out), repeats)
        gram_gb = 3 * 8 * n * n / 1e9  # K, L and one temporary, float64
        note = ""
        if gram_gb <= args.gram_max_gb:
            t_gram, value_gram = timed(lambda: gram_dlr(phi, out), repeats)
            gram = f"{t_gram:13.3f} | {t_gram / t_fast:13.1f}× | {abs(value - value_gram):8.1e}"
            ratio = t_gram / t_fast
        else:
            gram = f"{'skipped':>13} | {'—':>14} | {'—':>8}"
            note = f"  (Gram path skipped: it needs ~{gram_gb:.0f} GB > --gram-max-gb {args.gram_max_gb:g})"
        print(f"{n:7,d} | {t_fast:17.3f} | {gram} | {value:.4f}{note}", flush=True)
        rows.append({"n": n, "feature space (s)": round(t_fast, 4),
                     "Gram n×n (s)": round(t_gram, 4) if not note else "skipped",
                     "Gram / feature": round(t_gram / t_fast, 2) if not note else "—", "DLR": round(value, 4)})
    print(f"ratio Gram / feature space at the largest n timed both ways: {ratio:.3f}")
    record("bench_dlr", rows, settings={"p": args.p, "classes": args.classes, "threads": args.threads},
           note="DLR in feature space (O(n·p²)) against the n×n Gram-matrix CKA, one process, side by side.",
           smoke=args.smoke)


if __name__ == "__main__":
    main()
