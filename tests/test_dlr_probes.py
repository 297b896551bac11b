"""tracked_run: a run trained with a DLR probe shares the plain run's cache entry, and the probe leaves its trajectory alone."""

from __future__ import annotations

import copy

import pytest
import torch

import nhtlab
from nhtlab.history import History
from nhtlab.book.runs import BookCache as ResultCache  # the book's cache trains shared probes
from nhtlab.book.dlr_probes import pair_probe, probe_key, same_run_check, tracked_run

RUN = nhtlab.ModularRun(p=7, model="mlp", model_kwargs={"width": 16}, steps=30, eval_every=10, weight_decay=1.0)


@pytest.fixture
def cache(tmp_path):
    return ResultCache(tmp_path / "cache")


def probe(spectra=True):
    return pair_probe(RUN, {"full": ("full", None)}, spectra=spectra, top=4)


def test_a_cold_cache_trains_once_and_writes_the_plain_entry_that_cached_run_then_reads(cache):
    tracked = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    assert not tracked.cached and tracked.plain == "written"
    assert "dlr" in tracked.columns and "dlr[full]" in tracked.columns and tracked.spectra
    plain = nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")
    assert plain.cached, "the plain run must come from the entry tracked_run wrote"
    assert "dlr" not in plain.columns and "nc1" not in plain.columns and "param_norm" not in plain.columns
    assert same_run_check(tracked, plain)


def test_the_probe_does_not_change_the_trajectory_of_a_run_cached_before(cache):
    plain = nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")  # chapter 1 first
    tracked = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    assert tracked.plain == "cached before" and not tracked.cached
    check = same_run_check(tracked)
    assert check, check.detail
    assert "cached before" in check.detail and len(plain) == len(tracked)


def test_a_second_call_reads_the_tracked_entry_and_its_spectra(cache):
    first = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    again = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    assert again.cached and again.rows == first.rows and again.spectra == first.spectra
    assert again.plain == "cached" and same_run_check(again)
    assert not hasattr(again, "model")
    other = tracked_run(RUN, probe(spectra=False), cache, use_cache=True, progress="none")  # another probe: another entry
    assert not other.cached and other.spectra == []


def test_same_run_check_fails_on_another_run_a_changed_value_or_no_entry(cache):
    tracked = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    changed = copy.deepcopy(tracked.plain_history)
    changed.rows[1]["test_acc"] += 0.01
    assert not same_run_check(tracked, changed)
    shorter = History(rows=tracked.plain_history.rows[:-1], status="completed")
    assert not same_run_check(tracked, shorter)
    other_seed = nhtlab.training.cache.cached_run(RUN.replace(seed=1), cache, use_cache=True, progress="none")
    assert not same_run_check(tracked, other_seed)
    bare = History(rows=tracked.rows, status="completed")
    assert not same_run_check(bare), "no plain entry must fail, not pass"


def test_without_cache_it_trains_and_reads_nothing(cache):
    h = tracked_run(RUN, probe(), cache, use_cache=False, progress="none")
    assert not h.cached and h.plain is None and len(cache) == 0


def test_probe_key_changes_with_the_probe_inputs_and_rules():
    a = pair_probe(RUN)
    assert probe_key(a) == probe_key(pair_probe(RUN))
    assert probe_key(a) != probe_key(pair_probe(RUN.replace(seed=1)))  # another split: other rows
    assert probe_key(a) != probe_key(pair_probe(RUN, {"full": ("full", None)}))
    assert a.x.shape == (RUN.p**2, 2) and torch.equal(a.labels, (a.x[:, 0] + a.x[:, 1]) % RUN.p)


def share_probe_of_run(monkeypatch, spectra=True):
    """Make RUN a run with a shared probe (as the companion grid's λ = 1 runs are), in this process."""
    monkeypatch.setattr("nhtlab.book.runs.shared_probe", lambda run: probe(spectra) if run == RUN else None)


def test_whoever_trains_a_run_with_a_shared_probe_writes_the_tracked_entry_too(cache, monkeypatch):
    share_probe_of_run(monkeypatch)
    plain = nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")  # chapter 1 first
    assert not plain.cached and "dlr" not in plain.columns and hasattr(plain, "model")
    assert nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none").rows == plain.rows

    def no_training(*args, **kwargs):
        raise AssertionError("the probed run must be read, not trained again")

    monkeypatch.setattr("nhtlab.book.dlr_probes.run_modular", no_training)
    tracked = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    assert tracked.cached and tracked.plain == "cached" and tracked.spectra
    check = same_run_check(tracked)
    assert check, check.detail


def test_a_sweep_trains_a_run_with_its_shared_probe_once(cache, monkeypatch):
    share_probe_of_run(monkeypatch)
    result = nhtlab.sweep([RUN, RUN.replace(seed=1)], cache=cache, strategy="sequential", progress="none")
    assert [row.source for row in result] == ["computed", "computed"]
    assert "dlr" not in result.histories[0].columns
    tracked = tracked_run(RUN, probe(), cache, use_cache=True, progress="none")
    assert tracked.cached and tracked.rows[-1]["step"] == RUN.steps
    other = tracked_run(RUN.replace(seed=1), pair_probe(RUN.replace(seed=1)), cache, use_cache=True, progress="none")
    assert not other.cached and other.plain == "cached before", "seed 1 has no shared probe: trained with the probe"


def test_a_run_resuming_from_a_checkpoint_is_not_probed(cache, monkeypatch, tmp_path):
    from nhtlab.book.dlr_probes import train_probed

    run_modular = nhtlab.run_modular
    run_modular(RUN, run_dir=tmp_path / "run", progress="none")  # a checkpoint of the finished run
    history = train_probed(RUN, probe(), cache, run_dir=tmp_path / "run", progress="none")
    assert "dlr" not in history.columns and len(cache) == 0, "a resumed run would miss the probe's first rows"


def test_the_shared_probe_is_chapter_4s_on_every_grid_lambda_1_run_and_no_other():
    from nhtlab.training.presets import COMPANION_SWEEPS, companion_grid_run, companion_sweep
    from nhtlab.book.dlr_probes import COMPANION_PROBE_TOP, companion_probe, shared_probe

    for profile in COMPANION_SWEEPS:
        run = companion_grid_run(companion_sweep(profile), 1.0, seed=3)
        shared = shared_probe(run)
        assert shared is not None and probe_key(shared) == probe_key(companion_probe(run)), profile
        assert shared.spectra and shared.top == COMPANION_PROBE_TOP and "energy 0.99" not in shared.compare
    book = companion_sweep("book")
    assert shared_probe(companion_grid_run(book, 0.5, seed=0)) is None
    assert shared_probe(companion_grid_run(book, 1.0, seed=0, eval_every=50)) is None
    assert shared_probe(companion_grid_run(book, 1.0, seed=0, steps=3999)) is None
    assert shared_probe(RUN) is None and shared_probe("a run") is None


def test_companion_grid_run_names_what_is_wrong():
    from nhtlab.training.presets import companion_grid_run, companion_sweep

    with pytest.raises(ValueError, match="'lam' parameter of companion_grid_run.*0.5"):
        companion_grid_run(companion_sweep("book", lams=[1.0]), 0.5, seed=0)
    with pytest.raises(ValueError, match="'grid' parameter of companion_grid_run lacks"):
        companion_grid_run({"lr": 1e-3}, 1.0, seed=0)
