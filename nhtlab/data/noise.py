"""Label noise: a fraction of the training labels replaced by random ones.

A network can fit a random label only by memorising it, example by example, which
costs weight norm: label noise plants a high-norm shortcut in any classification
set, while the rule that reads the input fits the clean majority with small weights.

>>> import torch
>>> y, flipped = noisy_labels(torch.arange(10), fraction=0.0, classes=10, seed=0)
>>> bool((y == torch.arange(10)).all()), int(flipped.sum())
(True, 0)
"""

from __future__ import annotations

import torch

from ..validation import require_int, require_real, require_seed, require_type

__all__ = ["noisy_labels"]


def noisy_labels(y: torch.Tensor, fraction: float, classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Replace a random fraction of the labels by labels drawn uniformly from all classes.

    A picked label may be drawn equal to the true one (one time in ``classes``), so about
    ``fraction · (1 − 1/classes)`` end up wrong. The draws come from a CPU generator seeded
    with ``seed`` (the same labels on any device); the result lives on ``y``'s device.

    Parameters
    ----------
    y : torch.Tensor, shape (n,), integer
    fraction : float in [0, 1]
        Probability that a label is replaced.
    classes : int ≥ 2
    seed : int

    Returns
    -------
    labels : torch.Tensor, shape (n,)
    picked : torch.Tensor of bool, shape (n,)
        Which labels were replaced (a replaced label can equal the clean one).
    """
    owner = "noisy_labels"
    require_type(y, "y", torch.Tensor, owner=owner)
    require_real(fraction, "fraction", 0.0, 1.0, owner=owner)
    require_int(classes, "classes", low=2, owner=owner)
    require_seed(seed, owner)
    if y.ndim != 1 or y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool or y.is_meta:
        raise ValueError(f"The 'y' parameter of noisy_labels must be a 1-d integer tensor with values. Got {y.dtype} "
                         f"of shape {tuple(y.shape)}{' on the meta device' if y.is_meta else ''}.")
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= classes):
        raise ValueError(f"The 'y' parameter of noisy_labels must hold labels in [0, {classes - 1}] ('classes' is "
                         f"{classes}). Got labels from {int(y.min())} to {int(y.max())}.")
    if classes - 1 > torch.iinfo(y.dtype).max:  # a noisy label would wrap round in y's dtype
        raise ValueError(f"The 'y' parameter of noisy_labels has dtype {y.dtype}, which cannot hold label "
                         f"{classes - 1} ('classes' is {classes}); use torch.long.")
    generator = torch.Generator().manual_seed(seed)
    picked = torch.rand(len(y), generator=generator) < fraction
    random = torch.randint(0, classes, y.shape, generator=generator)
    picked, random = picked.to(y.device), random.to(device=y.device, dtype=y.dtype)
    return torch.where(picked, random, y), picked
