"""Capture a model's penultimate features and its outputs over a dataset, in batches.

DLR, its spectra and NC1 start from the features Φ (n, p) and the outputs f̂ (n, C) over
the same samples; :func:`capture` builds them batch by batch (memory n·(p + C), never n²).
Which layer counts as "the features" is a modelling decision that changes DLR (see the
DLR chapter): nhtlab's models expose ``features(x)`` and a ``readout`` (``layer=None``);
for any ``nn.Module``, ``layer="name"`` records that submodule's output (or input) through
a forward hook that :func:`hooked` removes in ``finally``, even when the forward pass raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn as nn

from ..validation import (
    require_choice,
    require_int,
    require_model,
    require_tensor,
    require_type,
)

__all__ = ["Captured", "capture", "hooked"]

_WHICH = ("output", "input")


@dataclass
class Captured:
    """Features (n, p), flattened per sample, and outputs (n, C) of a model over the same samples.

    ``layer`` is ``"features()"`` for a built-in model's own features, else ``"name:output"``/``"name:input"``.
    """

    features: torch.Tensor
    outputs: torch.Tensor
    layer: str

    def __len__(self) -> int:
        return self.features.shape[0]


@contextmanager
def hooked(model: nn.Module, layer: str, which: str = "output") -> Iterator[list[torch.Tensor]]:
    """Record what a named submodule sees (``which="input"``: its first input) or returns (``"output"``).

    Yields a list that receives one detached tensor per forward call; the hook is removed
    when the ``with`` block ends, whatever happens inside it.

    >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> with hooked(net, "1") as seen:
    ...     _ = net(torch.zeros(5, 3))
    >>> seen[0].shape
    torch.Size([5, 4])
    """
    require_type(model, "model", nn.Module, owner="hooked")
    require_type(layer, "layer", str, owner="hooked")
    require_choice(which, "which", _WHICH, owner="hooked")
    modules = dict(model.named_modules())
    if layer not in modules or layer == "":
        names = [n for n in modules if n]
        shown = ", ".join(repr(n) for n in names[:20]) + (", …" if len(names) > 20 else "")
        raise ValueError(f"The 'layer' parameter of hooked must name a submodule of the model, one of {shown}. Got {layer!r} instead.")
    seen: list[torch.Tensor] = []

    def record(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        value = inputs[0] if which == "input" else output
        if isinstance(value, (tuple, list)):
            value = value[0]
        seen.append(value.detach())

    handle = modules[layer].register_forward_hook(record)
    try:
        yield seen
    finally:
        handle.remove()


def _batches(x: torch.Tensor | Iterable, batch_size: int, dtypes: set[torch.dtype]) -> Iterator[torch.Tensor]:
    """The input batches of ``x``, each checked to be a tensor the model can read (named errors for ``x``)."""
    if isinstance(x, torch.Tensor):
        batches: Iterable = (x[start:start + batch_size] for start in range(0, x.shape[0], batch_size))
    elif isinstance(x, (str, bytes, Mapping)) or not isinstance(x, Iterable):
        raise TypeError(f"The 'x' parameter of capture must be a tensor or an iterable of batches. "
                        f"Got {type(x).__name__} instead.")
    else:  # a DataLoader or any iterable of tensors / (inputs, targets, …) tuples
        batches = (batch[0] if isinstance(batch, (tuple, list)) and batch else batch for batch in x)
    for batch in batches:
        require_tensor(batch, "x", owner="capture")
        if batch.dim() == 0:
            raise ValueError("The 'x' parameter of capture must hold samples along its first dim. Got a scalar.")
        if batch.is_floating_point() and dtypes and batch.dtype not in dtypes:
            raise ValueError(f"The 'x' parameter of capture must have the dtype of the 'model' parameter, "
                         f"{' or '.join(map(str, dtypes))}; "
                             f"cast it with .to(dtype). Got {batch.dtype} instead.")
        yield batch


@torch.no_grad()
def capture(
    model: nn.Module,
    x: torch.Tensor | Iterable,
    layer: str | None = None,
    which: str = "output",
    batch_size: int = 4096,
    device: torch.device | str | None = None,
) -> Captured:
    """Features and outputs of ``model`` on the inputs ``x``, computed in batches, in eval mode.

    The model's train/eval mode is restored afterwards, even on error.

    Parameters
    ----------
    model : nn.Module
        With ``layer=None`` it needs ``features(x)`` and a ``readout`` module (nhtlab's models).
    x : Tensor of shape (n, …) or iterable of batches
        Batches may be tuples whose first item is the input (a ``DataLoader``'s labels are ignored).
    layer : str, optional
        Qualified name of the submodule to record (``model.named_modules()``); None uses ``model.features``.
    which : {"output", "input"}
    batch_size : int
        Rows per forward pass when ``x`` is a tensor.
    device : device, optional
        Where to run the model (default: its first parameter's); the results stay there.

    Returns
    -------
    Captured
        ``features`` (n, p) and ``outputs`` (n, C), in the model's dtype.
    """
    owner = "capture"
    require_model(model, "model", owner=owner)
    require_int(batch_size, "batch_size", low=1, owner=owner)
    require_type(device, "device", (str, torch.device, type(None)), owner=owner)
    if layer is not None:
        require_type(layer, "layer", str, owner=owner)
    require_choice(which, "which", _WHICH, owner=owner)
    if layer is None and not (callable(getattr(model, "features", None)) and isinstance(getattr(model, "readout", None), nn.Module)):
        raise TypeError(
            f"The 'model' parameter of {owner} must have features() and a readout module when the 'layer' parameter is "
            f"None; "
            f"{type(model).__name__} has not. Pass layer='<submodule name>' to record a layer through a hook."
        )
    if device is None:
        first = next(model.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    try:
        device = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"The 'device' parameter of {owner} must name a device ('cpu', 'cuda', 'cuda:0', …). "
                         f"Got {device!r} ({error}).") from None
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    was_training = model.training
    model.eval()
    feats: list[torch.Tensor] = []
    outs: list[torch.Tensor] = []
    try:
        if layer is None:
            for xb in _batches(x, batch_size, dtypes):
                h = model.features(xb.to(device))
                feats.append(h.reshape(h.shape[0], -1))
                outs.append(model.readout(h))
            name = "features()"
        else:
            with hooked(model, layer, which) as seen:
                for xb in _batches(x, batch_size, dtypes):
                    seen.clear()
                    out = model(xb.to(device))
                    if not seen:
                        raise ValueError(f"The 'layer' parameter of {owner}: layer {layer!r} was not called during the "
                                         f"forward pass of {type(model).__name__}.")
                    h = seen[-1]
                    feats.append(h.reshape(h.shape[0], -1))
                    outs.append(out[0] if isinstance(out, (tuple, list)) else out)
            name = f"{layer}:{which}"
    except (RuntimeError, IndexError) as error:  # a shape or dtype the model's layers cannot take
        raise ValueError(f"The 'x' parameter of {owner} cannot be read by the 'model' parameter: the model raised "
                         f"{type(error).__name__}: {str(error).splitlines()[0]}") from error
    finally:
        model.train(was_training)
    if not feats:
        raise ValueError(f"The 'x' parameter of {owner} holds no samples.")
    outputs = torch.cat(outs)
    return Captured(torch.cat(feats), outputs.reshape(outputs.shape[0], -1), name)
