"""Device choice and seeding."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .validation import check_choice, check_int

__all__ = ["pick_device", "seed_everything", "in_colab"]


def pick_device(preference: str = "auto") -> torch.device:
    """Return the device to train on.

    Parameters
    ----------
    preference : {"auto", "cpu", "cuda"}
        ``"auto"`` picks CUDA when it is available, else the CPU. ``"cuda"``
        raises when no GPU is present rather than silently using the CPU.
    """
    check_choice(preference, "preference", ("auto", "cpu", "cuda"), owner="pick_device")
    if preference == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("pick_device('cuda') was asked for, but torch.cuda.is_available() is False.")
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(preference)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) global generators."""
    seed = check_int(seed, "seed", low=0, owner="seed_everything")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "COLAB_RELEASE_TAG" in os.environ or "google.colab" in __import__("sys").modules
