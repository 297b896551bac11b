"""The compiled training step: ``torch.compile`` of a model's forward where it can build, eager where not.

``TrainConfig(compile=True)`` runs each step's forward (and so its backward) through inductor, which fuses
the elementwise work around the matmuls into C++ on a CPU and Triton kernels on a GPU. Fused kernels round
differently from eager PyTorch, so ``compile`` is part of the run's config and its cache key. Where inductor
cannot build (no C/C++ compiler, no Triton, the device audit on), the run trains eagerly with a warning and
the history records which path ran (``history.config["compiled"]``).

Inductor's embedding backward, an atomic-add scatter, sums in another order at each call on several CPU
threads, so the same compiled run gave different histories: :func:`deterministic_inductor` leaves it to
PyTorch's fixed-order kernel (issue 29), for one history per config and thread count.
"""

from __future__ import annotations

import importlib.util
import shutil
import warnings
from collections.abc import Callable

import torch
from torch import nn

from .device import device_audit_enabled

__all__ = ["compiler_missing", "compiled_forward", "deterministic_inductor"]

_CXX = ("g++", "c++", "clang++")


def compiler_missing(device: torch.device | str) -> str | None:
    """Why inductor cannot build on ``device`` here (None when it can)."""
    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if device_audit_enabled():  # dynamo would trace the audit's TorchFunctionMode, which it cannot
        return "the device audit (NHTLAB_DEVICE_CHECK) is on, and torch.compile cannot trace through it"
    if torch.device(device).type == "cuda":
        return None if importlib.util.find_spec("triton") else "no Triton for CUDA"
    if any(shutil.which(name) for name in _CXX):
        return None
    return "no C/C++ compiler found (install g++)"


def compiled_forward(model: nn.Module | Callable, device: torch.device | str) -> tuple[Callable, str]:
    """``torch.compile(model)`` and ``"inductor"``, or ``model`` and ``"eager (why)"`` with a warning.

    ``model`` is a module or any function of tensors; the compiled callable shares its parameters.
    """
    why = compiler_missing(device)
    if why is not None:
        warnings.warn(f"train was asked to compile the step (compile=True) but {why}: the run trains eagerly, "
                      "and its history records compiled = 'eager'.", RuntimeWarning, stacklevel=3)
        return model, f"eager ({why})"
    return torch.compile(model, backend=deterministic_inductor), "inductor"


def deterministic_inductor(graph: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """Inductor, as ``torch.compile``'s default backend, with PyTorch's embedding backward kept whole.

    AOTAutograd's cache is off for this backend: its key does not see the decomposition table, and a warm
    cache served the default backend's atomic kernels. Inductor's own cache still spares a warm machine the
    C++ compilation: its key holds the table by name (:class:`_KeptWhole`).
    """
    from torch._functorch import config as functorch_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.lowering import lowerings, make_fallback, require_contiguous

    for name in _KEEP_WHOLE:
        op = _aten_op(name)
        # Register what inductor would make of the op on its own (a call to ATen, contiguous inputs, as for
        # any ATen op in a backward graph), but by name: left to itself, inductor refuses such an implicit
        # fallback for an op it can decompose wherever the CI variable is set. The default backend decomposes
        # the op before lowering, so it never reads this entry.
        if op not in lowerings:
            make_fallback(op, layout_constraint=require_contiguous, warn=False, override_decomp=True)
    with functorch_config.patch(enable_autograd_cache=False):
        return compile_fx(graph, example_inputs, decompositions=_decompositions(_KEEP_WHOLE))


#: The ATen ops whose inductor decomposition is left out (their ATen kernel runs instead).
_KEEP_WHOLE = ("embedding_dense_backward.default",)


class _KeptWhole(dict):
    """Inductor's decomposition table less some ops, pickled as the call that builds it.

    Inductor keys its disk cache on a pickle of the table; the default table's C++ functions do not pickle,
    and inductor then skips its cache (a full compile in every process).
    """

    def __init__(self, table: dict, kept_whole: tuple[str, ...]):
        super().__init__(table)
        self.kept_whole = kept_whole

    def __reduce__(self):
        return _decompositions, (self.kept_whole,)


def _decompositions(kept_whole: tuple[str, ...]) -> _KeptWhole:
    """Inductor's decomposition table without the ATen ops named in ``kept_whole`` (``"op.overload"``)."""
    from torch._inductor.decomposition import select_decomp_table

    left_out = {_aten_op(name) for name in kept_whole}
    return _KeptWhole({op: fn for op, fn in select_decomp_table().items() if op not in left_out}, kept_whole)


def _aten_op(name: str) -> torch._ops.OpOverload:
    """The ATen op overload named ``"op.overload"`` (``"embedding_dense_backward.default"``)."""
    op, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, op), overload)
