"""Machine-wide CPU slots (nhtlab.plumbing.cpu_slots): limits across processes, reentrancy, release, errors."""

from __future__ import annotations

import fcntl
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

import nhtlab
from nhtlab.plumbing.cpu_slots import SLOTS_VARIABLE, cpu_slot, cpu_slots


def _log(path: str, line: str) -> None:
    """Append one line to ``path``: O_APPEND writes land whole, in the order they were made, whichever process made them."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _take_slot(folder: str, slots: int, name: str, log: str, release) -> None:
    """Subprocess: take a slot and log ``in <name> <slot>``; hold it until ``release`` is set; log ``out`` and leave.

    ``out`` is logged before the slot is let go and ``in`` after it is taken, so the log never shows fewer
    blocks inside than there were. The first refused attempt on each slot file is logged as
    ``refused <name> slot-<i>``: seen on every slot while no holder has been released, it shows that this
    process waits rather than computes, without a clock.
    """
    from nhtlab.plumbing import cpu_slots as module

    real, refused = module.fcntl, set()

    class LoggedFcntl:  # fcntl as cpu_slots sees it, with each slot's first refusal logged
        def __getattr__(self, attribute):
            return getattr(real, attribute)

        def flock(self, handle, operation):
            try:
                real.flock(handle, operation)
            except BlockingIOError:
                if handle.name not in refused:
                    refused.add(handle.name)
                    _log(log, f"refused {name} {Path(handle.name).stem}")
                raise

    module.fcntl = LoggedFcntl()
    with cpu_slot(slots, folder) as slot:
        _log(log, f"in {name} {slot}")
        release.wait()
        _log(log, f"out {name} {slot}")


def _read_until(log: Path, done, procs, what: str) -> list[str]:
    """The log's lines once ``done(lines)`` holds; fails if a process ends first (none may before its release)."""
    deadline = time.monotonic() + 120  # only a hang ever meets it
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        if done(lines):
            return lines
        assert all(p.exitcode is None for p in procs), f"a process ended before it was released: {lines}"
        assert time.monotonic() < deadline, f"never saw {what}: {lines}"
        time.sleep(0.02)


def _most_inside(lines: list[str]) -> int:
    """The largest number of blocks inside their slot at once, read off the log in order."""
    inside = most = 0
    for line in lines:
        inside += line.startswith("in ") - line.startswith("out ")
        most = max(most, inside)
    return most


def _entered(lines: list[str]) -> dict[str, int]:
    """Process name → the slot it took, for each ``in`` line."""
    return {line.split()[1]: int(line.split()[2]) for line in lines if line.startswith("in ")}


def test_no_more_blocks_than_slots_compute_at_once(tmp_path):
    """``slots`` + 1 processes ask at once: ``slots`` get in and hold; the last waits until one lets go.

    Holders leave only when the test releases them, so the log's order decides, not the machine's speed.
    """
    ctx = mp.get_context("spawn")
    groups = {}
    for slots in (1, 2):  # both groups start at once: their processes import torch side by side
        names = [f"p{i}" for i in range(slots + 1)]
        release = {name: ctx.Event() for name in names}
        log = tmp_path / f"log-{slots}"
        procs = {name: ctx.Process(target=_take_slot, args=(str(tmp_path / f"slots-{slots}"), slots, name, str(log),
                                                           release[name])) for name in names}
        for proc in procs.values():
            proc.start()
        groups[slots] = log, release, procs
    try:
        for slots, (log, release, procs) in groups.items():
            alive = list(procs.values())
            lines = _read_until(log, lambda lines: len(_entered(lines)) >= slots, alive, f"{slots} blocks in")
            assert _most_inside(lines) == slots, lines  # as many at once as there are slots ...
            holders = _entered(lines)
            assert sorted(holders.values()) == list(range(slots))  # ... each in its own slot
            (waiter,) = set(procs) - set(holders)
            lines = _read_until(log, lambda lines: _entered(lines).keys() - holders.keys() or all(
                f"refused {waiter} slot-{s}" in lines for s in range(slots)), alive, f"{waiter} refused every slot")
            assert waiter not in _entered(lines), f"{waiter} computed while every slot was held: {lines}"
            first = next(iter(holders))
            release[first].set()  # one slot set free: the waiter takes it, and only after it was let go
            lines = _read_until(log, lambda lines: waiter in _entered(lines), [procs[n] for n in procs if n != first],
                                f"{waiter} in once {first} let go")
            assert lines.index(f"out {first} {holders[first]}") < lines.index(f"in {waiter} {holders[first]}"), lines
            assert _most_inside(lines) == slots, lines
    finally:
        for _, release, procs in groups.values():
            for event in release.values():
                event.set()
            for proc in procs.values():
                proc.join(timeout=60)
    assert all(proc.exitcode == 0 for _, _, procs in groups.values() for proc in procs.values())


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
    log, never = tmp_path / "log", ctx.Event()
    holder = ctx.Process(target=_take_slot, args=(str(tmp_path), 1, "holder", str(log), never))
    holder.start()
    _read_until(log, lambda lines: "in holder 0" in lines, [holder], "the subprocess take the slot")
    assert _locked(tmp_path / "slot-0.lock")
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
    assert seen == [False, False, False]  # the core holds no slot: the book's cache wraps it in one

    class Watched(nhtlab.ModularRun):  # a run that looks at the slot while the book's cache trains it
        def execute(self, **kwargs):
            return nhtlab.run_modular(self, callbacks=[lambda state: seen.append(_locked(tmp_path / "slot-0.lock"))],
                                      **kwargs)

    seen.clear()
    nhtlab.book.runs.BookCache(tmp_path / "cache").train(Watched(**run.to_dict()), progress="none")
    assert seen == [True, True, True]  # at steps 0, 10 and 20
    assert not _locked(tmp_path / "slot-0.lock")
