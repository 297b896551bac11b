"""Lazy against rich training, known in advance: a ground truth for DLR.

Chizat, Oyallon & Bach's lazy-training scaling: train f_α(x) = α · (g(x) − g₀(x)),
with g a network and g₀ its frozen initial function, on the loss L(f_α) / α²
by full-batch gradient descent with a fixed learning rate. For large α the
parameters move O(1/α) to fit the data, the network stays at its linearisation
and its features stay those of the initialisation (*lazy*); for small α the
parameters must move far and the features change (*rich*). The scale α is the
knob; the answer (lazy or rich) is read from two signals that share nothing with
DLR:

* ``cka_to_init``: linear CKA between the final and the initial features on
  the same inputs (≈ 1: the feature kernel did not move);
* ``nc1``: within-class variability over between-class spread of the final
  features on the training set (≪ 1: neural collapse, the extreme of rich).

Only then is DLR read and compared.

The setting (fixed before DLR was looked at; see the DLR chapter): scikit-learn's
offline digits, 8 × 8 grey pixels standardised per pixel, an MLP with ``depth``
ReLU hidden layers of ``width`` units (PyTorch's default init), features = last
hidden layer, squared loss to one-hot targets, ``steps`` full-batch gradient
steps of size ``lr``. All readings are on the training images (neural collapse
is a statement about them); test accuracy is on the held-out images.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from ..data.images import ImageData
from ..measures.cka import linear_cka
from ..measures.collapse import nc1
from ..measures.dlr import DEFAULT_RANK, _check_rank, _Prepared
from ..validation import require_int, require_real, require_type
from ..training.device import pick_device
from ..plumbing.cpu_slots import cpu_slot

__all__ = ["LazyRichResult", "mlp", "flat_inputs", "lazy_rich_run"]


@dataclass
class LazyRichResult:
    """Readings of one run at scale α (all on the training images unless named ``test``).

    Attributes
    ----------
    alpha : float
    steps : int
    train_loss : float
        Final squared loss ½‖f − y‖² per sample (on f, not divided by α²).
    train_acc, test_acc : float
    cka_to_init : float in [0, 1]
        Linear CKA(final features, initial features).
    nc1 : float ≥ 0
        NC1 of the final features. ``nc1_init`` is the same at initialisation.
    nc1_init : float
    dlr : float in [0, 1]
        DLR of the final features and outputs (rule ``rule``), no labels.
    f_in, participation_ratio, rank : float, float, int
        The terms of DLR = 1 − f_in √(PR / r).
    rule : str
    compare : dict
        DLR under each further rule asked for (name → value).
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


class _MLP(nn.Module):
    """ReLU MLP with a ``features`` method (last hidden layer) and a ``readout``."""

    def __init__(self, d_in: int, width: int, depth: int, classes: int):
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(d_in if i == 0 else width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.readout = nn.Linear(width, classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))


def mlp(d_in: int, width: int, depth: int, classes: int) -> nn.Module:
    """A ReLU MLP with ``depth`` hidden layers; ``model.features(x)`` is the last hidden layer (n, width)."""
    for name, value in (("d_in", d_in), ("width", width), ("depth", depth), ("classes", classes)):
        require_int(value, name, low=1, owner="mlp")
    return _MLP(d_in, width, depth, classes)


def flat_inputs(data: ImageData) -> tuple[torch.Tensor, torch.Tensor]:
    """One grey channel per image, flattened and standardised per pixel with the training statistics.

    Returns ``(x_train, x_test)`` of shapes (n_train, h·w) and (n_test, h·w), float32.
    """
    require_type(data, "data", ImageData, owner="flat_inputs")
    train = data.x_train[:, 0].reshape(len(data.x_train), -1)
    test = data.x_test[:, 0].reshape(len(data.x_test), -1)
    mean, std = train.mean(0), train.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))  # constant border pixels stay 0
    return (train - mean) / std, (test - mean) / std


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
    """Train f_α = α (g − g₀) on the digits and read DLR beside CKA-to-init and NC1.

    Parameters
    ----------
    data : ImageData
        :func:`nhtlab.data.images.digits` (any size; channel 0 is used, see :func:`flat_inputs`).
    alpha : float > 0
        Output scale: large → lazy, small → rich.
    steps : int ≥ 1
        Full-batch gradient-descent steps.
    lr : float > 0
        Step size on the loss L(f_α)/α², L = ½ mean ‖f − y‖² (one-hot y).
    width, depth : int
        Hidden units per layer and number of hidden layers.
    seed : int
        Seeds the initialisation.
    rank, tol
        DLR's rank rule (:func:`nhtlab.measures.dlr.dlr`).
    compare : mapping name → (rank, tol), optional
        Further rank rules whose DLR is recorded in ``compare``.

    Returns
    -------
    LazyRichResult
    """
    owner = "lazy_rich_run"
    alpha = require_real(alpha, "alpha", 0.0, None, low_open=True, owner=owner)
    steps = require_int(steps, "steps", low=1, owner=owner)
    lr = require_real(lr, "lr", 0.0, None, low_open=True, owner=owner)
    rank, tol = _check_rank(rank, tol, owner)
    compare = {name: _check_rank(r, t, owner) for name, (r, t) in (compare or {}).items()}
    device = pick_device()  # inputs, labels and both networks live together on nhtlab's device
    x_train, x_test = (x.to(device) for x in flat_inputs(data))
    y_train, y_test = data.y_train.to(device), data.y_test.to(device)
    y_onehot = torch.nn.functional.one_hot(y_train, data.num_classes).float()
    torch.manual_seed(require_int(seed, "seed", low=0, owner=owner))
    net = mlp(x_train.shape[1], width, depth, data.num_classes).to(device)
    init = copy.deepcopy(net).requires_grad_(False).to(device)
    with torch.no_grad():
        g0_train, g0_test = init(x_train), init(x_test)
        phi0 = init.features(x_train).double()
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    with cpu_slot():  # a machine-wide training slot while computing (NHTLAB_CPU_SLOTS)
        for _ in range(steps):
            f = alpha * (net(x_train) - g0_train)
            loss = 0.5 * (f - y_onehot).pow(2).sum(1).mean() / alpha ** 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        phi = net.features(x_train).double()
        f_train = alpha * (net(x_train) - g0_train)
        f_test = alpha * (net(x_test) - g0_test)
        train_loss = float(0.5 * (f_train - y_onehot).pow(2).sum(1).mean())
    prepared = _Prepared(phi, f_train, owner)
    terms = prepared.terms(rank, tol)
    return LazyRichResult(
        alpha=alpha, steps=steps, train_loss=train_loss,
        train_acc=float((f_train.argmax(1) == y_train).float().mean()),
        test_acc=float((f_test.argmax(1) == y_test).float().mean()),
        cka_to_init=linear_cka(phi, phi0), nc1=nc1(phi, y_train), nc1_init=nc1(phi0, y_train),
        dlr=terms.dlr, f_in=terms.f_in, participation_ratio=terms.participation_ratio, rank=terms.rank,
        rule=terms.rule, compare={name: prepared.terms(r, t).dlr for name, (r, t) in compare.items()},
    )
