"""Many runs of one architecture trained as a single stacked model.

Small models waste most of each step on Python and kernel-launch overhead. R runs of the *same* architecture
are stacked along a new leading axis (:func:`torch.func.stack_module_state`) and stepped at once with
``vmap(functional_call(model, ...))``; each run keeps its own seed, η and λ. Gradients of the summed losses are
the per-run gradients (no parameter is shared), so a run that diverges does not contaminate the others.

AdamW is written here in stacked form, mirroring PyTorch's single-tensor ``torch.optim.AdamW`` step for step,
with η and λ as per-run tensors of shape (R, 1, …, 1)::

    θ ← θ · (1 − ηλ)
    m ← β₁ m + (1 − β₁) g;   v ← β₂ v + (1 − β₂) g²
    θ ← θ − η/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)

A run's ``fused`` field has no stacked counterpart: stacked runs agree with either within float rounding.
Caveat: a parameter whose gradient is zero in exact arithmetic but float noise in practice (attention's key
bias) gets Adam steps of size about η driven by that noise, so it can differ by O(η).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state

from ..data.modular import modular_data
from ..history import History
from ..measures.fourier import fourier_rows
from ..measures.norms import layer_parameters
from ..models import make_model
from ..validation import require_type
from .device import pick_device, seed_everything
from .loop import _lr_factor, diverged_at_evaluation, diverged_in_training, history_row, stopped_after
from .progress import Progress
from .modular_run import ModularRun
from .compiled import compiled_forward

__all__ = ["SHARED_FIELDS", "batch_key", "train_batched", "StackedAdamW"]

# Fields that every run of one stack must share (η, λ and seed may differ).
SHARED_FIELDS = (
    "p", "operation", "train_fraction", "model", "model_kwargs", "steps", "betas",
    "batch_size", "eval_every", "schedule", "device", "compile", "loss", "optimizer",
)


def batch_key(run: ModularRun) -> str:
    """A string equal for runs that can share one stack (see ``SHARED_FIELDS``)."""
    d = run.to_dict()
    return json.dumps({k: d.get(k, getattr(run, k)) for k in SHARED_FIELDS}, sort_keys=True)  # to_dict omits some defaults


class StackedAdamW:
    """AdamW over stacked leaves ``{name: (R, ...)}`` with per-run η and λ of shape (R,).

    η and λ are combined in float64 and then cast, as PyTorch does with Python floats.
    """

    def __init__(self, params: dict[str, torch.Tensor], lr: torch.Tensor, weight_decay: torch.Tensor,
                 betas: tuple[float, float] = (0.9, 0.999)):
        self.params = params
        self.base_lr = lr.double().cpu()
        self.weight_decay = weight_decay.double().cpu()
        self.betas = betas
        self.eps = 1e-8  # torch.optim.AdamW's default
        self.step_count = 0
        self.exp_avg = {k: torch.zeros_like(v) for k, v in params.items()}
        self.exp_avg_sq = {k: torch.zeros_like(v) for k, v in params.items()}

    @staticmethod
    def _per_run(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        return values.to(device=like.device, dtype=like.dtype).view(-1, *([1] * (like.dim() - 1)))

    @torch.no_grad()
    def step(self, lr_factor: float = 1.0) -> None:
        """One AdamW step on every run (gradients read from ``param.grad``)."""
        self.step_count += 1
        beta1, beta2 = self.betas
        lr = self.base_lr * lr_factor  # (R,) float64, like PyTorch's Python-float lr
        decay = 1.0 - lr * self.weight_decay
        bias_correction1 = 1.0 - beta1 ** self.step_count
        bias_correction2_sqrt = math.sqrt(1.0 - beta2 ** self.step_count)
        step_size = lr / bias_correction1
        for name, param in self.params.items():
            grad = param.grad
            if grad is None:
                continue
            param.mul_(self._per_run(decay, param))
            self.exp_avg[name].lerp_(grad, 1.0 - beta1)
            self.exp_avg_sq[name].mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
            denom = (self.exp_avg_sq[name].sqrt() / bias_correction2_sqrt).add_(self.eps)
            param.sub_(self._per_run(step_size, param) * (self.exp_avg[name] / denom))

    def compact(self, params: dict[str, torch.Tensor], keep: Sequence[int]) -> None:
        """Keep only the runs at positions ``keep`` (``params``: the new, smaller stacked leaves)."""
        index = torch.tensor(list(keep))
        self.params = params
        self.base_lr = self.base_lr[index]
        self.weight_decay = self.weight_decay[index]
        for state in (self.exp_avg, self.exp_avg_sq):
            for name, value in state.items():
                state[name] = value.index_select(0, index.to(value.device))

    def zero_grad(self) -> None:
        for param in self.params.values():
            param.grad = None


def train_batched(runs: Sequence[ModularRun], progress: str | None = None, desc: str = "stacked") -> list[History]:
    """Train ``runs`` (sharing every field of ``SHARED_FIELDS``) as one stacked model; one History per run.

    The histories have :func:`nhtlab.run_modular`'s rows and status rules, ``stacked: true`` in their config
    and the run's own trained model. A finished (stopped or diverged) run leaves the stack at once, so it
    stops costing compute. With ``compile=True`` only the stacked step is compiled.
    """
    require_type(runs, "runs", (list, tuple), owner="train_batched")
    if not runs:
        raise ValueError("The 'runs' parameter of train_batched must hold at least one ModularRun. Got an empty sequence.")
    for run in runs:
        require_type(run, "runs", ModularRun, owner="train_batched")
    keys = {batch_key(r) for r in runs}
    if len(keys) > 1:
        raise ValueError(
            f"The 'runs' parameter of train_batched must hold runs that share {', '.join(SHARED_FIELDS)}; "
            f"got {len(keys)} different combinations. Group them with nhtlab.training.batched.batch_key first."
        )
    first = runs[0]
    if (first.loss, first.optimizer) != ("cross_entropy", "adamw"):  # the stacked step is AdamW on cross-entropy
        raise ValueError(f"The 'runs' parameter of train_batched must hold AdamW runs on cross-entropy; got "
                         f"loss={first.loss!r}, optimizer={first.optimizer!r}. "
                         "Train them alone (nhtlab.sweep with strategy='sequential' or 'parallel').")
    device = pick_device(first.device)
    R = len(runs)
    steps, eval_every, batch_size = first.steps, first.eval_every, first.batch_size

    models, datas = [], []
    for run in runs:  # exactly as run_modular builds them: split, then seed, then init
        datas.append(modular_data(run.p, run.operation, run.train_fraction, seed=run.seed))
        seed_everything(run.seed)
        models.append(make_model(run.model, run.p, **run.model_kwargs).to(device))
    # x (R, n, 2) and y (R, n) of each split
    x_train, y_train, x_test, y_test = (torch.stack([getattr(d, name) for d in datas]).to(device)
                                        for name in ("x_train", "y_train", "x_test", "y_test"))
    n = y_train.shape[1]

    params, buffers = stack_module_state(models)  # {name: (R, ...)}
    base = models[0]
    for p in params.values():
        p.requires_grad_(True)

    forward = torch.vmap(lambda prm, buf, x: functional_call(base, (prm, buf), (x,)), in_dims=(0, 0, 0))
    step_forward, compiled = forward, None
    if first.compile:  # the stacked step fused by inductor, as train(compile=True); evaluations stay eager
        step_forward, compiled = compiled_forward(forward, device)

    lr = torch.tensor([r.lr for r in runs], dtype=torch.float64)
    wd = torch.tensor([r.weight_decay for r in runs], dtype=torch.float64)
    optimizer = StackedAdamW(params, lr, wd, betas=first.betas)
    factor = _lr_factor(first.schedule, steps)
    samplers = [torch.Generator(device=device).manual_seed(r.seed) for r in runs]
    layers = layer_parameters(base)  # {layer: [parameter names]}, the grouping of layer_norms

    # "stacked": another float rounding than the run trained alone, which the sweep keys apart
    trained_with = {"threads": torch.get_num_threads(), "stacked": True}
    if compiled is not None:
        trained_with["compiled"] = compiled
    histories = [History(config={**run.to_dict(), **trained_with}) for run in runs]
    live = list(range(R))  # the runs still in the stack, by their index in ``runs``; position k holds run live[k]
    final: list[dict[str, torch.Tensor] | None] = [None] * R  # parameters of a run when it finished
    finished: list[int] = []  # positions (in the stack) of runs that finished since the last compaction

    def finish(k: int) -> None:
        final[live[k]] = {name: v[k].detach().clone() for name, v in params.items()}
        finished.append(k)

    def compact() -> None:
        """Drop finished runs from the stack: they stop costing compute."""
        nonlocal params, buffers, x_train, y_train, x_test, y_test, lr, live, samplers
        keep = [k for k in range(len(live)) if k not in finished]
        finished.clear()
        if not keep:
            live = []
            return
        index = torch.tensor(keep, device=device)
        with torch.no_grad():
            params = {name: v.detach().index_select(0, index).requires_grad_(True) for name, v in params.items()}
            buffers = {name: v.index_select(0, index) for name, v in buffers.items()}
            optimizer.compact(params, keep)
        x_train, y_train = x_train.index_select(0, index), y_train.index_select(0, index)
        x_test, y_test = x_test.index_select(0, index), y_test.index_select(0, index)
        lr = lr[keep]
        samplers = [samplers[k] for k in keep]
        live = [live[k] for k in keep]

    bar = Progress(steps, f"{desc} ({R} runs)", mode=progress)

    @torch.no_grad()
    def measure(step: int) -> None:
        current_lr = lr * factor(step)
        stats = {}
        for split, (x, y) in {"train": (x_train, y_train), "test": (x_test, y_test)}.items():
            logits = forward(params, buffers, x)  # (R_live, n, p)
            loss = F.cross_entropy(logits.double().transpose(1, 2), y, reduction="none").mean(dim=1)  # (R_live,)
            acc = (logits.argmax(-1) == y).double().mean(dim=1)
            stats[split] = (loss.tolist(), acc.tolist())
        per_layer = {layer: sum(params[k].detach().double().pow(2).flatten(1).sum(1) for k in names).tolist()
                     for layer, names in layers.items()}
        fourier = fourier_rows(params, base.token_embeddings)  # one per live run
        for k, r in enumerate(live):
            if k in finished:  # diverged in training since the last evaluation
                continue
            scores = {split: (stats[split][0][k], stats[split][1][k]) for split in ("train", "test")}
            row = history_row(step, float(current_lr[k]), scores, {layer: values[k] for layer, values in per_layer.items()},
                              fourier[k])
            h = histories[r]
            h.rows.append(row)
            if diverged_at_evaluation(h, row):
                finish(k)
                continue
            if stopped_after(h, step, runs[r].stop_after):
                finish(k)

    measure(0)
    if finished:
        compact()
    first_bad = torch.zeros(len(live), dtype=torch.long, device=device)  # step of each live run's first non-finite loss
    step = 0
    while live and step < steps:
        if batch_size is None:
            xb, yb = x_train, y_train
        else:
            idx = torch.stack([torch.randint(0, n, (batch_size,), generator=g, device=device) for g in samplers])
            xb = torch.gather(x_train, 1, idx.unsqueeze(-1).expand(-1, -1, x_train.shape[-1]))
            yb = torch.gather(y_train, 1, idx)
        logits = step_forward(params, buffers, xb)  # (R_live, b, p)
        losses = F.cross_entropy(logits.transpose(1, 2), yb, reduction="none").mean(dim=1)  # (R_live,)
        # No host sync per step: the first non-finite loss of each run is noted on the device and read
        # at the next evaluation (a diverged run cannot touch the others, so it may step until then).
        first_bad = torch.where(torch.isfinite(losses) | (first_bad > 0), first_bad, torch.full_like(first_bad, step + 1))
        optimizer.zero_grad()
        losses.sum().backward()
        optimizer.step(factor(step))
        step += 1
        bar.update(1)
        if step % eval_every == 0 or step == steps:
            for k, bad_step in enumerate(first_bad.tolist()):
                if bad_step:
                    diverged_in_training(histories[live[k]], bad_step)
                    finish(k)
            measure(step)
        if finished:
            compact()
            first_bad = torch.zeros(len(live), dtype=torch.long, device=device)
    for k, r in enumerate(live):  # runs that went the whole way
        final[r] = {name: v[k].detach().clone() for name, v in params.items()}
    with torch.no_grad():  # hand each run its own trained model, as run_modular does
        for r, (model, h) in enumerate(zip(models, histories)):
            for name, param in model.named_parameters():
                param.copy_(final[r][name])
            h.model = model  # type: ignore[attr-defined]  # not serialised
            if h.status == "running":
                h.status = "completed"
    bar.close()
    return histories
