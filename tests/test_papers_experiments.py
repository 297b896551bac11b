"""Issue 48's code paths: the background cue, ShortcutRun's background kind, the study's background readings,
and chapter 04's learning-rate experiment on a tiny setting."""

import math

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab import book as nb
from nhtlab.book.shortcut_study import ShortcutStudy
from nhtlab.data.cues import REGIONS, tint_shortcut
from nhtlab.data.images import ImageData
from nhtlab.history import History
from nhtlab.training.shortcut_run import ShortcutRun

from test_shortcut_study import PROFILE, STEPS, history, image, trained_for


def two_tone(n=40):
    """Images whose left half is bright (the 'digit') and right half dark (the background)."""
    x = torch.zeros(n, 3, 6, 6)
    x[..., :3] = 0.9
    y = torch.arange(n) % 4
    return ImageData(x, y, x[:20].clone(), y[:20].clone(), 4, "two-tone")


def test_the_background_region_paints_only_the_pixels_behind_the_object():
    base = two_tone()
    data = tint_shortcut(base, rho=1.0, strength=1.0, region="background", seed=0)
    assert data.kind == "background" and data.settings["region"] == "background"
    assert torch.equal(data.x_train[..., :3], base.x_train[..., :3])  # the object is untouched
    expected = data.colours[data.y_train][:, :, None, None].expand(-1, -1, 6, 3)
    assert torch.allclose(data.x_train[..., 3:], expected)  # the background is the class colour
    half = tint_shortcut(base, rho=1.0, strength=0.5, region="background", seed=0)
    assert torch.allclose(half.x_train[..., 3:], 0.5 * expected)  # a blend of the dark pixels and the colour
    everywhere = tint_shortcut(base, rho=1.0, strength=0.5, seed=0)
    assert everywhere.kind == "tint" and not torch.equal(everywhere.x_train[..., :3], base.x_train[..., :3])


def test_the_background_cue_names_the_class_on_rho_of_the_training_images():
    data = tint_shortcut(nhtlab.digits(size=8, seed=0), rho=0.8, strength=1.0, region="background", seed=3)
    agree = data.cue_train == data.y_train
    assert abs(float(agree.float().mean()) - 0.8) < 0.05
    assert (data.cue_train[~agree] >= 0).all()  # the rest carry another class's colour ("other")
    assert set(data.test_sets) == {"coloured", "clean", "shortcut", "conflict", "cue"}


@pytest.mark.parametrize("kwargs, name", [(dict(region="behind"), "region"), (dict(region="background", dark=0.0), "dark")])
def test_bad_background_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter of tint_shortcut"):
        tint_shortcut(two_tone(), **kwargs)
    assert REGIONS == ("all", "background")


def test_shortcut_run_has_a_background_kind_with_its_own_cache_key():
    run = ShortcutRun(kind="background", strength=1.0, steps=10)
    assert run.data().kind == "background"
    keys = {nhtlab.training.cache_key.config_key(run.replace(kind=k).cache_config()) for k in ("border", "tint", "background")}
    assert len(keys) == 3
    with pytest.raises(ValueError, match="'kind' parameter of ShortcutRun must be one of 'border', 'tint', 'background'"):
        ShortcutRun(kind="waterbirds")


def background(drop_at=None):
    """A cue learnt and kept: coloured accuracy high, conflict low; the norm grows throughout."""
    n = len(STEPS)
    norm = np.linspace(10, 100, n)
    return history(cue_acc=np.full(n, 0.8), conflict_acc=np.full(n, 0.1), coloured_acc=np.full(n, 0.95),
                   train_acc=np.full(n, 1.0), clean_acc=np.full(n, 0.3), shortcut_acc=np.full(n, 0.9), norm=norm,
                   **{"norm/conv1": norm, "norm/readout": norm})


def test_the_study_runs_and_reads_the_background_cue_over_seeds():
    study = ShortcutStudy.from_profile({**PROFILE, "background_lams": [0.01, 0.1]}, seed=0)
    assert [r.seed for r in study.background[0.1]] == [0, 1, 2] and len(study.background[0.01]) == 1
    assert all(r.kind == "background" and r.strength == 1.0 for rs in study.background.values() for r in rs)
    assert "background" in study.domains() and set(r for rs in study.background.values() for r in rs) <= set(study.runs())

    def made(run):
        return background() if run.kind == "background" else image()

    trained = trained_for(study, made)
    learnt, readings = study.background_readings(trained)
    assert learnt and "3 of 3" in learnt.detail
    assert readings[0].name.startswith("background: separation below 0.5") and readings[0].n == 3
    assert readings[1].name == "background: separation below the border's (same seed)" and readings[1].n == 3
    assert [r.name for r in readings[2:]] == [f"{name} (background)" for name in nb.SEED_PREDICTIONS]
    rows = study.worst_group_rows(trained)
    assert [r["seed"] for r in rows] == [0, 1, 2] and rows[0]["background"] == pytest.approx(0.1)
    assert "background" in study.scorecard(trained)
    with pytest.raises(ValueError, match="background_lams"):
        ShortcutStudy.from_profile(PROFILE).background_readings(trained)


def test_the_learning_rate_experiment_gives_one_finite_row_per_rate_and_seed():
    images = nhtlab.digits(size=8, seed=0)
    records = nb.lr_sweep(images, [1e-3, 1e-2], [0, 1], channels=(4, 4, 4, 4, 8, 8), steps=3, weight_decay=0.05,
                          batch_size=32, lr=0.5)  # an lr among the training settings is replaced
    assert [(r["lr"], r["seed"]) for r in records] == [(1e-3, 0), (1e-3, 1), (1e-2, 0), (1e-2, 1)]
    assert all(math.isfinite(r["dlr"]) and 0 <= r["dlr"] <= 1 for r in records)
    readings = nb.lr_readings(records)
    assert len(readings) == 3 and all(r.n == 2 for r in readings)
    finite, brackets = nb.lr_checks(records)
    assert finite and not brackets  # two rates cannot bracket: the best is at an end


def test_lr_readings_follow_the_records():
    rows = [dict(lr=lr, seed=0, dlr=d, used=u, test_acc=a) for lr, d, u, a in
            [(1e-4, 0.3, 12, 0.5), (1e-3, 0.1, 8, 0.9), (1e-2, 0.2, 9, 0.8)]]
    a, b, c = nb.lr_readings(rows)
    assert (a.by_seed[0], b.by_seed[0], c.by_seed[0]) == ("yes", "lazier", "more")
    assert nb.lr_checks(rows)[1]
    assert nb.features_used([0.2, 0.97]) == 2 and nb.features_used([0.5, 0.8]) is None


def test_ledger_cpu_seconds_reads_the_latest_training_of_each_run(tmp_path):
    from nhtlab.plumbing.ledger import record_training
    from nhtlab.training.cache import ResultCache

    runs = [ShortcutRun(kind="background", steps=10, seed=s) for s in (0, 1)]
    done = History(rows=[{"step": 10}], status="completed")
    for run, cpu in ((runs[0], 3.0), (runs[0], 4.0), (runs[1], 2.5)):
        record_training(tmp_path, "any key", run, done, cpu_seconds=cpu, wall_seconds=1.0)
    cache = ResultCache(tmp_path)
    assert nb.ledger_cpu_seconds(runs, cache) == pytest.approx(6.5)
    assert nb.ledger_cpu_seconds([ShortcutRun(kind="tint", steps=10)], cache) == 0.0
