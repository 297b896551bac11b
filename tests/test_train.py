import math
import numpy as np
import pytest
import torch

from nhtlab.training.modular_run import ModularRun, run_modular
from nhtlab.models import EmbeddingMLP
from nhtlab.data.modular import modular_data
from nhtlab.history import History
from nhtlab.training.loop import TrainConfig, train

SMALL = ModularRun(p=11, model_kwargs=dict(width=32), steps=60, eval_every=10, seed=3, device="cpu")


def test_same_seed_same_history():
    a, b = run_modular(SMALL, progress="none"), run_modular(SMALL, progress="none")
    assert a.rows == b.rows
    c = run_modular(SMALL.replace(seed=4), progress="none")
    assert c.rows != a.rows


def test_minibatch_with_replacement_is_seeded_too():
    run = SMALL.replace(batch_size=16)
    assert run_modular(run, progress="none").rows == run_modular(run, progress="none").rows


def test_history_columns_and_norm_tracking():
    h = run_modular(SMALL, progress="none")
    assert h.status == "completed"
    assert list(h.column("step")) == [0, 10, 20, 30, 40, 50, 60]
    for col in ("train_loss", "train_acc", "test_loss", "test_acc", "norm", "lr"):
        assert col in h.columns
    assert h.layers == ["embed_a", "embed_b", "readout"]
    layers = sum(h.column(f"norm/{name}") for name in h.layers)
    np.testing.assert_allclose(layers, h.column("norm"), rtol=1e-12)
    assert h.config["p"] == 11 and h.config["seed"] == 3
    assert History.from_dict(h.to_dict()).rows == h.rows


def test_training_fits_and_weight_decay_shrinks_the_norm():
    fit = run_modular(SMALL.replace(steps=200, weight_decay=0.0), progress="none")
    assert fit.column("train_acc")[-1] == 1.0
    decayed = run_modular(SMALL.replace(steps=200, weight_decay=5.0), progress="none")
    assert decayed.column("norm")[-1] < fit.column("norm")[-1]


def test_nan_loss_stops_cleanly_and_keeps_history():
    data = modular_data(p=11, seed=0)
    torch.manual_seed(0)
    model = EmbeddingMLP(11, width=16)
    calls = {"n": 0}

    def poison(state):  # a callback that corrupts the weights after the second evaluation
        calls["n"] += 1
        if calls["n"] == 2:
            with torch.no_grad():
                state.model.readout.weight[0, 0] = math.nan

    config = TrainConfig(steps=100, eval_every=10, device="cpu")
    with pytest.warns(RuntimeWarning, match="Training diverged: non-finite training loss at step 11"):
        h = train(model, data, config, callbacks=[poison], progress="none")
    assert h.status == "diverged" and h.diverged
    assert list(h.column("step")) == [0, 10]
    assert "non-finite" in h.message


def test_stop_after_grokking_and_callback_stop():
    def stop_at_20(state):
        if state.step >= 20:
            state.stop = True

    h = run_modular(SMALL, callbacks=[stop_at_20], progress="none")
    assert h.status == "stopped" and h.column("step")[-1] == 20


def test_cosine_schedule_ends_at_zero():
    h = run_modular(SMALL.replace(schedule="cosine"), progress="none")
    assert h.column("lr")[0] == pytest.approx(SMALL.lr)
    assert h.column("lr")[-1] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kwargs,exc,message", [
    (dict(steps=0), ValueError, "'steps' parameter of TrainConfig must be an int >= 1. Got 0"),
    (dict(lr=-1.0), ValueError, "'lr' parameter of TrainConfig"),
    (dict(weight_decay=float("nan")), ValueError, "'weight_decay' parameter of TrainConfig must be a finite float >= 0.0"),
    (dict(schedule="linear"), ValueError, "'schedule' parameter of TrainConfig must be one of 'constant', 'cosine'. Got 'linear'"),
    (dict(batch_size=0), ValueError, "'batch_size' parameter of TrainConfig"),
    (dict(betas=(0.9,)), ValueError, "'betas' parameter of TrainConfig must hold two floats"),
    (dict(device="tpu"), ValueError, "'device' parameter of TrainConfig must be one of 'auto', 'cpu', 'cuda'"),
    (dict(steps="10"), TypeError, "'steps' parameter of TrainConfig must be an int"),
    (dict(fused="yes"), TypeError, "'fused' parameter of TrainConfig must be a bool. Got 'yes'"),
])
def test_bad_config_names_the_parameter(kwargs, exc, message):
    with pytest.raises(exc) as info:
        TrainConfig(**kwargs)
    assert message in str(info.value)


def test_bad_run_config():
    with pytest.raises(ValueError, match="'model' parameter of ModularRun must be one of 'mlp', 'transformer'"):
        ModularRun(model="rnn")
    with pytest.raises(TypeError, match="'data' parameter of train must have 'x_train' and 'y_train'"):
        train(EmbeddingMLP(5), object(), TrainConfig(steps=1), progress="none")


def test_run_kinds_declare_the_training_fields_once():
    """ModularRun and ShortcutRun inherit TrainConfig's fields; each default that differs is an override in the class body."""
    from dataclasses import fields

    from nhtlab.training.shortcut_run import ShortcutRun

    train_fields = {f.name: f for f in fields(TrainConfig)}
    for kind, overrides in ((ModularRun, {"lr"}),
                            (ShortcutRun, {"steps", "lr", "weight_decay", "betas", "batch_size", "eval_every", "schedule"})):
        assert issubclass(kind, TrainConfig)
        own = {f.name: f for f in fields(kind)}
        assert set(train_fields) <= set(own)
        for name, f in train_fields.items():
            if name in overrides:
                assert own[name].default != f.default, (kind.__name__, name)
            else:  # the default comes from TrainConfig, not a copy
                assert own[name].default == f.default, (kind.__name__, name)
        # an override is re-annotated in the class body; every other training field is not
        assert set(kind.__annotations__) & set(train_fields) == overrides
        # the shared methods live once, on TrainConfig
        for method in ("to_dict", "replace", "train_config", "__hash__"):
            assert getattr(kind, method) is getattr(TrainConfig, method), (kind.__name__, method)
    run = ModularRun(p=7, lr=1e-2, weight_decay=0.5, eval_batch_size=64)
    assert run.train_config() == TrainConfig(lr=1e-2, weight_decay=0.5, eval_batch_size=64)
    assert type(run.replace(seed=2)) is ModularRun and run.replace(seed=2).seed == 2
    with pytest.raises(ValueError, match="'eval_every' parameter of ModularRun must be an int >= 1"):
        ModularRun(eval_every=0)
    with pytest.raises(TypeError):
        ModularRun(7)  # keyword arguments only: a positional value would land in the first training field
    with pytest.raises(TypeError, match="TrainConfig holds training settings only"):
        TrainConfig().execute()


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_the_multi_tensor_adamw_is_the_single_tensor_one_bit_for_bit(kind, monkeypatch):
    """Unfused, train() asks for torch's multi-tensor (foreach) AdamW, which on a CPU is faster than
    its default single-tensor loop; the two compute the same update op for op, so no number moves."""
    import nhtlab

    if kind == "mlp":
        run = ModularRun(p=11, model_kwargs=dict(width=32), steps=40, eval_every=10, batch_size=16, seed=1,
                         weight_decay=0.5, device="cpu")
        execute = lambda: run_modular(run, progress="none")
    else:
        run = nhtlab.ShortcutRun(base="digits", size=10, steps=30, eval_every=10, weight_decay=0.1,
                                 channels=(4, 4, 8, 8, 8, 8), device="cpu")
        execute = lambda: nhtlab.training.shortcut_run.run_shortcut(run, progress="none")
    asked = []
    real = torch.optim.AdamW

    def adamw(*args, foreach=None, **kwargs):
        asked.append(foreach)
        return real(*args, foreach=single if single is not None else foreach, **kwargs)

    monkeypatch.setattr(torch.optim, "AdamW", adamw)
    single = None
    multi = execute()
    single = False  # torch's CPU default: one tensor at a time
    alone = execute()
    assert asked == [True, True], "unfused, train() asks for the multi-tensor AdamW"
    assert multi.rows == alone.rows
    assert all(torch.equal(a, b) for a, b in zip(multi.model.parameters(), alone.model.parameters()))


def test_fused_adamw_is_the_same_update_in_another_rounding():
    """fused=True changes how AdamW is computed, not what: a short run agrees to float rounding.

    Only the companion preset turns it on, and the config records it only then, so every other
    run keeps its dict (and cache key) and its numbers.
    """
    run = ModularRun(p=11, model_kwargs=dict(width=32), steps=40, eval_every=10, batch_size=16, seed=1, device="cpu")
    plain, fused = run_modular(run, progress="none"), run_modular(run.replace(fused=True), progress="none")
    assert "fused" not in run.to_dict() and run.replace(fused=True).to_dict()["fused"] is True
    for a, b in zip(plain.model.parameters(), fused.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert [r["step"] for r in plain.rows] == [r["step"] for r in fused.rows]
    for ra, rb in zip(plain.rows, fused.rows):
        assert math.isclose(ra["norm"], rb["norm"], rel_tol=1e-5), (ra["step"], ra["norm"], rb["norm"])
    assert any(not torch.equal(a, b) for a, b in zip(plain.model.parameters(), fused.model.parameters())), \
        "fused=True must reach the optimiser (the two runs were bit-identical)"
    import nhtlab

    assert nhtlab.companion(1.0).fused is True and nhtlab.companion(1.0).to_dict()["fused"] is True
    assert "fused" not in TrainConfig().to_dict()


def test_a_default_spelled_out_in_model_kwargs_is_the_same_run():
    """Chapter 07's base width and chapter 03's default transformer are one run, with one cache key."""
    import nhtlab
    from nhtlab.training.cache import config_key

    spelled = nhtlab.companion(1.0, seed=1, model_kwargs=dict(d_model=128, d_ff=512))
    plain = nhtlab.companion(1.0, seed=1)
    assert spelled.model_kwargs == {} and spelled == plain
    assert config_key(spelled.cache_config()) == config_key(plain.cache_config())
    wider = nhtlab.companion(1.0, model_kwargs=dict(d_model=64, d_ff=512))
    assert wider.model_kwargs == {"d_model": 64}  # what differs stays, what does not goes
    with pytest.raises(TypeError, match="'width' parameter of EmbeddingMLP must be an int"):  # checked where passed
        ModularRun(model_kwargs=dict(width=256.0))
