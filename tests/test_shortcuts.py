"""The coloured-border wrapper and the entangled tint: colours, ρ statistics, the test sets."""

import pytest
import torch

from nhtlab.data.images import ImageData, digits
from nhtlab.data.cues import CLASS_COLOURS, border_shortcut, draw_cue_classes, paint_border, tint_shortcut


def tiny(n_train=2000, n_test=300, size=8, k=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = lambda n: torch.rand(n, 3, size, size, generator=g) * 0.5
    y = lambda n: torch.randint(0, k, (n,), generator=g)
    return ImageData(x(n_train), y(n_train), x(n_test), y(n_test), k, name="tiny")


def border_of(x, width):
    """(n, 3) colour of the top-left border pixel and whether the whole border is that colour."""
    mask = torch.zeros(x.shape[-2:], dtype=torch.bool)
    mask[:width], mask[-width:], mask[:, :width], mask[:, -width:] = True, True, True, True
    pixels = x[:, :, mask]  # (n, 3, m)
    uniform = (pixels == pixels[:, :, :1]).all(dim=2).all(dim=1)
    return pixels[:, :, 0], uniform


def test_paint_border_paints_only_the_border():
    x = torch.zeros(2, 3, 6, 6)
    rgb = torch.tensor([[1.0, 0.5, 0.0], [float("nan")] * 3])
    out = paint_border(x, rgb, width=1)
    assert torch.equal(out[0, :, 0, 0], rgb[0]) and torch.equal(out[0, :, 5, 3], rgb[0])
    assert torch.equal(out[0, :, 1:5, 1:5], torch.zeros(3, 4, 4))  # inside untouched
    assert torch.equal(out[1], x[1])  # NaN row: no border
    assert torch.equal(x, torch.zeros(2, 3, 6, 6))  # input not modified


def test_training_border_carries_own_colour_with_probability_rho():
    data = border_shortcut(tiny(), rho=0.8, width=2, seed=0)
    colour, uniform = border_of(data.x_train, 2)
    assert bool(uniform.all())
    palette = torch.tensor(CLASS_COLOURS)
    own = (colour - palette[data.y_train]).abs().sum(1) < 1e-6
    assert torch.equal(own, data.cue_train == data.y_train)
    # binomial(2000, 0.8): sd ≈ 0.009
    assert abs(float(own.float().mean()) - 0.8) < 0.03
    # "other": the remaining borders carry a *different* class's colour, spread over the classes
    others = data.cue_train[~own]
    assert bool((others != data.y_train[~own]).all()) and len(set(others.tolist())) == 10


@pytest.mark.parametrize("rho", [0.0, 1.0])
def test_rho_extremes(rho):
    data = border_shortcut(tiny(), rho=rho, seed=3)
    assert float((data.cue_train == data.y_train).float().mean()) == rho


def test_otherwise_none_leaves_image_unbordered():
    base = tiny()
    data = border_shortcut(base, rho=0.5, width=1, otherwise="none", seed=0)
    none = data.cue_train < 0
    assert 0.45 < float(none.float().mean()) < 0.55
    assert torch.equal(data.x_train[none], base.x_train[none])


def test_the_four_test_sets():
    base = tiny()
    data = border_shortcut(base, rho=0.9, width=1, clean="mean", seed=0)
    sets = data.test_sets
    assert set(sets) == {"coloured", "clean", "shortcut", "conflict", "cue"}
    palette = torch.tensor(CLASS_COLOURS)
    # cue: the conflicting images, labelled by their border's class
    assert sets["cue"][0] is sets["conflict"][0]
    colour, _ = border_of(sets["cue"][0], 1)
    assert torch.allclose(colour, palette[sets["cue"][1]])
    assert bool((sets["cue"][1] != base.y_test).all())
    # clean: the border is the mean class colour for every image, labels are the images' labels
    colour, uniform = border_of(sets["clean"][0], 1)
    assert bool(uniform.all()) and torch.allclose(colour, palette.mean(0).expand_as(colour))
    assert torch.equal(sets["clean"][1], base.y_test)
    # shortcut: a constant image inside, the border's class is the label
    x, y = sets["shortcut"]
    inside = x[:, :, 1:-1, 1:-1]
    assert bool((inside == inside.flatten(1)[:, :1, None, None]).all())
    colour, _ = border_of(x, 1)
    assert torch.allclose(colour, palette[y])
    # conflict: always another class's colour
    colour, _ = border_of(sets["conflict"][0], 1)
    assert bool(((colour - palette[base.y_test]).abs().sum(1) > 1e-6).all())
    # coloured: the training distribution, and x_test/y_test point at it
    assert data.x_test is sets["coloured"][0]
    colour, _ = border_of(data.x_test, 1)
    agree = float(((colour - palette[base.y_test]).abs().sum(1) < 1e-6).float().mean())
    assert 0.83 < agree < 0.96


def test_clean_none_is_the_bare_image_and_pad_keeps_content():
    base = tiny()
    plain = border_shortcut(base, rho=1.0, width=2, clean="none", seed=0)
    assert torch.equal(plain.test_sets["clean"][0], base.x_test)
    padded = border_shortcut(base, rho=1.0, width=2, pad=True, clean="none", seed=0)
    assert padded.x_train.shape[-2:] == (12, 12)
    assert torch.equal(padded.x_train[:, :, 2:-2, 2:-2], base.x_train)
    assert float(padded.test_sets["clean"][0][:, :, 0].abs().max()) == 0.0  # zero padding


def test_same_seed_same_data():
    a, b = border_shortcut(tiny(), seed=5), border_shortcut(tiny(), seed=5)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.test_sets["shortcut"][1], b.test_sets["shortcut"][1])


def test_tint_spreads_the_cue_over_every_pixel():
    base = tiny()
    data = tint_shortcut(base, rho=1.0, strength=0.25, seed=0)
    palette = torch.tensor(CLASS_COLOURS)
    expected = 0.75 * base.x_train + 0.25 * palette[base.y_train][:, :, None, None]
    torch.testing.assert_close(data.x_train, expected)
    assert set(data.test_sets) == {"coloured", "clean", "shortcut", "conflict", "cue"}
    assert data.kind == "tint"


def test_draw_cue_classes_random_and_bad_arguments():
    g = torch.Generator().manual_seed(0)
    y = torch.zeros(5000, dtype=torch.long)
    cue = draw_cue_classes(y, 0.0, 10, "random", g)
    assert abs(float((cue == 0).float().mean()) - 0.1) < 0.02
    with pytest.raises(ValueError, match="'rho' parameter of border_shortcut must be a finite float in the range \\[0.0, 1.0\\]. Got 1.5"):
        border_shortcut(tiny(), rho=1.5)
    with pytest.raises(ValueError, match="'otherwise' parameter of border_shortcut must be one of 'other', 'none', 'random'"):
        border_shortcut(tiny(), otherwise="grey")
    with pytest.raises(ValueError, match="'width' parameter of border_shortcut must leave some image"):
        border_shortcut(tiny(size=8), width=4)
    with pytest.raises(ValueError, match="'colours' parameter must have shape \\(10, 3\\)"):
        border_shortcut(tiny(), colours=[[0, 0, 0]])


def test_works_on_the_offline_digits():
    data = border_shortcut(digits(size=10, seed=0), rho=0.95, width=1, pad=True)
    assert data.x_train.shape[1:] == (3, 12, 12) and data.settings["base"] == "digits10"


def test_shortcut_run_trains_every_test_set_reproducibly():
    from nhtlab.training.shortcut_run import ShortcutRun, run_shortcut
    from nhtlab.training.sweeps import sweep

    run = ShortcutRun(steps=6, eval_every=3, channels=(2, 2, 2, 2, 4, 4), device="cpu")
    a = run_shortcut(run)
    for name in ("train", "coloured", "clean", "shortcut", "conflict", "cue"):
        assert f"{name}_acc" in a.columns
    assert "norm/readout" in a.columns and a.config["rho"] == 0.95
    (b,) = sweep([run], strategy="sequential", progress="none")
    assert a.rows == b.history.rows and not hasattr(b.history, "model") and b.events is None
    (c,) = sweep([run], strategy="parallel", workers=1, progress="none")  # in a worker process: the same rows
    assert c.history.rows == a.rows
    with pytest.raises(ValueError, match="'kind' parameter of ShortcutRun must be one of 'border', 'tint'"):
        ShortcutRun(kind="texture")


def test_one_sweep_trains_both_run_kinds():
    """A mixed list: each run executes itself (run_modular or run_shortcut), rows as if called directly."""
    from nhtlab import ModularRun, run_modular
    from nhtlab.training.shortcut_run import ShortcutRun, run_shortcut
    from nhtlab.training.sweeps import sweep

    modular = ModularRun(p=7, steps=4, eval_every=2, device="cpu")
    image = ShortcutRun(steps=4, eval_every=2, channels=(2, 2, 2, 2, 4, 4), device="cpu")
    m, i = sweep([modular, image], strategy="parallel", workers=2, progress="none")
    assert "test_acc" in m.history.columns and m.history.rows == run_modular(modular).rows and m.events.t_mem is None
    assert "conflict_acc" in i.history.columns and i.history.rows == run_shortcut(image).rows
    records = sweep([image], strategy="sequential", progress="none").records()
    assert records[0]["channels"] == (2, 2, 2, 2, 4, 4) and records[0]["final_test_acc"] is None
    with pytest.raises(ValueError, match="'strategy' parameter of sweep is 'batched', which stacks ModularRuns only"):
        sweep([modular, image], strategy="batched")


def test_offline_cifar_switch(tmp_path):
    from nhtlab.data.images import DatasetUnavailableError
    from nhtlab.training.shortcut_run import ShortcutRun

    assert ShortcutRun(size=10).data().settings["base"] == "digits10"  # the offline default
    with pytest.raises(DatasetUnavailableError, match="download=True"):
        ShortcutRun(base="cifar10", root=str(tmp_path), download=False).data()  # never a silent substitute


def test_harder_shrinks_the_training_set_and_adds_seeded_noise():
    from nhtlab.data.cues import harder

    base = tiny(n_train=200, n_test=50)
    assert harder(base) is base
    small = harder(base, train_size=40)
    assert len(small.y_train) == 40 and torch.equal(small.x_train, base.x_train[:40]) and len(small.y_test) == 50
    noisy, again = harder(base, noise=0.2, seed=1), harder(base, noise=0.2, seed=1)
    assert torch.equal(noisy.x_train, again.x_train) and not torch.equal(noisy.x_train, base.x_train)
    assert float(noisy.x_train.min()) >= 0 and float(noisy.x_train.max()) <= 1
    assert 0.1 < float((noisy.x_test - base.x_test).std()) < 0.25
    with pytest.raises(ValueError, match="'train_size' parameter of harder"):
        harder(base, train_size=201)
    from nhtlab.training.shortcut_run import ShortcutRun

    data = ShortcutRun(train_size=300, noise=0.1, otherwise="other").data()
    assert len(data.y_train) == 300 and data.settings["base"].startswith("digits10-n300")
    with pytest.raises(ValueError, match="'noise' parameter of ShortcutRun"):
        ShortcutRun(noise=-0.1)


def test_border_times_fitted_then_dropped():
    from nhtlab.analysis.events import border_times
    from nhtlab.history import History

    def h(cue, conflict):
        return History(rows=[dict(step=100 * i, cue_acc=c, conflict_acc=d) for i, (c, d) in enumerate(zip(cue, conflict))])

    assert border_times(h([0.1, 0.4, 0.6, 0.3, 0.1], [0.1, 0.2, 0.2, 0.5, 0.8])) == (100, 300)
    # the digit read from the start: the border is never fitted, so it is never "dropped"
    assert border_times(h([0.1, 0.1, 0.05], [0.3, 0.7, 0.9])) == (None, None)
    # following the border on 35% but reading the digit on 40%: not fitted (the digit wins)
    assert border_times(h([0.35, 0.35], [0.4, 0.4])) == (None, None)
    # fitted and never dropped
    assert border_times(h([0.1, 0.8, 0.8], [0.1, 0.1, 0.2])) == (100, None)
    with pytest.raises(ValueError, match="'drop_level' parameter of border_times"):
        border_times(h([0.1], [0.1]), drop_level=1.0)


def test_a_shortcut_sweep_reuses_the_result_cache(tmp_path, monkeypatch):
    """The second sweep of the same runs trains nothing: every row comes from the cache."""
    from nhtlab.training.cache import ResultCache
    from nhtlab.training.shortcut_run import ShortcutRun
    from nhtlab.training.sweeps import sweep

    cache = ResultCache(tmp_path)
    base = ShortcutRun(steps=4, eval_every=2, channels=(2, 2, 2, 2, 4, 4), device="cpu")
    runs = [base, base.replace(weight_decay=0.1)]
    trained = []
    execute = ShortcutRun.execute

    def counting(self, **kwargs):
        trained.append(self)
        return execute(self, **kwargs)

    monkeypatch.setattr(ShortcutRun, "execute", counting)  # the sequential strategy runs in this process
    first = sweep(runs, strategy="sequential", cache=cache, progress="none")
    assert trained == runs and [r.cached for r in first] == [False, False] and len(cache) == 2
    assert base.cache_config() in cache and base.cache_config()["runner"] == "run_shortcut"
    second = sweep(runs, strategy="sequential", cache=cache, progress="none")
    assert trained == runs, "the second sweep trained again"
    assert [r.cached for r in second] == [True, True] and [r.source for r in second] == ["cache", "cache"]
    assert [r.history.rows for r in second] == [r.history.rows for r in first]
    third = sweep(runs, strategy="parallel", workers=2, cache=cache, progress="none")  # no pool is even needed
    assert all(r.cached for r in third) and trained == runs


def test_shortcut_run_keys_are_those_of_nhtlab_0_2_0():
    """Inheriting TrainConfig added stop_after and eval_batch_size; at their defaults they stay out of the key."""
    from nhtlab.training.shortcut_run import ShortcutRun

    run = ShortcutRun()
    assert run.cache_config() == {
        "runner": "run_shortcut", "base": "digits", "size": 10, "train_size": None, "noise": 0.0, "root": "data",
        "download": False, "kind": "border", "rho": 0.95, "width": 1, "pad": True, "otherwise": "none", "clean": "none",
        "contrast": 1.0, "strength": 0.3, "model": "simple", "norm": "none", "channels": [8, 8, 16, 16, 32, 32],
        "steps": 2000, "lr": 3e-3, "weight_decay": 0.3, "betas": [0.9, 0.999], "batch_size": 64, "eval_every": 100,
        "schedule": "cosine", "seed": 0, "device": "auto"}
    assert run.replace(eval_batch_size=512).to_dict()["eval_batch_size"] == 512  # keyed once it is set
    assert ShortcutRun(**run.to_dict()) == run and hash(ShortcutRun(**run.to_dict())) == hash(run)
    with pytest.raises(ValueError, match="'stop_after' parameter of ShortcutRun must be None"):
        ShortcutRun(stop_after=100)
    with pytest.raises(ValueError, match=r"'lr' parameter of ShortcutRun must be a finite float in the range \(0.0, 1e\+30\]"):
        ShortcutRun(lr=0.0)


def test_run_shortcut_sizes_its_evaluation_batch_for_a_t4(monkeypatch):
    """ResNet18 on 32 px images evaluates in batches of 4,096 (6 GB at 8,192); SimpleCNN keeps 8,192."""
    from nhtlab.history import History
    from nhtlab.training import shortcut_run
    from nhtlab.training.shortcut_run import ShortcutRun, run_shortcut

    seen = []

    def record(model, data, config, **kwargs):  # stands in for the training loop: only the config matters here
        seen.append(config.eval_batch_size)
        return History(config={"threads": 1})  # train records the CPU threads it ran with

    monkeypatch.setattr(shortcut_run, "train", record)  # the loop as image runs call it
    run_shortcut(ShortcutRun(size=30, model="resnet18", norm="batch", steps=1, device="cpu"))
    run_shortcut(ShortcutRun(steps=1, device="cpu"))
    assert seen == [4096, 8192], seen
