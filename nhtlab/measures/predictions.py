"""What a classifier predicts: its accuracy (and loss), and the DLR of its read-out computed by hand.

:func:`readout_dlr` splits an ``nn.Sequential`` at its last module: everything before
it gives the features Φ, the last module (the read-out) the outputs. It does not use
hooks, so it is an independent recomputation of what :class:`nhtlab.Monitor` records.

>>> import torch, torch.nn as nn
>>> model = nn.Sequential(nn.Identity(), nn.Linear(2, 2, bias=False))
>>> with torch.no_grad():
...     _ = model[1].weight.copy_(torch.eye(2))
>>> accuracy(model, torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0]))
0.5
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from ..validation import require_model, require_tensor, require_type
from .dlr import dlr

__all__ = ["evaluating", "forward", "accuracy", "loss_and_accuracy", "readout_dlr"]


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode inside the block, every submodule's own mode restored after it.

    A measure reads what the model computes, not one random draw of it: Dropout off,
    BatchNorm's running statistics used (not updated), so the same call gives the same
    number twice and leaves the model as it found it.

    >>> model = nn.Sequential(nn.Dropout(0.5), nn.Linear(2, 2)).train()
    >>> with evaluating(model):
    ...     print(model.training, model[0].training)
    False False
    >>> model.training, model[0].training
    (True, True)
    """
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for module, mode in modes:
            module.training = mode


def forward(model: nn.Module, x: torch.Tensor, owner: str, name: str = "x") -> torch.Tensor:
    """``model(x)`` in eval mode, after checking that the model can read ``x``.

    ``x`` must be a real tensor with at least one input, floating inputs in the model's own
    dtype; a shape the model cannot take is a ValueError naming ``x`` (or ``name``), not an
    error from inside torch.
    """
    require_model(model, "model", owner=owner)
    require_tensor(x, name, owner=owner)
    if x.dim() == 0 or len(x) == 0:
        raise ValueError(f"The '{name}' parameter of {owner} must hold at least one input along its first dim. "
                         f"Got shape {tuple(x.shape)} instead.")
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    if x.is_floating_point() and dtypes and x.dtype not in dtypes:
        raise ValueError(f"The '{name}' parameter of {owner} must have the dtype of the 'model' parameter, "
                         f"{' or '.join(map(str, dtypes))}; "
                         f"cast it with .to(dtype). Got {x.dtype} instead.")
    try:
        with evaluating(model):
            return model(x)
    except (RuntimeError, IndexError) as error:  # a shape or dtype the model's layers cannot take
        raise ValueError(f"The '{name}' parameter of {owner} cannot be read by the 'model' parameter: the model raised "
                         f"{type(error).__name__}: {str(error).splitlines()[0]} ({name}: {x.dtype}, shape {tuple(x.shape)}).") from error


def _scores_and_labels(model: nn.Module, x: torch.Tensor, y: torch.Tensor, owner: str) -> torch.Tensor:
    """``model(x)`` in eval mode, after checking that ``y`` holds one integer label per input, each a scored class."""
    require_type(model, "model", nn.Module, owner=owner)
    require_type(x, "x", torch.Tensor, owner=owner)
    require_type(y, "y", torch.Tensor, owner=owner)
    if y.dim() != 1 or y.dtype == torch.bool or y.is_floating_point() or y.is_complex() or y.is_meta:
        raise ValueError(f"The 'y' parameter of {owner} must be a 1-D tensor of integer class labels. "
                         f"Got {y.dtype} of shape {tuple(y.shape)} instead.")
    if x.dim() == 0 or len(x) != len(y) or len(y) == 0:
        raise ValueError(f"The 'x' and 'y' parameters of {owner} must hold as many labels as inputs, at least one. "
                         f"Got {len(x) if x.dim() else 'a scalar of'} inputs and {len(y)} labels.")
    scores = forward(model, x, owner)
    if scores.dim() != 2 or scores.shape[0] != len(y):
        raise ValueError(f"The 'model' parameter of {owner} must return one row of class scores per input, shape "
                         f"({len(y)}, classes). Got shape {tuple(scores.shape)} instead.")
    low, high = int(y.min()), int(y.max())
    if low < 0 or high >= scores.shape[1]:
        raise ValueError(f"The 'y' parameter of {owner} must hold labels in [0, {scores.shape[1] - 1}] (the model "
                         f"scores {scores.shape[1]} classes). Got labels from {low} to {high}.")
    return scores


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of the examples whose arg-max output is the label, in eval mode (:func:`evaluating`).

    Parameters
    ----------
    model : nn.Module
        A classifier returning one score per class, shape (n, C).
    x : torch.Tensor, shape (n, ...)
    y : torch.Tensor, shape (n,)
        Integer labels in [0, C), on the model's device (as ``x``).

    Returns
    -------
    float
    """
    scores = _scores_and_labels(model, x, y, "accuracy")
    return (scores.argmax(1) == y.to(scores.device)).double().mean().item()


@torch.no_grad()
def loss_and_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """The mean cross-entropy (nats) and the accuracy of ``model`` on ``(x, y)``, from one forward pass.

    What :class:`nhtlab.Monitor`'s early warning reads as ``train_loss=`` (the whole training
    set's loss, not a minibatch's) and ``train_acc=``.

    Parameters
    ----------
    model, x, y
        As for :func:`accuracy`.

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> model = nn.Linear(2, 2, bias=False)
    >>> with torch.no_grad():
    ...     _ = model.weight.zero_()
    >>> loss_and_accuracy(model, torch.ones(4, 2), torch.tensor([0, 0, 1, 1]))[0] == torch.log(torch.tensor(2.0)).item()
    True
    """
    logits = _scores_and_labels(model, x, y, "loss_and_accuracy")
    y = y.to(logits.device, torch.long)  # cross_entropy takes int64 labels only
    return F.cross_entropy(logits.float(), y).item(), (logits.argmax(1) == y).double().mean().item()


@torch.no_grad()
def readout_dlr(model: nn.Sequential, x: torch.Tensor) -> float:
    """DLR of an ``nn.Sequential`` on ``x``: features = all modules but the last, outputs = the last.

    Parameters
    ----------
    model : nn.Sequential
    x : torch.Tensor, shape (n, ...)
        The probe inputs (no labels), on the model's device.

    Returns
    -------
    float
        :func:`nhtlab.measures.dlr.dlr` of the flattened features and the outputs, on the CPU.
    """
    owner = "readout_dlr"
    require_type(model, "model", nn.Sequential, owner=owner)
    if len(model) < 2:
        raise ValueError(f"The 'model' parameter of readout_dlr needs a read-out after at least one module. "
                         f"Got a Sequential of {len(model)}.")
    require_tensor(x, "x", owner=owner)
    if x.dim() == 0 or len(x) < 2:
        raise ValueError(f"The 'x' parameter of readout_dlr must hold at least 2 inputs (DLR compares samples). "
                         f"Got shape {tuple(x.shape)} instead.")
    with evaluating(model):  # Dropout off, BatchNorm's running statistics read, not updated
        features = forward(model[:-1], x, owner).flatten(1)
        outputs = forward(model[-1:], features, owner)
    if not (bool(torch.isfinite(features).all()) and bool(torch.isfinite(outputs).all())):
        raise ValueError("The 'model' parameter of readout_dlr gives NaN or inf features or outputs on the 'x' "
                         "parameter (NaN weights or inputs, or a diverged model): DLR is undefined.")
    try:
        return dlr(features.cpu(), outputs.cpu())
    except ValueError as error:  # features or outputs constant across the inputs: say which arguments gave them
        raise ValueError(f"The 'model' parameter of readout_dlr has no DLR on the 'x' parameter: {error}") from None
