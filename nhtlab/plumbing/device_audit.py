"""The device audit for CPU-only machines (build plumbing).

The audit makes the CPU stand in for a GPU, so that code that would fail on CUDA, or silently stay on
the host, fails here too (:class:`DeviceAudit`). ``NHTLAB_DEVICE_CHECK=1`` turns it on for a whole
process at import, :func:`device_audit` for a block; each audit it starts is registered in
:data:`nhtlab.training.device.AUDITS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..training.device import AUDIT_DEVICE, AUDITS, device_audit_enabled
from .flags import switched_on

__all__ = ["DeviceAudit", "DeviceMixError", "device_audit", "device_audit_enabled", "AUDIT_DEVICE"]


DEVICE_CHECK_ENV = "NHTLAB_DEVICE_CHECK"

_MARK = "_nhtlab_place"  # "device" (on the chosen device), "host" (left on the host) or absent (unknown)
_COPIES = {"to", "cpu", "cuda", "copy_", "__set__", "__get__", "_has_compatible_shallow_copy_type",
           "__getitem__", "__setitem__", "numpy", "__array__", "tolist", "item", "__float__", "__int__", "__bool__"}
_COMPUTE = {"linear", "conv1d", "conv2d", "conv3d", "embedding", "layer_norm", "batch_norm", "group_norm",
            "matmul", "mm", "bmm", "addmm", "__matmul__", "einsum"}


class DeviceMixError(RuntimeError):
    """Code mixed the chosen device with the host in a way that fails (or stays on the host) on a GPU."""


def _classify(device: Any) -> str | None:
    """``"device"``, ``"host"`` or None (unknown) for a ``device=`` / ``.to(...)`` argument."""
    if isinstance(device, str):
        device = torch.device(device) if device else None
        if device is not None and device.type == "cpu" and device.index is None:
            return "host"  # the literal "cpu": a move to the host
    if isinstance(device, torch.device):
        if device == AUDIT_DEVICE or device.type == "cuda":
            return "device"
        return None  # torch.device("cpu") is what x.device says on the audit device: no verdict
    return None


def _tensors(values: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(_tensors(value))
        elif isinstance(value, dict):
            out.extend(_tensors(value.values()))
    return out


def _mark(value: Any, place: str | None) -> None:
    for t in _tensors([value]) if place is not None else []:
        with suppress(AttributeError, RuntimeError):  # some wrapper tensors take no attributes
            setattr(t, _MARK, place)


def _forget(value: Any) -> None:
    for t in _tensors([value]):
        with suppress(AttributeError, RuntimeError):  # untagged, or a wrapper without attributes
            delattr(t, _MARK)


def _place(t: torch.Tensor) -> str | None:
    return getattr(t, _MARK, None)


_FROM_NUMPY = torch.from_numpy
_FROM_NUMPY_DEPTH = 0


def _from_numpy_host(array: Any) -> torch.Tensor:
    """``torch.from_numpy`` that tags its result as left on the host (installed by the audit)."""
    result = _FROM_NUMPY(array)
    _mark(result, "host")
    return result


class DeviceAudit(TorchFunctionMode):
    """A torch-function mode that fails where code would break or stay on the host on a GPU.

    While it is active, :func:`pick_device` returns :data:`AUDIT_DEVICE` (``cpu:0``, "the chosen device")
    and every tensor is tagged by where it would live on a GPU machine: *device* (created with
    ``device=<chosen>``, moved there with ``.to(<chosen>)``/``.cuda()``, or computed from such a tensor),
    *host* (made by a factory without ``device=``, ``torch.from_numpy``, ``.cpu()`` or ``.to("cpu")``) or
    unknown (``device=x.device`` and ``.to(x.device)`` carry no verdict, since on the CPU ``x.device``
    prints ``cpu``). It raises :class:`DeviceMixError` when

    * an operation mixes a *device* tensor with a *host* tensor that has at least one dimension (CUDA
      refuses that; 0-d host scalars are allowed);
    * ``.numpy()`` (or ``numpy.asarray``) is called on a *device* tensor;
    * a model's ``nn.Parameter`` that was never moved to the chosen device enters a layer (linear,
      convolution, embedding, normalisation, matmul): on a GPU that model would train on the host, or
      fail against moved data.

    Indexing a device tensor with host indices and copies between the two (``.to``, ``copy_``) are
    allowed, as on CUDA. ``torch.from_numpy`` bypasses torch-function modes, so the audit wraps it
    (while active) to tag its result *host*.
    """

    def __enter__(self):
        global _FROM_NUMPY_DEPTH
        if _FROM_NUMPY_DEPTH == 0:
            torch.from_numpy = _from_numpy_host
        _FROM_NUMPY_DEPTH += 1
        return super().__enter__()

    def __exit__(self, *exc):
        global _FROM_NUMPY_DEPTH
        _FROM_NUMPY_DEPTH -= 1
        if _FROM_NUMPY_DEPTH == 0:
            torch.from_numpy = _FROM_NUMPY
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: C901 - one flat set of rules
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        inputs = _tensors(args) + _tensors(kwargs.values())
        places = [_place(t) for t in inputs]
        if name in ("numpy", "__array__") and inputs and places[0] == "device":
            raise DeviceMixError(f"{name}() was called on a tensor of shape {tuple(inputs[0].shape)} on the chosen "
                                 "device; on a GPU that fails. Call .cpu() (or .tolist()/.item()) first.")
        if name not in _COPIES:
            on_device = [t for t, p in zip(inputs, places) if p == "device"]
            on_host = [t for t, p in zip(inputs, places) if p == "host" and t.dim() > 0]
            if on_device and on_host:
                raise DeviceMixError(
                    f"torch {name}() mixes a tensor on the chosen device (shape {tuple(on_device[0].shape)}) with one "
                    f"left on the host (shape {tuple(on_host[0].shape)}); on a GPU that fails. Move it with "
                    f".to(device), device = nhtlab.pick_device(), or create it with device=....")
            if name in _COMPUTE:
                for t, p in zip(inputs, places):
                    if isinstance(t, torch.nn.Parameter) and p != "device":
                        raise DeviceMixError(
                            f"torch {name}() uses a model parameter of shape {tuple(t.shape)} that was never moved to "
                            "the chosen device; on a GPU this model would run on the host. Call "
                            "model.to(nhtlab.pick_device()) before using it.")
        result = func(*args, **kwargs)
        if name == "to":
            target = kwargs.get("device")
            for value in args[1:]:
                if isinstance(value, (str, torch.device)):
                    target = value
                elif isinstance(value, torch.Tensor):
                    target = value.device if _place(value) != "device" else AUDIT_DEVICE
            if target is None:  # .to(dtype): stays where it was
                place = places[0] if places else None
            else:
                place = _classify(target)
                if place is None:  # .to(x.device): no verdict, forget the old one
                    if result is not (inputs[0] if inputs else None) or places[0] != "device":
                        _forget(result)
                    return result
        elif name == "cuda":
            place = "device"
        elif name == "cpu":
            place = "host"
        elif name == "__set__":  # param.data = moved (Module.to): the parameter is where its new data is
            if len(args) == 2 and isinstance(args[1], torch.Tensor) and _place(args[1]) is not None:
                _mark(args[0], _place(args[1]))
            return result
        elif name in ("__get__", "_has_compatible_shallow_copy_type", "numpy", "__array__", "tolist", "item"):
            return result
        elif "device" in kwargs:
            place = _classify(kwargs["device"])
        elif not inputs:
            place = "host"  # a factory without device=: the default device, the host on a GPU machine
        elif "device" in places:
            place = "device"
        elif "host" in places:
            place = "host"
        else:
            place = None
        if place == "host" and inputs and any(result is t for t in inputs) and places[0] != "host":
            result = result.view_as(result)  # .cpu() of a CPU tensor returns itself: keep the original's tag
        if name.endswith("_") and inputs and _place(inputs[0]) is not None:
            return result  # in place (copy_ included): the tensor stays where it was
        _mark(result, place)
        return result


@contextmanager
def device_audit() -> Iterator[DeviceAudit]:
    """Run the enclosed code under a :class:`DeviceAudit` (no effect on results, only checks).

    On a machine with CUDA the audit is pointless (CUDA itself refuses mixed
    devices) and :func:`pick_device` keeps returning ``cuda``.
    """
    audit = DeviceAudit()
    AUDITS.append(audit)
    try:
        with audit:
            yield audit
    finally:
        AUDITS.remove(audit)


def _audit_from_environment() -> None:
    """``NHTLAB_DEVICE_CHECK=1`` at import: the whole process runs under the audit (CPU-only machines)."""
    if switched_on(DEVICE_CHECK_ENV) and not torch.cuda.is_available():
        audit = DeviceAudit()
        audit.__enter__()  # left active for the life of the process (a notebook kernel, a pool worker)
        AUDITS.append(audit)


_audit_from_environment()
