"""noisy_labels (nhtlab.data.noise): the fraction replaced, the seed, the device and dtype kept."""

from __future__ import annotations

import pytest
import torch

import nhtlab


def test_fraction_zero_and_one():
    y = torch.arange(1000) % 10
    same, picked = nhtlab.noisy_labels(y, 0.0, classes=10, seed=3)
    assert torch.equal(same, y) and not picked.any()
    noisy, picked = nhtlab.noisy_labels(y, 1.0, classes=10, seed=3)
    assert picked.all() and noisy.dtype == y.dtype
    # a replaced label is uniform over the classes: right about one time in ten
    assert 0.05 < (noisy == y).float().mean().item() < 0.15


def test_seeded_and_about_the_fraction():
    y = torch.zeros(5000, dtype=torch.long)
    a, picked = nhtlab.noisy_labels(y, 0.3, classes=10, seed=0)
    b, _ = nhtlab.noisy_labels(y, 0.3, classes=10, seed=0)
    assert torch.equal(a, b)
    assert 0.27 < picked.float().mean().item() < 0.33
    assert torch.equal(a[~picked], y[~picked])
    assert not torch.equal(a, nhtlab.noisy_labels(y, 0.3, classes=10, seed=1)[0])


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        nhtlab.noisy_labels(torch.zeros(3), 0.3, classes=10)
    with pytest.raises(ValueError):
        nhtlab.noisy_labels(torch.zeros(3, dtype=torch.long), 1.5, classes=10)
