"""Models, written to be read top to bottom.

Every model follows one contract, used by the rest of nhtlab:

* ``features(x)`` returns the penultimate representation, shape (n, d);
* ``readout`` is the final ``nn.Linear`` mapping features to logits;
* ``forward(x) == readout(features(x))``; ``forward(x, return_features=True)``
  returns ``(logits, features)`` so that ``torch.func.functional_call`` reaches both.

Modular arithmetic: :class:`~nhtlab.models.mlp.EmbeddingMLP` and the companion
paper's :class:`~nhtlab.models.transformer.Transformer`, built by name with
:func:`make_model`. Images: :mod:`nhtlab.models.cnn`.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn as nn

from ..validation import require_choice
from .cnn import ImageCNN, ResNet18, SimpleCNN
from .mlp import EmbeddingMLP, ImageMLP
from .transformer import Transformer

__all__ = ["EmbeddingMLP", "ImageMLP", "ImageCNN", "Transformer", "SimpleCNN", "ResNet18", "make_model", "model_defaults",
           "MODELS", "require_fits"]

#: Modular-arithmetic models by name.
MODELS = {"mlp": EmbeddingMLP, "transformer": Transformer}


def make_model(name: str, p: int, **kwargs) -> nn.Module:
    """Build a modular-arithmetic model by name.

    Parameters
    ----------
    name : {"mlp", "transformer"}
    p : int
        Number of input tokens and of classes.
    **kwargs
        Passed to the model's constructor (``width``, ``d_model``, ``init_scale``…).

    Returns
    -------
    torch.nn.Module
        Maps token pairs of shape (n, 2) to logits of shape (n, p).

    Examples
    --------
    >>> import torch
    >>> make_model("transformer", 7, d_model=16, n_heads=2, d_ff=32)(torch.zeros(3, 2, dtype=torch.long)).shape
    torch.Size([3, 7])
    """
    require_choice(name, "name", MODELS, owner="make_model")
    return MODELS[name](p, **kwargs)


def model_defaults(name: str) -> dict[str, Any]:
    """The constructor settings of a modular-arithmetic model and their defaults (``p`` aside).

    What :class:`~nhtlab.training.modular_run.ModularRun` checks ``model_kwargs`` against (and drops
    when spelled out), and where a size left out of a run's config is read back.

    Examples
    --------
    >>> model_defaults("transformer")["d_model"], "p" in model_defaults("mlp")
    (128, False)
    """
    require_choice(name, "name", MODELS, owner="model_defaults")
    return {key: param.default for key, param in inspect.signature(MODELS[name]).parameters.items() if key != "p"}


def require_fits(model: nn.Module, x: torch.Tensor, y: torch.Tensor | None, name: str, owner: str, what: str = "") -> None:
    """Refuse inputs a modular model (one with ``p``) cannot take: not (n, 2) token pairs, or tokens or labels
    outside 0 … p − 1 (the model would ignore a column, or index out of its tables)."""
    vocab = getattr(model, "p", None)
    if not isinstance(vocab, int) or x.is_floating_point() or not x.numel():
        return
    tops = (int(x.max()), -1 if y is None or not y.numel() else int(y.max()))
    lows = min(int(x.min()), 0 if y is None or not y.numel() else int(y.min()))
    if x.ndim != 2 or x.shape[1] != 2 or max(tops) >= vocab or lows < 0:
        raise ValueError(
            f"The {name!r} parameter of {owner} holds {what}tokens of shape {tuple(x.shape)} up to {tops[0]}"
            f"{'' if y is None else f' and labels up to {tops[1]}'}, but the model ({type(model).__name__}) was built for "
            f"p = {vocab}: (n, 2) pairs of tokens and classes 0 … {vocab - 1}. Build the model with the data's p "
            f"(nhtlab.make_model(name, data.p)).")
