"""Training slots: a folder of N lock files lets at most N training loops run at once across processes."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

import nhtlab
from nhtlab.training.slots import SLOTS_ENV, make_slots, training_slot


def _hold(folder: str, seconds: float, queue) -> None:
    os.environ[SLOTS_ENV] = folder
    with training_slot(poll=0.01):
        start = time.perf_counter()
        time.sleep(seconds)
        queue.put((start, time.perf_counter()))


def _intervals(folder, n_processes: int, seconds: float = 0.4) -> list[tuple[float, float]]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_hold, args=(str(folder), seconds, queue)) for _ in range(n_processes)]
    for p in procs:
        p.start()
    out = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return sorted(out)


def _most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = best = 0
    for _, change in events:
        now += change
        best = max(best, now)
    return best


def test_slots_bound_how_many_processes_train_at_once(tmp_path):
    # Three processes, two slots: exactly two hold a slot at once, and the third waits its turn
    # (without the slots all three would overlap; with one lock for all, one at a time).
    intervals = _intervals(make_slots(tmp_path / "slots", 2), 3)
    assert _most_at_once(intervals) == 2


def test_one_slot_serialises(tmp_path):
    intervals = _intervals(make_slots(tmp_path / "slots", 1), 2)
    assert _most_at_once(intervals) == 1


def test_unset_is_a_no_op_and_slots_do_not_nest(tmp_path, monkeypatch):
    monkeypatch.delenv(SLOTS_ENV, raising=False)
    with training_slot():
        pass
    monkeypatch.setenv(SLOTS_ENV, str(make_slots(tmp_path / "one", 1)))
    with training_slot():
        with training_slot(poll=0.01):  # a second call in the same process must not wait for itself
            pass
    with training_slot():  # the slot came back
        pass


def test_train_holds_a_slot_and_gives_it_back(tmp_path, monkeypatch):
    import fcntl

    folder = make_slots(tmp_path / "slots", 1)
    monkeypatch.setenv(SLOTS_ENV, str(folder))
    seen = []

    def probe(state):  # while train runs, the only slot is taken: another descriptor cannot lock it
        fd = os.open(folder / "slot-0", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("free")
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            seen.append("held")
        finally:
            os.close(fd)

    run = nhtlab.ModularRun(p=7, model="mlp", steps=4, eval_every=2, seed=0)
    nhtlab.run_modular(run, callbacks=[probe], progress="none")
    assert seen and set(seen) == {"held"}
    with training_slot(poll=0.01):  # given back when train returned
        pass


def test_slot_errors_name_the_variable_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(SLOTS_ENV, str(tmp_path))
    with pytest.raises(ValueError, match=r"NHTLAB_TRAIN_SLOTS environment variable names .* no slot files.*make_slots"):
        with training_slot():
            pass
    with pytest.raises(ValueError, match="'count' parameter of make_slots"):
        make_slots(tmp_path / "x", 0)
    assert sorted(p.name for p in make_slots(tmp_path / "y", 3).iterdir()) == ["slot-0", "slot-1", "slot-2"]
    assert sorted(p.name for p in make_slots(tmp_path / "y", 2).iterdir()) == ["slot-0", "slot-1"]
