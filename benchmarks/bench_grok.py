"""Benchmark (not a test): the companion transformer's training speed against the machine's matmul limit.

Usage: ``python benchmarks/bench_grok.py [--steps 60] [--optimizer-steps 50] [--compile-steps 50] [--smoke]``

On one CPU thread: the companion step's steps per CPU second (bare, and inside ``train()`` with its
evaluations), its matmul FLOPs (``torch.utils.flop_counter``) against single-thread ``torch.mm`` on the
same shapes (the floor), eager against compiled, where its CPU time goes (``torch.profiler``), and
AdamW fused against foreach on the companion and chapter 05/06's SimpleCNN. On CUDA, also the seeds of
one λ stacked against one at a time. ``--smoke`` runs every part for a few steps: its numbers mean
nothing. Under other load compare the ratios of one run, not the times.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import nhtlab
from nhtlab.plumbing.floor import count_step, matmul_rate


def _stepper(run, data, model, fused: bool, forward=None):
    """One training step of ``model`` (through ``forward``, default the model itself) on a random batch of
    ``data``, with its own AdamW set as ``run`` trains."""
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=run.betas, weight_decay=run.weight_decay, fused=fused)
    x, y, gen = data.x_train, data.y_train, torch.Generator().manual_seed(0)
    forward = model if forward is None else forward  # not `or`: a compiled module has no truth value

    def step():
        idx = torch.randint(0, len(y), (run.batch_size,), generator=gen, device=x.device)
        loss = F.cross_entropy(forward(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


ROUNDS = 6  # alternating blocks per comparison (1 with --smoke)


def _alternate(steppers: dict, steps: int, rounds: int) -> dict:
    """Steps per CPU second of each stepper, in blocks of ``steps`` alternating (reversed every round) so that
    every form sees the same machine; the first round warms up."""
    cpu = dict.fromkeys(steppers, 0.0)
    for r in range(rounds + 1):
        for label in (list(steppers) if r % 2 else list(steppers)[::-1]):
            c0 = time.thread_time()
            for _ in range(steps):
                steppers[label]()
            if r:
                cpu[label] += time.thread_time() - c0
    return {label: rounds * steps / seconds for label, seconds in cpu.items()}


def _companion(fused: bool, compiled: bool = False):
    """The companion run (λ = 1, seed 0), its data, a fresh model and one training step of it with its own
    AdamW (``compiled``: as ``TrainConfig(compile=True)`` trains)."""
    from nhtlab.training.compiled import compiled_forward

    run = nhtlab.companion(1.0, seed=0, device="cpu")
    data = nhtlab.modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    nhtlab.seed_everything(0)
    model = nhtlab.make_model(run.model, run.p, **run.model_kwargs)
    return run, data, model, _stepper(run, data, model, fused, compiled_forward(model, "cpu")[0] if compiled else None)


def bench_optimizer(steps: int) -> float:
    """AdamW fused against foreach (PyTorch's default) on the companion transformer and the SimpleCNN; returns
    the companion's fused / foreach."""
    from nhtlab.training.presets import BORDER_DESIGN

    run = nhtlab.ShortcutRun(seed=0, **BORDER_DESIGN)
    data = run.data()

    print(f"\nAdamW, fused against foreach, {ROUNDS} alternating blocks of {steps} steps each, 1 thread:")
    ratios = []
    for name, make in (("companion transformer, batch 512", lambda fused: _companion(fused)[3]),
                       (f"SimpleCNN border run, batch {run.batch_size}",
                        lambda fused: _stepper(run, data, run.build_model(data.num_classes), fused))):
        rates = _alternate({"fused": make(True), "foreach": make(False)}, steps, ROUNDS)
        print(f"  {name:<34} fused {rates['fused']:6.1f}, foreach {rates['foreach']:6.1f} steps per CPU second; "
              f"fused / foreach ×{rates['fused'] / rates['foreach']:.3f}")
        ratios.append(rates["fused"] / rates["foreach"])
    return ratios[0]


# the first compiled step of the companion, as _companion builds it, in a fresh process
COMPILE_CHILD = f"""
import sys, time, torch
import torch.nn.functional as F
torch.set_num_threads(1)
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from bench_grok import _companion
from nhtlab.training.compiled import compiled_forward
run, data, model, _ = _companion(fused=True)
forward, path = compiled_forward(model, "cpu")
x, y = data.x_train[:run.batch_size], data.y_train[:run.batch_size]
t0 = time.perf_counter()
F.cross_entropy(forward(x), y).backward()
print(path, time.perf_counter() - t0)
"""


def compile_cost(cold: bool = True) -> tuple[str, float]:
    """Wall seconds of the first compiled step in a fresh process, compile workers included: with a cold
    inductor cache, or (``cold=False``, the smoke run's: the same code path without a second cold compile)
    with the machine's own."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as empty:
        env = {**os.environ, "OMP_NUM_THREADS": "1"} | ({"TORCHINDUCTOR_CACHE_DIR": empty} if cold else {})
        done = subprocess.run([sys.executable, "-c", COMPILE_CHILD], capture_output=True, text=True, env=env,
                              timeout=900)
    if done.returncode:  # say why: check=True would raise with the command and hide the child's traceback
        raise RuntimeError(f"the cold-compile child exited {done.returncode}:\n{done.stderr[-4000:]}")
    out = done.stdout.split()
    return out[0], float(out[1])


def bench_compile(steps: int, flops: float, limit: float) -> dict:
    """Eager against the compiled step, alternating, and each one's share of the floor (eager's matmul FLOPs,
    which fusing cannot add to, at single-thread ``torch.mm``'s rate)."""
    from nhtlab.training.compiled import compiler_missing

    why = compiler_missing("cpu")
    if why is not None:
        print(f"\ncompiled step: skipped ({why})")
        return {}
    path, cold = compile_cost(cold=ROUNDS > 1)  # a smoke run (one round) checks the path, not the cost
    steppers = {label: _companion(True, compiled=label == "compiled")[3] for label in ("eager", "compiled")}
    for stepper in steppers.values():
        stepper()  # the compiled one compiles here (warm inductor cache: the cold cost is measured above)
    rates = _alternate(steppers, steps, ROUNDS)
    floor_ms = flops / (limit * 1e9) * 1e3
    print(f"\ncompiled step ({path}), {ROUNDS} alternating blocks of {steps} steps each, 1 thread:")
    for label, rate in rates.items():
        print(f"  {label:<10} {rate:6.1f} steps per CPU second ({1e3 / rate:.1f} ms), "
              f"{floor_ms * rate / 1e3:.0%} of the floor ({floor_ms:.1f} ms of matmuls at torch.mm's rate)")
    print(f"  compiled / eager: ×{rates['compiled'] / rates['eager']:.2f}; compilation with a cold inductor cache: "
          f"{cold:.1f} s wall (first step, compile workers included)")
    return {"eager_steps_per_cpu_s": rates["eager"], "compiled_steps_per_cpu_s": rates["compiled"],
            "ratio": rates["compiled"] / rates["eager"], "floor_ms": floor_ms,
            "eager_floor_fraction": floor_ms * rates["eager"] / 1e3,
            "compiled_floor_fraction": floor_ms * rates["compiled"] / 1e3, "cold_compile_s": cold}


STEP_PARTS = (  # where a step's CPU time goes, by the profiler's op name (first match wins)
    ("matmuls (mm, addmm, bmm)", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")),
    ("inductor's fused kernels", ("CompiledFxGraph",)),
    ("AdamW (fused kernel and its step)", ("adam", "Optimizer.")),
    ("other ATen ops (elementwise, softmax, LayerNorm, GELU, gathers)", ("aten::",)),
)


def bench_where_time_goes(steps: int) -> dict:
    """CPU ms per step in each part of the eager and the compiled step (torch.profiler's self times; its few µs
    per op inflate the parts made of many small ops)."""
    from torch.profiler import ProfilerActivity, profile

    from nhtlab.training.compiled import compiler_missing

    forms = {"eager": False} | ({} if compiler_missing("cpu") else {"compiled": True})
    table: dict[str, dict[str, float]] = {}
    for label, compiled in forms.items():
        stepper = _companion(True, compiled)[3]
        for _ in range(5):
            stepper()  # warm (and compile)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                stepper()
        parts = {name: 0.0 for name, _ in STEP_PARTS} | {"the rest (autograd, dispatch, Python)": 0.0}
        for event in prof.key_averages():
            name = next((part for part, keys in STEP_PARTS if any(k in event.key for k in keys)),
                        "the rest (autograd, dispatch, Python)")
            parts[name] += event.self_cpu_time_total / 1e3 / steps  # µs in all → ms per step
        table[label] = parts
    print(f"\nwhere a step's CPU time goes (torch.profiler self times, {steps} steps, ms per step):")
    print(f"  {'part':<66}" + "".join(f"{label:>10}" for label in table))
    for part in next(iter(table.values())):
        print(f"  {part:<66}" + "".join(f"{parts[part]:10.2f}" for parts in table.values()))
    print(f"  {'all':<66}" + "".join(f"{sum(parts.values()):10.2f}" for parts in table.values()))
    return table


def bench_cpu(args) -> None:
    torch.set_num_threads(1)
    run, data, model, step = _companion(fused=nhtlab.companion(1.0).fused)
    # the step's matmul FLOPs as the book build's efficiency counts them (nhtlab.plumbing.floor)
    flops, shapes = count_step(model, data.x_train[:run.batch_size], data.y_train[:run.batch_size])
    for _ in range(1 if ROUNDS == 1 else 5):
        step()
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(args.steps):
        step()
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    sps, sps_cpu = args.steps / wall, args.steps / cpu
    achieved = flops * sps_cpu / 1e9
    limit = matmul_rate(shapes, 0.01 if ROUNDS == 1 else 0.3)
    print(f"companion transformer (p=97, d_model 128, batch 512), 1 thread, {args.steps} steps:")
    print(f"  bare AdamW step:         {sps_cpu:6.1f} steps per CPU second ({cpu / args.steps * 1e3:.1f} ms CPU/step); "
          f"wall {sps:.1f} steps/s ({wall / args.steps * 1e3:.1f} ms/step)")
    print(f"  matmul FLOPs per step:   {flops / 1e9:.3f} GFLOP (forward + backward)")
    print(f"  achieved:                {achieved:6.2f} GFLOP per CPU second")
    print(f"  torch.mm/bmm on the same shapes, 1 thread: {limit:6.2f} GFLOP per CPU second  →  {achieved / limit:.0%} of the limit")
    print("  matmul shapes (batch, M, K, N) × count:", dict(shapes))
    args.floor = (flops, limit)

    # the real loop, with its evaluations (every 100 steps on all pairs); 300 steps = 3 evaluations + step 0
    for label, every in (("train(), eval_every=100", 100), ("train(), eval_every=25", 25)):
        every = min(every, args.loop_steps)
        r = run.replace(steps=args.loop_steps, eval_every=every, stop_after=None)
        t0, c0 = time.perf_counter(), time.thread_time()
        nhtlab.run_modular(r, progress="none")
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        print(f"  {label:<26} {args.loop_steps / cpu:6.1f} steps per CPU second, wall {args.loop_steps / wall:.1f} steps/s "
              f"over {args.loop_steps} steps (evaluations included)")


def bench_cuda(args) -> list[dict] | None:
    """On a GPU: the seeds of one λ stacked (eager, then compiled) against the same runs one at a time."""
    if not torch.cuda.is_available():
        print("\nno CUDA: the stacked-vs-one-at-a-time GPU comparison is skipped")
        return None
    from nhtlab.training.compiled import compiler_missing

    seeds = list(range(args.gpu_seeds))
    runs = [nhtlab.companion(1.0, seed=s, steps=args.gpu_steps, stop_after=None, device="cuda") for s in seeds]

    def wall(train) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        train()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    times = {"one at a time": wall(lambda: [nhtlab.run_modular(r, progress="none") for r in runs]),
             "stacked": wall(lambda: nhtlab.training.batched.train_batched(runs, progress="none"))}
    why = compiler_missing("cuda")
    if why is None:  # compilation included: the first compiled stack of this process
        times["stacked, compiled"] = wall(lambda: nhtlab.training.batched.train_batched([r.replace(compile=True) for r in runs],
                                                                      progress="none"))
    print(f"\n{torch.cuda.get_device_name()}: {len(runs)} seeds of λ = 1 × {args.gpu_steps} steps"
          + ("" if why is None else f" (compiled stack skipped: {why})"))
    single = times["one at a time"]
    for label, seconds in times.items():
        print(f"  {label:<18} {seconds:7.1f} s wall  (×{single / seconds:.1f} of one at a time)")
    where = f"{torch.cuda.get_device_name()}, {len(runs)} seeds × {args.gpu_steps} steps"
    rows = [{"what": f"{label} ({where})", "value": round(seconds, 2), "unit": "s wall"} for label, seconds in times.items()]
    return rows + [{"what": f"{label} over one at a time", "value": round(single / seconds, 2), "unit": "×"}
                   for label, seconds in times.items() if label != "one at a time"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="timed bare steps")
    parser.add_argument("--loop-steps", type=int, default=300, help="steps of the train() timings")
    parser.add_argument("--optimizer-steps", type=int, default=50, help="steps per block of the AdamW comparison")
    parser.add_argument("--compile-steps", type=int, default=50, help="steps per block of the eager/compiled comparison")
    parser.add_argument("--profile-steps", type=int, default=100, help="steps profiled for the where-the-time-goes table")
    parser.add_argument("--gpu-seeds", type=int, default=10)
    parser.add_argument("--gpu-steps", type=int, default=2000)
    parser.add_argument("--smoke", action="store_true", help="a few steps of every part (seconds): checks the script runs")
    args = parser.parse_args()
    global ROUNDS
    if args.smoke:
        ROUNDS = 1
        args.steps = args.optimizer_steps = args.compile_steps = args.profile_steps = 2
        args.loop_steps, args.gpu_seeds, args.gpu_steps = 2, 2, 2
        os.environ.setdefault("NHTLAB_CACHE", "off")
    os.environ.setdefault("NHTLAB_PROGRESS", "none")
    from _record import cpu_isa, cpu_model  # benchmarks/_record: the same names the measurements records give

    print(f"torch {torch.__version__}, {cpu_model()!r} (lscpu's model name), "
          f"{cpu_isa()} kernels, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f} (inflated timings when > 0)\n")
    bench_cpu(args)
    compiled = bench_compile(args.compile_steps, *args.floor)
    profile_table = bench_where_time_goes(args.profile_steps)
    ratio = bench_optimizer(args.optimizer_steps)
    gpu = bench_cuda(args)
    if compiled or gpu:  # a smoke run's record is marked as such: the measurements page leaves it out
        from _record import record  # benchmarks/_record: the measurements page's records

        units = {"ratio": "×", "floor_ms": "ms", "cold_compile_s": "s wall"}
        rows = [{"what": key.replace("_", " "), "value": round(value, 3),
                 "unit": units.get(key, "share of the floor" if "fraction" in key else "steps per CPU second")}
                for key, value in (compiled or {}).items()]
        rows += [{"what": f"{form} step: {part}", "value": round(ms, 3), "unit": "CPU ms per step (profiler)"}
                 for form, parts in profile_table.items() for part, ms in parts.items()]
        print("  recorded:", record("bench_grok", rows + (gpu or []),
                                    settings={"threads": 1, "compile_steps": args.compile_steps},
                                    note="The companion step, eager against torch.compile (inductor), side by side; "
                                         "on a GPU, the seeds of one λ stacked against one at a time.",
                                    smoke=args.smoke))
    print(f"\nratio fused / foreach AdamW, companion transformer (steps per CPU second): {ratio:.3f}")


if __name__ == "__main__":
    main()
