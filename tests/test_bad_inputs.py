"""Bad and edge-case inputs across the public API, each with the outcome it must have.

One table (:data:`CASES`) of calls, each expecting one of

* a **named error**: an exception of the given type whose message names the argument (``'name'``);
* a **warning** matching a pattern (the call may then return or raise a named error);
* a **value** that a check accepts (numbers in another spelling, edge cases handled correctly).

A call is classified as one of those, or as **silent wrong** (it returned where it should have refused,
or returned a wrong value) or **deep crash** (an error that does not name the argument, from torch,
numpy, json, …). The last two must never happen. ``python tests/test_bad_inputs.py`` prints the
counts; :func:`test_the_table_is_large_and_clean` asserts them. Tiny tensors, no training beyond a
few steps: the whole module stays fast.
"""

from __future__ import annotations

import collections
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn as nn

import nhtlab
from nhtlab import History, ModularRun, ShortcutRun, TrainConfig
from nhtlab.analysis.events import norm_at
from nhtlab.analysis.regimes import is_diverged, regime_order_ok
from nhtlab.data.images import ImageData
from nhtlab.measures.cka import linear_cka
from nhtlab.measures.dlr import dlr, dlr_terms, output_rank
from nhtlab.measures.norms import layer_names, layer_norms, total_norm
from nhtlab.models import EmbeddingMLP, ResNet18, SimpleCNN, Transformer, make_model
from nhtlab.training.cache import ResultCache, cached_run, config_key
from nhtlab.training.checkpoint import load_checkpoint, save_checkpoint
from nhtlab.training.monitor import Monitor, online_regime
from nhtlab.training.sweeps import grid, sweep

Case = tuple[str, Callable[[], Any], tuple]
CASES: list[Case] = []
ERRORS = (TypeError, ValueError)


def error(label: str, call: Callable[[], Any], name: str, kind: type | tuple = ERRORS) -> None:
    """``call`` must raise ``kind`` with a message naming ``name`` (quoted, as the errors write it)."""
    CASES.append((label, call, ("error", kind, name)))


def warning(label: str, call: Callable[[], Any], pattern: str) -> None:
    """``call`` must warn with a message matching ``pattern``."""
    CASES.append((label, call, ("warning", pattern)))


def value(label: str, call: Callable[[], Any], check: Callable[[Any], bool]) -> None:
    """``call`` must return a value that ``check`` accepts."""
    CASES.append((label, call, ("value", check)))


# -- shared tiny inputs --------------------------------------------------------------------------------------
GEN = torch.Generator().manual_seed(0)
X = torch.randn(40, 5, generator=GEN, dtype=torch.float64)
Y = X @ torch.randn(5, 3, generator=GEN, dtype=torch.float64) + 0.1 * torch.randn(40, 3, generator=GEN, dtype=torch.float64)
META = torch.empty(40, 5, device="meta")
RUN = ModularRun(p=7, model_kwargs=dict(width=8), steps=4, eval_every=2, device="cpu")
DATA = nhtlab.modular_data(7, seed=0)
MLP = EmbeddingMLP(7, width=8)


def hist(rows: list[dict], **kw: Any) -> History:
    return History(rows=rows, status=kw.pop("status", "completed"), config=kw.pop("config", {}), **kw)


def _quiet(call: Callable[..., Any], *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return call(*args)


def run_rows(train_acc, test_acc, norm, steps=None, **extra) -> History:
    steps = steps if steps is not None else [100 * i for i in range(len(norm))]
    return hist([dict(step=s, train_acc=a, test_acc=b, norm=n, **extra) for s, a, b, n in zip(steps, train_acc, test_acc, norm)])


GOOD = run_rows([0.1, 1.0, 1.0, 1.0, 1.0], [0.0, 0.1, 0.2, 0.5, 1.0], [1.0, 5.0, 4.0, 2.0, 1.0])


def complex_model() -> nn.Module:
    layer = nn.Linear(2, 2).to(torch.complex64)
    return nn.Sequential(layer)


def meta_model() -> nn.Module:
    return nn.Linear(3, 2, device="meta")


def tied_model() -> nn.Module:
    a, b = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    b.weight = a.weight
    with torch.no_grad():
        a.weight.fill_(1.0)  # ‖θ‖² = 4 once; twice would be 8
    return nn.Sequential(a, b)


def image_data(n: int = 12) -> ImageData:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 3, 8, 8, generator=g)
    y = torch.arange(n) % 3
    return ImageData(x, y, x.clone(), y.clone(), num_classes=3)


def monitor(**kw: Any) -> Monitor:
    return Monitor(EmbeddingMLP(7, width=8), every=1, **kw)


def monitor_then(*calls: tuple[int, dict]) -> Monitor:
    m = monitor()
    for step, scalars in calls:
        m(step, **scalars)
    return m


# -- 1. run configs: every field refuses a bad value by name ---------------------------------------------------
BAD = {
    "steps": [None, "3", 1.5, True, 0, -1, [], np.float64(3.0)],
    "lr": [None, "x", 0, -1e-3, math.nan, math.inf, True, 1e31, complex(1, 1)],
    "weight_decay": [None, "x", -0.1, math.nan, math.inf, True],
    "betas": [None, 0.9, (0.9,), (0.9, 1.0), ("a", "b"), (0.9, math.nan), (0.9, 0.98, 0.99)],
    "batch_size": ["8", 0, -4, 1.5, True, 10**9],
    "eval_every": [None, 0, -1, 2.5, "5"],
    "schedule": [None, "linear", 1, ""],
    "seed": [None, -1, 1.5, "0", 2**70, True],
    "device": [None, "gpu", "cuda:0", 0, "mps"],
    "stop_after": [-1, 1.5, "10"],
    "eval_batch_size": [None, 0, "8192", 2.0],
    "fused": [None, 1, "yes"],
    "compile": [None, 0, "no"],
}
for field, values in BAD.items():
    for v in values:
        error(f"ModularRun({field}={v!r})", lambda field=field, v=v: ModularRun(**{field: v}), field)
for field in ("steps", "lr", "weight_decay", "seed", "schedule", "batch_size"):
    for v in BAD[field][:3]:
        error(f"TrainConfig({field}={v!r})", lambda field=field, v=v: TrainConfig(**{field: v}), field)
for field, values in {"p": [None, 1, 0, -7, 1.5, "7", 10**6, True], "operation": [None, "^", "plus", 1],
                      "train_fraction": [None, 0, 1, -0.5, 1.5, math.nan, "0.5"], "model": [None, "cnn", 1],
                      "model_kwargs": [None, [], {"bogus": 1}, {"width": "x"}, {"width": 0}, {"width": 10**9},
                                       {"depth": 0}]}.items():
    for v in values:
        error(f"ModularRun({field}={v!r})", lambda field=field, v=v: ModularRun(**{field: v}), "model_kwargs"
              if field == "model_kwargs" and not isinstance(v, dict) or v == {"bogus": 1} else
              ("width" if field == "model_kwargs" and "width" in v else "depth" if field == "model_kwargs" else field))
error("ModularRun(operation='/', p=8) (not prime)", lambda: ModularRun(p=8, operation="/"), "p")
for field, values in {"rho": [None, -0.1, 1.5, "x"], "noise": [-1, "x"], "train_size": [0, 5, "10"], "channels": [None, 5, [0]],
                      "base": ["svhn", None], "kind": ["bogus"], "model": ["mlp"], "norm": ["weird"]}.items():
    for v in values:
        error(f"ShortcutRun({field}={v!r})", lambda field=field, v=v: ShortcutRun(**{field: v}), field)
error("ShortcutRun(stop_after=10)", lambda: ShortcutRun(stop_after=10), "stop_after")
error("ModularRun(bogus=1)", lambda: ModularRun(bogus=1), "bogus")
error("RUN.replace(bogus=1)", lambda: RUN.replace(bogus=1), "bogus")
error("companion(weight_decay='x')", lambda: nhtlab.companion(weight_decay="x"), "weight_decay")
error("companion(seed=-1)", lambda: nhtlab.companion(seed=-1), "seed")
error("companion_sweep('bogus')", lambda: nhtlab.companion_sweep("bogus"), "profile")
error("companion_sweep('book', lams=[0.7])", lambda: nhtlab.companion_sweep("book", lams=[0.7]), "lams")

# -- 2. numbers in another spelling: one run, one key ----------------------------------------------------------
KEY = config_key(RUN.cache_config())
for field, v in {"p": np.int64(7), "steps": np.int32(4), "eval_every": np.int64(2), "seed": np.uint8(0)}.items():
    value(f"ModularRun({field}={type(v).__name__}) keys as the int", lambda field=field, v=v: RUN.replace(**{field: v}),
          lambda run: config_key(run.cache_config()) == KEY and hash(run) == hash(RUN))
for field, v in {"lr": np.float32(3e-3), "weight_decay": np.float64(1.0), "train_fraction": np.float64(0.5)}.items():
    value(f"ModularRun({field}={type(v).__name__})", lambda field=field, v=v: RUN.replace(**{field: v}),
          lambda run, field=field: type(getattr(run, field)) is float and isinstance(hash(run), int))
value("ModularRun(weight_decay=1) is ModularRun(weight_decay=1.0)", lambda: RUN.replace(weight_decay=1),
      lambda run: run == RUN and config_key(run.cache_config()) == KEY)
value("companion(1) keys as companion(1.0)", lambda: nhtlab.companion(1),
      lambda run: config_key(run.cache_config()) == config_key(nhtlab.companion(1.0).cache_config()))
value("ModularRun(fused=np.bool_(False))", lambda: RUN.replace(fused=np.bool_(False)), lambda run: run == RUN)
value("ModularRun(model_kwargs={'width': np.int64(8)})", lambda: RUN.replace(model_kwargs={"width": np.int64(8)}),
      lambda run: run == RUN)
value("ModularRun(model_kwargs={'embed_std': 1}) keeps a float", lambda: RUN.replace(model_kwargs={"width": 8, "embed_std": 1}),
      lambda run: run.model_kwargs == {"width": 8, "embed_std": 1.0} and type(run.model_kwargs["embed_std"]) is float)
value("ModularRun(batch_size=np.int64(4))", lambda: RUN.replace(batch_size=np.int64(4)), lambda run: run.batch_size == 4)
value("modular_data(p=np.int64(7))", lambda: nhtlab.modular_data(np.int64(7)), lambda d: d.p == 7)
value("make_model('mlp', np.int64(7))", lambda: make_model("mlp", np.int64(7), width=np.int64(4)),
      lambda m: m.readout.out_features == 7)
value("config_key: 1 and 1.0 and np.float64(1)", lambda: {config_key({"a": v}) for v in (1, 1.0, np.float64(1), np.int8(1))},
      lambda keys: len(keys) == 1)
value("config_key: tuple and list", lambda: {config_key({"a": (1, 2)}), config_key({"a": [1.0, 2]})},
      lambda keys: len(keys) == 1)
value("predicted_delay with numpy scalars", lambda: nhtlab.predicted_delay(np.float32(4.0), np.float64(1.0), np.float32(1e-3), 1),
      lambda d: math.isfinite(d) and d > 0)

# -- 3. measures --------------------------------------------------------------------------------------------
for owner, call in (("total_norm", total_norm), ("layer_norms", layer_norms), ("layer_names", layer_names)):
    for bad in (None, "model", 5, torch.zeros(3)):
        error(f"{owner}({bad!r})", lambda call=call, bad=bad: call(bad), "model")
for owner, call in (("total_norm", total_norm), ("layer_norms", layer_norms)):
    error(f"{owner}(complex model)", lambda call=call: call(complex_model()), "model")
    error(f"{owner}(meta model)", lambda call=call: call(meta_model()), "model")
value("total_norm(tied) counts a shared weight once", lambda: total_norm(tied_model()), lambda v: v == 4.0)
value("layer_norms(tied) adds up to total_norm", lambda: layer_norms(tied_model()), lambda d: sum(d.values()) == 4.0)
value("total_norm(no parameters)", lambda: total_norm(nn.ReLU()), lambda v: v == 0.0)
value("total_norm(float16 model)", lambda: total_norm(nn.Linear(2, 2).half()), lambda v: v > 0)

for name, bad in (("features", None), ("features", "x"), ("features", [[1.0, 2.0]] * 5), ("features", X.to(torch.complex128)),
                  ("features", META), ("features", X[:1]), ("features", torch.full((40, 5), math.nan)),
                  ("features", torch.empty(40, 0)), ("features", torch.ones(40, 5)), ("features", torch.tensor(3.0))):
    error(f"dlr({name}={type(bad).__name__} {getattr(bad, 'shape', '')})", lambda bad=bad: dlr(bad, Y), name)
for name, bad in (("outputs", None), ("outputs", "x"), ("outputs", Y.to(torch.complex64)), ("outputs", torch.empty(40, 3, device="meta")),
                  ("outputs", Y[:10]), ("outputs", torch.full((40, 3), math.inf)), ("outputs", torch.empty(40, 0)),
                  ("outputs", torch.ones(40, 3)), ("outputs", Y.half()), ("outputs", Y.bfloat16())):
    error(f"dlr({name}={type(bad).__name__} {getattr(bad, 'dtype', '')} {getattr(bad, 'shape', '')})",
          lambda bad=bad: dlr(X, bad), name)
for rank, tol, name in (("bogus", None, "rank"), (0, None, "rank"), (-1, None, "rank"), (1.5, None, "rank"), (True, None, "rank"),
                        (None, None, "rank"), (99, None, "rank"), ("energy", 0.0, "tol"), ("energy", 1.5, "tol"),
                        ("energy", "x", "tol"), ("energy", math.nan, "tol"), ("relative", 1.0, "tol"), ("full", 0.5, "tol"),
                        (2, 0.5, "tol")):
    error(f"dlr(rank={rank!r}, tol={tol!r})", lambda rank=rank, tol=tol: dlr(X, Y, rank=rank, tol=tol), name)
error("dlr_terms(complex features)", lambda: dlr_terms(X.to(torch.complex128), Y), "features")
error("output_rank(float16 outputs)", lambda: output_rank(Y.half()), "outputs")
error("output_rank(constant outputs)", lambda: output_rank(torch.ones(10, 3)), "outputs")
warning("dlr: 6 distinct rows × 100 (n ≤ p on distinct rows)", lambda: dlr(torch.randn(6, 20, generator=GEN).repeat(100, 1),
                                                                         torch.randn(6, 3, generator=GEN).repeat(100, 1)),
        r"n = 6 distinct samples ≤ p = 20")
warning("dlr: n ≤ p", lambda: dlr(torch.randn(10, 20, generator=GEN), torch.randn(10, 3, generator=GEN)), r"n = 10 samples ≤ p = 20")
value("dlr(float16 features) equals dlr of the same values in float64", lambda: (dlr(X.half(), Y), dlr(X.half().double(), Y)),
      lambda pair: pair[0] == pair[1])
value("dlr(bfloat16 features) equals dlr of the same values in float64", lambda: (dlr(X.bfloat16(), Y), dlr(X.bfloat16().double(), Y)),
      lambda pair: pair[0] == pair[1])
value("dlr(integer features)", lambda: dlr(torch.randint(0, 5, (40, 5), generator=GEN), Y), lambda v: 0.0 <= v <= 1.0)
value("dlr(float32 vs float64) within rounding", lambda: (dlr(X.float(), Y.float()), dlr(X, Y)), lambda p: abs(p[0] - p[1]) < 1e-5)
value("dlr is scale-free at 1e80", lambda: (dlr(X * 1e80, Y), dlr(X, Y)), lambda p: abs(p[0] - p[1]) < 1e-12)
for name, bad in (("x", None), ("x", X.to(torch.complex128)), ("x", META), ("x", X[:1]), ("x", torch.full((40, 5), math.nan)),
                  ("y", Y[:10]), ("y", None), ("y", "y")):
    error(f"linear_cka({name}={type(bad).__name__})", lambda name=name, bad=bad: linear_cka(bad, Y) if name == "x" else linear_cka(X, bad), name)
value("linear_cka(X, X) = 1", lambda: linear_cka(X, X), lambda v: abs(v - 1.0) < 1e-12)
error("readout_dlr(None)", lambda: nhtlab.readout_dlr(None, X), "model")
error("accuracy(None, …)", lambda: nhtlab.accuracy(None, DATA.x_test, DATA.y_test), "model")
error("capture(None, x)", lambda: nhtlab.capture(None, X), "model")
error("capture(model, x, layer='bogus')", lambda: nhtlab.capture(MLP, DATA.x_test, layer="bogus"), "layer")
error("capture(model, x, which='bogus')", lambda: nhtlab.capture(MLP, DATA.x_test, which="bogus"), "which")
error("capture(model, x, batch_size=0)", lambda: nhtlab.capture(MLP, DATA.x_test, batch_size=0), "batch_size")
error("DLRTracker(None)", lambda: nhtlab.DLRTracker(None), "x")
error("DLRTracker(x, rank='bogus')", lambda: nhtlab.DLRTracker(DATA.x_test, rank="bogus"), "rank")

# -- 4. analysis --------------------------------------------------------------------------------------------
for owner, call in (("find_events", nhtlab.find_events), ("diagnose_regime", nhtlab.diagnose_regime),
                    ("delay_summary", nhtlab.delay_summary), ("is_diverged", is_diverged),
                    ("early_warning", nhtlab.early_warning), ("contraction_order", nhtlab.contraction_order)):
    for bad in (None, "history", {"rows": []}, [GOOD]):
        error(f"{owner}({type(bad).__name__})", lambda call=call, bad=bad: call(bad), "history")
for owner, call in (("find_events", nhtlab.find_events), ("diagnose_regime", nhtlab.diagnose_regime)):
    error(f"{owner}(empty)", lambda call=call: call(hist([])), "history")
    error(f"{owner}(percent accuracies)", lambda call=call: call(run_rows([10, 50, 100], [5, 20, 99], [1.0, 2.0, 3.0])), "history")
    error(f"{owner}(negative accuracy)", lambda call=call: call(run_rows([-0.1, 0.5, 1], [0, 0, 0], [1.0, 2.0, 3.0])), "history")
    error(f"{owner}(steps out of order)", lambda call=call: call(run_rows([0.1, 1, 1], [0, 0, 1], [1.0, 2.0, 3.0],
                                                                     steps=[0, 400, 200])), "history")
    error(f"{owner}(a repeated step)", lambda call=call: call(run_rows([0.1, 1, 1], [0, 0, 1], [1.0, 2.0, 3.0],
                                                                   steps=[0, 100, 100])), "history")
    error(f"{owner}(a history without norm)", lambda call=call: call(hist([{"step": 0, "train_acc": 0.1, "test_acc": 0.1}])), "norm",
          KeyError)
for bad in (0.0, 1.5, "x", math.nan, -1):
    error(f"find_events(threshold={bad!r})", lambda bad=bad: nhtlab.find_events(GOOD, threshold=bad), "threshold")
for field, bad in (("fit_threshold", 0.0), ("fit_threshold", "x"), ("generalise_threshold", 2.0), ("min_contraction", 1.0),
                   ("min_contraction", -0.1), ("min_delay", -1), ("min_delay", 1.5)):
    error(f"diagnose_regime({field}={bad!r})", lambda field=field, bad=bad: nhtlab.diagnose_regime(GOOD, **{field: bad}), field)
error("find_events(all-NaN norm): the run diverged and has no events",
      lambda: nhtlab.find_events(run_rows([0.1, 1], [0, 1], [math.nan, math.nan])), "history")
warning("find_events(inf norm after a finite one) says the run diverged",
        lambda: nhtlab.find_events(run_rows([0.1, 1], [0, 1], [5.0, math.inf])), "not finite at step 100")
value("find_events(inf norm after finite ones): the peak of the finite norms, the accuracies' events",
      lambda: _quiet(nhtlab.find_events, run_rows([0.1, 1, 1], [0, 0, 1], [5.0, 7.0, math.inf])),
      lambda e: (e.t_mem, e.t_grok, e.peak_norm, e.peak_step, e.final_norm) == (100, 200, 7.0, 100, math.inf))
value("find_events(all-zero norm)", lambda: nhtlab.find_events(run_rows([0.1, 1], [0, 1], [0.0, 0.0])),
      lambda e: e.peak_norm == 0.0 and e.contraction == 0.0)
value("find_events(NaN accuracy never memorises)", lambda: nhtlab.find_events(run_rows([math.nan] * 3, [math.nan] * 3, [1.0, 2, 3])),
      lambda e: e.t_mem is None and e.t_grok is None)
value("diagnose_regime(all-NaN train_acc) gets no regime",
      lambda: nhtlab.diagnose_regime(run_rows([math.nan] * 5, [0.1] * 5, [1.0, 2, 3, 2, 1])),
      lambda r: r.regime == "undetermined" and "train_acc" in r.reason)
value("diagnose_regime(all-NaN test_acc) gets no regime",
      lambda: nhtlab.diagnose_regime(run_rows([1.0] * 5, [math.nan] * 5, [1.0, 2, 3, 2, 1])), lambda r: r.regime == "undetermined")
value("diagnose_regime(all-NaN norm) is diverged",
      lambda: nhtlab.diagnose_regime(run_rows([0.1, 1, 1], [0, 0, 1], [math.nan] * 3)), lambda r: r.regime == "diverged")
value("diagnose_regime(all-zero norm) is undetermined",
      lambda: nhtlab.diagnose_regime(run_rows([0.1, 1, 1, 1], [0, 0, 0, 0], [0.0] * 4)), lambda r: r.regime == "undetermined")
value("diagnose_regime(NaN loss) is diverged",
      lambda: nhtlab.diagnose_regime(run_rows([0.1, 1, 1], [0, 0, 0], [1.0, 2, 3], train_loss=math.nan)),
      lambda r: r.regime == "diverged")
value("diagnose_regime(lr·λ = 2) is diverged, not strong",
      lambda: nhtlab.diagnose_regime(hist(GOOD.rows, config={"lr": 2.0, "weight_decay": 1.0})),
      lambda r: r.regime == "diverged" and "lr·λ" in r.reason)
value("diagnose_regime(lr·λ = 0.5) is read", lambda: nhtlab.diagnose_regime(hist(GOOD.rows, config={"lr": 0.5, "weight_decay": 1.0})),
      lambda r: r.regime != "diverged")
value("diagnose_regime(a good run)", lambda: nhtlab.diagnose_regime(GOOD), lambda r: r.regime == "intermediate")
error("norm_at(step after the end)", lambda: norm_at(GOOD, 10_000), "step")
error("norm_at(steps out of order)", lambda: norm_at(run_rows([1, 1], [1, 1], [1.0, 2.0], steps=[400, 0]), 100), "history")
value("norm_at(between evaluations)", lambda: norm_at(GOOD, 150), lambda v: v == 4.0)
for bad, name in ((None, "norm"), ("abc", "norm"), (["a", "b"], "norm"), ([[1, 2], [3, 4]], "norm")):
    error(f"online_regime(norm={bad!r})", lambda bad=bad: online_regime(bad), name)
for kwargs, name in ((dict(train_acc=[0.1, 50, 99, 100, 100, 100]), "train_acc"), (dict(train_acc=[0.5]), "train_acc"),
                     (dict(drop=0), "drop"), (dict(drop=1), "drop"), (dict(fit=0), "fit"), (dict(min_points=1), "min_points"),
                     (dict(train_acc="abcdef"), "train_acc")):
    error(f"online_regime({kwargs})", lambda kwargs=kwargs: online_regime([1, 4, 6, 5, 4, 3], **kwargs), name)
value("online_regime(all-NaN train_acc) gets no regime", lambda: online_regime([1, 4, 6, 5, 4, 3], train_acc=[math.nan] * 6),
      lambda r: r == "undetermined")
value("online_regime(NaN norm) is diverged", lambda: online_regime([1, 2, math.nan]), lambda r: r == "diverged")
value("online_regime(numpy norm)", lambda: online_regime(np.array([5, 4, 3, 2, 1, 1.0]), train_acc=np.full(6, 0.1)),
      lambda r: r == "strong")
error("regime_order_ok(lengths differ)", lambda: regime_order_ok([0.0, 1.0], ["weak"]), "lams")
error("regime_order_ok(unknown label)", lambda: regime_order_ok([0.0], ["soft"]), "regimes")
error("regime_table(None)", lambda: nhtlab.regime_table(None), "result")
error("regime_table([5])", lambda: nhtlab.regime_table([5]), "result")
for kwargs, name in ((dict(fit_level=0), "fit_level"), (dict(fit_level=1), "fit_level"), (dict(drop_level="x"), "drop_level")):
    error(f"border_times({kwargs})", lambda kwargs=kwargs: nhtlab.border_times(hist([]), **kwargs), name)
error("border_times(None)", lambda: nhtlab.border_times(None), "history")
for args, name in (((-1, 1, 1e-3, 1), "v_sc"), (("a", 1, 1e-3, 1), "v_sc"), ((4, 0, 1e-3, 1), "v_st"), ((4, 1, 0, 1), "lr"),
                   ((4, 1, 1e-3, -1), "weight_decay"), ((4, 1, 1e-3, math.nan), "weight_decay")):
    error(f"predicted_delay{args}", lambda args=args: nhtlab.predicted_delay(*args), name)
error("predict_grok(None, None)", lambda: nhtlab.predict_grok(None, None), "history")
error("clean_norm_separation(None, None, None)", lambda: nhtlab.clean_norm_separation(None, None, None), "steps")
error("early_warning(GOOD, head='bogus')", lambda: nhtlab.early_warning(hist([{"step": 0, "norm/a": 1.0, "norm/b": 1.0}]),
                                                                      head="bogus"), "head")

# -- 5. data and models ---------------------------------------------------------------------------------------
for field, bad in (("p", 1), ("p", "7"), ("p", 10**6), ("p", None), ("operation", "^"), ("operation", None), ("train_fraction", 0),
                   ("train_fraction", 1.0), ("train_fraction", "x"), ("seed", -1), ("seed", 2**70), ("seed", 1.5)):
    error(f"modular_data({field}={bad!r})", lambda field=field, bad=bad: nhtlab.modular_data(**{"p": 7, field: bad}), field)
error("modular_data(p=8, operation='/')", lambda: nhtlab.modular_data(8, "/"), "p")
for field, bad in (("size", 4), ("size", 10**6), ("size", "16"), ("test_fraction", 0), ("test_fraction", 1.5), ("seed", -1)):
    error(f"digits({field}={bad!r})", lambda field=field, bad=bad: nhtlab.digits(**{field: bad}), field)
for args, name in (((None, 0.1, 3), "y"), ((torch.arange(6) % 3, 1.5, 3), "fraction"), ((torch.arange(6) % 3, 0.1, 1), "classes"),
                   ((torch.arange(6) % 3, "x", 3), "fraction"), ((torch.arange(6) % 3, 0.1, "3"), "classes")):
    error(f"noisy_labels{tuple(type(a).__name__ for a in args)}", lambda args=args: nhtlab.noisy_labels(*args), name)
for field, bad in (("base", None), ("base", "digits"), ("rho", 1.5), ("rho", None), ("width", 0), ("otherwise", "x"), ("clean", "x"),
                   ("pad", 1), ("contrast", 0), ("colours", "x"), ("colours", [[1, 0, 0]]), ("seed", -1)):
    error(f"border_shortcut({field}={bad!r})", lambda field=field, bad=bad: nhtlab.border_shortcut(
        **{"base": image_data(), field: bad}), field)
error("cifar10(None)", lambda: nhtlab.cifar10(None), "root")
error("cifar10(root, download='yes')", lambda: nhtlab.cifar10("/nonexistent", download="yes"), "download")
for args, kwargs, name in ((("cnn", 7), {}, "name"), ((None, 7), {}, "name"), (("mlp", 1), {}, "p"), (("mlp", "7"), {}, "p"),
                           (("mlp", 7), {"width": 0}, "width"), (("mlp", 7), {"width": "8"}, "width"), (("mlp", 7), {"depth": 0}, "depth"),
                           (("mlp", 7), {"embed_std": 0}, "embed_std"), (("mlp", 7), {"bogus": 1}, "bogus"),
                           (("mlp", 10**9), {}, "p"), (("mlp", 7), {"width": 10**6, "depth": 3}, "width"),
                           (("transformer", 7), {"d_model": 10, "n_heads": 3}, "d_model"),
                           (("transformer", 7), {"d_model": 2**15}, "d_model"), (("transformer", 7), {"n_layers": 0}, "n_layers"),
                           (("transformer", 7), {"init_scale": -1}, "init_scale"), (("transformer", 7), {"n_heads": 0}, "n_heads")):
    error(f"make_model{args} {kwargs}", lambda args=args, kwargs=kwargs: make_model(*args, **kwargs), name)
for call, name in ((lambda: SimpleCNN(num_classes=1), "num_classes"), (lambda: SimpleCNN(norm="weird"), "norm"),
                   (lambda: SimpleCNN(channels=5), "channels"), (lambda: SimpleCNN(channels=[0]), "channels"),
                   (lambda: SimpleCNN(channels=[10**6]), "channels"), (lambda: SimpleCNN(in_channels=0), "in_channels"),
                   (lambda: ResNet18(num_classes=1), "num_classes"), (lambda: ResNet18(norm="x"), "norm"),
                   (lambda: EmbeddingMLP(7, width=-1), "width"), (lambda: Transformer(7, d_ff=0), "d_ff")):
    error(f"model {name}", call, name)

# -- 6. training, runs, sweeps, the cache, checkpoints --------------------------------------------------------
CFG = TrainConfig(steps=2, eval_every=1, device="cpu")
for args, kwargs, name in (((None, DATA, CFG), {}, "model"), ((MLP, None, CFG), {}, "data"), ((MLP, DATA, None), {}, "config"),
                           ((MLP, DATA, RUN.to_dict()), {}, "config"), ((MLP, DATA, CFG), {"callbacks": [1]}, "callbacks"),
                           ((MLP, DATA, CFG), {"callbacks": None}, "callbacks"), ((MLP, DATA, CFG), {"callbacks": print}, "callbacks"),
                           ((MLP, DATA, CFG), {"eval_sets": 5}, "eval_sets"), ((MLP, DATA, CFG), {"eval_sets": {"t": 5}}, "eval_sets"),
                           ((MLP, DATA, CFG), {"eval_sets": {"t": (DATA.x_test, DATA.y_test.float())}}, "eval_sets"),
                           ((MLP, DATA, CFG), {"checkpoint_every": 5}, "checkpoint_every"),
                           ((MLP, DATA, CFG), {"checkpoint_dir": 5}, "checkpoint_dir"), ((MLP, DATA, CFG), {"desc": 5}, "desc"),
                           ((MLP, DATA, CFG), {"progress": "bogus"}, "progress"),
                           ((EmbeddingMLP(5, width=4), DATA, CFG), {}, "data"),
                           ((MLP, type("D", (), dict(x_train=DATA.x_train, y_train=DATA.y_train))(), CFG), {}, "data"),
                           ((MLP, type("D", (), dict(x_train=torch.zeros(4, 3, dtype=torch.long), y_train=torch.zeros(4, dtype=torch.long),
                                                     x_test=DATA.x_test, y_test=DATA.y_test))(), CFG), {}, "data"),
                           ((MLP, type("D", (), dict(x_train=DATA.x_train, y_train=DATA.y_train[:3], x_test=DATA.x_test,
                                                     y_test=DATA.y_test))(), CFG), {}, "data"),
                           ((complex_model(), DATA, CFG), {}, "model")):
    error(f"train({', '.join(type(a).__name__ for a in args)}, {kwargs})",
          lambda args=args, kwargs=kwargs: nhtlab.train(*args, progress=kwargs.pop("progress", "none"), **kwargs)
          if "progress" not in kwargs else nhtlab.train(*args, **kwargs), name)
for kwargs, name in (({"callbacks": [1]}, "callbacks"), ({"callbacks": None}, "callbacks"), ({"run_dir": 5}, "run_dir"),
                     ({"desc": 5}, "desc"), ({"checkpoint_every": 3}, "checkpoint_every")):
    error(f"run_modular(RUN, {kwargs})", lambda kwargs=kwargs: nhtlab.run_modular(RUN, progress="none", **kwargs), name)
error("run_modular(None)", lambda: nhtlab.run_modular(None), "run")
error("run_modular(RUN.to_dict())", lambda: nhtlab.run_modular(RUN.to_dict()), "run")
for runs, kwargs, name in ((None, {}, "runs"), ("runs", {}, "runs"), ([1], {}, "runs"), ([TrainConfig()], {}, "runs"),
                           ([RUN], {"strategy": "bogus"}, "strategy"), ([RUN], {"workers": 0}, "workers"),
                           ([RUN], {"workers": "2"}, "workers"), ([RUN], {"max_stack": 0}, "max_stack"),
                           ([RUN], {"cache": 5}, "cache"), ([RUN], {"cache": {}}, "cache"), ([RUN], {"executor": 5}, "executor"),
                           ([ShortcutRun()], {"strategy": "batched"}, "strategy")):
    error(f"sweep({type(runs).__name__}, {kwargs})", lambda runs=runs, kwargs=kwargs: sweep(runs, progress="none", **kwargs), name)
for base, axes, name in ((None, {"seed": [0]}, "base"), (RUN, {"seed": 5}, "seed"), (RUN, {"seed": []}, "seed"),
                         (RUN, {"bogus": [1]}, "bogus"), (RUN, {"seed": "ab"}, "seed"), (RUN, {"seed": [-1]}, "seed"),
                         (RUN, {"weight_decay": ["x"]}, "weight_decay"), (RUN, {"seed": None}, "seed")):
    error(f"grid({type(base).__name__}, {axes})", lambda base=base, axes=axes: grid(base, **axes), name)
value("grid(RUN, seed=range(3))", lambda: grid(RUN, seed=range(3)), lambda runs: [r.seed for r in runs] == [0, 1, 2])
value("grid(RUN, seed=np.arange(2))", lambda: grid(RUN, seed=np.arange(2)), lambda runs: [type(r.seed) for r in runs] == [int, int])
for args, kwargs, name in (((None,), {}, "run"), ((RUN, 5), {}, "cache"), ((RUN,), {"use_cache": "yes"}, "use_cache"),
                           ((RUN,), {"callbacks": [print]}, "callbacks")):
    error(f"cached_run{tuple(type(a).__name__ for a in args)} {kwargs}", lambda args=args, kwargs=kwargs: cached_run(*args, **kwargs), name)
error("ResultCache(3)", lambda: ResultCache(3), "root")
error("ResultCache(checkpoints='yes')", lambda: ResultCache("/tmp/x", checkpoints="yes"), "checkpoints")
error("ResultCache.put(config, None)", lambda: ResultCache("/tmp/nhtlab-bad-inputs").put({"k": 1}, None), "history")
error("ResultCache.put(5, history)", lambda: ResultCache("/tmp/nhtlab-bad-inputs").put(5, GOOD), "config")
error("ResultCache.put(running history)", lambda: ResultCache("/tmp/nhtlab-bad-inputs").put({"k": 1}, History()), "history")
error("ResultCache.get([1])", lambda: ResultCache("/tmp/nhtlab-bad-inputs").get([1]), "config")
error("config_key([1, 2])", lambda: config_key([1, 2]), "config")
error("load_checkpoint(None)", lambda: load_checkpoint(None), "run_dir")
error("load_checkpoint(5)", lambda: load_checkpoint(5), "run_dir")
error("save_checkpoint(dir, None)", lambda: save_checkpoint("/tmp/nhtlab-bad-inputs", None), "payload")
for call, name in ((lambda: nhtlab.pick_device("gpu"), "preference"), (lambda: nhtlab.pick_device(None), "preference"),
                   (lambda: nhtlab.seed_everything(-1), "seed"), (lambda: nhtlab.seed_everything("x"), "seed"),
                   (lambda: nhtlab.seed_everything(1.5), "seed"), (lambda: nhtlab.seed_everything(None), "seed")):
    error(f"device/seed {name}", call, name)

# -- 7. the Monitor --------------------------------------------------------------------------------------------
for kwargs, name in (({"every": 0}, "every"), ({"every": "10"}, "every"), ({"head": "bogus"}, "head"), ({"first": "bogus"}, "first"),
                     ({"probe": 0.5}, "probe"), ({"probe": np.zeros((4, 2))}, "probe"), ({"probe": (DATA.x_test[:1],)}, "probe"),
                     ({"probe": (torch.zeros(64, 3, dtype=torch.long),)}, "probe"), ({"probe": (torch.full((8, 2), 9),)}, "probe"),
                     ({"probe": (DATA.x_test.to(torch.complex64),)}, "probe"), ({"probe": (torch.empty(8, 2, device="meta"),)}, "probe"),
                     ({"probe": ()}, "probe"), ({"dlr": "dlr"}, "dlr"), ({"on_warning": 5}, "on_warning"),
                     ({"warn_drop": 0}, "warn_drop"), ({"warn_drop": 1.5}, "warn_drop")):
    error(f"Monitor({kwargs})", lambda kwargs=kwargs: monitor(**kwargs), name)
error("Monitor(None)", lambda: Monitor(None), "model")
error("Monitor(complex model)", lambda: Monitor(complex_model()), "model")
error("Monitor(meta model)", lambda: Monitor(meta_model()), "model")
error("Monitor(no parameters)", lambda: Monitor(nn.ReLU()), "model")
for calls, name in (([(10, {}), (5, {})], "step"), ([(1, {"train_acc": 5.0})], "train_acc"), ([(1, {"test_acc": -0.1})], "test_acc"),
                    ([(1, {"train_loss": -5.0})], "train_loss"), ([(1, {"loss": "abc"})], "loss"),
                    ([(1, {"loss": torch.tensor([1.0, 2.0])})], "loss"), ([(1, {"loss": None})], "loss")):
    error(f"monitor(…{calls[-1]})", lambda calls=calls: monitor_then(*calls), name)
error("monitor('a')", lambda: monitor()("a"), "step")
error("monitor(-1)", lambda: monitor()(-1), "step")
value("Monitor: NaN accuracy never memorises", lambda: monitor_then(*[(s, {"train_acc": math.nan, "train_loss": 1.0}) for s in range(1, 6)]),
      lambda m: m.memorised_step is None and m.grok_warning_step is None and not m.warnings)
value("Monitor: all-NaN accuracy gets no regime", lambda: monitor_then(*[(s, {"train_acc": math.nan}) for s in range(1, 8)]).regime(),
      lambda r: r == "undetermined")
value("Monitor: regime() and diagnose() agree on a NaN-loss run",
      lambda: (lambda m: (m.regime(), m.diagnose().regime))(monitor_then(*[(s, {"train_acc": 0.5, "test_acc": 0.1,
                                                                                 "train_loss": math.nan}) for s in range(1, 8)])),
      lambda pair: pair == ("diverged", "diverged"))
value("Monitor: numpy and tensor scalars", lambda: monitor_then((1, {"train_acc": np.float32(0.5), "loss": torch.tensor(0.3)})),
      lambda m: m.rows[-1]["train_acc"] == 0.5)
value("Monitor(tied model) counts the shared weight once", lambda: Monitor(tied_model()).rows[0]["norm"], lambda v: v == 4.0)
warning("Monitor: a dlr that raises warns once with its reason",
        lambda: Monitor(EmbeddingMLP(7, width=8), probe=(DATA.x_test,), dlr=lambda f, o: 1 / 0), "ZeroDivisionError")
warning("Monitor: a dlr that returns a string warns", lambda: Monitor(EmbeddingMLP(7, width=8), probe=(DATA.x_test,), dlr=lambda f, o: "x"),
        "not a number")
value("Monitor: a failing dlr warns once over many records",
      lambda: _warnings_of(lambda: monitor_then_probe(lambda f, o: 1 / 0, 5)), lambda ws: len(ws) == 1)


def monitor_then_probe(dlr_fn: Callable, records: int) -> Monitor:
    m = Monitor(EmbeddingMLP(7, width=8), probe=(DATA.x_test,), dlr=dlr_fn, every=1)
    for step in range(1, records + 1):
        m(step)
    return m


def _warnings_of(call: Callable[[], Any]) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if "DLR could not" in str(w.message)]


# -- 8. charts: arguments checked where they are passed --------------------------------------------------------
def _charts(chart: str):
    """The package's general charts, or the book's chapter charts (both check their arguments the same way)."""
    return nhtlab.charts if hasattr(nhtlab.charts, chart) else nhtlab.book


for chart, args, name in (("training_curves", (None,), "history"), ("training_curves", ("h",), "history"),
                          ("training_curves", (GOOD, None, 5), "title"), ("training_curves", (GOOD, "events"), "events"),
                          ("norm_curves", (None,), "histories"), ("norm_curves", ("abc",), "histories"),
                          ("norm_curves", ([("a", GOOD)], "norm", 3), "title"), ("layer_norm_curves", (None,), "history"),
                          ("compare_runs", (None,), "runs"), ("dlr_timeline", (None,), "history"),
                          ("dlr_decomposition", ({"rows": []},), "history"), ("monitor_chart", (None,), "history"),
                          ("regime_norm_curves", (None,), "curves"), ("lambda_slider", ([], None), "lams"),
                          ("toy_chart", ("x",), "records"), ("score_bars", (None,), "records"),
                          ("spectra_explorer", (5,), "records"), ("lambda_grid", ([], "norm", 1.0), "title")):
    error(f"charts.{chart}{tuple(type(a).__name__ for a in args)}",
          lambda chart=chart, args=args: getattr(_charts(chart), chart)(*args), name)


# -- running the table --------------------------------------------------------------------------------------
def classify(case: Case) -> str:
    """``named error``, ``warning``, ``value``, ``silent wrong`` or ``deep crash`` (with the reason after a colon)."""
    _, call, expected = case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, raised = call(), None
        except Exception as error:  # noqa: BLE001 — what kind of error is the question
            result, raised = None, error
    said = " | ".join(str(w.message) for w in caught)
    if expected[0] == "error":
        if raised is None:
            return f"silent wrong: returned {result!r:.80}"
        named = re.search(rf"'{re.escape(expected[2])}'", str(raised)) or (
            isinstance(raised, KeyError) and expected[2] in str(raised))
        if isinstance(raised, expected[1]) and named:
            return "named error"
        return f"deep crash: {type(raised).__name__}: {raised}"
    if expected[0] == "warning":
        if re.search(expected[1], said):
            return "warning"
        return f"deep crash: {type(raised).__name__}: {raised}" if raised else f"silent wrong: no warning ({said!r:.120})"
    try:
        if raised is None and not expected[1](result):
            return f"silent wrong: {result!r:.120}"
    except Exception as error:  # noqa: BLE001 — the value itself breaks on use (a NumPy scalar in json, …)
        raised = error
    return f"deep crash: {type(raised).__name__}: {raised}" if raised is not None else "value"


def counts() -> collections.Counter:
    return collections.Counter(classify(case).split(":")[0] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0][:90] for c in CASES])
def test_bad_input_has_its_expected_outcome(case, tmp_path, monkeypatch):
    monkeypatch.setenv("NHTLAB_CACHE_DIR", str(tmp_path))
    outcome = classify(case)
    assert outcome == {"error": "named error", "warning": "warning", "value": "value"}[case[2][0]], outcome


def test_the_table_is_large_and_clean(capsys):
    tally = counts()
    print(dict(tally))
    assert len(CASES) >= 300 and tally["silent wrong"] == 0 and tally["deep crash"] == 0, tally


if __name__ == "__main__":  # python tests/test_bad_inputs.py: the counts, and any case that is not as expected
    for case in CASES:
        outcome = classify(case)
        if outcome.startswith(("silent", "deep")):
            print(f"{case[0]}: {outcome}")
    print(len(CASES), "inputs:", dict(counts()))
