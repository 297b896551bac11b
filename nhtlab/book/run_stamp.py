"""A reproducibility stamp: what a chapter ran with, shown collapsed in the book."""

from __future__ import annotations

import html
import platform
import subprocess
from pathlib import Path
from typing import Any

import torch

from .._version import __version__
from ..plumbing.smoke import smoke_banner
from ..training.device import pick_device

__all__ = ["Stamp", "stamp", "cpu_model"]


def git_commit() -> str:
    """Short hash of the repository's HEAD (with ``+dirty`` when modified), or ``"unknown"``."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if sha.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=5)
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Stamp(dict):
    """A dict of run facts that renders as a collapsed ``<details>`` block in HTML."""

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td><code>{html.escape(str(k))}</code></td><td><code>{html.escape(str(v))}</code></td></tr>" for k, v in self.items())
        summary = f"Run details (profile <b>{html.escape(str(self.get('profile')))}</b>)"
        if "SMOKE RUN" in self:
            summary = (f"<b style='color:#c00'>{html.escape(str(self['SMOKE RUN']))}</b> — " + summary)
        return f"<details class='nhtlab-stamp'><summary>{summary}</summary><table>{rows}</table></details>"

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self.items())


def stamp(profile: str, settings: Any = None, device: torch.device | str | None = None) -> Stamp:
    """Collect profile, settings, nhtlab/torch versions, git commit and device of a chapter run; a capped run's
    stamp starts with ``SMOKE RUN`` (red in HTML), so that it is never mistaken for a real one."""
    if device is None:
        device = pick_device()
    values = vars(settings) if settings is not None and hasattr(settings, "__dict__") else (settings or {})
    banner = smoke_banner()
    if not banner and getattr(settings, "smoke", False):
        banner = "SMOKE RUN: settings capped by nhtlab.book.select_profile; its numbers are not results"
    facts = Stamp({"SMOKE RUN": banner}) if banner else Stamp()
    facts.update(
        profile=profile,
        settings={k: v for k, v in values.items() if k not in ("profile", "smoke")},
        nhtlab=__version__,
        commit=git_commit(),
        torch=torch.__version__,
        python=platform.python_version(),
        device=str(device) + (f" ({torch.cuda.get_device_name()})" if str(device).startswith("cuda") else f" ({torch.get_num_threads()} threads)"),
    )
    if banner:
        print(banner)
    return facts


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (as ``lscpu`` shows it), else :func:`platform.processor`'s."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
