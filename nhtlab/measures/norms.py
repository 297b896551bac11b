"""Squared parameter norms: the Lyapunov function V = ‖θ‖² of the NHT theory.

A *layer* is a module that owns parameters directly (``recurse=False``), named by
its qualified name in the model (``"readout"``, ``"blocks.0.attn.qkv"``). This
groups a weight with its bias, which is how the NHT paper reports per-layer norms.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..validation import check_type

__all__ = ["layer_names", "layer_norms", "total_norm"]


def layer_names(model: nn.Module) -> list[str]:
    """Names of the modules that own parameters, in definition order."""
    check_type(model, "model", nn.Module, owner="layer_names")
    return [name for name, m in model.named_modules() if any(True for _ in m.parameters(recurse=False))]


@torch.no_grad()
def layer_norms(model: nn.Module) -> dict[str, float]:
    """Squared L2 norm of each layer's own parameters, ``{layer name: ‖θ_ℓ‖²}``.

    Accumulated in float64 so that sums over large models stay exact enough to
    compare across steps. The values add up to :func:`total_norm`.

    Parameters
    ----------
    model : torch.nn.Module
        A layer is a submodule that owns parameters directly (``Linear``, ``Conv2d``,
        ``LayerNorm``, an embedding…), named by its path in the model.

    Returns
    -------
    dict of str to float
        ‖θ_ℓ‖² per layer, in the model's order.

    Examples
    --------
    >>> layer = nn.Linear(2, 1)
    >>> _ = nn.init.constant_(layer.weight, 1.0); _ = nn.init.constant_(layer.bias, 2.0)
    >>> layer_norms(nn.Sequential(layer))
    {'0': 6.0}
    """
    check_type(model, "model", nn.Module, owner="layer_norms")
    norms: dict[str, float] = {}
    for name, module in model.named_modules():
        params = list(module.parameters(recurse=False))
        if params:
            norms[name] = float(sum(p.detach().double().pow(2).sum() for p in params))
    return norms


@torch.no_grad()
def total_norm(model: nn.Module) -> float:
    """Squared L2 norm of all parameters, ‖θ‖² = Σ_ℓ ‖θ_ℓ‖².

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    float
        Σ over every parameter tensor of its squared entries, accumulated in float64.
    """
    check_type(model, "model", nn.Module, owner="total_norm")
    return float(sum(p.detach().double().pow(2).sum() for p in model.parameters()))
