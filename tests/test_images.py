"""Offline digits and the opt-in CIFAR-10 loader (its error path, without network)."""

import pytest
import torch

from nhtlab.data.images import DatasetUnavailableError, ImageData, cifar10, digits


def test_digits_shapes_range_and_split():
    data = digits(size=12, test_fraction=0.25, seed=0)
    assert isinstance(data, ImageData) and data.num_classes == 10
    assert data.x_train.shape[1:] == (3, 12, 12) and data.x_train.dtype == torch.float32
    assert len(data.x_train) + len(data.x_test) == 1797
    assert len(data.x_test) == round(1797 * 0.25)
    assert 0.0 <= float(data.x_train.min()) and float(data.x_train.max()) <= 1.0
    # grey images copied over three channels
    torch.testing.assert_close(data.x_train[:, 0], data.x_train[:, 2])
    assert set(data.y_train.tolist()) == set(range(10))


def test_digits_split_is_seeded():
    a, b, c = digits(size=8, seed=1), digits(size=8, seed=1), digits(size=8, seed=2)
    assert torch.equal(a.y_test, b.y_test) and torch.equal(a.x_test, b.x_test)
    assert not torch.equal(a.y_test, c.y_test)


def test_the_digits_ignore_the_smoke_cap(monkeypatch):
    """The cap rewrites a chapter's settings; the loader itself keeps every image."""
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    full = digits(size=8, seed=3)
    monkeypatch.setenv("NHTLAB_SMOKE", "1")
    monkeypatch.setenv("NHTLAB_SMOKE_IMAGES", "20")
    assert torch.equal(digits(size=8, seed=3).x_train, full.x_train) and len(full.y_train) + len(full.y_test) == 1797


def test_digits_limits_keep_the_first_images_of_the_same_split():
    whole, cut = digits(size=8, seed=3), digits(size=8, seed=3, train_limit=7, test_limit=2)
    assert torch.equal(cut.x_train, whole.x_train[:7]) and torch.equal(cut.y_train, whole.y_train[:7])
    assert torch.equal(cut.x_test, whole.x_test[:2]) and torch.equal(cut.y_test, whole.y_test[:2])
    assert len(digits(size=8, train_limit=10**6).y_train) == len(whole.y_train)  # more than there are: all
    with pytest.raises(ValueError, match="train_limit"):
        digits(size=8, train_limit=0)


def test_digits_native_size_is_the_sklearn_image():
    from sklearn.datasets import load_digits

    data = digits(size=8, test_fraction=0.5, seed=0)
    images = torch.tensor(load_digits().images, dtype=torch.float32) / 16
    # every training image is one of the bundled images, unchanged
    first = data.x_train[0, 0]
    assert any(torch.equal(first, im) for im in images)


def test_bad_digits_arguments():
    with pytest.raises(ValueError, match=r"'size' parameter of digits must be an int in the range \[8, 256\]. Got 4"):
        digits(size=4)
    with pytest.raises(ValueError, match="'test_fraction' parameter of digits"):
        digits(test_fraction=1.0)


def test_cifar10_missing_without_download_raises_a_clear_error(tmp_path):
    with pytest.raises(DatasetUnavailableError, match="download=True") as info:
        cifar10(tmp_path, download=False)
    message = str(info.value)
    assert str(tmp_path) in message and "digits()" in message


def test_cifar10_checks_its_arguments(tmp_path):
    with pytest.raises(TypeError, match="'download' parameter of cifar10 must be a bool"):
        cifar10(tmp_path, download="yes")
    with pytest.raises(TypeError, match="'root' parameter of cifar10"):
        cifar10(None)
