"""The shared companion grid: one λ → one run config in every chapter, capped by name under the smoke cap."""

import pytest

import nhtlab
from nhtlab.training.presets import COMPANION_SWEEPS, companion_sweep


def test_book_grid_is_the_runs_the_chapters_share():
    book = companion_sweep("book")
    assert book["lr"] == 1e-3 and book["stop_after"] == 500 and len(book["seeds"]) >= 3
    # the budgets the chapters' λ = 1 and λ = 2 runs were trained with (their cache keys)
    assert book["budgets"][1.0] == 4000 and book["budgets"][2.0] == 2000
    quick = companion_sweep("quick", lams=[1.0])
    assert quick == {"lr": 2e-3, "stop_after": 200, "compile": False, "seeds": [0], "budgets": {1.0: 3000}}


def test_a_grid_run_takes_its_lambdas_budget_and_the_grids_settings():
    from nhtlab.training.presets import companion_grid_run
    run = companion_grid_run(companion_sweep("book"), 1.0, seed=2)
    assert (run.weight_decay, run.seed, run.steps, run.stop_after) == (1.0, 2, 4000, 500)


def test_only_the_gpu_profile_compiles_the_step():
    # quick and book train eagerly (the rounding the book's pages were measured in); full compiles
    assert [companion_sweep(name)["compile"] for name in ("quick", "book", "full")] == [False, False, True]
    full = companion_sweep("full", lams=[1.0])
    run = nhtlab.companion(1.0, 0, lr=full["lr"], stop_after=full["stop_after"], compile=full["compile"])
    assert run.compile is True and run.cache_config() != run.replace(compile=False).cache_config()


def test_same_lambda_same_run_config_across_selections():
    a, b = companion_sweep("book", lams=[1.0]), companion_sweep("book", lams=[0.01, 1.0])
    run = lambda g: nhtlab.companion(1.0, 0, lr=g["lr"], steps=g["budgets"][1.0], stop_after=g["stop_after"])
    assert run(a).to_dict() == run(b).to_dict()


def test_a_fresh_plain_dict_that_the_caller_may_change():
    g = companion_sweep("book")
    g["budgets"][1.0] = 1
    g["seeds"].append(99)
    assert COMPANION_SWEEPS["book"]["budgets"][1.0] == 4000 and 99 not in companion_sweep("book")["seeds"]
    with pytest.raises(TypeError):
        COMPANION_SWEEPS["book"]["budgets"][1.0] = 1  # read-only


def test_unknown_profile_or_lambda_is_named():
    with pytest.raises(ValueError, match="profile"):
        companion_sweep("paper")
    with pytest.raises(ValueError, match=r"0\.7"):
        companion_sweep("book", lams=[0.7])


def test_smoke_cap_applies_by_name(monkeypatch):
    monkeypatch.setenv("NHTLAB_SMOKE", "1")
    profiles = {name: dict(companion_sweep(name, lams=[1.0])) for name in ("quick", "book", "full")}
    cfg = nhtlab.book.select_profile(profiles, "full")
    assert cfg.smoke and cfg.budgets[1.0] <= 8 and len(cfg.seeds) == 1 and cfg.stop_after <= 8
