"""Omnigrok's MNIST grokking as a run kind (nhtlab.training.image_grok_run): its config, its model, its runs."""

from __future__ import annotations

import pytest
import torch

from nhtlab.models.cnn import ImageCNN
from nhtlab.models.mlp import ImageMLP
from nhtlab.training.image_grok_run import ImageGrokRun, run_image_grok
from nhtlab.measures.norms import layer_norms, total_norm

TINY = dict(size=8, n_train=100, n_test=50, steps=20, eval_every=10, device="cpu")


@pytest.mark.parametrize("kwargs, error, match", [
    ({"size": 3}, ValueError, r"'size' parameter of ImageGrokRun must be an int in the range \[4, 56\]"),
    ({"n_train": 5}, ValueError, r"'n_train' parameter of ImageGrokRun"),
    ({"n_train": 1000, "n_test": 4001}, ValueError, r"'n_test' parameter of ImageGrokRun"),
    ({"init_scale": 0.0}, ValueError, r"'init_scale' parameter of ImageGrokRun must be a finite float > 0"),
    ({"init_scale": "8"}, TypeError, r"'init_scale' parameter of ImageGrokRun"),
    ({"loss": "l1"}, ValueError, r"'loss' parameter of ImageGrokRun must be one of 'cross_entropy', 'mse'"),
    ({"width": 0}, ValueError, r"'width' parameter of ImageMLP"),
    ({"depth": 1}, ValueError, r"'depth' parameter of ImageMLP"),
    ({"lr": 0.0}, ValueError, r"'lr' parameter of ImageGrokRun"),  # a training field, checked by TrainConfig
    ({"arch": "rnn"}, ValueError, r"'arch' parameter of ImageGrokRun must be one of 'mlp', 'cnn'"),
    ({"arch": "cnn", "depth": 4}, ValueError, r"'depth' parameter of ImageGrokRun sizes the MLP"),
    ({"arch": "cnn", "width": 0}, ValueError, r"'width' parameter of ImageCNN"),
    ({"arch": "cnn", "init_scale": -1.0}, ValueError, r"'init_scale' parameter of ImageGrokRun"),
])
def test_bad_settings_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        ImageGrokRun(**kwargs)


def test_config_round_trips_and_keys_apart_from_other_kinds():
    run = ImageGrokRun(size=14, weight_decay=0.03, seed=2)
    assert ImageGrokRun(**run.to_dict()) == run and hash(ImageGrokRun(**run.to_dict())) == hash(run)
    assert run.cache_config()["runner"] == "run_image_grok"
    assert run.replace(init_scale=1.0).cache_config() != run.cache_config()
    assert run.to_dict()["loss"] == "mse"  # in the key at its default: the loop's own default is cross-entropy
    # Omnigrok's setting by default: full batch, PyTorch's betas, α = 8, MSE, 784-200-200-10
    default = ImageGrokRun()
    assert (default.batch_size, default.betas, default.init_scale, default.loss) == (None, (0.9, 0.999), 8.0, "mse")
    shapes = [tuple(p.shape) for p in default.build_model().parameters()]
    assert shapes == [(200, 784), (200,), (200, 200), (200,), (10, 200), (10,)]


def test_init_scale_multiplies_the_initial_norm_by_its_square():
    small, large = ImageGrokRun(size=14), ImageGrokRun(size=14, init_scale=8.0)
    a, b = small.replace(init_scale=1.0).build_model(), large.build_model()
    assert float(total_norm(b)) == pytest.approx(64.0 * float(total_norm(a)), rel=1e-5)
    norms_a, norms_b = layer_norms(a), layer_norms(b)
    assert list(norms_b) == ["layers.0", "layers.1", "readout"]
    for name in norms_a:  # each layer, not only the sum
        assert norms_b[name] == pytest.approx(64.0 * norms_a[name], rel=1e-5)


def test_the_arch_choice_leaves_the_mlp_keys_as_they_were():
    mlp = ImageGrokRun(size=14)
    assert "arch" not in mlp.to_dict() and ImageGrokRun(size=14, arch="mlp").cache_config() == mlp.cache_config()
    cnn = mlp.replace(arch="cnn")
    assert cnn.to_dict()["arch"] == "cnn" and cnn.cache_config() != mlp.cache_config()
    assert ImageGrokRun(**cnn.to_dict()) == cnn


def test_the_cnn_keeps_the_model_contract_and_scales_every_parameter():
    model = ImageCNN(14, classes=10, width=32)
    x = torch.rand(5, 1, 14, 14)
    features = model.features(x)
    assert features.shape == (5, 32) and model.hidden.in_features == 8 * 7 * 7
    torch.testing.assert_close(model(x), model.readout(features))
    logits, feats = model(x, return_features=True)
    torch.testing.assert_close(feats, features)
    torch.testing.assert_close(logits, model(x))
    assert ImageCNN(5)(torch.rand(2, 1, 5, 5)).shape == (2, 10)  # an odd size floors through the pool
    run = ImageGrokRun(size=14, arch="cnn", seed=3)
    plain, large = run.replace(init_scale=1.0).build_model(), run.build_model()
    norms_plain, norms_large = layer_norms(plain), layer_norms(large)
    assert list(norms_large) == ["conv1", "hidden", "readout"]
    for name in norms_plain:
        assert norms_large[name] == pytest.approx(64.0 * norms_plain[name], rel=1e-5)
    # about the MLP's size at the same width, so that it can memorise what the MLP memorises
    mlp = sum(p.numel() for p in ImageGrokRun(size=14, seed=3).build_model().parameters())
    assert 0.8 < sum(p.numel() for p in large.parameters()) / mlp < 1.25
    with pytest.raises(ValueError, match="'size' parameter of ImageCNN"):
        ImageCNN(1)


def test_a_seeded_cnn_run_trains_and_records_conv1_and_the_readout():
    from nhtlab.analysis.layers import head_and_first

    run = ImageGrokRun(**TINY, arch="cnn", loss="cross_entropy", weight_decay=0.1, lr=1e-2)
    a, b = run.execute(progress="none"), run.execute(progress="none")
    assert a.status == "completed" and a.rows == b.rows and isinstance(a.model, ImageCNN)
    assert a.layers == ["conv1", "hidden", "readout"] and head_and_first(a.layers) == ("readout", "conv1")
    assert a.rows[-1]["norm/conv1"] != a.rows[0]["norm/conv1"] and a.rows[-1]["train_loss"] < a.rows[0]["train_loss"]
    assert run.replace(seed=1).execute(progress="none").rows[0]["norm"] != a.rows[0]["norm"]


def test_the_mlp_reads_flattened_images():
    model = ImageMLP(36, classes=10, width=7, depth=4)
    assert model(torch.rand(5, 1, 6, 6)).shape == (5, 10) and len(model.layers) == 3


def test_a_seeded_run_is_reproducible_bit_for_bit():
    run = ImageGrokRun(**TINY, loss="cross_entropy", weight_decay=0.1, lr=1e-2)
    a, b = run_image_grok(run), run_image_grok(run)
    assert a.status == "completed" and [r["step"] for r in a.rows] == [0, 10, 20]
    assert a.rows == b.rows
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name
    assert {"norm/layers.0", "norm/layers.1", "norm/readout", "test_acc"} <= set(a.rows[-1])
    assert a.rows[-1]["norm"] != a.rows[0]["norm"]  # it trained
    other = run_image_grok(run.replace(seed=1))
    assert other.rows[0]["norm"] != a.rows[0]["norm"]


def test_the_mse_loss_is_the_mean_squared_error_on_one_hot_targets():
    """One full-batch step of train(loss="mse") equals AdamW stepped by hand on F.mse_loss(logits, one-hot)."""
    import copy

    import torch.nn.functional as F

    import nhtlab

    run = ImageGrokRun(**TINY, loss="mse", weight_decay=0.1, lr=1e-2)
    data, model = run.data(), run.build_model()
    reference = copy.deepcopy(model)
    config = run.train_config().replace(steps=1, eval_every=1)
    nhtlab.train(model, data, config, progress="none")
    optimizer = torch.optim.AdamW(reference.parameters(), lr=run.lr, betas=run.betas, weight_decay=run.weight_decay,
                                  foreach=True)
    logits = reference(data.x_train)
    F.mse_loss(logits, F.one_hot(data.y_train, 10).to(logits.dtype)).backward()
    optimizer.step()
    for (name, mine), theirs in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(mine, theirs, rtol=0, atol=1e-6), name
    ce = run.replace(loss="cross_entropy").execute(progress="none")
    assert ce.rows[-1]["norm"] != run.execute(progress="none").rows[-1]["norm"]
    with pytest.raises(ValueError, match="'loss' parameter of ImageGrokRun must be one of"):
        run.replace(loss="hinge")


def test_a_sweep_trains_the_kind():
    import nhtlab

    runs = [ImageGrokRun(**TINY, loss="cross_entropy", weight_decay=wd) for wd in (0.1, 0.3)]
    result = nhtlab.sweep(runs, strategy="sequential")
    assert result.runs == runs
    assert [h.config["weight_decay"] for h in result.histories] == [0.1, 0.3]
