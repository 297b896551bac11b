"""Colab's Drive: a killed sweep, run again, reads its finished runs back and resumes the unfinished one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

import nhtlab
from nhtlab.training.checkpoint import checkpoint_path

WORKER = Path(__file__).with_name("drive_worker.py")


def _worker(cache: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "NHTLAB_PROGRESS": "none", "OMP_NUM_THREADS": "1", "NHTLAB_CHECKPOINTS": "on"}
    env.pop("NHTLAB_CACHE", None)
    return subprocess.Popen([sys.executable, str(WORKER), str(cache), str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _step(path: Path) -> int | None:
    try:
        return int(torch.load(path, weights_only=True)["step"])
    except Exception:  # not written yet (written atomically: whole when it exists)
        return None


@pytest.mark.slow
def test_a_killed_sweep_resumes_from_its_checkpoint_in_the_cache(tmp_path):
    sys.path.insert(0, str(WORKER.parent))
    import drive_worker

    cache = nhtlab.training.cache.ResultCache(tmp_path / "drive" / "cache", checkpoints=True)
    long_run = drive_worker.RUNS[1]
    checkpoint = checkpoint_path(cache.run_dir(long_run.cache_config()))
    victim = _worker(cache.root, tmp_path / "never.json")
    killed_at = None
    while victim.poll() is None:  # no deadline: a slower machine only takes longer to get there
        killed_at = _step(checkpoint)
        if killed_at is not None and killed_at >= 300:
            victim.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL, f"the sweep ended on its own (rc={victim.returncode})"
    last = _step(checkpoint)
    assert last is not None and 300 <= last < long_run.steps, last
    assert drive_worker.RUNS[0].cache_config() in cache  # the short run had finished and was stored

    again = _worker(cache.root, tmp_path / "again.json")
    _, err = again.communicate()
    assert again.returncode == 0, err
    short, resumed = json.loads((tmp_path / "again.json").read_text())
    assert short["source"] == "cache"
    assert resumed["source"] == "computed" and resumed["resumed_from"] == last
    reference = nhtlab.run_modular(long_run, progress="none")  # never interrupted, no checkpoints
    assert resumed["rows"] == reference.rows  # every loss, accuracy and norm: exact float equality
    assert not checkpoint.parent.exists(), "a stored run's checkpoints are removed"
    assert long_run.cache_config() in cache


def test_checkpoints_follow_the_environment_and_the_argument(monkeypatch, tmp_path):
    from nhtlab.book.runs import cache as book_cache

    monkeypatch.delenv("NHTLAB_CHECKPOINTS", raising=False)
    monkeypatch.setenv("NHTLAB_CACHE", "on")
    monkeypatch.setenv("NHTLAB_CACHE_DIR", str(tmp_path))
    assert book_cache().checkpoints is False and nhtlab.training.cache.ResultCache(tmp_path).checkpoints is False
    monkeypatch.setenv("NHTLAB_CHECKPOINTS", "on")
    assert book_cache().checkpoints is True and nhtlab.training.cache.ResultCache(tmp_path).checkpoints is False
    assert nhtlab.training.cache.ResultCache(tmp_path, checkpoints=True).checkpoints is True
    with pytest.raises(TypeError, match="checkpoints"):
        nhtlab.training.cache.ResultCache(tmp_path, checkpoints="yes")
    run = nhtlab.ModularRun(p=7, steps=20, eval_every=10, device="cpu")
    assert nhtlab.training.cache.ResultCache(tmp_path).run_dir(run.cache_config()).parent == tmp_path / "checkpoints"


def test_cached_run_checkpoints_into_the_cache_and_cleans_up(tmp_path):
    cache = nhtlab.training.cache.ResultCache(tmp_path, checkpoints=True)
    run = nhtlab.ModularRun(p=7, steps=40, eval_every=10, device="cpu")
    seen = []
    original = cache.put

    def put(config, history):  # the checkpoint exists until the finished run is stored
        seen.append(checkpoint_path(cache.run_dir(config)).exists())
        return original(config, history)

    cache.put = put
    history = nhtlab.training.cache.cached_run(run, cache, use_cache=True, progress="none")
    assert seen == [True] and not cache.run_dir(run.cache_config()).exists()
    assert history.rows == nhtlab.run_modular(run, progress="none").rows


def test_keep_on_drive_mounts_and_points_the_cache_there(monkeypatch, tmp_path):
    mounted = []
    colab = types.ModuleType("google.colab")
    colab.drive = types.SimpleNamespace(mount=mounted.append)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.delenv("NHTLAB_CACHE_DIR", raising=False)
    monkeypatch.delenv("NHTLAB_CACHE", raising=False)  # as in Colab
    monkeypatch.delenv("NHTLAB_CHECKPOINTS", raising=False)
    root = nhtlab.book.keep_on_drive(tmp_path / "MyDrive" / "nhtlab")
    assert mounted == ["/content/drive"] and root == tmp_path / "MyDrive" / "nhtlab" / "cache" and root.is_dir()
    assert nhtlab.book.cache().root == root and nhtlab.book.cache().checkpoints is True
    note = nhtlab.book.colab_launch("03_delay_law")
    takes, why = nhtlab.book.colab.FULL_ON_T4["03_delay_law"]
    assert f"takes {takes} on a Colab T4 GPU ({why})" in note and "KEEP_ON_DRIVE = True" in note
    assert mounted == ["/content/drive"]  # keep=False mounts nothing
    nhtlab.book.colab_launch("04_dlr", keep=True)
    assert mounted == ["/content/drive"] * 2


def test_keep_on_drive_outside_colab_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", None)  # import fails
    with pytest.raises(RuntimeError, match="NHTLAB_CACHE_DIR.*NHTLAB_CHECKPOINTS=on"):
        nhtlab.book.keep_on_drive()
