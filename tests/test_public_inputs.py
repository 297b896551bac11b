"""One property over every callable of ``nhtlab.__all__``: hostile replacements for one argument at a time.

Each public callable has a cheap valid call (:data:`ENTRIES`, from its docstring example). Hypothesis replaces
ONE of its arguments with a value users really pass by mistake: the wrong type (str, None, list, dict, bool),
NaN, ±inf, negative, huge (1e300) or tiny (1e-300) numbers, tensors of another dtype, non-contiguous views,
``meta`` tensors, wrong shapes (an extra dim, empty), histories with unsorted or duplicated steps, NaN or
negative norms, accuracies in percent. The property: the call

* returns a correct answer: the entry's numpy reference within the tolerance it states, the baseline's answer
  for a replacement that holds the same numbers (a float64 copy, a non-contiguous view), or at least a finite
  answer of the documented type; or
* raises TypeError or ValueError whose message names the replaced argument (``'name'``, as
  :mod:`nhtlab.validation` writes it).

Anything else fails: an error from inside torch or numpy that names no argument (IndexError, RuntimeError,
AttributeError, KeyError, ZeroDivisionError, a TypeError from torch), or a silent NaN answer.
Bounded (``max_examples`` per callable, ``derandomize``) so that the module runs in seconds on one core.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nhtlab
from nhtlab import History, ModularRun, ShortcutRun, TrainConfig
from nhtlab.analysis.eta import EtaCalibration
from nhtlab.data.images import ImageData
from nhtlab.models import EmbeddingMLP

torch.set_num_threads(1)

# -- shared tiny inputs ------------------------------------------------------------------------------------------
_g = torch.Generator().manual_seed(0)
X64 = torch.randn(24, 5, generator=_g, dtype=torch.float64)
Y64 = X64 @ torch.randn(5, 3, generator=_g, dtype=torch.float64) + 0.3 * torch.randn(24, 3, generator=_g, dtype=torch.float64)
XF = torch.randn(24, 4, generator=_g)
LABELS = torch.arange(24) % 3
IMAGES = ImageData(torch.rand(12, 3, 8, 8, generator=_g), torch.arange(12) % 2,
                   torch.rand(12, 3, 8, 8, generator=_g), torch.arange(12) % 2, num_classes=2)
DATA = nhtlab.modular_data(7, seed=0)


def classifier() -> torch.nn.Sequential:
    """A fresh small classifier (4 inputs, 3 classes), the same weights every time."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return EmbeddingMLP(7, width=8)


CONFIG = {"lr": 1e-3, "weight_decay": 1.0}
STEPS = [0, 100, 200, 300, 400, 500, 600, 700]
TRAIN_ACC = [0.1, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
TEST_ACC = [0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.0]
NORM = [10.0, 30.0, 60.0, 55.0, 45.0, 35.0, 25.0, 24.0]
HEAD = [2.0, 6.0, 14.0, 11.0, 8.0, 6.0, 4.0, 4.0]
FIRST = [8.0, 24.0, 46.0, 44.0, 37.0, 29.0, 21.0, 20.0]
HISTORY = History(rows=[{"step": s, "train_acc": a, "test_acc": b, "norm": n, "norm/0": f, "norm/2": h, "train_loss": 1.0 - a / 2}
                        for s, a, b, n, h, f in zip(STEPS, TRAIN_ACC, TEST_ACC, NORM, HEAD, FIRST)],
                  status="completed", config=dict(CONFIG))
BORDER = History(rows=[{"step": s, "cue_acc": c, "conflict_acc": d}
                       for s, c, d in zip(STEPS, [0.1, 0.5, 0.9, 0.95, 0.9, 0.6, 0.3, 0.2], [0.5, 0.3, 0.1, 0.05, 0.1, 0.3, 0.6, 0.7])],
                 status="completed")
PARTIAL = History(rows=HISTORY.rows[:5], status="running", config=dict(CONFIG))
CALIBRATION = EtaCalibration(log_contraction=0.5, error_low=-0.2, error_high=0.2, coverage=0.8,
                             mean_delay={(1e-3, 1.0): 400.0}, n_runs=3)
RUN = ModularRun(p=7, model_kwargs=dict(width=8), steps=4, eval_every=2, device="cpu")


class Fresh:
    """A baseline argument built anew for each call (a model that training would change)."""

    def __init__(self, make: Callable[[], Any]):
        self.make = make


_SWEEP: list = []


def sweep_result():
    if not _SWEEP:
        _SWEEP.append(nhtlab.sweep([RUN], strategy="sequential", progress="none"))
    return _SWEEP[0]


# -- the numpy references -----------------------------------------------------------------------------------------
def _np(t: Any) -> np.ndarray:
    return t.detach().double().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, dtype=float)


def cka_reference(kw: Mapping[str, Any]) -> float:
    x, y = _np(kw["x"]).reshape(len(kw["x"]), -1), _np(kw["y"]).reshape(len(kw["y"]), -1)
    xc, yc = x - x.mean(0), y - y.mean(0)
    xc, yc = xc / np.abs(xc).max(), yc / np.abs(yc).max()
    k, l = xc @ xc.T, yc @ yc.T
    return float((k * l).sum() / (np.linalg.norm(k) * np.linalg.norm(l)))


def norm_reference(kw: Mapping[str, Any]) -> float:
    return float(sum((_np(p) ** 2).sum() for p in kw["model"].parameters()))


def layer_norms_reference(kw: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, p in kw["model"].named_parameters():
        layer = name.rsplit(".", 1)[0]
        out[layer] = out.get(layer, 0.0) + float((_np(p) ** 2).sum())
    return out


def _logits(kw: Mapping[str, Any]) -> np.ndarray:
    model = kw["model"]
    w1, b1, w2, b2 = (_np(p) for p in model.parameters())
    return np.maximum(_np(kw["x"]) @ w1.T + b1, 0) @ w2.T + b2


def capture_reference(kw: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The first layer's output (``layer="0"``) and the logits."""
    w1, b1 = (_np(p) for p in kw["model"][0].parameters())
    x = _np(kw["x"])
    return (x @ w1.T + b1).reshape(len(x), -1), _logits(kw).reshape(len(x), -1)


def accuracy_reference(kw: Mapping[str, Any]) -> float:
    return float(np.mean(_logits(kw).argmax(1) == kw["y"].numpy()))


def loss_reference(kw: Mapping[str, Any]) -> tuple[float, float]:
    z = _logits(kw)
    z = z - z.max(1, keepdims=True)
    y = kw["y"].numpy().astype(int)
    loss = float(np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(len(y)), y]))
    return loss, accuracy_reference(kw)


def fit_threshold_reference(kw: Mapping[str, Any]) -> float:
    noise, classes, margin = kw["noise"], kw["classes"], kw["margin"]
    real = [isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in (noise, margin)]
    if not (all(real) and 0 <= noise <= 1 and 0 < margin <= 1 and isinstance(classes, numbers.Integral)
            and not isinstance(classes, bool) and classes >= 2):
        raise ValueError("no answer")
    return margin * ((1 - noise) + noise / classes)


def delay_reference(kw: Mapping[str, Any]) -> float:
    v_sc, v_st, lr, wd, rf = (kw[k] for k in ("v_sc", "v_st", "lr", "weight_decay", "rate_factor"))
    if v_sc <= v_st:
        return 0.0
    return math.inf if wd == 0 else math.log(v_sc / v_st) / (rf * lr * wd)


def events_reference(kw: Mapping[str, Any]) -> tuple:
    rows, threshold = kw["history"].rows, kw["threshold"]
    first = [next((r["step"] for r in rows if r[c] >= threshold), None) for c in ("train_acc", "test_acc")]
    return tuple(first)


def modular_reference(kw: Mapping[str, Any], data: Any) -> bool:
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    p, op = kw["p"], ops.get(kw["operation"])
    x = torch.cat([data.x_train, data.x_test]).numpy()
    y = torch.cat([data.y_train, data.y_test]).numpy()
    return op is None or bool((y == op(x[:, 0], x[:, 1]) % p).all()) and len(np.unique(x, axis=0)) == len(x)


def noisy_reference(kw: Mapping[str, Any], out: Any) -> bool:
    noisy, picked = out
    y = kw["y"]
    return (noisy.shape == y.shape and noisy.dtype == y.dtype and bool(((noisy >= 0) & (noisy < kw["classes"])).all())
            and bool((noisy[~picked] == y[~picked]).all()))


# -- what a returned answer must be ------------------------------------------------------------------------------
def finite(value: Any, depth: int = 0) -> bool:
    """Every number in ``value`` is finite, except in an object that says with a ``reason`` why it has none."""
    if depth > 4:
        return True
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, (int, float, np.floating, np.integer)):
        return math.isfinite(float(value))
    if isinstance(value, torch.Tensor):
        return value.is_meta is False and (not value.is_floating_point() or bool(torch.isfinite(value).all()))
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())
    if (getattr(value, "reason", "") or getattr(value, "verdict", "") == "undetermined"
            or (isinstance(value, History) and value.status == "diverged")):
        return True  # an answer that says why it has no number: a reason, an undetermined verdict, a diverged run
    if isinstance(value, Mapping):
        return all(finite(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(finite(v, depth + 1) for v in value[:50])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(finite(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    return True


@dataclasses.dataclass
class Entry:
    """One public callable: its cheap valid call and what a returned answer must satisfy."""

    call: Callable[..., Any]
    kwargs: dict[str, Any]
    returns: type | tuple[type, ...] = object
    reference: Callable[[Mapping[str, Any]], Any] | None = None  # the numpy answer for the arguments given
    tol: float = 1e-6  # relative, for the reference and for a replacement holding the baseline's numbers
    check: Callable[[Mapping[str, Any], Any], bool] | None = None  # any further property of the answer
    examples: int = 150
    skip: str = ""


def _monitor(**kw: Any) -> list:
    monitor = nhtlab.Monitor(**kw)
    monitor(1, train_acc=0.5)
    return monitor.rows


def _tracker(**kw: Any) -> dict:
    return nhtlab.DLRTracker(**kw).measure(classifier())[0]


ENTRIES: dict[str, Entry] = {
    "History": Entry(History, dict(rows=HISTORY.rows, status="completed", message="", config=CONFIG), History),
    "modular_data": Entry(nhtlab.modular_data, dict(p=7, operation="+", train_fraction=0.5, seed=0),
                          check=modular_reference),
    "digits": Entry(nhtlab.digits, dict(size=8, test_fraction=0.3, seed=0, train_limit=20, test_limit=5), ImageData, examples=60),
    "mnist": Entry(nhtlab.mnist, dict(size=8, n_train=50, n_test=20, seed=0, channels=1), ImageData, examples=60),
    "cifar10": Entry(nhtlab.cifar10, {}, skip="needs the CIFAR-10 archive on disk; tests/test_bad_inputs.py feeds it crafted "
                                              "batch files"),
    "border_shortcut": Entry(nhtlab.border_shortcut, dict(base=IMAGES, rho=0.95, width=1, otherwise="other", clean="mean",
                                                          pad=False, colours=None, contrast=1.0, seed=0)),
    "noisy_labels": Entry(nhtlab.noisy_labels, dict(y=LABELS, fraction=0.5, classes=3, seed=0), tuple, check=noisy_reference),
    "make_model": Entry(nhtlab.make_model, dict(name="mlp", p=7, width=8), torch.nn.Module),
    "SimpleCNN": Entry(nhtlab.SimpleCNN, dict(num_classes=3, norm="none", channels=(4, 4, 4, 4, 4, 4), in_channels=3),
                       torch.nn.Module),
    "ResNet18": Entry(nhtlab.ResNet18, dict(num_classes=3, norm="batch"), torch.nn.Module, examples=20),
    "total_norm": Entry(nhtlab.total_norm, dict(model=Fresh(classifier)), float, norm_reference),
    "layer_norms": Entry(nhtlab.layer_norms, dict(model=Fresh(classifier)), dict, layer_norms_reference),
    "dlr": Entry(nhtlab.dlr, dict(features=X64, outputs=Y64, rank="energy", tol=None), float),
    "readout_dlr": Entry(nhtlab.readout_dlr, dict(model=Fresh(classifier), x=XF), float),
    "accuracy": Entry(nhtlab.accuracy, dict(model=Fresh(classifier), x=XF, y=LABELS), float, accuracy_reference),
    "loss_and_accuracy": Entry(nhtlab.loss_and_accuracy, dict(model=Fresh(classifier), x=XF, y=LABELS), tuple, loss_reference,
                               tol=1e-4),
    "capture": Entry(nhtlab.capture, dict(model=Fresh(classifier), x=XF, layer="0", which="output", batch_size=16,
                                          device=None), reference=capture_reference, tol=1e-4),
    "linear_cka": Entry(nhtlab.linear_cka, dict(x=X64, y=Y64), float, cka_reference),
    "TrainConfig": Entry(TrainConfig, dict(steps=2, lr=1e-3, weight_decay=1.0, betas=(0.9, 0.98), batch_size=None, eval_every=1,
                                           schedule="constant", seed=0, device="cpu", stop_after=None, eval_batch_size=64),
                         TrainConfig),
    "train": Entry(nhtlab.train, dict(model=Fresh(mlp), data=DATA, config=TrainConfig(steps=2, eval_every=1, device="cpu"),
                                      progress="none", desc="train"), History, examples=60),
    "Monitor": Entry(_monitor, dict(model=Fresh(classifier), probe=XF, every=1, head=None, first=None, dlr=None, warn_drop=0.02),
                     list),
    "DLRTracker": Entry(_tracker, dict(x=XF, labels=LABELS, rank="energy", tol=None, layer="0", which="output", top=8, prefix=""), dict),
    "pick_device": Entry(nhtlab.pick_device, dict(preference="cpu"), torch.device, examples=60),
    "seed_everything": Entry(nhtlab.seed_everything, dict(seed=0), examples=60),
    "ModularRun": Entry(ModularRun, dict(p=7, steps=4, eval_every=2, device="cpu", operation="+", train_fraction=0.5,
                                         model="mlp", model_kwargs=dict(width=8)), ModularRun),
    "run_modular": Entry(nhtlab.run_modular, dict(run=RUN, progress="none", desc="run"), History, examples=60),
    "ShortcutRun": Entry(ShortcutRun, dict(steps=4, base="digits", size=8, noise=0.0, rho=0.95, width=1, contrast=1.0,
                                           strength=0.3, channels=(4, 4, 4, 4, 4, 4)), ShortcutRun),
    "companion": Entry(nhtlab.companion, dict(weight_decay=1.0, seed=0), ModularRun),
    "companion_sweep": Entry(nhtlab.companion_sweep, dict(profile="book", lams=[1.0, 2.0]), dict),
    "sweep": Entry(nhtlab.sweep, dict(runs=[RUN], strategy="sequential", cache=None, progress="none"), examples=60),
    "find_events": Entry(nhtlab.find_events, dict(history=HISTORY, threshold=0.99),
                         check=lambda kw, e: (e.t_mem, e.t_grok) == events_reference(kw) and (e.delay is None or e.delay >= 0)),
    "border_times": Entry(nhtlab.border_times, dict(history=BORDER, fit_level=0.3, drop_level=0.5), tuple),
    "delay_summary": Entry(nhtlab.delay_summary, dict(history=HISTORY), dict),
    "predicted_delay": Entry(nhtlab.predicted_delay, dict(v_sc=math.e * 100, v_st=100.0, lr=1e-3, weight_decay=1.0, rate_factor=1.0),
                             float, delay_reference),
    "predict_grok": Entry(nhtlab.predict_grok, dict(history=PARTIAL, calibration=CALIBRATION)),
    "fit_threshold": Entry(nhtlab.fit_threshold, dict(noise=0.3, classes=10, margin=0.9), float, fit_threshold_reference),
    "diagnose_regime": Entry(nhtlab.diagnose_regime, dict(history=HISTORY, fit_threshold=0.99, generalise_threshold=0.99,
                                                          min_contraction=0.2, min_delay=200)),
    "regime_table": Entry(nhtlab.regime_table, dict(result=Fresh(sweep_result)), list, examples=60),
    "contraction_order": Entry(nhtlab.contraction_order, dict(history=HISTORY, window=None, share=0.1, head=None, first=None)),
    "early_warning": Entry(nhtlab.early_warning, dict(history=HISTORY, head=None, first=None), dict),
    "clean_norm_separation": Entry(nhtlab.clean_norm_separation,
                                   dict(steps=np.array(STEPS, dtype=float), norm=np.array(NORM), phi=np.array(TRAIN_ACC) - np.array(TEST_ACC),
                                        start_step=200, min_points=4)),
}


def test_every_public_callable_has_an_entry():
    public = {name for name in nhtlab.__all__ if callable(getattr(nhtlab, name)) and not isinstance(getattr(nhtlab, name), type(nhtlab))}
    assert public == set(ENTRIES)


# -- hostile replacements -----------------------------------------------------------------------------------------
#: A replacement and whether it holds the baseline's numbers (then the answer must be the baseline's).
Hostile = tuple[str, Any, bool]
WRONG_TYPES: list[Hostile] = [("str", "x", False), ("None", None, False), ("list", [], False), ("list of one", [1.0], False),
                              ("dict", {}, False), ("dict of one", {"a": 1}, False), ("True", True, False), ("False", False, False)]
NUMBERS: list[Hostile] = [(f"{v!r}", v, False) for v in (math.nan, math.inf, -math.inf, -1, -0.5, 0, 0.0, 1e300, -1e300, 1e-300, 2**70)]


def tensor_variants(t: torch.Tensor) -> list[Hostile]:
    out: list[Hostile] = []
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool, torch.complex64, torch.float32, torch.int32,
                  torch.uint8):
        if dtype != t.dtype:
            out.append((f"as {dtype}", t.to(dtype), dtype == torch.float64 and t.is_floating_point()
                        or (not t.is_floating_point() and dtype in (torch.int64, torch.int32) and bool((t >= 0).all()))))
    if t.dim() >= 1 and len(t) > 1:
        doubled = torch.stack([t, t], -1).select(-1, 0)  # same values, strides doubled
        out.append(("non-contiguous view", doubled, True))
        out += [("every other row", t[::2], False), ("one row", t[:1], False)]
    out += [("meta", torch.empty_like(t, device="meta"), False), ("extra dim", t[None], False),
            ("empty", t[:0], False), ("scalar", t.reshape(-1)[0], False), ("trailing dim", t[..., None], False)]
    if t.is_floating_point():
        for label, value in (("a NaN entry", math.nan), ("an inf entry", math.inf)):
            bad = t.clone()
            bad.view(-1)[0] = value
            out.append((label, bad, False))
        out += [("× 1e30", t * 1e30, False), ("× 1e-30", t * 1e-30, False), ("negated", -t, False)]
    else:
        out += [("negative", t - t.max() - 1, False), ("out of range", t + 1000, False)]
    return out


def _rows(history: History) -> list[dict]:
    return [dict(r) for r in history.rows]


def history_variants(h: History) -> list[Hostile]:
    rows = _rows(h)
    numeric = [k for k in rows[0] if k != "step"]
    out: list[Hostile] = [("unsorted", rows[::-1], False), ("duplicated step", rows[:3] + [dict(rows[2])] + rows[3:], False),
                          ("empty", [], False), ("one row", rows[:1], False), ("rows only", rows, True)]
    for column in numeric:
        for label, change in (("NaN", lambda v: math.nan), ("negative", lambda v: -abs(v) - 1.0), ("inf", lambda v: math.inf),
                              ("in percent", lambda v: 100.0 * v), ("all NaN", None), ("missing", ...)):
            changed = [dict(r) for r in rows]
            if change is None:
                for r in changed:
                    r[column] = math.nan
            elif change is ...:
                for r in changed:
                    r.pop(column)
            else:
                changed[len(changed) // 2][column] = change(changed[len(changed) // 2][column])
            out.append((f"{label} {column}", changed, False))
    steps = [dict(r, step=float(r["step"]) + 0.5) for r in rows]
    out += [("fractional steps", steps, False), ("negative steps", [dict(r, step=r["step"] - 10_000) for r in rows], False)]
    if {"train_acc", "test_acc"} <= set(rows[0]):  # events in the wrong order: the test set fitted before the training set
        out.append(("test before train", [dict(r, train_acc=r["test_acc"], test_acc=r["train_acc"]) for r in rows], False))
    made = []
    for label, new_rows, same in out:
        kwargs = dict(status=h.status, config=dict(h.config)) if label != "rows only" else {}
        made.append((label, History(rows=new_rows, **kwargs), same and not h.config))
    made += [("config without lr", History(rows=rows, status=h.status, config={"weight_decay": 1.0}), False),
             ("running", History(rows=rows, status="running", config=dict(h.config)), False),
             ("diverged", History(rows=rows, status="diverged", config=dict(h.config)), False),
             ("the rows as a list", rows, False), ("a list of histories", [h], False)]
    return made


def module_variants(m: torch.nn.Module) -> list[Hostile]:
    out: list[Hostile] = []
    for label, change in (("meta", lambda c: c.to("meta")), ("float64", lambda c: c.double()), ("float16", lambda c: c.half()),
                          ("complex64", lambda c: c.to(torch.complex64)), ("train mode", lambda c: c.train()),
                          ("eval mode", lambda c: c.eval()), ("NaN weights", _nan_weights)):
        out.append((label, change(copy.deepcopy(m)), label in ("train mode", "eval mode")))
    out.append(("with Dropout", torch.nn.Sequential(*list(copy.deepcopy(m).children())[:-1], torch.nn.Dropout(0.5),
                                                    list(m.children())[-1]) if isinstance(m, torch.nn.Sequential) else m, False))
    return out


def _nan_weights(m: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        next(m.parameters()).view(-1)[0] = math.nan
    return m


def array_variants(a: np.ndarray) -> list[Hostile]:
    bad = a.copy()
    bad[len(bad) // 2] = np.nan
    return [("list", a.tolist(), True), ("reversed", a[::-1].copy(), False), ("float32", a.astype(np.float32), False),
            ("a NaN entry", bad, False), ("empty", a[:0], False), ("2-D", a[None], False), ("strings", a.astype(str), False),
            ("non-contiguous", np.stack([a, a], -1)[:, 0], True), ("× 1e300", a * 1e300, False), ("negative", -a, False),
            ("one shorter", a[:-1], False)]


def sequence_variants(seq: Any) -> list[Hostile]:
    seq = list(seq)
    return [("tuple", tuple(seq), False), ("with NaN", seq[:-1] + [math.nan], False), ("with a str", seq[:-1] + ["1"], False),
            ("with None", seq[:-1] + [None], False), ("one more", seq + seq[-1:], False), ("reversed", seq[::-1], False),
            ("a str", ",".join(map(str, seq)), False), ("nested", [seq], False), ("with a negative", [-1] + seq[1:], False)]


def variants(baseline: Any) -> list[Hostile]:
    out = list(WRONG_TYPES)
    if isinstance(baseline, bool):
        pass
    elif isinstance(baseline, (int, float)):
        out += NUMBERS + [("a numpy float", np.float64(baseline), True), ("a str of it", str(baseline), False)]
    elif isinstance(baseline, str):
        out += [("empty str", "", False), ("bogus", "bogus", False), ("upper case", baseline.upper(), False), ("bytes", baseline.encode(), False)]
    elif isinstance(baseline, torch.Tensor):
        out += tensor_variants(baseline) + [("numpy", baseline.numpy(), False), ("list", baseline.tolist(), False)]
    elif isinstance(baseline, History):
        out += history_variants(baseline)
    elif isinstance(baseline, torch.nn.Module):
        out += module_variants(baseline)
    elif isinstance(baseline, np.ndarray):
        out += array_variants(baseline)
    elif isinstance(baseline, (list, tuple)):
        out += sequence_variants(baseline)
    elif baseline is None:
        out += NUMBERS[:4] + [("a tensor", XF, False)]
    return [v for v in out if not (type(v[1]) is type(baseline) and _same_object(v[1], baseline))]


def _same_object(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and a is not None
    except Exception:  # noqa: BLE001 — tensors, arrays: never equal as objects here
        return False


# -- the property -------------------------------------------------------------------------------------------------
DEEP = (IndexError, RuntimeError, AttributeError, KeyError, ZeroDivisionError, OverflowError, AssertionError, NotImplementedError)


def resolve(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.make() if isinstance(v, Fresh) else v) for k, v in kwargs.items()}


def close(got: Any, expected: Any, tol: float) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(got, Mapping) and set(got) == set(expected) and all(close(got[k], expected[k], tol) for k in expected)
    if isinstance(expected, np.ndarray):
        got = _np(got) if isinstance(got, torch.Tensor) else got
        return isinstance(got, np.ndarray) and got.shape == expected.shape and bool(
            np.allclose(got, expected, rtol=tol, atol=tol, equal_nan=True))
    if dataclasses.is_dataclass(got) and isinstance(expected, tuple) and hasattr(got, "features"):
        return close((got.features, got.outputs), expected, tol)
    if isinstance(expected, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(got) == len(expected) and all(close(g, e, tol) for g, e in zip(got, expected))
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return isinstance(got, (int, float)) and (got == expected or math.isclose(got, expected, rel_tol=tol, abs_tol=tol)
                                                  or (math.isnan(got) and math.isnan(expected)))
    return got == expected


def comparable(value: Any) -> Any:
    """The numbers of an answer, for comparing a replacement's answer with the baseline's."""
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: comparable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return None  # models, tensors, devices: compared by the entry's own check, not here


def outcome(entry: Entry, name: str, hostile: Hostile, baseline: Any) -> str:
    """``"ok"`` or what went wrong (a deep crash, an error that names another argument, a wrong or silent NaN answer).

    A NaN answer is not silent when the package warned about it (a UserWarning or RuntimeWarning from nhtlab)."""
    label, value, same = hostile
    kwargs = resolve(entry.kwargs)
    kwargs[name] = value
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = entry.call(**kwargs)
    except (TypeError, ValueError) as error:
        if re.search(rf"'{re.escape(name)}'", str(error)):
            return "ok"
        return f"error naming no {name!r}: {type(error).__name__}: {error}"
    except KeyError as error:  # History's own error for a missing column names the column the call needs
        if isinstance(value, History) and str(error).startswith('"History has no column'):
            return "ok"
        return f"deep crash: KeyError: {error}"
    except Exception as error:  # noqa: BLE001 — which error is the question
        return f"deep crash: {type(error).__name__}: {error}"
    if not isinstance(result, entry.returns):
        return f"wrong type: {type(result).__name__}"
    if entry.reference is not None:  # the numpy answer, NaN where the input makes it NaN (a model with NaN weights)
        try:
            expected = entry.reference(kwargs)
        except Exception:  # noqa: BLE001 — no reference for this input: the answer had to be an error
            return f"returned {result!r:.120} where no answer exists"
        if not close(result, expected, entry.tol):
            return f"wrong answer: {result!r:.120}, numpy says {expected!r:.120}"
    elif not finite(result) and not any(issubclass(w.category, (UserWarning, RuntimeWarning)) and "nhtlab" in str(w.message)
                                        + w.filename for w in caught):
        return f"silent NaN or inf: {result!r:.200}"
    if entry.check is not None and not entry.check(kwargs, result):
        return f"wrong answer: {result!r:.200}"
    if same and comparable(baseline) is not None and not close(comparable(result), comparable(baseline), entry.tol):
        return f"not the baseline's answer for the same numbers: {result!r:.120} vs {baseline!r:.120}"
    return "ok"



_BASELINES: dict[str, Any] = {}


def baseline_of(entry_name: str) -> Any:
    if entry_name not in _BASELINES:
        entry = ENTRIES[entry_name]
        _BASELINES[entry_name] = entry.call(**resolve(entry.kwargs))
    return _BASELINES[entry_name]


@pytest.mark.parametrize("entry_name", [n for n, e in ENTRIES.items() if not e.skip])
def test_a_valid_call_is_the_baseline(entry_name):
    entry = ENTRIES[entry_name]
    result = baseline_of(entry_name)
    assert isinstance(result, entry.returns) and finite(result)
    if entry.reference is not None:
        assert close(result, entry.reference(resolve(entry.kwargs)), entry.tol)
    if entry.check is not None:
        assert entry.check(resolve(entry.kwargs), result)


@pytest.mark.parametrize("entry_name", list(ENTRIES))
def test_one_hostile_argument_gives_the_answer_or_an_error_naming_it(entry_name):
    entry = ENTRIES[entry_name]
    if entry.skip:
        pytest.skip(entry.skip)
    baseline = baseline_of(entry_name)
    cases = [(name, hostile) for name, value in entry.kwargs.items()
             for hostile in variants(value.make() if isinstance(value, Fresh) else value)]
    failures: list[str] = []

    @settings(max_examples=entry.examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.sampled_from(range(len(cases))))
    def check(index):
        name, hostile = cases[index]
        result = outcome(entry, name, hostile, baseline)
        if result != "ok":
            failures.append(f"{entry_name}({name}={hostile[0]}): {result}")

    check()
    assert not failures, "\n".join(sorted(set(failures)))
