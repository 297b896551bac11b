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

import torch
import torch.nn.functional as F
from torch import nn

from ..validation import require_type
from .dlr import dlr

__all__ = ["accuracy", "loss_and_accuracy", "readout_dlr"]


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of the examples whose arg-max output is the label.

    Parameters
    ----------
    model : nn.Module
        A classifier returning one score per class, shape (n, C).
    x : torch.Tensor, shape (n, ...)
        Inputs, on the model's device.
    y : torch.Tensor, shape (n,)
        Integer labels, on the same device.

    Returns
    -------
    float
        Accuracy in [0, 1].
    """
    require_type(model, "model", nn.Module, owner="accuracy")
    if len(x) != len(y) or len(y) == 0:
        raise ValueError(f"accuracy needs as many labels as inputs, at least one. Got {len(x)} inputs and {len(y)} labels.")
    return (model(x).argmax(1) == y).float().mean().item()


@torch.no_grad()
def loss_and_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """The mean cross-entropy and the accuracy of ``model`` on ``(x, y)``, from one forward pass.

    What :class:`nhtlab.Monitor`'s early warning reads as ``train_loss=`` (the whole training
    set's loss, not a minibatch's) and ``train_acc=``.

    Parameters
    ----------
    model, x, y
        As for :func:`accuracy`.

    Returns
    -------
    (float, float)
        The loss (nats) and the accuracy in [0, 1].

    Examples
    --------
    >>> model = nn.Linear(2, 2, bias=False)
    >>> with torch.no_grad():
    ...     _ = model.weight.zero_()
    >>> loss_and_accuracy(model, torch.ones(4, 2), torch.tensor([0, 0, 1, 1]))[0] == torch.log(torch.tensor(2.0)).item()
    True
    """
    require_type(model, "model", nn.Module, owner="loss_and_accuracy")
    if len(x) != len(y) or len(y) == 0:
        raise ValueError(f"loss_and_accuracy needs as many labels as inputs, at least one. Got {len(x)} inputs and "
                         f"{len(y)} labels.")
    logits = model(x)
    return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


@torch.no_grad()
def readout_dlr(model: nn.Sequential, x: torch.Tensor) -> float:
    """DLR of an ``nn.Sequential`` on ``x``: features = all modules but the last, outputs = the last.

    Parameters
    ----------
    model : nn.Sequential
        The classifier; its last module is the read-out.
    x : torch.Tensor, shape (n, ...)
        The probe inputs (no labels), on the model's device.

    Returns
    -------
    float
        :func:`nhtlab.measures.dlr.dlr` of the flattened features and the read-out's outputs,
        both moved to the CPU.
    """
    require_type(model, "model", nn.Sequential, owner="readout_dlr")
    if len(model) < 2:
        raise ValueError(f"readout_dlr needs a read-out after at least one module. Got a Sequential of {len(model)}.")
    features = model[:-1](x).flatten(1)
    return dlr(features.cpu(), model[-1](features).cpu())
