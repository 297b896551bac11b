"""README.md is for readers: short, its links and install line follow _config.yml, its quick start runs,
and it types no measured timing (those live on the generated measurements page)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHAPTERS = [p for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.py")) if "evidence" not in p.stem]  # lessons, not evidence pages
# a number followed by a unit of time or speed: what a measurement looks like
TIMING = re.compile(r"\b\d[\d,.]*\s*(?:ms|s|sec|seconds?|min|minutes?|h|hours?|steps/s|GFLOP/s|GB|MB)\b"
                    r"|\b\d[\d,.]*\s*(?:×|x faster|%)")


def quick_start() -> str:
    found = re.search(r"## Quick start\n\n```python\n(.*?)```", README, re.S)
    assert found, "README has a '## Quick start' section with one python block"
    return found.group(1)


def test_readme_is_short_and_types_no_timing():
    assert len(README.splitlines()) <= 120
    assert not TIMING.findall(README), TIMING.findall(README)


def test_timing_pattern_catches_hand_typed_measurements():
    for typed in ("make book takes 8 min 9 s", "122 training steps per CPU second, 1.51× faster", "in 20.5 min",
                  "install 35 s", "3.2 GB of wheels"):
        assert TIMING.search(typed), typed
    for setting in ("Python ≥ 3.10", "PyTorch ≥ 2.4", "10 seeds", "λ = 0.3", "arXiv:2603.07323"):
        assert not TIMING.search(setting), setting


def test_book_url_and_chapters_follow_the_config():
    import sync_repo

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    book = config["html"]["baseurl"]
    assert book.startswith("https://") and book.endswith("/") and f"**{book}**" in README
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Homepage"] == book and urls["Source"] == config["repository"]["url"]
    repo = sync_repo.repository()
    assert f'pip install "{repo.install_requirement}"' in README, "the same requirement as the Colab cells"
    for src in CHAPTERS:
        title = next(line[4:].strip() for line in src.read_text().splitlines() if line.startswith("# # "))
        row = next((line for line in README.splitlines() if f"[{title}]({book}book/{src.stem}.html)" in line), None)
        assert row, f"README lists no chapter row for {src.stem} ({title!r})"
        assert f"]({repo.colab_url(src.stem)})" in row and "colab-badge.svg" in row, row
        assert row.count("|") == 5 and row.split("|")[3].strip().endswith("?"), "one line: the question it answers"


def test_the_commands_it_names_are_make_targets():
    for target in ("book", "test", "reproduce", "measurements"):
        assert f"make {target}" in README
        result = subprocess.run(["make", "-n", target, "VENV=/nonexistent/venv"], cwd=ROOT, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_quick_start_runs(tmp_path):
    """The quick start as printed, trained for real: the core reads no smoke cap, so it groks as a reader's does."""
    code = quick_start()
    assert len(code.strip().splitlines()) <= 10
    # one thread, as the suite's pool workers train: on two cores shared with the background chapters, two
    # threads cost half again the CPU for little less wall time (a reader's thread count is their machine's)
    env = {**os.environ, "NHTLAB_PROGRESS": "none", "NHTLAB_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=3600)  # a guard against a hang, not a time limit: a busy machine is slower
    assert result.returncode == 0, result.stdout + result.stderr
    # memorised, then generalised: the events the quick start's comments promise
    assert re.search(r"Events\(t_mem=\d+, t_grok=\d+", result.stdout), result.stdout
