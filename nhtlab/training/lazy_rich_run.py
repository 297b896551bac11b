"""Lazy against rich training, known in advance: the ground truth DLR is scored on.

Chizat, Oyallon & Bach (NeurIPS 2019): train f_α(x) = α · (g(x) − g₀(x)), g a network and g₀ its frozen
initial function, on L(f_α) / α² by full-batch gradient descent. For large α the parameters move O(1/α), the
network stays at its linearisation and keeps its initial features (*lazy*); for small α they move far and the
features change (*rich*). Lazy or rich is read from two signals that share nothing with DLR: ``cka_to_init``,
the linear CKA of the final and initial features (≈ 1: the kernel did not move), and ``nc1`` (≪ 1: neural
collapse). Only then is DLR read.

The setting (fixed before DLR was looked at): scikit-learn's offline digits, pixels standardised with the
training statistics, :class:`~nhtlab.models.mlp.ImageMLP` (``depth`` ReLU hidden layers, PyTorch's default
init), squared loss to one-hot targets, trained by :func:`~nhtlab.training.loop.train` with plain SGD. Readings
are on the training images (neural collapse is a statement about them); test accuracy on the held-out ones.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn as nn

from ..data.images import ImageData
from ..measures.cka import linear_cka
from ..measures.collapse import nc1
from ..measures.dlr import DEFAULT_RANK, _check_rank, _Prepared
from ..measures.features import capture
from ..models.mlp import ImageMLP
from ..validation import require_int, require_real, require_type
from .device import pick_device
from .loop import TrainConfig, train

__all__ = ["LazyRichResult", "LazyScaled", "flat_inputs", "lazy_rich_run"]


@dataclass
class LazyRichResult:
    """Readings of one run at scale α, on the training images unless named ``test``.

    ``train_loss`` is ½‖f − y‖² per sample (of f, not divided by α²); ``cka_to_init`` the linear CKA of the
    final and initial features; ``nc1``/``nc1_init`` their NC1; ``dlr = 1 − f_in √(PR / rank)`` under the rank
    rule ``rule``, and ``compare`` DLR under each further rule asked for.
    """

    alpha: float
    steps: int
    train_loss: float
    train_acc: float
    test_acc: float
    cka_to_init: float
    nc1: float
    nc1_init: float
    dlr: float
    f_in: float
    participation_ratio: float
    rank: int
    rule: str
    compare: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class LazyScaled(nn.Module):
    """f_α(x) = α · (net(x) − net₀(x)), net₀ a frozen copy of ``net`` as it is now (its initialisation)."""

    def __init__(self, net: nn.Module, alpha: float):
        super().__init__()
        self.net, self.alpha = net, alpha
        self.frozen = (copy.deepcopy(net).requires_grad_(False),)  # a tuple: outside parameters() and norms
        self._seen: tuple[Any, Any] = (None, None)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> LazyScaled:
        self.frozen[0]._apply(fn, *args, **kwargs)  # .to() moves the frozen copy too, outside the module tree
        return super()._apply(fn, *args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x is not self._seen[0]:  # full-batch training passes one tensor every step: net₀ of it once
            with torch.no_grad():
                self._seen = (x, self.frozen[0](x))
        return self.alpha * (self.net(x) - self._seen[1])


def flat_inputs(data: ImageData) -> tuple[torch.Tensor, torch.Tensor]:
    """Channel 0 of each image, flattened and standardised per pixel with the training statistics:
    ``(x_train, x_test)``."""
    require_type(data, "data", ImageData, owner="flat_inputs")
    train_x = data.x_train[:, 0].reshape(len(data.x_train), -1)
    test_x = data.x_test[:, 0].reshape(len(data.x_test), -1)
    mean, std = train_x.mean(0), train_x.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))  # constant border pixels stay 0
    return (train_x - mean) / std, (test_x - mean) / std


def lazy_rich_run(
    data: ImageData,
    alpha: float,
    steps: int = 2000,
    lr: float = 0.2,
    width: int = 256,
    depth: int = 3,
    seed: int = 0,
    rank: str | int = DEFAULT_RANK,
    tol: float | None = None,
    compare: Mapping[str, tuple[str | int, float | None]] | None = None,
) -> LazyRichResult:
    """Train f_α = α (g − g₀) on ``data`` (:func:`nhtlab.digits`, channel 0: :func:`flat_inputs`) and read DLR
    beside CKA-to-init and NC1.

    Large ``alpha`` is lazy, small is rich. ``steps`` full-batch gradient steps of size ``lr`` on L(f_α)/α², with
    L = ½ mean ‖f − y‖² (one-hot y); ``width`` hidden units in each of ``depth`` hidden layers, initialised from
    ``seed``. ``rank, tol`` is DLR's rank rule (:func:`nhtlab.dlr`); ``compare`` maps names to further
    ``(rank, tol)`` rules whose DLR goes in the result's ``compare``.
    """
    owner = "lazy_rich_run"
    alpha = require_real(alpha, "alpha", 0.0, None, low_open=True, owner=owner)
    steps = require_int(steps, "steps", low=1, owner=owner)
    lr = require_real(lr, "lr", 0.0, None, low_open=True, owner=owner)
    require_int(width, "width", low=1, owner=owner)
    require_int(depth, "depth", low=1, owner=owner)
    rank, tol = _check_rank(rank, tol, owner)
    compare = {name: _check_rank(r, t, owner) for name, (r, t) in (compare or {}).items()}
    x_train, x_test = flat_inputs(data)
    torch.manual_seed(require_int(seed, "seed", low=0, owner=owner))
    device = pick_device()
    net = ImageMLP(x_train.shape[1], data.num_classes, width, depth + 1)
    model = LazyScaled(net, alpha).to(device)
    # train's squared loss is the mean over samples *and* C classes: L/α² = (C / 2α²) · mse, so the step scales
    config = TrainConfig(steps=steps, lr=lr * data.num_classes / (2 * alpha**2), weight_decay=0.0, eval_every=steps,
                         loss="mse", optimizer="sgd", seed=seed)
    flat = SimpleNamespace(x_train=x_train, y_train=data.y_train, x_test=x_test, y_test=data.y_test)
    history = train(model, flat, config, desc=f"lazy/rich α={alpha:g}")
    final, start = capture(net, x_train.to(device)), capture(model.frozen[0], x_train.to(device))
    phi, phi0 = final.features.double(), start.features.double()
    f_train = alpha * (final.outputs - start.outputs)
    y_train = data.y_train.to(device)
    y_onehot = torch.nn.functional.one_hot(y_train, data.num_classes).to(f_train.dtype)
    prepared = _Prepared(phi, f_train, owner)
    terms = prepared.terms(rank, tol)
    last = history.rows[-1]
    return LazyRichResult(
        alpha=alpha, steps=steps, train_loss=float(0.5 * (f_train - y_onehot).pow(2).sum(1).mean()),
        train_acc=last["train_acc"], test_acc=last["test_acc"],
        cka_to_init=linear_cka(phi, phi0), nc1=nc1(phi, y_train), nc1_init=nc1(phi0, y_train),
        dlr=terms.dlr, f_in=terms.f_in, participation_ratio=terms.participation_ratio, rank=terms.rank,
        rule=terms.rule, compare={name: prepared.terms(r, t).dlr for name, (r, t) in compare.items()},
    )
