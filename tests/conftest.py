"""Shared fixtures: the repository root on sys.path, and chapters executed once per session, beside the
other tests.

Executing the chapters (quick profile, and the ``full`` smoke) takes most of the suite's time on two
cores, and the test process would sit waiting for it. So once the tests are collected, the executions
start in a process of their own (``tests/chapter_executions.py``) and the tests that read them go last:
every other test runs meanwhile. ``NHTLAB_TEST_BACKGROUND=0`` executes them in the fixtures instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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

# fixture name → the part of tests/chapter_executions.py that computes it
CHAPTER_FIXTURES = {"executed_chapters": "quick", "page_reports": "html", "smoke_outputs": "smoke"}


class Background:
    """The chapter executions' process, started after collection; the fixtures wait for it."""

    process: subprocess.Popen | None = None
    folder: Path | None = None
    parts: tuple[str, ...] = ()

    @classmethod
    def start(cls, parts: list[str]) -> None:
        cls.folder, cls.parts = Path(tempfile.mkdtemp(prefix="nhtlab-chapters-")), tuple(parts)
        args = [sys.executable, str(ROOT / "tests" / "chapter_executions.py"), str(cls.folder / "result.json")]
        args += [p for p in ("quick", "html") if p in parts]
        args += ["smoke", str(cls.folder / "smoke")] if "smoke" in parts else []
        # The quick chapters share their runs as `make book`'s do, through a result cache this session alone
        # writes (so nothing trained elsewhere is read); the smoke executions keep theirs off (smoke_env).
        env = {**os.environ, "NHTLAB_CACHE": "on", "NHTLAB_RUN_CACHE": str(cls.folder / "runs")}
        with open(cls.folder / "log.txt", "w") as log:
            cls.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)  # its own group: stopped as one

    @classmethod
    def result(cls, part: str) -> dict[str, float | str] | None:
        """``part``'s results once the process is done; None where it was not started for it or it failed."""
        if cls.process is None or part not in cls.parts:
            return None
        path = cls.folder / "result.json"
        while True:  # the process writes the file after each part: a part is read as soon as it is done
            exited = cls.process.poll() is not None
            if path.exists() and part in (done := json.loads(path.read_text())):
                return done[part]
            if exited:
                break
            time.sleep(1)
        if not path.exists():
            log = (cls.folder / "log.txt").read_text()[-3000:]
            pytest.fail(f"tests/chapter_executions.py exited {cls.process.returncode} without a result:\n{log}")
        return None  # it failed: the fixture computes it again

    @classmethod
    def stop(cls) -> None:
        if cls.process is not None and cls.process.poll() is None:  # the session ended early (-x, Ctrl-C)
            os.killpg(cls.process.pid, signal.SIGTERM)
            cls.process.wait()
        if cls.folder is not None:
            shutil.rmtree(cls.folder, ignore_errors=True)


def _reading(item) -> set[str]:
    return CHAPTER_FIXTURES.keys() & set(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config, items) -> None:
    """Tests that read executed chapters go last, so that the others run while the chapters execute, and
    those that read the smoke executions, done last, after them."""
    # stable: the order within each group is kept
    items.sort(key=lambda item: (bool(_reading(item)), "smoke_outputs" in _reading(item)))


def pytest_collection_finish(session) -> None:
    """Start the executions that the selected tests read (after ``-k`` and the other filters)."""
    parts = sorted({CHAPTER_FIXTURES[name] for item in session.items for name in _reading(item)})
    if parts and os.environ.get("NHTLAB_TEST_BACKGROUND", "1") != "0" and not session.config.option.collectonly:
        Background.start(parts)


def pytest_sessionfinish(session, exitstatus) -> None:
    Background.stop()


@pytest.fixture(scope="session")
def executed_chapters() -> dict[str, float]:
    """Every chapter executed in the quick profile (cached by build_book), seconds per chapter."""
    import build_book

    Background.result("quick")  # once it is done, the call below reads build_book's cache
    jobs = int(os.environ.get("NHTLAB_TEST_JOBS", "2"))
    results = build_book.execute_all("quick", jobs=jobs)
    return {name: seconds for name, (seconds, _) in results.items()}
