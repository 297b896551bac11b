"""Hooks the core calls and the build's plumbing fills, so that the core imports nothing from the build.

``import nhtlab`` registers the book build's plumbing here (:mod:`nhtlab.build`): a machine-wide
CPU slot held while a training loop computes, the ledger line a result cache writes for each run it
trains, the smoke cap (:mod:`nhtlab.build.smoke`), and what runs when the charts load (the book's
offline renderer). With nothing registered, training holds no slot, a cache keeps no ledger and
nothing is capped.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import ModuleType
from typing import Any

__all__ = ["register", "training_slot", "record_training", "cap_train_config", "smoke_steps", "smoke_images",
           "smoke_signature", "charts_loaded"]

_slot: Callable[[], AbstractContextManager] | None = None
_ledger: Callable[..., None] | None = None
_cap: ModuleType | None = None
_on_charts: Callable[[], None] | None = None


def register(*, slot: Callable[[], AbstractContextManager] | None = None, ledger: Callable[..., None] | None = None,
             cap: ModuleType | None = None, on_charts: Callable[[], None] | None = None) -> None:
    """Install ``slot()``, held around each training loop; ``ledger(root, key, run, history, **fields)``,
    called after a result cache trains a run; ``cap``, the smoke cap's module; ``on_charts()``, called
    once :mod:`nhtlab.charts` is imported."""
    global _slot, _ledger, _cap, _on_charts
    _slot = slot if slot is not None else _slot
    _ledger = ledger if ledger is not None else _ledger
    _cap = cap if cap is not None else _cap
    _on_charts = on_charts if on_charts is not None else _on_charts


def training_slot() -> AbstractContextManager:
    """The registered slot (a context manager), or one that does nothing."""
    return nullcontext() if _slot is None else _slot()


def record_training(root: Any, key: str, run: Any, history: Any, **fields: Any) -> None:
    """Pass a finished training to the registered ledger, if any."""
    if _ledger is not None:
        _ledger(root, key, run, history, **fields)


def _capped() -> bool:
    return _cap is not None and _cap.smoke_enabled()


def cap_train_config(config: Any) -> Any:
    """``config`` with its steps, evaluations and batch capped when the smoke cap is on; else itself."""
    return config if _cap is None else _cap.cap_train_config(config)


def smoke_steps() -> int | None:
    """Training steps per run under the smoke cap, or None when it is off."""
    return _cap.smoke_steps() if _capped() else None


def smoke_images() -> int | None:
    """Images per split of an image dataset under the smoke cap, or None when it is off."""
    return _cap.smoke_images() if _capped() else None


def smoke_signature() -> dict[str, int] | None:
    """The cap's settings (part of result-cache keys), or None when it is off."""
    return None if _cap is None else _cap.smoke_signature()


def charts_loaded() -> None:
    """Called by :mod:`nhtlab.charts` at import: runs the registered ``on_charts``, if any."""
    if _on_charts is not None:
        _on_charts()
