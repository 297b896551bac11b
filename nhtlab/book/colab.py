"""Colab: keep a chapter's results and checkpoints on Google Drive, so a runtime reset loses nothing.

A Colab VM forgets its disk when the runtime resets or the session ends; Drive does not.
:func:`keep_on_drive` mounts Drive and points nhtlab there: finished runs go to the result cache
on Drive (``NHTLAB_CACHE_DIR``) and runs being trained checkpoint into it
(``NHTLAB_CHECKPOINTS=on``, :class:`~nhtlab.training.cache.ResultCache`). After a reset, run the
notebook again from the top: finished runs are read back and an interrupted one resumes from its
last checkpoint (on the device it was written on: a GPU run resumes on a GPU).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..validation import require_type

__all__ = ["FULL_ON_T4", "keep_on_drive", "colab_launch"]

#: Where :func:`keep_on_drive` keeps nhtlab's files on a mounted Drive.
DRIVE_FOLDER = "/content/drive/MyDrive/nhtlab"


def keep_on_drive(folder: str | os.PathLike = DRIVE_FOLDER, mount_point: str = "/content/drive") -> Path:
    """Mount Google Drive and keep results and checkpoints in ``folder``: sets ``NHTLAB_CACHE_DIR`` and
    ``NHTLAB_CHECKPOINTS`` for this kernel and its sweep workers, before the session's first run."""
    require_type(folder, "folder", (str, os.PathLike), owner="keep_on_drive")
    try:
        from google.colab import drive
    except ImportError:
        raise RuntimeError("keep_on_drive runs in Google Colab only (google.colab cannot be imported here). "
                           "Elsewhere set NHTLAB_CACHE_DIR to a lasting folder and NHTLAB_CHECKPOINTS=on.") from None
    drive.mount(mount_point)
    cache = Path(folder) / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["NHTLAB_CACHE_DIR"] = str(cache)
    os.environ["NHTLAB_CHECKPOINTS"] = "on"
    print(f"Results and checkpoints are kept on Drive in {cache}: after a runtime reset, run all again.")
    return cache


#: How long each chapter's ``full`` profile should take on a Colab T4 GPU, and why, where worth saying:
#: estimates, not yet measured on one. The one place they are written: each chapter's launch note and
#: the table of Run a chapter (book/run_a_chapter.md, held to this by a test) read them here.
FULL_ON_T4: dict[str, tuple[str, str]] = {
    "01_grokking": ("a few minutes", ""),
    "02_regimes": ("one to two hours", ""),
    "03_delay_law": ("several hours", "its 20 regime-edge runs use whole 50,000-step budgets"),
    "04_dlr": ("about an hour", ""),
    "05_layerwise": ("two to three hours", "ten seeds of the companion sweep and 200 CIFAR-10 epochs per run"),
    "06_shortcuts": ("many hours", "more than a free session allows"),
    "07_emergence": ("about an hour", ""),
    "08_own_model": ("tens of minutes", ""),
    "08_evidence": ("a minute", "it trains nothing: it renders saved records"),
}


def colab_launch(chapter: str, keep: bool = False) -> str:
    """The chapter's launch note in Colab, printed; with ``keep``, :func:`keep_on_drive` too."""
    require_type(chapter, "chapter", str, owner="colab_launch")  # a list would fail the lookup as "unhashable"
    if chapter not in FULL_ON_T4:
        raise ValueError(f"colab_launch: 'chapter' must be one of {sorted(FULL_ON_T4)}, got {chapter!r}")
    takes, why = FULL_ON_T4[chapter]
    note = (f'Launch note: profile = "full" takes {takes} on a Colab T4 GPU{f" ({why})" if why else ""} '
            "(an estimate, not yet measured).\n"
            'To run it: Runtime > Change runtime type > T4 GPU, set profile = "full" in the next cell, run all.\n'
            "A long run survives a runtime reset with KEEP_ON_DRIVE = True in this cell (results and checkpoints "
            "on Google Drive): after a reset, run all again; finished runs are read back, the others resume.")
    print(note)
    if keep:
        keep_on_drive()
    return note
