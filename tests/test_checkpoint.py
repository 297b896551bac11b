"""Checkpoint/resume: a SIGKILLed training process resumes to the uninterrupted result, bit for bit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import nhtlab
from nhtlab.training.cache import ResultCache
from nhtlab.training.checkpoint import atomic_write_bytes, checkpoint_path, load_checkpoint
from nhtlab.training.modular_run import ModularRun, run_modular

WORKER = Path(__file__).with_name("resume_worker.py")
SMALL = ModularRun(p=11, model_kwargs=dict(width=32), steps=120, eval_every=10, batch_size=16,
                   schedule="cosine", seed=2, device="cpu")


def _worker(out: Path, run_dir: Path | None = None, slow: bool = False) -> subprocess.Popen:
    args = [sys.executable, str(WORKER), str(out)] + ([str(run_dir)] if run_dir else []) + (["--slow"] if slow else [])
    env = {**os.environ, "NHTLAB_PROGRESS": "none", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate()
    assert proc.returncode == 0, err


def _result(out: Path) -> tuple[dict, dict]:
    saved = torch.load(out, weights_only=True)
    return json.loads(saved["history"]), saved["params"]


def _checkpoint_step(run_dir: Path) -> int | None:
    try:
        return int(torch.load(checkpoint_path(run_dir), weights_only=True)["step"])
    except Exception:  # not written yet (the atomic write means it is whole when it exists)
        return None


def test_sigkill_mid_run_then_resume_equals_uninterrupted_run(tmp_path):
    reference = _worker(tmp_path / "reference.pt")  # runs alongside the killed one
    run_dir = tmp_path / "run"
    victim = _worker(tmp_path / "never.pt", run_dir, slow=True)
    killed_at = None
    while victim.poll() is None:  # no deadline: a slower machine only takes longer to get there
        killed_at = _checkpoint_step(run_dir)
        if killed_at is not None and killed_at >= 60:
            victim.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL, f"the training process ended on its own (rc={victim.returncode})"
    last = _checkpoint_step(run_dir)
    assert last is not None and 60 <= last < 240, last  # killed mid-run, after a checkpoint
    assert not (tmp_path / "never.pt").exists()
    print(f"SIGKILL after the checkpoint at step {last} of 240")

    resumed = _worker(tmp_path / "resumed.pt", run_dir)
    _finish(resumed)
    _finish(reference)
    history, params = _result(tmp_path / "resumed.pt")
    ref_history, ref_params = _result(tmp_path / "reference.pt")
    assert history["status"] == ref_history["status"] == "completed"
    assert [r["step"] for r in history["rows"]] == list(range(0, 241, 10))
    assert history["rows"] == ref_history["rows"]  # every loss, accuracy, norm and lr: exact float equality
    assert params.keys() == ref_params.keys()
    for name in params:
        assert torch.equal(params[name], ref_params[name]), name


class _Interrupt(Exception):
    pass


def _crash_at_70(run_dir: Path) -> None:
    """Train SMALL in ``run_dir`` (checkpoints every 30 steps) until an exception at step 70."""

    def crash(state):
        if state.step == 70:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_modular(SMALL, callbacks=[crash], progress="none", run_dir=run_dir, checkpoint_every=30)


def test_resume_in_process_after_an_exception_and_finished_runs_return_at_once(tmp_path):
    reference = run_modular(SMALL, progress="none")
    _crash_at_70(tmp_path)
    saved = load_checkpoint(tmp_path)
    assert saved["step"] == 60 and [r["step"] for r in saved["history"]["rows"]] == [0, 10, 20, 30, 40, 50, 60]
    resumed = run_modular(SMALL, progress="none", run_dir=tmp_path, checkpoint_every=30)
    assert resumed.rows == reference.rows and resumed.status == "completed"
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        assert torch.equal(a, b)
    # The finished run is in the directory now: calling again trains nothing and returns the same.
    calls = []
    again = run_modular(SMALL, callbacks=[calls.append], progress="none", run_dir=tmp_path)
    assert again.rows == reference.rows and calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt", "run.json"]  # no temp files left


def test_a_run_dir_belongs_to_one_run(tmp_path):
    run_modular(SMALL.replace(steps=20), progress="none", run_dir=tmp_path)
    with pytest.raises(ValueError, match=r"'run_dir' parameter of run_modular .* belongs to a different run \(fields that differ: steps\)"):
        run_modular(SMALL.replace(steps=30), progress="none", run_dir=tmp_path)


def test_train_refuses_a_checkpoint_of_another_config(tmp_path):
    data = nhtlab.modular_data(p=11, seed=0)
    config = SMALL.train_config()
    nhtlab.train(nhtlab.models.EmbeddingMLP(11, width=8), data, config.__class__(steps=20, device="cpu"), progress="none",
                 checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match=r"different configuration \(steps: 20 there, 40 here\)"):
        nhtlab.train(nhtlab.models.EmbeddingMLP(11, width=8), data, config.__class__(steps=40, device="cpu"), progress="none",
                     checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="'checkpoint_every' parameter of train needs a 'checkpoint_dir'"):
        nhtlab.train(nhtlab.models.EmbeddingMLP(11, width=8), data, config, progress="none", checkpoint_every=5)
    with pytest.raises(ValueError, match="'checkpoint_every' parameter of train must be an int >= 1. Got 0"):
        nhtlab.train(nhtlab.models.EmbeddingMLP(11, width=8), data, config, progress="none", checkpoint_dir=tmp_path / "x",
                     checkpoint_every=0)


def test_a_damaged_checkpoint_is_set_aside_with_a_warning_and_the_run_restarts(tmp_path):
    reference = run_modular(SMALL, progress="none")
    run_modular(SMALL, progress="none", run_dir=tmp_path)
    atomic_write_bytes(checkpoint_path(tmp_path), checkpoint_path(tmp_path).read_bytes()[:1000])  # truncated
    with pytest.warns(RuntimeWarning, match="could not be read .* starts again from step 0"):
        again = run_modular(SMALL, progress="none", run_dir=tmp_path)
    assert again.rows == reference.rows
    assert (tmp_path / "checkpoint.pt.corrupt").exists()


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "f.bin"
    atomic_write_bytes(target, b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_diverged_run_is_checkpointed_as_diverged(tmp_path):
    bad = SMALL.replace(lr=1e30, steps=40)  # AdamW with a huge lr blows the weights up at once
    with pytest.warns(RuntimeWarning, match="Training diverged: .* marked status='diverged'"):
        h = run_modular(bad, progress="none", run_dir=tmp_path)
    assert h.status == "diverged" and len(h.rows) >= 1
    with pytest.warns(RuntimeWarning, match="Training diverged"):
        again = run_modular(bad, progress="none", run_dir=tmp_path)
    assert again.status == "diverged" and again.rows == h.rows


def test_a_checkpoint_from_before_a_field_existed_resumes(tmp_path):
    """A checkpoint written by nhtlab 0.2.1 has no 'fused' in its config: it reads as the default, False."""
    from nhtlab.training.checkpoint import save_checkpoint

    reference = run_modular(SMALL, progress="none")
    _crash_at_70(tmp_path)
    saved = load_checkpoint(tmp_path)
    del saved["config"]["fused"]
    save_checkpoint(tmp_path, saved)
    resumed = run_modular(SMALL, progress="none", run_dir=tmp_path, checkpoint_every=30)
    assert resumed.rows == reference.rows
    with pytest.raises(ValueError, match=r"different configuration \(fused: False there, True here\)"):
        nhtlab.train(nhtlab.models.EmbeddingMLP(11, width=32), nhtlab.modular_data(p=11, seed=2),
                     SMALL.train_config().replace(fused=True), progress="none", checkpoint_dir=tmp_path)


# -- a checkpoint proves what it holds ------------------------------------------------------------------------
def test_flipped_bits_in_a_checkpoint_restart_the_run_with_a_warning(tmp_path):
    reference = run_modular(SMALL, progress="none")
    _crash_at_70(tmp_path)  # the checkpoint of step 60
    payload = torch.load(checkpoint_path(tmp_path), weights_only=True)
    weight = next(iter(payload["model"].values()))
    weight.view(-1)[0] = -weight.view(-1)[0]  # one flipped sign bit, written back whole and readable
    torch.save(payload, checkpoint_path(tmp_path))
    with pytest.warns(RuntimeWarning, match="does not match its checksum.* starts again from step 0"):
        again = run_modular(SMALL, progress="none", run_dir=tmp_path, checkpoint_every=30)
    assert again.rows == reference.rows  # trained from scratch, never resumed from the damaged state
    assert (tmp_path / "checkpoint.pt.corrupt").exists()


def test_a_checkpoint_of_another_run_is_never_resumed(tmp_path):
    plus, minus = SMALL.replace(steps=40), SMALL.replace(steps=40, operation="-")
    run_modular(plus, progress="none", run_dir=tmp_path / "plus")  # finished: its checkpoint holds every row
    (tmp_path / "minus").mkdir()
    (tmp_path / "minus" / "checkpoint.pt").write_bytes(checkpoint_path(tmp_path / "plus").read_bytes())
    with pytest.warns(RuntimeWarning, match="belongs to another run"):
        history = run_modular(minus, progress="none", run_dir=tmp_path / "minus")
    assert history.rows == run_modular(minus, progress="none").rows  # run B's own rows, not A's


def _mlp(width: int, p: int = 7) -> torch.nn.Module:
    torch.manual_seed(0)
    return nhtlab.models.EmbeddingMLP(p=p, width=width)


def test_a_checkpoint_of_another_task_or_shape_is_set_aside_not_resumed(tmp_path):
    """The key of a direct train() holds the data and the model's shapes: a finished (a + b) mod 7 run in the
    folder never answers for (a − b) mod 7, and a wider model of the same class trains afresh, not inside
    load_state_dict."""
    from nhtlab.training.loop import TrainConfig, train

    config = TrainConfig(steps=40, eval_every=20, batch_size=8, lr=1e-2, seed=0, device="cpu")
    add = nhtlab.modular_data(p=7, operation="+", seed=0)
    sub = nhtlab.modular_data(p=7, operation="-", seed=0)
    run_dir = tmp_path / "run"
    first = train(_mlp(16), add, config, progress="none", checkpoint_dir=run_dir)
    fresh = train(_mlp(16), sub, config, progress="none")
    with pytest.warns(RuntimeWarning, match="belongs to another run"):
        other = train(_mlp(16), sub, config, progress="none", checkpoint_dir=run_dir)
    assert other.rows == fresh.rows and other.rows != first.rows
    with pytest.warns(RuntimeWarning, match="belongs to another run"):
        wider = train(_mlp(24), sub, config, progress="none", checkpoint_dir=run_dir)
    assert wider.rows == train(_mlp(24), sub, config, progress="none").rows


def test_load_checkpoint_on_the_file_names_the_mistake(tmp_path):
    path = atomic_write_bytes(tmp_path / "run" / "checkpoint.pt", b"x")
    with pytest.raises(ValueError, match=r"'run_dir' parameter of load_checkpoint must be the run's folder"):
        load_checkpoint(path)


def test_clear_removes_what_a_killed_write_left(tmp_path):
    cache = ResultCache(tmp_path / "cache")
    stale = tmp_path / "cache" / "ab" / ".abcdef.json.k3j2.tmp"
    stale.parent.mkdir(parents=True)
    stale.write_text("{")
    (stale.parent / "abcdef.json").write_text("{}")
    assert cache.clear() == 1 and not stale.exists() and not any(stale.parent.iterdir())
