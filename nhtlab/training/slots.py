"""Training slots: at most N training loops at once across processes that share a folder.

The book build executes two chapters side by side, and each chapter's sweep starts
its own pool of workers. Without a limit, four training loops then share two cores
and each runs slower than its share (caches and time slices are split; measured
about 10-15% lost for the companion transformer). With ``NHTLAB_TRAIN_SLOTS`` set
to a folder holding N slot files, every :func:`~nhtlab.training.loop.train` and
:func:`~nhtlab.training.batched.train_batched` call first takes one of the N slots,
waiting while all are held, and gives it back when it returns.

A slot is an exclusive ``flock`` on a file: the operating system releases it when
its process ends, however it ends, so a crashed run never leaves a slot taken.
Unset (the default), nothing is limited and no file is touched. The slots change
when runs train, never what they compute.

    make_slots("_build/slots", 2)          # what tools/build_book.py does
    NHTLAB_TRAIN_SLOTS=_build/slots ...    # every process that should share them
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..validation import check_int

try:
    import fcntl
except ImportError:  # Windows has no flock: slots are a POSIX feature there is no need for elsewhere
    fcntl = None  # type: ignore[assignment]

__all__ = ["SLOTS_ENV", "make_slots", "training_slot"]

#: The environment variable naming the folder of slot files.
SLOTS_ENV = "NHTLAB_TRAIN_SLOTS"

_held: int | None = None  # the descriptor of the slot this process holds (slots do not nest)


def make_slots(folder: str | os.PathLike, count: int) -> Path:
    """Create ``folder`` with ``count`` slot files (``slot-0`` …) and return it.

    Parameters
    ----------
    folder : str or path
        Where the slot files live; every process that should share them gets
        ``NHTLAB_TRAIN_SLOTS=<folder>``.
    count : int >= 1
        How many training loops may run at once, usually the number of cores.

    Returns
    -------
    Path
        ``folder``, with exactly ``count`` slot files.
    """
    check_int(count, "count", low=1, owner="make_slots")
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("slot-*"):
        old.unlink()
    for i in range(count):
        (path / f"slot-{i}").touch()
    return path


@contextlib.contextmanager
def training_slot(poll: float = 0.05) -> Iterator[None]:
    """Hold one training slot for the ``with`` block (no-op when ``NHTLAB_TRAIN_SLOTS`` is unset).

    Parameters
    ----------
    poll : float
        Seconds between attempts while every slot is held.

    Raises
    ------
    ValueError
        When ``NHTLAB_TRAIN_SLOTS`` names a folder without slot files.
    """
    global _held
    folder = os.environ.get(SLOTS_ENV)
    if not folder or _held is not None:  # unset, or this process already trains inside a slot
        yield
        return
    if fcntl is None:
        raise ValueError(f"The {SLOTS_ENV} environment variable is set, but training slots need POSIX file locks "
                         f"(fcntl), which this platform lacks. Unset {SLOTS_ENV}.")
    slots = sorted(Path(folder).glob("slot-*"))
    if not slots:
        raise ValueError(f"The {SLOTS_ENV} environment variable names {folder!r}, which holds no slot files "
                         f"(slot-0, slot-1, ...). Create them with nhtlab.training.slots.make_slots(folder, count).")
    while _held is None:
        for slot in slots:
            fd = os.open(slot, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held by another process
                os.close(fd)
                continue
            _held = fd
            break
        else:
            time.sleep(poll)
    try:
        yield
    finally:
        fd, _held = _held, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
