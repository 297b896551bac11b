"""Device choice, seeding, and memory estimates for an evaluation batch.

While the build's device audit (:mod:`nhtlab.plumbing.device_audit`) is on, :func:`pick_device`
returns ``cpu:0``, the CPU standing in for a GPU.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from ..validation import require_choice, require_int, require_seed

__all__ = ["pick_device", "seed_everything", "device_audit_enabled", "AUDIT_DEVICE", "AUDITS", "estimate_eval_bytes",
           "estimate_train_bytes", "suggest_eval_batch_size"]


def pick_device(preference: str = "auto") -> torch.device:
    """Return the device to train on.

    Parameters
    ----------
    preference : {"auto", "cpu", "cuda"}
        ``"auto"``: CUDA when available, else the CPU. ``"cuda"`` raises without a GPU.

    Returns
    -------
    torch.device
        :data:`AUDIT_DEVICE` for ``"auto"`` and ``"cpu"`` while the device audit is on.
    """
    require_choice(preference, "preference", ("auto", "cpu", "cuda"), owner="pick_device")
    if preference == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("pick_device('cuda') was asked for, but torch.cuda.is_available() is False.")
    if AUDITS and preference in ("auto", "cpu"):
        return AUDIT_DEVICE
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(preference)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) global generators.

    Parameters
    ----------
    seed : int >= 0

    Returns
    -------
    None
    """
    seed = require_seed(seed, "seed_everything")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# The device audit (:mod:`nhtlab.plumbing.device_audit`, build plumbing) registers each audit it starts here,
# so that :func:`pick_device` answers the audit's device while one is on.

#: What :func:`pick_device` returns while the audit is on: the CPU, tagged as "the chosen device".
AUDIT_DEVICE = torch.device("cpu", 0)
#: The device audits in force (appended and removed by :mod:`nhtlab.plumbing.device_audit`).
AUDITS: list = []


def device_audit_enabled() -> bool:
    """True while a device audit is active (see :func:`nhtlab.plumbing.device_audit.device_audit`)."""
    return bool(AUDITS)


# ----------------------------------------------------------------------------------------------
# Memory: activation sizes, and an evaluation batch that fits.

#: The default memory budget of one evaluation pass: a quarter of a Colab T4's 16 GB, leaving room for the
#: datasets on the device (CIFAR-10 as float32: 0.6 GB for training, 0.12 GB per test set), the model,
#: the optimiser and cuDNN's workspace.
EVAL_BUDGET_BYTES = 4 * 2**30


@torch.no_grad()
def activation_bytes(model: torch.nn.Module, example: torch.Tensor) -> dict[str, int]:
    """Bytes per example of the activations of ``model`` on a small batch ``example`` (forward hooks).

    ``largest``: the largest leaf output; ``total``: all leaf outputs (roughly what the backward keeps);
    ``params``: the parameters' bytes.
    """
    require_int(len(example), "example", low=1, owner="activation_bytes")
    sizes: list[int] = []

    def hook(_module, _inputs, output):
        for t in ([output] if isinstance(output, torch.Tensor) else list(output) if isinstance(output, (tuple, list)) else []):
            if isinstance(t, torch.Tensor):
                sizes.append(t.numel() * t.element_size())

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    was_training = model.training
    model.eval()
    try:
        model(example)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    n = len(example)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"largest": -(-max(sizes, default=0) // n), "total": -(-sum(sizes) // n), "params": params}


def estimate_eval_bytes(model: torch.nn.Module, example: torch.Tensor, batch_size: int, num_classes: int | None = None) -> int:
    """Peak bytes of one evaluation batch (no gradients): a rough upper bound.

    Three times the largest activation (a layer's input, its output and a residual branch alive together)
    plus the float64 logits the loss is computed in, times ``batch_size``.
    """
    require_int(batch_size, "batch_size", low=1, owner="estimate_eval_bytes")
    sizes = activation_bytes(model, example)
    with torch.no_grad():
        classes = num_classes if num_classes is not None else int(model(example[:1]).shape[-1])
    return batch_size * (3 * sizes["largest"] + 8 * classes)


def estimate_train_bytes(model: torch.nn.Module, example: torch.Tensor, batch_size: int) -> int:
    """Peak bytes of one AdamW training step: saved activations plus parameters, gradients and two moments."""
    require_int(batch_size, "batch_size", low=1, owner="estimate_train_bytes")
    sizes = activation_bytes(model, example)
    return batch_size * (sizes["total"] + 2 * sizes["largest"]) + 4 * sizes["params"]


def suggest_eval_batch_size(model: torch.nn.Module, example: torch.Tensor, budget_bytes: int = EVAL_BUDGET_BYTES,
                            max_batch: int = 8192) -> int:
    """The largest power of two ≤ ``max_batch`` whose evaluation fits ``budget_bytes`` (:func:`estimate_eval_bytes`).

    ``example`` is a few inputs of the real size on the model's device; the answer is at least 1.

    Examples
    --------
    >>> from nhtlab.models.cnn import ResNet18
    >>> suggest_eval_batch_size(ResNet18(10), torch.zeros(2, 3, 32, 32))  # 6 GB at 8,192: too much for a T4
    4096
    """
    require_int(budget_bytes, "budget_bytes", low=1, owner="suggest_eval_batch_size")
    require_int(max_batch, "max_batch", low=1, owner="suggest_eval_batch_size")
    per_example = estimate_eval_bytes(model, example, 1)
    batch = 1
    while batch * 2 <= max_batch and per_example * batch * 2 <= budget_bytes:
        batch *= 2
    return batch
