"""Benchmark (not a test): the companion transformer's training speed against the machine's matmul limit.

Usage: ``python benchmarks/bench_grok.py [--steps 60] [--attention-steps 50] [--optimizer-steps 50] [--table-steps 50] [--sweep-steps 300] [--skip-sweep] [--smoke]``

``--smoke`` runs every part for a few steps (seconds; tests/test_benchmarks.py runs it so the script cannot rot):
its numbers mean nothing.

On one CPU thread it prints

1. training steps per second of the companion paper's transformer
   (:func:`nhtlab.companion`: p = 97, d_model 128, batch 512), for the bare
   AdamW step (fused, as the companion runs train) and for :func:`nhtlab.training.loop.train` with its evaluations
   (every 100 steps, on all 9,409 pairs);
2. the step's matmul FLOPs (counted by ``torch.utils.flop_counter``: forward
   and backward, every mm/bmm/addmm) and the achieved GFLOP/s;
3. the single-thread throughput of ``torch.mm`` on the same shapes (the limit),
   and the fraction of it the step reaches;
4. the training step with the model's broadcast attention against the batched-matmul
   form it replaced (``q @ kᵀ`` over B·heads tiny matrices), timed alternately in
   blocks of steps so that both see the same machine;
5. AdamW fused (``fused=True``, what :func:`nhtlab.companion` runs ask for) against
   PyTorch's default multi-tensor form (``foreach``), on the companion transformer and on
   chapter 05/06's SimpleCNN border run (batch 64), timed alternately in the same way;
6. the training step and the evaluation with the first block projecting once per (position, token)
   against the per-sequence projections of nhtlab 0.2.3, timed alternately in the same way;
7. a small book-like λ sweep (the companion transformer at λ = 0.3, 0.5, 1, 2,
   ``--sweep-steps`` steps each) trained sequentially, in a 2-process pool and as
   one stacked model.

On a machine with CUDA it also times all seeds of one λ as one stacked model
(:func:`nhtlab.training.batched.train_batched`) against one run at a time.

Under other load the wall times are inflated: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import torch
import torch.nn.functional as F

import nhtlab
from nhtlab.plumbing.floor import count_step, matmul_rate
from nhtlab.models.transformer import SelfAttention, Transformer, gather_rows
from nhtlab.training.loop import evaluate
from nhtlab.training.sweeps import grid, sweep


def _step_fn(model, opt, x, y, idx_gen, batch):
    def step():
        idx = torch.randint(0, len(y), (batch,), generator=idx_gen, device=x.device)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def matmul_attention(self, x, queries=None, tokens=None):
    """SelfAttention.forward as nhtlab 0.2.0 wrote it: batched matmuls over (B·heads) tiny matrices.

    With ``tokens`` (the first block's (T, V, C) table, :meth:`Transformer.features`) the rows are
    gathered first and projected per sequence, as 0.2.0 did.
    """
    if tokens is not None:
        x = gather_rows(x, tokens)
    B, T, C = x.shape
    Tq = T if queries is None else queries
    hs = C // self.n_heads
    q, k, v = F.linear(x, self.qkv.weight, self.qkv.bias).split(C, dim=2)
    q = q[:, T - Tq:].reshape(B, Tq, self.n_heads, hs).transpose(1, 2)
    k = k.reshape(B, T, self.n_heads, hs).transpose(1, 2)
    v = v.reshape(B, T, self.n_heads, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / hs ** 0.5
    y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, Tq, C)
    return self.proj(y)


def per_sequence_features(self, x):
    """Transformer.features as nhtlab 0.2.3 wrote it: the first block projects every sequence's inputs."""
    h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
    *early, last = self.blocks
    for block in early:
        h = block(h)
    return self.ln_f(last(h, last_only=True)[:, -1])


ROUNDS = 6  # alternating blocks per comparison (1 with --smoke)


def _alternate(steppers: dict, steps: int, rounds: int, before=lambda label: None) -> dict:
    """Steps per CPU second of each stepper, timed in alternating blocks of ``steps`` steps.

    Alternating blocks (the order reversed every round) let every form see the same machine;
    ``before(label)`` sets a form up before each of its blocks. The first round warms up.
    """
    cpu = dict.fromkeys(steppers, 0.0)
    for r in range(rounds + 1):
        for label in (list(steppers) if r % 2 else list(steppers)[::-1]):
            before(label)
            c0 = time.thread_time()
            for _ in range(steps):
                steppers[label]()
            if r:
                cpu[label] += time.thread_time() - c0
    return {label: rounds * steps / seconds for label, seconds in cpu.items()}


def _companion_stepper(fused: bool, compiled: bool = False):
    """One training step of the companion run (λ = 1, seed 0) with its own model and AdamW.

    ``compiled``: the forward through :func:`nhtlab.training.compiled.compiled_forward`, as
    ``TrainConfig(compile=True)`` trains.
    """
    from nhtlab.training.compiled import compiled_forward

    run = nhtlab.companion(1.0, seed=0, device="cpu")
    data = nhtlab.modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    nhtlab.seed_everything(0)
    model = nhtlab.make_model(run.model, run.p)
    forward = compiled_forward(model, "cpu")[0] if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=run.betas, weight_decay=run.weight_decay, fused=fused)
    return _step_fn(forward, opt, data.x_train, data.y_train, torch.Generator().manual_seed(0), run.batch_size)


def bench_attention(steps: int, rounds: int | None = None) -> float:
    """Steps per CPU second with each attention form, alternating blocks of ``steps`` steps."""
    rounds = ROUNDS if rounds is None else rounds
    broadcast = SelfAttention.forward
    forms = {"broadcast (nhtlab)": broadcast, "batched matmul (0.2.0)": matmul_attention}
    steppers = {label: _companion_stepper(fused=True) for label in forms}
    try:
        rates = _alternate(steppers, steps, rounds, before=lambda label: setattr(SelfAttention, "forward", forms[label]))
    finally:
        SelfAttention.forward = broadcast
    print(f"\nattention forms, {rounds} alternating blocks of {steps} steps each, 1 thread:")
    for label, rate in rates.items():
        print(f"  {label:<24} {rate:6.1f} steps per CPU second")
    print(f"  broadcast / matmul:      ×{rates['broadcast (nhtlab)'] / rates['batched matmul (0.2.0)']:.3f}")
    return rates['broadcast (nhtlab)'] / rates['batched matmul (0.2.0)']


def bench_token_table(steps: int, rounds: int | None = None) -> None:
    """Steps and evaluations per CPU second with the token table and with per-sequence projections."""
    rounds = ROUNDS if rounds is None else rounds
    table = Transformer.features
    forms = {"token table (nhtlab)": table, "per sequence (0.2.3)": per_sequence_features}
    swap = lambda label: setattr(Transformer, "features", forms[label])
    try:
        rates = _alternate({label: _companion_stepper(fused=True) for label in forms}, steps, rounds, before=swap)
        run = nhtlab.companion(1.0, seed=0, device="cpu")
        data = nhtlab.modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
        model = nhtlab.make_model(run.model, run.p)
        every_pair = (torch.cat([data.x_train, data.x_test]), torch.cat([data.y_train, data.y_test]))
        evals = _alternate({label: lambda: evaluate(model, *every_pair) for label in forms}, 2, rounds, before=swap)
    finally:
        Transformer.features = table
    print(f"\nfirst block's projections, {rounds} alternating blocks of {steps} steps (evaluations: 2 on all "
          f"9,409 pairs) each, 1 thread:")
    for label in forms:
        print(f"  {label:<24} {rates[label]:6.1f} steps, {evals[label]:5.2f} evaluations per CPU second")
    a, b = forms
    print(f"  table / per sequence:    ×{rates[a] / rates[b]:.3f} steps, ×{evals[a] / evals[b]:.3f} evaluations")


def bench_optimizer(steps: int, rounds: int | None = None) -> None:
    """AdamW fused against foreach (PyTorch's default), on the companion transformer and the SimpleCNN."""
    rounds = ROUNDS if rounds is None else rounds
    from nhtlab.training.presets import BORDER_DESIGN

    run = nhtlab.ShortcutRun(seed=0, **BORDER_DESIGN)
    data = run.data()

    def cnn_stepper(fused: bool):
        model = run.build_model(data.num_classes)
        opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=run.betas, weight_decay=run.weight_decay,
                                fused=fused)
        return _step_fn(model, opt, data.x_train, data.y_train, torch.Generator().manual_seed(0), run.batch_size)

    print(f"\nAdamW, fused against foreach, {rounds} alternating blocks of {steps} steps each, 1 thread:")
    for name, make in (("companion transformer, batch 512", _companion_stepper),
                       (f"SimpleCNN border run, batch {run.batch_size}", cnn_stepper)):
        rates = _alternate({"fused": make(True), "foreach": make(False)}, steps, rounds)
        print(f"  {name:<34} fused {rates['fused']:6.1f}, foreach {rates['foreach']:6.1f} steps per CPU second; "
              f"fused / foreach ×{rates['fused'] / rates['foreach']:.3f}")


COMPILE_CHILD = """
import time, torch
torch.set_num_threads(1)
import nhtlab
from nhtlab.training.compiled import compiled_forward
import torch.nn.functional as F
run = nhtlab.companion(1.0, seed=0, device="cpu")
data = nhtlab.modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
nhtlab.seed_everything(0)
model = nhtlab.make_model(run.model, run.p)
forward, path = compiled_forward(model, "cpu")
x, y = data.x_train[:run.batch_size], data.y_train[:run.batch_size]
t0 = time.perf_counter()
F.cross_entropy(forward(x), y).backward()
print(path, time.perf_counter() - t0)
"""


def compile_cost() -> tuple[str, float]:
    """Wall seconds of the first compiled step in a fresh process with a cold inductor cache (compile workers included)."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as cold:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cold, "OMP_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", COMPILE_CHILD], capture_output=True, text=True, env=env,
                              timeout=900)
    if done.returncode:  # say why: check=True would raise with the command and hide the child's traceback
        raise RuntimeError(f"the cold-compile child exited {done.returncode}:\n{done.stderr[-4000:]}")
    out = done.stdout.split()
    return out[0], float(out[1])


def bench_compile(steps: int, flops: float, limit: float, rounds: int | None = None) -> dict:
    """Eager against the compiled step (TrainConfig.compile), alternating blocks, and each one's share of the floor.

    The floor is the step's matmul FLOPs as eager counts them (fixed: fusing cannot add to it) at the
    single-thread ``torch.mm`` rate on the same shapes.
    """
    from nhtlab.training.compiled import compiler_missing

    rounds = ROUNDS if rounds is None else rounds
    why = compiler_missing("cpu")
    if why is not None:
        print(f"\ncompiled step: skipped ({why})")
        return {}
    path, cold = compile_cost()
    steppers = {label: _companion_stepper(fused=True, compiled=label == "compiled") for label in ("eager", "compiled")}
    for stepper in steppers.values():
        stepper()  # the compiled one compiles here (warm inductor cache: the cold cost is measured above)
    rates = _alternate(steppers, steps, rounds)
    floor_ms = flops / (limit * 1e9) * 1e3
    print(f"\ncompiled step ({path}), {rounds} alternating blocks of {steps} steps each, 1 thread:")
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
    """A profile table of the eager and the compiled step: CPU ms per step in each part (torch.profiler).

    Self times, so a part counts its own work only. The profiler adds a few microseconds to every
    op, which inflates the parts made of many small ops ("the rest": autograd, dispatch, Python).
    """
    from torch.profiler import ProfilerActivity, profile

    from nhtlab.training.compiled import compiler_missing

    forms = {"eager": False} | ({} if compiler_missing("cpu") else {"compiled": True})
    table: dict[str, dict[str, float]] = {}
    for label, compiled in forms.items():
        stepper = _companion_stepper(fused=True, compiled=compiled)
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


def count_matmuls(model, x, y, batch) -> tuple[int, Counter]:
    """Matmul FLOPs of one training step (forward + backward) and the (batch, M, K, N) shapes they come from
    (:func:`nhtlab.plumbing.floor.count_step`, which the book build's efficiency counts with too)."""
    return count_step(model, x[:batch], y[:batch])


def matmul_limit(shapes: Counter, seconds: float | None = None) -> float:
    """Single-thread GFLOP/s of torch.mm/bmm over ``shapes`` (:func:`nhtlab.plumbing.floor.matmul_rate`)."""
    return matmul_rate(shapes, (0.01 if ROUNDS == 1 else 0.3) if seconds is None else seconds)


def bench_cpu(args) -> None:
    torch.set_num_threads(1)
    run = nhtlab.companion(1.0, seed=0, device="cpu")
    data = nhtlab.modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    nhtlab.seed_everything(0)
    model = nhtlab.make_model(run.model, run.p, **run.model_kwargs)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=run.betas, weight_decay=run.weight_decay, fused=run.fused)
    gen = torch.Generator().manual_seed(0)
    step = _step_fn(model, opt, data.x_train, data.y_train, gen, run.batch_size)
    flops, shapes = count_matmuls(model, data.x_train, data.y_train, run.batch_size)
    for _ in range(1 if ROUNDS == 1 else 5):
        step()
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(args.steps):
        step()
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    sps, sps_cpu = args.steps / wall, args.steps / cpu
    achieved = flops * sps_cpu / 1e9
    limit = matmul_limit(shapes)
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


def bench_sweep(args) -> None:
    base = nhtlab.companion(1.0, seed=0, steps=args.sweep_steps, stop_after=None, device="cpu")
    runs = grid(base, weight_decay=[0.3, 0.5, 1.0, 2.0])
    print(f"\nbook-like λ sweep: {len(runs)} runs × {args.sweep_steps} steps (chapter 3's companion transformer, λ 0.3–2):")
    times = {}
    for label, kwargs in (("sequential", dict(strategy="sequential")), ("2-process pool", dict(strategy="parallel", workers=2)),
                          ("batched, 1 process", dict(strategy="batched", workers=1))):
        t0 = time.perf_counter()
        sweep(runs, progress="none", **kwargs)
        times[label] = time.perf_counter() - t0
        print(f"  {label:<20} {times[label]:6.1f} s  (×{times['sequential'] / times[label]:.2f} vs sequential)", flush=True)


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
    parser.add_argument("--attention-steps", type=int, default=50, help="steps per block of the attention comparison")
    parser.add_argument("--optimizer-steps", type=int, default=50, help="steps per block of the AdamW comparison")
    parser.add_argument("--table-steps", type=int, default=50, help="steps per block of the token-table comparison")
    parser.add_argument("--compile-steps", type=int, default=50, help="steps per block of the eager/compiled comparison")
    parser.add_argument("--profile-steps", type=int, default=100, help="steps profiled for the where-the-time-goes table")
    parser.add_argument("--sweep-steps", type=int, default=300)
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--gpu-seeds", type=int, default=10)
    parser.add_argument("--gpu-steps", type=int, default=2000)
    parser.add_argument("--smoke", action="store_true", help="a few steps of every part (seconds): checks the script runs")
    args = parser.parse_args()
    global ROUNDS
    if args.smoke:
        ROUNDS = 1
        args.steps = args.attention_steps = args.optimizer_steps = args.table_steps = args.compile_steps = 2
        args.profile_steps = 2
        args.loop_steps, args.skip_sweep, args.gpu_seeds, args.gpu_steps = 2, True, 2, 2
        os.environ.setdefault("NHTLAB_CACHE", "off")
    os.environ.setdefault("NHTLAB_PROGRESS", "none")
    from _record import cpu_isa, cpu_model  # benchmarks/_record: the same names the measurements records give

    print(f"torch {torch.__version__}, {cpu_model()!r} (lscpu's model name), "
          f"{cpu_isa() or 'unknown'} kernels, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f} (inflated timings when > 0)\n")
    bench_cpu(args)
    compiled = bench_compile(args.compile_steps, *args.floor)
    profile_table = bench_where_time_goes(args.profile_steps)
    ratio = bench_attention(args.attention_steps)
    bench_optimizer(args.optimizer_steps)
    bench_token_table(args.table_steps)
    if not args.skip_sweep:
        bench_sweep(args)
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
    print(f"\nratio broadcast / batched-matmul attention (steps per CPU second): {ratio:.3f}")


if __name__ == "__main__":
    main()
