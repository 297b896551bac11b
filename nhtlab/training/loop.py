"""The training loop: AdamW with decoupled weight decay, norm tracking, a tidy history.

The loop is deliberately plain. Measurements that are not needed by every run
(DLR, live charts) plug in as callbacks that receive a small
:class:`TrainState` after each evaluation. Checkpoints (``checkpoint_dir``)
are written by the loop itself, because resuming needs the optimiser,
scheduler and sampler states that only the loop holds (see
:mod:`nhtlab.training.checkpoint`).

Update rule (PyTorch AdamW, Loshchilov & Hutter 2019): θ ← θ − η·λ·θ − η·Adam(∇L).
The NHT theory writes the decay as ``2λθ`` for plain gradient descent; with
AdamW the effective contraction rate γ_eff is at least ηλ (arXiv 2603.07323).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from numbers import Real
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..data.modular import require_seed
from ..history import History, first_step_at_least
from ..measures.fourier import fourier_rows
from ..measures.norms import layer_norms
from ..models import require_fits
from ..validation import require_bool, require_callable, require_model, require_choice, require_int, require_real, require_type
from .cache_key import config_key
from .checkpoint import (capture_rng_state, checkpoint_path, checksum, load_checkpoint, restore_rng_state, save_checkpoint,
                         set_aside)
from .device import pick_device
from .progress import Progress
from .compiled import compiled_forward
from ..thresholds import FITTED_ACCURACY

__all__ = ["TrainConfig", "TrainState", "train", "evaluate", "SCHEDULES", "history_row", "diverged_at_evaluation",
           "diverged_in_training", "grok_step", "stopped_after"]

#: The largest learning rate a config takes: one AdamW step moves each parameter by about lr, and
#: above this torch's float32 arithmetic overflows before the run can even diverge.
MAX_LR = 1e30

SCHEDULES = ("constant", "cosine")
LOSSES = ("cross_entropy", "mse")  # mse: mean squared error of the logits and one-hot targets (Omnigrok)
OPTIMIZERS = ("adamw", "sgd")  # sgd: plain gradient steps, the lazy/rich ground truth's (Chizat et al.)
MAX_BATCH = 2**24  # the largest minibatch a config takes (its indices alone are 128 MiB), refused before allocating


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Hyper-parameters of one training run, and the base of every run config.

    :class:`~nhtlab.training.modular_run.ModularRun` and
    :class:`~nhtlab.training.shortcut_run.ShortcutRun` inherit these fields (and
    their validation, :meth:`to_dict`, :meth:`replace` and hashing) and add only
    their data and model fields; a run kind trains itself through ``execute``.
    Configs are frozen and keyword-only: change one with :meth:`replace`.

    Attributes
    ----------
    steps : int
        Number of optimiser steps.
    lr : float
        Learning rate η.
    weight_decay : float
        Weight decay λ: θ ← θ − ηλθ each step (PyTorch's AdamW convention; SGD's coupled decay is the same step).
    betas : tuple of float
        AdamW betas (unused by SGD).
    batch_size : int or None
        None trains full batch; an int samples that many training examples
        *with replacement* at each step (the NHT companion paper's protocol).
    eval_every : int
        Evaluate (losses, accuracies, norms) every this many steps, and at step 0.
    schedule : {"constant", "cosine"}
        Learning-rate schedule; cosine decays to zero over ``steps``.
    seed : int
        Seed of the minibatch sampler. (Seed the model's init before building it.)
    device : {"auto", "cpu", "cuda"}
        Where to train; ``"auto"`` uses CUDA when present.
    stop_after : int or None
        Stop this many steps after the test accuracy first reaches 99%, to save
        time in sweeps; None trains for ``steps``.
    eval_batch_size : int
        Evaluation batch size (bounds memory on image data).
    fused : bool
        PyTorch's fused AdamW (``torch.optim.AdamW(fused=True)``): the same update in one kernel per
        step, in another float rounding; it gains more on the companion transformer than on the
        SimpleCNN (``benchmarks/bench_grok.py``). Off by default, so that runs keep the numbers of
        earlier versions; :func:`nhtlab.companion` turns it on.
    compile : bool
        Run each step's forward and backward through ``torch.compile`` (inductor), which fuses
        the elementwise work around the matmuls; the same run in another float rounding, so part
        of the cache key. Where inductor cannot build (no C/C++ compiler on a CPU, no Triton on a
        GPU) the run trains eagerly with a warning; ``history.config["compiled"]`` records which
        path ran (:mod:`nhtlab.training.compiled`). Evaluations stay eager. Off by default.
    loss : {"cross_entropy", "mse"}
        Cross-entropy of the logits, or their mean squared error to one-hot targets.
    optimizer : {"adamw", "sgd"}
        AdamW, or plain gradient descent (no momentum).
    """

    steps: int = 3000
    lr: float = 1e-3
    weight_decay: float = 1.0
    betas: tuple[float, float] = (0.9, 0.98)
    batch_size: int | None = None
    eval_every: int = 25
    schedule: str = "constant"
    seed: int = 0
    device: str = "auto"
    stop_after: int | None = None
    eval_batch_size: int = 8192
    fused: bool = False
    compile: bool = False
    loss: str = "cross_entropy"
    optimizer: str = "adamw"

    # Fields a run kind gained after nhtlab 0.2.0 first keyed its runs: to_dict() leaves them out while they
    # hold their default, so a run's dict (its run.json, the config in its cache key) reads as it did in 0.2.0.
    # (The cache also keys on nhtlab's version: results of another version are never reused.)
    # A plain class attribute (no annotation), not a field.
    _key_omits_at_default = ("fused", "compile", "loss", "optimizer")

    def __post_init__(self) -> None:
        owner = type(self).__name__  # errors name the class the user called: TrainConfig, ModularRun, ...
        for f in fields(self):  # one spelling per value: NumPy scalars as Python's, a float field's 1 as 1.0
            value = getattr(self, f.name)
            value = value.item() if isinstance(value, np.generic) else value
            if str(f.type).startswith("float") and isinstance(value, Real) and not isinstance(value, bool):
                value = float(value)
            object.__setattr__(self, f.name, value)
        require_int(self.steps, "steps", low=1, owner=owner)
        # above MAX_LR a single AdamW step overflows float32 arithmetic: an error inside torch, not a run
        require_real(self.lr, "lr", 0.0, MAX_LR, low_open=True, owner=owner)
        require_real(self.weight_decay, "weight_decay", 0.0, owner=owner)
        require_type(self.betas, "betas", (tuple, list), owner=owner)
        if len(self.betas) != 2:
            raise ValueError(f"The 'betas' parameter of {owner} must hold two floats in [0, 1). Got {self.betas!r} instead.")
        for b in self.betas:
            require_real(b, "betas", 0.0, 1.0, high_open=True, owner=owner)
        object.__setattr__(self, "betas", (float(self.betas[0]), float(self.betas[1])))
        if self.batch_size is not None:
            require_int(self.batch_size, "batch_size", low=1, high=MAX_BATCH, owner=owner)
        require_int(self.eval_every, "eval_every", low=1, owner=owner)
        require_choice(self.schedule, "schedule", SCHEDULES, owner=owner)
        require_seed(self.seed, owner)
        require_choice(self.device, "device", ("auto", "cpu", "cuda"), owner=owner)
        if self.stop_after is not None:
            require_int(self.stop_after, "stop_after", low=0, owner=owner)
        require_int(self.eval_batch_size, "eval_batch_size", low=1, owner=owner)
        require_bool(self.fused, "fused", owner=owner)
        require_bool(self.compile, "compile", owner=owner)
        require_choice(self.loss, "loss", LOSSES, owner=owner)
        require_choice(self.optimizer, "optimizer", OPTIMIZERS, owner=owner)

    def train_config(self) -> TrainConfig:
        """The training fields alone, as a plain :class:`TrainConfig` (what :func:`train` records and checkpoints)."""
        return TrainConfig(**{f.name: getattr(self, f.name) for f in fields(TrainConfig)})

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed (validated again), of the same class."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The config as a flat JSON-ready dict: a run kind's own fields first, then the training fields.

        Tuples become lists. The fields named in ``_key_omits_at_default`` are left out
        while they hold their default (see there). ``type(run)(**run.to_dict())`` rebuilds the run.
        """
        values = asdict(self)
        train_names = [f.name for f in fields(TrainConfig)]
        names = [f.name for f in fields(self) if f.name not in train_names] + train_names
        defaults = {f.name: f.default for f in fields(self)}
        return {name: list(values[name]) if isinstance(values[name], tuple) else values[name] for name in names
                if not (name in self._key_omits_at_default and values[name] == defaults[name])}

    def cache_config(self) -> dict[str, Any]:
        """The result-cache key of this run (:meth:`to_dict`; a run kind may tag it)."""
        return self.to_dict()

    def execute(self, **kwargs: Any) -> History:
        """Train this run and return its history: each run kind defines it (:func:`nhtlab.sweep` calls it)."""
        raise TypeError(f"{type(self).__name__} holds training settings only: it has no data or model to execute. "
                        f"Use a run kind (ModularRun, ShortcutRun) or call train(model, data, config).")

    def events(self, history: History) -> Any:
        """The events a sweep reports for this run's ``history`` (None where the kind defines none)."""
        return None

    def __hash__(self) -> int:  # hash the canonical JSON form: a run kind may hold a dict (ModularRun.model_kwargs)
        return hash(json.dumps(self.to_dict(), sort_keys=True))


@dataclass
class TrainState:
    """Handed to callbacks after each evaluation. Set ``stop = True`` to end the run."""

    step: int
    model: nn.Module
    optimizer: torch.optim.Optimizer
    row: dict[str, float]
    history: History
    stop: bool = False


Callback = Callable[[TrainState], None]


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 8192) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` on ``(x, y)``, in batches."""
    was_training = model.training
    model.eval()
    if x.dim() == 4 and any(isinstance(m, nn.Conv2d) for m in model.modules()):
        # oneDNN scores a large batch of images about twice as fast channels-last (a training step gains nothing)
        x = x.contiguous(memory_format=torch.channels_last)
    loss_sum, correct = 0.0, 0
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size])
        target = y[start:start + batch_size]
        loss_sum += float(F.cross_entropy(logits.double(), target, reduction="sum"))
        correct += int((logits.argmax(-1) == target).sum())
    model.train(was_training)
    return loss_sum / len(y), correct / len(y)


def _lr_factor(schedule: str, steps: int) -> Callable[[int], float]:
    if schedule == "cosine":
        return lambda t: 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps))
    return lambda t: 1.0


def _check_pair(x: Any, y: Any, parameter: str, what: str) -> None:
    """Inputs and integer class labels of the same length, as train needs them."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        raise TypeError(f"The {parameter!r} parameter of train must hold tensors; the {what} inputs and labels are "
                        f"{type(x).__name__} and {type(y).__name__}.")
    if y.ndim != 1 or y.dtype.is_floating_point or y.dtype == torch.bool:
        raise ValueError(f"The {parameter!r} parameter of train must hold {what} labels as a 1-d integer tensor of "
                         f"class indices, shape (n,). Got dtype {y.dtype} and shape {tuple(y.shape)} instead.")
    if len(x) != len(y):
        raise ValueError(f"The {parameter!r} parameter of train has {len(x)} {what} inputs but {len(y)} labels; "
                         f"they must match.")


def _check_same_run(saved: Mapping[str, Any], config: TrainConfig, device: torch.device, checkpoint_dir: Any) -> None:
    """Refuse to resume a checkpoint written by a different configuration or on another device."""
    # a field added in a later version holds its default in a checkpoint written before it existed
    mine, theirs = asdict(config), {**{f.name: f.default for f in fields(TrainConfig)}, **saved["config"]}
    mine["betas"], theirs["betas"] = list(mine["betas"]), list(theirs["betas"])
    differ = {k: (theirs.get(k), v) for k, v in mine.items() if theirs.get(k) != v}
    if differ:
        shown = ", ".join(f"{k}: {old!r} there, {new!r} here" for k, (old, new) in differ.items())
        raise ValueError(
            f"The 'checkpoint_dir' parameter of train ({checkpoint_dir}) holds a checkpoint of a different "
            f"configuration ({shown}). Use a new directory for a new configuration."
        )
    if saved["device"] != str(device):
        raise ValueError(
            f"The 'checkpoint_dir' parameter of train ({checkpoint_dir}) holds a checkpoint written on "
            f"{saved['device']!r}; resuming it on {str(device)!r} is not supported (the sampler states differ)."
        )


# The rules both trainers share (train and train_batched): what a row holds, when a run diverged or stops.


def history_row(step: int, lr: float, scores: Mapping[str, tuple[float, float]],
                layer_norms: Mapping[str, float], fourier: Mapping[str, float] | None = None) -> dict[str, float]:
    """One evaluation as a row: ``scores`` maps a set to (mean cross-entropy, accuracy), ``"train"`` first.

    ``fourier`` (a model on Z_p: :func:`~nhtlab.measures.fourier.fourier_rows`) adds the Fourier columns.
    """
    row: dict[str, float] = {"step": step, "lr": lr}
    for name, (loss, acc) in scores.items():
        row[f"{name}_loss"], row[f"{name}_acc"] = loss, acc
    row["norm"] = sum(layer_norms.values())
    row.update({f"norm/{name}": value for name, value in layer_norms.items()})
    return {**row, **(fourier or {})}


def diverged_at_evaluation(history: History, row: Mapping[str, float]) -> bool:
    """True (and ``history`` marked diverged) when the row's training loss or ‖θ‖² is not finite.

    The row stays: it is the evidence.
    """
    if math.isfinite(row["train_loss"]) and math.isfinite(row["norm"]):
        return False
    history.status, history.message = "diverged", f"non-finite loss or parameters at step {row['step']}"
    return True


def diverged_in_training(history: History, step: int) -> None:
    """Mark ``history`` diverged because the minibatch loss of training step ``step`` (1-based) was not finite."""
    history.status, history.message = "diverged", f"non-finite training loss at step {step}"


def grok_step(rows: Sequence[Mapping[str, float]]) -> int | None:
    """T_grok: the first step whose test accuracy reached :data:`~nhtlab.thresholds.FITTED_ACCURACY`, or None.

    The one finder that :func:`~nhtlab.analysis.events.find_events` uses too.
    """
    return first_step_at_least([r["step"] for r in rows], [r.get("test_acc", math.nan) for r in rows], FITTED_ACCURACY)


def stopped_after(history: History, step: int, stop_after: int | None) -> bool:
    """True (and ``history`` marked stopped) once ``step`` ≥ its rows' :func:`grok_step` + ``stop_after`` (None: never).
    """
    if stop_after is None:
        return False
    grok = grok_step(history.rows)
    if grok is None or step < grok + stop_after:
        return False
    history.status, history.message = "stopped", f"stopped {stop_after} steps after test accuracy reached {FITTED_ACCURACY:.0%}"
    return True


def train(
    model: nn.Module,
    data: Any,
    config: TrainConfig,
    callbacks: Iterable[Callback] = (),
    eval_sets: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    progress: str | None = None,
    desc: str = "train",
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    run_key: str | None = None,
    record: Mapping[str, Any] | None = None,
) -> History:
    """Train ``model`` on ``data`` with AdamW (or SGD, ``config.optimizer``) and return its :class:`History`.

    Parameters
    ----------
    model : nn.Module
        Any classifier mapping a batch of inputs to logits (n, C).
    data : object
        Has ``x_train``, ``y_train`` and, unless ``eval_sets`` replaces them,
        ``x_test``, ``y_test`` tensors (e.g. :class:`nhtlab.data.modular.ModularData`).
    config : TrainConfig
    callbacks : iterable of callables
        Each is called with a :class:`TrainState` after every evaluation.
    eval_sets : mapping name → (x, y), optional
        Sets to evaluate besides ``train``; defaults to ``{"test": (x_test, y_test)}``.
    progress : str, optional
        Progress mode (see :mod:`nhtlab.training.progress`).
    desc : str
        Label of the progress bar.
    checkpoint_dir : str or path, optional
        A run directory. The loop writes ``checkpoint.pt`` there (atomically)
        every ``checkpoint_every`` steps and when the run ends. If the directory
        already holds a checkpoint of the same ``config``, training *resumes*
        from it (a finished run returns at once); on the CPU the result equals
        the uninterrupted run bit for bit. Callbacks are not saved: one that
        keeps its own state starts afresh on resume.
    checkpoint_every : int, optional
        Steps between checkpoints; defaults to ``10 * config.eval_every``.
        Needs ``checkpoint_dir``.
    run_key : str, optional
        The run's key, saved with each checkpoint: a checkpoint of another key is set aside with a
        warning and the run starts afresh (a run kind passes ``config_key(run.cache_config())``);
        defaults to the key of ``config`` and the model's class.
    record : mapping, optional
        The settings ``history.config`` records (a run kind passes ``run.to_dict()``); defaults to the
        fields of ``config``. The loop adds ``threads`` (and ``compiled``).

    Returns
    -------
    History
        ``status`` is ``"completed"``, ``"stopped"`` (early stop or a callback),
        or ``"diverged"`` when the loss or a parameter became NaN/inf; the rows
        measured until then are kept.

    """
    require_model(model, owner="train")
    require_type(config, "config", TrainConfig, owner="train")
    for attr in ("x_train", "y_train"):
        if not hasattr(data, attr):
            raise TypeError(f"The 'data' parameter of train must have 'x_train' and 'y_train' tensors. {type(data).__name__} lacks {attr!r}.")
    if eval_sets is None:
        if not (hasattr(data, "x_test") and hasattr(data, "y_test")):
            raise TypeError(f"The 'data' parameter of train must have 'x_test' and 'y_test' tensors unless 'eval_sets' "
                            f"is given. {type(data).__name__} lacks them.")
        eval_sets = {"test": (data.x_test, data.y_test)}
    require_type(eval_sets, "eval_sets", Mapping, owner="train")
    require_type(desc, "desc", str, owner="train")
    _check_pair(data.x_train, data.y_train, "data", "training")
    require_fits(model, data.x_train, data.y_train, "data", "train", "training ")
    for name, pair in eval_sets.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(f"The 'eval_sets' parameter of train must map names to (x, y) pairs of tensors. "
                            f"Got {type(pair).__name__} for {name!r} instead.")
        _check_pair(pair[0], pair[1], "eval_sets", repr(name))
        require_fits(model, pair[0], pair[1], "eval_sets", "train", f"{name!r} ")
    device = pick_device(config.device)
    model.to(device)
    x_train, y_train = data.x_train.to(device), data.y_train.to(device)
    sets = {"train": (x_train, y_train)}
    sets.update({k: (x.to(device), y.to(device)) for k, (x, y) in eval_sets.items()})
    callbacks = list(require_type(callbacks, "callbacks", Iterable, owner="train"))
    for callback in callbacks:
        require_callable(callback, "callbacks", owner="train")
    if checkpoint_dir is not None:
        require_type(checkpoint_dir, "checkpoint_dir", (str, os.PathLike), owner="train")
        # a checkpoint of another task, data or model shape must never resume this run: the data's tensors are
        # hashed (dtypes, shapes, bytes) as a checkpoint's content is, so (a + b) mod 7 never resumes (a − b) mod 7
        run_key = run_key or config_key({"train": asdict(config), "model": type(model).__qualname__,
                                         "shapes": [[name, list(p.shape)] for name, p in model.named_parameters()],
                                         "data": checksum(sets)})
        checkpoint_every = require_int(10 * config.eval_every if checkpoint_every is None else checkpoint_every,
                                     "checkpoint_every", low=1, owner="train")
    elif checkpoint_every is not None:
        raise ValueError("The 'checkpoint_every' parameter of train needs a 'checkpoint_dir' to write to. "
                         f"Got checkpoint_every={checkpoint_every!r} and checkpoint_dir=None.")

    # Unfused, the multi-tensor (foreach) AdamW: on a CPU torch's default is the single-tensor loop,
    # which computes the same update op for op, bit for bit (tests/test_train.py), with more dispatch.
    if config.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=config.fused)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas,
                                      weight_decay=config.weight_decay, fused=config.fused,
                                      foreach=None if config.fused else True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_factor(config.schedule, config.steps))
    sampler = torch.Generator(device=device).manual_seed(config.seed)
    record = asdict(config) if record is None else dict(require_type(record, "record", Mapping, owner="train"))
    history = History(config={**record, "threads": torch.get_num_threads()})  # what the CPU kernels split over
    forward = model
    if config.compile:  # the step's forward (and backward) fused by inductor; evaluations stay eager
        forward, history.config["compiled"] = compiled_forward(model, device)
    bar = Progress(config.steps, desc, mode=progress)
    n = len(y_train)
    embeddings = getattr(model, "token_embeddings", ())  # a model on Z_p names its token tables: the Fourier columns

    def measure(step: int) -> bool:
        """Evaluate, record a row and run callbacks; return False to stop."""
        scores = {name: evaluate(model, x, y, config.eval_batch_size) for name, (x, y) in sets.items()}
        fourier = fourier_rows(model, embeddings)[0] if embeddings else None
        row = history_row(step, optimizer.param_groups[0]["lr"], scores, layer_norms(model), fourier)
        history.rows.append(row)
        if diverged_at_evaluation(history, row):
            return False
        state = TrainState(step, model, optimizer, row, history)
        for callback in callbacks:
            callback(state)
        bar.update(0, train_acc=f"{row['train_acc']:.2f}", test_acc=f"{row.get('test_acc', float('nan')):.2f}")
        if state.stop:
            history.status, history.message = "stopped", f"stopped by a callback at step {step}"
            return False
        return not stopped_after(history, step, config.stop_after)

    unsaved: list[str] = []  # why a checkpoint could not be written (then no more are tried)

    def save(step: int) -> None:
        if unsaved:
            return
        try:
            save_checkpoint(checkpoint_dir, {
                "key": run_key, "step": step, "config": asdict(config), "device": str(device), "history": history.to_dict(),
                "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "sampler": sampler.get_state(), "rng": capture_rng_state(),
            })
        except OSError as error:  # a read-only or full disk must not cost the run: keep training, keep the history
            unsaved.append(f"{type(error).__name__}: {error}")
            warnings.warn(
                f"train could not write a checkpoint to {checkpoint_dir} at step {step} ({unsaved[0]}); training "
                f"goes on and the history is returned, but this run cannot be resumed from there.",
                RuntimeWarning, stacklevel=3)

    model.train()
    saved = None if checkpoint_dir is None else load_checkpoint(checkpoint_dir)
    if saved is not None:
        _check_same_run(saved, config, device, checkpoint_dir)
        if saved.get("key") != run_key:  # same settings, another run (its data, model, code or threads)
            set_aside(checkpoint_path(checkpoint_dir), "belongs to another run (its key differs)")
            saved = None
    if saved is None:
        step = 0
        keep_going = measure(0)
    else:  # resume: put back every piece of state the loop carries
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        sampler.set_state(saved["sampler"])
        restore_rng_state(saved["rng"])
        history = History.from_dict(saved["history"])
        step = saved["step"]
        keep_going = history.status == "running"
        bar.update(step)
    finished_before = saved is not None and not keep_going
    while keep_going and step < config.steps:
        if config.batch_size is None:
            xb, yb = x_train, y_train
        else:
            idx = torch.randint(0, n, (config.batch_size,), generator=sampler, device=device)
            xb, yb = x_train[idx], y_train[idx]
        logits = forward(xb)
        loss = (F.cross_entropy(logits, yb) if config.loss == "cross_entropy"
                else F.mse_loss(logits, F.one_hot(yb, logits.shape[-1]).to(logits.dtype)))
        if not torch.isfinite(loss):
            diverged_in_training(history, step + 1)
            break
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1
        bar.update(1)
        if step % config.eval_every == 0 or step == config.steps:
            keep_going = measure(step)
        if checkpoint_dir is not None and keep_going and step % checkpoint_every == 0 and step < config.steps:
            save(step)
    if history.status == "running":
        history.status = "completed"
    if history.status == "diverged":
        finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
        if not finite and "parameters" not in history.message:
            history.message += " (parameters are no longer finite)"
        warnings.warn(
            f"Training diverged: {history.message}. The history up to that point is kept and marked "
            f"status='diverged' (lr={config.lr:g}, weight_decay={config.weight_decay:g}; a smaller lr usually helps).",
            RuntimeWarning, stacklevel=2,
        )
    if checkpoint_dir is not None and not finished_before:
        save(step)
    bar.close(history.message if history.status != "completed" else "")
    return history
