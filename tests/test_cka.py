"""Centred linear CKA: the feature-space formula against the n × n Gram reference, invariances, errors."""

import math

import pytest
import torch

from nhtlab.measures.cka import linear_cka, linear_cka_gram


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("n,p,q", [(50, 8, 3), (40, 60, 25), (7, 3, 9)])
def test_feature_space_equals_gram_matrices(n, p, q):
    g = gen(n + p + q)
    x = torch.randn(n, p, generator=g, dtype=torch.float64) * 3 + 5  # non-zero means: centring matters
    y = torch.randn(n, q, generator=g, dtype=torch.float64) + x[:, :1] ** 2
    assert linear_cka(x, y) == pytest.approx(linear_cka_gram(x, y), abs=1e-8)


def test_float32_inputs_are_accumulated_in_float64():
    g = gen(1)
    x = torch.randn(300, 40, generator=g) + 100.0  # large mean: float32 centring would lose digits
    y = x[:, :10] @ torch.randn(10, 4, generator=g) + torch.randn(300, 4, generator=g)
    assert linear_cka(x, y) == pytest.approx(linear_cka_gram(x.double(), y.double()), abs=1e-10)


def test_cka_of_a_representation_with_itself_is_one():
    x = torch.randn(100, 12, generator=gen(2))
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_invariant_to_scaling_orthogonal_maps_and_translation():
    g = gen(3)
    x = torch.randn(80, 10, generator=g, dtype=torch.float64)
    y = torch.tanh(x @ torch.randn(10, 6, generator=g, dtype=torch.float64))
    rot, _ = torch.linalg.qr(torch.randn(10, 10, generator=g, dtype=torch.float64))
    base = linear_cka(x, y)
    assert linear_cka(4.5 * x @ rot + 3.0, y) == pytest.approx(base, abs=1e-12)
    assert linear_cka(x, 0.01 * y) == pytest.approx(base, abs=1e-12)
    assert linear_cka(y, x) == pytest.approx(base, abs=1e-12)
    # not invariant to a general invertible linear map (that is what separates CKA from CCA)
    stretch = torch.diag(torch.tensor([10.0] + [1.0] * 9, dtype=torch.float64))
    assert abs(linear_cka(x @ stretch, y) - base) > 1e-3


def test_independent_random_features_follow_the_finite_n_value():
    n, p, q = 2000, 100, 50
    g = gen(4)
    x = torch.randn(n, p, generator=g)
    y = torch.randn(n, q, generator=g)
    expected = math.sqrt(p * q / ((n + p) * (n + q)))  # ≈ 0.034: CKA of independent features is not 0
    assert linear_cka(x, y) == pytest.approx(expected, rel=0.15)


def test_errors_name_the_parameter():
    x = torch.randn(10, 3)
    with pytest.raises(ValueError, match="'y' parameter of linear_cka must have as many rows as 'x' \\(10\\)"):
        linear_cka(x, torch.randn(9, 3))
    with pytest.raises(ValueError, match="'x' parameter of linear_cka is constant"):
        linear_cka(torch.ones(10, 3), x)
    with pytest.raises(ValueError, match="must be finite"):
        linear_cka(x, torch.full((10, 2), float("nan")))
    with pytest.raises(TypeError, match="'x' parameter of linear_cka must be of type Tensor"):
        linear_cka([[1.0]], x)
