"""The environment variables the book's layer reads (the core reads none), one function each: the build's flag
``NHTLAB_BOOK``, the cache's ``NHTLAB_CACHE``, ``_CACHE_DIR`` and ``_CHECKPOINTS``, ``NHTLAB_PROGRESS`` and
``NHTLAB_CIFAR_ROOT`` (a folder holding ``cifar-10-batches-py`` that replaces a profile's every ``root``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["in_book_build", "BOOK_ENV", "cache_dir", "cache_enabled", "checkpoints_enabled", "progress_setting",
           "cifar_root", "switched_on", "positive_int"]

#: Set to "1" by ``tools/build_book.py`` while it executes the chapters.
BOOK_ENV = "NHTLAB_BOOK"


def in_book_build() -> bool:
    """True while the book build executes chapters (``NHTLAB_BOOK=1``)."""
    return os.environ.get(BOOK_ENV) == "1"


def cache_dir() -> Path:
    """``$NHTLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/nhtlab``, else ``~/.cache/nhtlab``."""
    if os.environ.get("NHTLAB_CACHE_DIR"):
        return Path(os.environ["NHTLAB_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nhtlab"


def switched_on(name: str) -> bool:
    """True when the environment variable ``name`` is ``1``, ``on``, ``true`` or ``yes`` (case-insensitive)."""
    return os.environ.get(name, "").strip().lower() in ("1", "on", "true", "yes")


def positive_int(name: str, default: int | None, rule: str = "") -> int | None:
    """The environment variable ``name`` as a positive integer, ``default`` when it is unset or empty; the
    error of another value says ``rule`` (default: that it must be a positive integer)."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        rule = rule or f"The environment variable {name} must be a positive integer."
        raise ValueError(f"{rule} Got {raw!r} instead.")
    return value


def checkpoints_enabled() -> bool:
    """True when ``NHTLAB_CHECKPOINTS`` is switched on (:func:`switched_on`)."""
    return switched_on("NHTLAB_CHECKPOINTS")


def cache_enabled() -> bool:
    """False when ``NHTLAB_CACHE`` is ``off``, ``0``, ``no`` or ``false``."""
    return os.environ.get("NHTLAB_CACHE", "on").strip().lower() not in ("off", "0", "no", "false")


def progress_setting() -> str:
    """``$NHTLAB_PROGRESS``, else ``none`` in the book build and ``auto`` elsewhere."""
    return os.environ.get("NHTLAB_PROGRESS") or ("none" if in_book_build() else "auto")


def cifar_root() -> str | None:
    """``$NHTLAB_CIFAR_ROOT`` (a local CIFAR-10, or the tests' small archive), or None when unset."""
    return os.environ.get("NHTLAB_CIFAR_ROOT") or None
