"""Shared fixtures: the repository root on sys.path and chapters executed once per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

# Small models train faster on one thread, and one thread keeps results bit-reproducible.
torch.set_num_threads(1)
os.environ.setdefault("NHTLAB_PROGRESS", "none")
# Tests and the chapters they execute never reuse results from the user's result cache.
os.environ.setdefault("NHTLAB_CACHE", "off")


@pytest.fixture(scope="session")
def executed_chapters() -> dict[str, float]:
    """Execute every chapter in the quick profile (cached by build_book), return seconds per chapter."""
    import build_book

    jobs = int(os.environ.get("NHTLAB_TEST_JOBS", "2"))
    results = build_book.execute_all("quick", jobs=jobs)
    return {name: seconds for name, (seconds, _) in results.items()}
