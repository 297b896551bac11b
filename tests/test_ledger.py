"""The ledger of trainings: one line per run a cache trained, none for a hit, and a run trained twice is named."""

from __future__ import annotations

import json

import pytest

import nhtlab
from nhtlab.book.runs import BookCache as ResultCache  # the book's cache writes the ledger
from nhtlab.training.cache import config_key
from nhtlab.plumbing.ledger import LEDGER_NAME, read_ledger, summarise
from nhtlab.book.dlr_probes import pair_probe, tracked_run

RUN = nhtlab.ModularRun(p=7, model="mlp", model_kwargs={"width": 16}, steps=30, eval_every=10, weight_decay=1.0)


@pytest.fixture
def cache(tmp_path):
    return ResultCache(tmp_path / "cache")


def test_a_trained_run_adds_one_line_and_a_hit_adds_none(cache):
    nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")
    nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")  # from the cache: nothing trained
    (line,) = read_ledger(cache.root)
    assert line["run"] == config_key(RUN.cache_config()) and line["kind"] == "ModularRun"
    assert line["steps"] == 30 and line["status"] == "completed" and line["how"] == "alone"
    assert line["cpu_s"] > 0 and line["wall_s"] > 0 and "seed=0" in line["label"]
    summary = summarise(read_ledger(cache.root))
    assert summary.trainings == 1 and not summary.twice and "no run trained twice" in summary.lines()[-1]


def test_a_probed_run_trained_after_its_plain_run_counts_as_trained_twice(cache):
    nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")  # chapter 1 first, with no probe
    tracked = tracked_run(RUN, pair_probe(RUN, {"full": ("full", None)}, top=4), cache, use_cache=True,
                          progress="none")
    assert tracked.plain == "cached before"  # the same steps trained again, to measure DLR on them
    lines = read_ledger(cache.root)
    assert [line["how"] for line in lines] == ["alone", "probed"]
    summary = summarise(lines)
    assert summary.twice == [{"run": config_key(RUN.cache_config()), "label": lines[0]["label"], "times": 2}]
    assert summary.by_kind["ModularRun"]["steps"] == 60
    assert any("2 times" in line for line in summary.lines())


def test_a_sweep_records_each_run_it_trains_once(cache):
    runs = [RUN.replace(seed=s) for s in (0, 1)]
    nhtlab.sweep(runs, strategy="sequential", cache=cache, progress="none")
    nhtlab.sweep(runs, strategy="sequential", cache=cache, progress="none")  # all from the cache
    lines = read_ledger(cache.root)
    assert sorted(line["run"] for line in lines) == sorted(config_key(r.cache_config()) for r in runs)
    assert not summarise(lines).twice


def test_a_line_cut_short_is_skipped(cache):
    nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")
    with open(cache.root / LEDGER_NAME, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"run": "x", "kind": "ModularRun"})[:20])  # a process killed mid-write
    assert len(read_ledger(cache.root)) == 1


def test_an_empty_cache_has_an_empty_ledger(tmp_path):
    assert read_ledger(tmp_path / "nothing") == []
    assert summarise([]).trainings == 0 and summarise([]).cpu_s == 0


def test_a_ledger_that_cannot_be_written_warns_once_and_keeps_the_result(tmp_path):
    root = tmp_path / "cache"
    (root / LEDGER_NAME).mkdir(parents=True)  # a folder where the file should be: every append fails, even as root
    cache = ResultCache(root)
    with pytest.warns(RuntimeWarning, match="could not write the ledger.*incomplete") as caught:
        history = nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")
        nhtlab.training.cache.cached_run(RUN.replace(seed=1), cache, use_cache=True, progress="none")
    assert sum("ledger" in str(w.message) for w in caught) == 1  # once per folder and process, not per run
    assert history.status == "completed" and cache.get(RUN.cache_config()) is not None  # the result itself is cached


def test_shortcut_runs_that_differ_in_their_cue_or_normalisation_get_different_labels(tmp_path):
    # the book trains eight shortcut runs at λ = 0.1 and seed 0; the label must tell them apart
    from nhtlab.plumbing.ledger import record_training

    runs = [nhtlab.ShortcutRun(weight_decay=0.1, rho=rho, norm=norm) for rho in (0.9, 0.95) for norm in ("none", "batch")]
    for run in runs:
        record_training(tmp_path, config_key(run.cache_config()), run, None, cpu_seconds=1.0, wall_seconds=1.0)
    labels = [line["label"] for line in read_ledger(tmp_path)]
    assert len(set(labels)) == 4
    assert "rho=0.9 norm=batch" in labels[1] and "kind=border" in labels[0]


def test_a_training_names_the_chapter_whose_process_made_it(cache, monkeypatch):
    monkeypatch.setenv("NHTLAB_CHAPTER", "03_delay_law")  # what make book sets for each chapter's kernel
    nhtlab.training.cache.cached_run(RUN, cache, use_cache=True, progress="none")
    (line,) = read_ledger(cache.root)
    assert line["chapter"] == "03_delay_law"
    assert summarise([line]).by_chapter == {"03_delay_law": line["cpu_s"]}
