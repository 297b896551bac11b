"""Machine-wide CPU slots (nhtlab.build.cpu_slots): limits across processes, reentrancy, release, errors."""

from __future__ import annotations

import fcntl
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

import nhtlab
from nhtlab.build.cpu_slots import SLOTS_VARIABLE, cpu_slot, cpu_slots


def _hold(folder: str, slots: int, seconds: float, out) -> None:
    """Subprocess: hold a slot for ``seconds``; report (slot, start, end)."""
    with cpu_slot(slots, folder) as slot:
        start = time.time()
        time.sleep(seconds)
        end = time.time()
    out.put((slot, start, end))


def _hold_in(folder: str, slots: int, seconds: float) -> list[tuple[int, float, float]]:
    """Three processes each hold a slot for ``seconds``; their (slot, start, end), sorted by start."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_hold, args=(folder, slots, seconds, out)) for _ in range(3)]
    for p in procs:
        p.start()
    spans = sorted((out.get(timeout=60) for _ in procs), key=lambda s: s[1])
    for p in procs:
        p.join(timeout=60)
    return spans


def _overlapping(spans: list[tuple[int, float, float]]) -> int:
    """The largest number of spans that hold at one instant."""
    return max(sum(s <= t < e for _, s, e in spans) for _, t, _ in spans)


def test_no_more_blocks_than_slots_compute_at_once(tmp_path):
    one = _hold_in(str(tmp_path / "one"), 1, 0.4)
    assert _overlapping(one) == 1  # they took turns
    assert one[-1][2] - one[0][1] >= 3 * 0.4
    two = _hold_in(str(tmp_path / "two"), 2, 0.4)
    assert _overlapping(two) == 2  # two at once, never three
    assert {slot for slot, _, _ in two} == {0, 1}


def test_unset_limits_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv(SLOTS_VARIABLE, raising=False)
    assert cpu_slots() is None
    with cpu_slot(directory=tmp_path / "slots") as slot:
        assert slot is None
    assert not (tmp_path / "slots").exists()


def test_a_thread_that_holds_a_slot_does_not_wait_on_itself(tmp_path):
    with cpu_slot(1, tmp_path) as outer:
        with cpu_slot(1, tmp_path) as inner:
            assert (outer, inner) == (0, None)
        assert _locked(tmp_path / "slot-0.lock")  # the inner block left the outer's slot held
    assert not _locked(tmp_path / "slot-0.lock")


def _locked(path: Path) -> bool:
    """Whether some open file holds ``path``'s lock (a second open file description cannot take it)."""
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_a_slot_is_freed_when_the_block_raises_or_the_process_dies(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with cpu_slot(1, tmp_path):
            raise RuntimeError("boom")
    assert not _locked(tmp_path / "slot-0.lock")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), 1, 60.0, out))
    holder.start()
    deadline = time.time() + 30
    while not _locked(tmp_path / "slot-0.lock"):
        assert time.time() < deadline, "the subprocess never took the slot"
        time.sleep(0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(timeout=30)
    with cpu_slot(1, tmp_path) as slot:  # would wait forever if the dead process still held it
        assert slot == 0


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_setting_names_the_variable_and_what_it_takes(monkeypatch, value):
    monkeypatch.setenv(SLOTS_VARIABLE, value)
    with pytest.raises(ValueError, match=rf"NHTLAB_CPU_SLOTS environment variable must be a positive integer.*{value!r}"):
        cpu_slots()
    with pytest.raises(ValueError, match="'slots' parameter of cpu_slot"):
        with cpu_slot(0):
            pass


def test_training_holds_a_slot_while_it_computes(monkeypatch, tmp_path):
    monkeypatch.setenv(SLOTS_VARIABLE, "1")
    monkeypatch.setenv("NHTLAB_CPU_SLOT_DIR", str(tmp_path))
    seen = []
    run = nhtlab.ModularRun(p=7, model="mlp", steps=20, eval_every=10, seed=0)
    nhtlab.run_modular(run, callbacks=[lambda state: seen.append(_locked(tmp_path / "slot-0.lock"))], progress="none")
    assert seen == [True, True, True]  # at steps 0, 10 and 20
    assert not _locked(tmp_path / "slot-0.lock")
