"""Write a benchmark's measurements as one JSON record that ``tools/measurements_page.py`` renders.

A package, not ``benchmarks/_record.py``: ``tests/test_benchmarks.py`` runs every ``benchmarks/*.py``.
A benchmark calls :func:`record` once at its end with the numbers it printed::

    from _record import record  # benchmarks/ is the script's own folder
    record("bench_grok", [{"what": "bare AdamW step", "value": 121.7, "unit": "steps per CPU second"}],
           settings={"steps": 60, "threads": 1})

The record names the machine, the commit and the UTC time, so that a page of several machines' records
says which number came from which. Records go to ``_build/measurements/`` unless ``out_dir`` or
``NHTLAB_MEASUREMENTS_DIR`` names another folder (``benchmarks/results/``: the ones kept for the page).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent  # this file is benchmarks/_record/__init__.py
DEFAULT_DIR = ROOT / "_build" / "measurements"
SCHEMA = 1


def cpu_model(lscpu_text: str | None = None) -> str:
    """The CPU's model name as ``lscpu`` (or ``lscpu_text``) prints it, else ``/proc/cpuinfo``'s, else
    ``platform.processor()``, else ``"unknown"``."""
    if lscpu_text is None:
        try:
            lscpu_text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10,
                                        env={**os.environ, "LC_ALL": "C"}).stdout
        except (OSError, subprocess.SubprocessError):
            lscpu_text = ""
    found = re.search(r"^\s*Model name:\s*(.+?)\s*$", lscpu_text, re.M)
    if found:
        return found.group(1)
    try:
        found = re.search(r"^model name\s*:\s*(.+?)\s*$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        found = None
    return found.group(1) if found else (platform.processor() or "unknown")


def cpu_isa() -> str:
    """The vector ISA torch's CPU kernels run on (``"AVX512"``, ``"AVX2"``, ``"DEFAULT"``): two machines ``lscpu``
    names alike ("AMD EPYC") can differ here, and their timings with it."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def machine() -> dict[str, Any]:
    """What the numbers depend on: CPU model and ISA, cores, torch, nhtlab and Python versions, platform."""
    import torch

    import nhtlab

    return {"cpu_model": cpu_model(), "cpu_isa": cpu_isa(), "cores": os.cpu_count(), "torch": torch.__version__,
            "nhtlab": nhtlab.__version__, "python": platform.python_version(), "platform": platform.platform()}


def pilot_about(**extra: Any) -> dict[str, Any]:
    """The ``about`` of a design pilot's JSON: the machine, torch, nhtlab and the command that wrote it."""
    import sys

    import nhtlab
    import torch

    return {"machine": f"{platform.machine()} {platform.processor() or platform.platform()}, torch {torch.__version__}",
            "nhtlab": nhtlab.__version__, "command": "python " + " ".join(sys.argv), **extra}


def write_pilot(path: str | None, result: dict[str, Any]) -> None:
    """Write a design pilot's result to ``path`` as JSON (nothing when ``path`` is None) and say so."""
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, ensure_ascii=False)
        print("wrote", path)


def commit(root: Path = ROOT) -> str | None:
    """``git rev-parse --short=12 HEAD`` in ``root``, marked " with uncommitted changes" where tracked files
    differ (its numbers belong to no commit); None outside a git checkout."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no")
    return head + (" with uncommitted changes" if changed else "")


def record(benchmark: str, results: list[dict[str, Any]], *, settings: dict[str, Any] | None = None,
           note: str = "", smoke: bool = False, out_dir: Path | str | None = None,
           when: _dt.datetime | None = None) -> Path:
    """Write one run's ``results`` (rows with the same keys), ``settings``, the page's one-sentence ``note`` and
    the machine as ``<out_dir>/<benchmark>-<UTC time>.json``; return the file.

    A ``smoke`` run is recorded, so that its test sees the record, and marked, so that the page leaves it out.
    Raises ValueError when ``benchmark`` is not a plain name, or ``results`` is empty or its keys differ.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", benchmark):
        raise ValueError(f"benchmark must be a plain name (letters, digits, _ . -). Got {benchmark!r} instead.")
    rows = [dict(row) for row in results]
    if not rows or any(set(row) != set(rows[0]) for row in rows):
        raise ValueError(f"{benchmark}: results must be one or more rows with the same keys. Got {rows!r} instead.")
    when = (when or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc)
    try:  # the 1-minute load average: above zero, the timings are inflated
        load = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # none on this platform
        load = None
    folder = Path(out_dir or os.environ.get("NHTLAB_MEASUREMENTS_DIR") or DEFAULT_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{benchmark}-{when:%Y%m%dT%H%M%SZ}.json"
    payload = {"schema": SCHEMA, "benchmark": benchmark, "date": when.isoformat(timespec="seconds"),
               "machine": machine(), "commit": commit(), "load_average": load, "smoke": bool(smoke),
               "settings": dict(settings or {}), "note": note, "results": rows}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
