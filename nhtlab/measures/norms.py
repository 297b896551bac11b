"""Squared parameter norms: the Lyapunov function V = ‖θ‖² of the NHT theory.

A *layer* is a module that owns parameters directly (``recurse=False``), named by
its qualified name in the model (``"readout"``, ``"blocks.0.attn.qkv"``). This
groups a weight with its bias, which is how the NHT paper reports per-layer norms.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn as nn

from ..validation import require_model, require_type

__all__ = ["layer_parameters", "layer_names", "layer_norms", "total_norm"]


def layer_parameters(model: nn.Module) -> dict[str, list[str]]:
    """The parameters of each layer, ``{layer: [qualified parameter names]}``: what every per-layer measure groups by.

    The single definition of a *layer* (module docstring) that :func:`layer_names`,
    :func:`layer_norms` and the stacked trainer (whose parameters are a ``{qualified name:
    (R, ...)}`` dict) use; layers in ``model.named_modules()`` order.

    >>> layer_parameters(nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)))
    {'0': ['0.weight', '0.bias'], '2': ['2.weight', '2.bias']}
    """
    require_type(model, "model", nn.Module, owner="layer_parameters")
    return {layer: [name for name, _ in own] for layer, own in _layers(model)}


def _layers(model: nn.Module) -> Iterator[tuple[str, list[tuple[str, nn.Parameter]]]]:
    """Yield ``(layer, [(qualified name, parameter), ...])`` for each module owning parameters (``recurse=False``).

    A parameter shared by several modules (tied weights) belongs to the first: counted once.
    """
    seen: set[int] = set()
    for layer, module in model.named_modules():
        own = [(f"{layer}.{name}" if layer else name, p) for name, p in module.named_parameters(recurse=False)
               if id(p) not in seen and not seen.add(id(p))]
        if own:
            yield layer, own


def layer_names(model: nn.Module) -> list[str]:
    """Names of the modules that own parameters, in definition order (the keys of :func:`layer_parameters`)."""
    require_type(model, "model", nn.Module, owner="layer_names")
    return list(layer_parameters(model))


@torch.no_grad()
def layer_norms(model: nn.Module) -> dict[str, float]:
    """Squared L2 norm of each layer's own parameters (:func:`layer_parameters`), ``{layer name: ‖θ_ℓ‖²}``.

    Accumulated in float64 so that sums over large models compare across steps; the values
    add up to :func:`total_norm` (a tied parameter counts once).

    Parameters
    ----------
    model : nn.Module

    Returns
    -------
    dict of str → float
        In definition order.

    Examples
    --------
    >>> layer = nn.Linear(2, 1)
    >>> _ = nn.init.constant_(layer.weight, 1.0); _ = nn.init.constant_(layer.bias, 2.0)
    >>> layer_norms(nn.Sequential(layer))
    {'0': 6.0}
    """
    require_model(model, owner="layer_norms")
    return {layer: float(sum(p.detach().double().pow(2).sum() for _, p in own)) for layer, own in _layers(model)}


@torch.no_grad()
def total_norm(model: nn.Module) -> float:
    """Squared L2 norm of all parameters, ‖θ‖² = Σ_ℓ ‖θ_ℓ‖², accumulated in float64 (a tied one counts once).

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    float
    """
    require_model(model, owner="total_norm")
    return float(sum(p.detach().double().pow(2).sum() for p in model.parameters()))
