"""Machine-wide CPU slots: at most N training loops compute at once, across processes.

The book build runs two chapters side by side, each with a pool of one worker per core; without a
limit, three or four training loops share two cores, and time-slicing compute-bound loops costs
throughput (``benchmarks/bench_slots.py`` measures how much). So the build sets ``NHTLAB_CPU_SLOTS``
to the number of cores and every training loop holds a slot while it runs.

Slots are POSIX file locks, so the kernel frees a slot when its process exits, however it exits.
Unset, or without ``fcntl`` (Windows), :func:`cpu_slot` does nothing. Holding is reentrant per
thread, so a loop that trains another model inside a slot does not wait on itself.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:  # POSIX file locks; elsewhere cpu_slot() does not limit anything
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ..validation import require_int
from .flags import positive_int

__all__ = ["cpu_slot", "cpu_slots", "SLOTS_VARIABLE"]

SLOTS_VARIABLE = "NHTLAB_CPU_SLOTS"
SLOT_DIR_VARIABLE = "NHTLAB_CPU_SLOT_DIR"
_POLL_SECONDS = 0.02  # how often a waiting loop looks for a free slot (a run lasts seconds to minutes)
_held = threading.local()  # per thread: .slot is True while this thread holds a slot


def cpu_slots() -> int | None:
    """The number of slots set by ``NHTLAB_CPU_SLOTS``, or None when it is unset or empty."""
    return positive_int(SLOTS_VARIABLE, None, f"The {SLOTS_VARIABLE} environment variable must be a positive integer "
                                              f"(the number of training loops that may compute at once) or unset.")


def slot_dir() -> Path:
    """Where the slot files live: ``NHTLAB_CPU_SLOT_DIR``, else a per-user folder in the temporary directory."""
    configured = os.environ.get(SLOT_DIR_VARIABLE, "").strip()
    if configured:
        return Path(configured)
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"nhtlab-cpu-slots-{user}"


@contextmanager
def cpu_slot(slots: int | None = None, directory: str | os.PathLike | None = None) -> Iterator[int | None]:
    """Hold one of ``slots`` machine-wide CPU slots while the block runs.

    ``slots`` defaults to ``NHTLAB_CPU_SLOTS`` (unset: nothing is limited) and counts over every process
    that uses the same ``directory``. Yields the slot held, or None when nothing is limited or this
    thread already holds one.
    """
    if slots is None:
        slots = cpu_slots()
    else:
        require_int(slots, "slots", low=1, owner="cpu_slot")
    if slots is None or fcntl is None:
        yield None
        return
    if getattr(_held, "slot", False):  # this thread holds a slot already: the outer block releases it
        yield None
        return
    folder = Path(directory) if directory is not None else slot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handle, slot = _acquire(folder, slots)
    _held.slot = True
    try:
        yield slot
    finally:
        _held.slot = False
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _acquire(folder: Path, slots: int):
    """Lock the first free slot file, starting from one that depends on the pid (spreads the load)."""
    start = os.getpid() % slots
    order = [(start + k) % slots for k in range(slots)]
    handles = {slot: open(folder / f"slot-{slot}.lock", "a+b") for slot in order}  # opened once, polled
    try:
        while True:
            for slot in order:
                try:
                    fcntl.flock(handles[slot], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                return handles.pop(slot), slot
            time.sleep(_POLL_SECONDS)
    finally:
        for handle in handles.values():  # the slots not taken (all of them if interrupted while waiting)
            handle.close()
