"""The compiled training step: ``torch.compile`` of a model's forward where it can build, eager where not.

``TrainConfig(compile=True)`` asks :func:`nhtlab.train` to run each step's forward (and so its
backward) through ``torch.compile``'s inductor backend, which fuses the elementwise work around
the matmuls (LayerNorm, GELU, softmax, the residual adds) into generated C++ on a CPU and Triton
kernels on a GPU. The fused kernels round differently from eager PyTorch, so a compiled run is the
same science in another float rounding: ``compile`` is part of the run's config and its cache key.

Inductor needs a C/C++ compiler on a CPU (``$CXX``, else ``g++``, ``c++`` or ``clang++``) and
Triton on a GPU, and no device audit (``NHTLAB_DEVICE_CHECK``, the tests' stand-in for a GPU on a
CPU-only machine: dynamo cannot trace it). Where one is missing, :func:`compiled_forward` returns the model itself and
says why with a :class:`RuntimeWarning`; the history records which path ran
(``history.config["compiled"]``: ``"inductor"`` or ``"eager (…why…)"``). The compiled code is
cached on disk by inductor (``TORCHINDUCTOR_CACHE_DIR``, by default a folder in the temporary
directory), so only a machine's first compiled run of a model pays the compilation.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from collections.abc import Callable

import torch
from torch import nn

from .device import device_audit_enabled

__all__ = ["compiler_missing", "compiled_forward"]

_CXX = ("g++", "c++", "clang++")


def compiler_missing(device: torch.device | str) -> str | None:
    """Why inductor cannot build on ``device`` here (None when it can)."""
    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if device_audit_enabled():  # dynamo would trace the audit's TorchFunctionMode, which it cannot
        return "the device audit (NHTLAB_DEVICE_CHECK) is on, and torch.compile cannot trace through it"
    if torch.device(device).type == "cuda":
        return None if importlib.util.find_spec("triton") else "no Triton for CUDA"
    cxx = os.environ.get("CXX")
    if cxx and shutil.which(cxx):
        return None
    if any(shutil.which(name) for name in _CXX):
        return None
    return "no C/C++ compiler found (set CXX, or install g++)"


def compiled_forward(model: nn.Module | Callable, device: torch.device | str) -> tuple[Callable, str]:
    """``torch.compile(model)`` and ``"inductor"``, or ``model`` and ``"eager (why)"`` with a warning.

    ``model`` is a module or any function of tensors (the stacked forward of
    :func:`~nhtlab.training.batched.train_batched`). The compiled callable shares the model's
    parameters: the optimiser, the evaluations, the norms and the checkpoints keep using
    ``model`` itself.
    """
    why = compiler_missing(device)
    if why is not None:
        warnings.warn(f"train was asked to compile the step (compile=True) but {why}: the run trains eagerly, "
                      "and its history records compiled = 'eager'.", RuntimeWarning, stacklevel=3)
        return model, f"eager ({why})"
    return torch.compile(model), "inductor"
