"""Progress reporting that reads well live *and* in the rendered book.

Modes, chosen per call or for the process by :func:`set_default_progress`: ``"auto"`` (default: a tqdm
widget in a Jupyter/Colab kernel with a front end, a text bar in a terminal), ``"text"`` (one summary line when
the loop ends), ``"bar"``, ``"widget"``, or ``"none"`` (silent; the book build's: a bar is build log).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from ..validation import require_choice

__all__ = ["PROGRESS_MODES", "set_default_progress", "Progress"]

PROGRESS_MODES = ("auto", "text", "bar", "widget", "none")

_default = "auto"


def set_default_progress(mode: str) -> None:
    """Make ``mode`` the progress mode of every call that names none, in this process."""
    global _default
    _default = require_choice(mode, "mode", PROGRESS_MODES, owner="set_default_progress")


def _in_kernel() -> bool:
    """Whether this process is a Jupyter/Colab kernel (IPython loaded, a ZMQ shell running)."""
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(ip).__name__ == "ZMQInteractiveShell"


class Progress:
    """A counter over ``total`` units with a short postfix, in one of the modes above."""

    def __init__(self, total: int, desc: str, mode: str | None = None, unit: str = "step"):
        mode = _default if mode is None else require_choice(mode, "progress", PROGRESS_MODES)  # None: the process's
        self.mode = ("widget" if _in_kernel() else "bar") if mode == "auto" else mode
        self.total, self.desc, self.unit = total, desc, unit
        self.count = 0
        self.postfix: dict[str, Any] = {}
        self.start = time.perf_counter()
        self._bar = None
        if self.mode == "bar":
            # local: the two tqdm flavours are picked by mode; tqdm.notebook needs IPython
            from tqdm.std import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, mininterval=0.5, dynamic_ncols=True)
        elif self.mode == "widget":
            from tqdm.notebook import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit)

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.count += n
        if postfix:
            self.postfix = postfix
        if self._bar is not None:
            self._bar.update(n)
            if postfix:
                self._bar.set_postfix(postfix, refresh=False)

    def close(self, note: str = "") -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.mode == "text":
            seconds = time.perf_counter() - self.start
            extra = ", ".join(f"{k}={v}" for k, v in self.postfix.items())
            line = f"{self.desc}: {self.count}/{self.total} {self.unit}s in {seconds:.1f} s"
            print(line + (f" ({extra})" if extra else "") + (f" — {note}" if note else ""), flush=True)
        self.mode = "closed"
