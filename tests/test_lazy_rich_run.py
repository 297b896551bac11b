"""Lazy against rich by output scaling: the independent signals and DLR move the expected way."""

import pytest
import torch

from nhtlab.data.images import digits
from nhtlab.training.lazy_rich_run import LazyScaled, flat_inputs, lazy_rich_run
from nhtlab.models import ImageMLP
from nhtlab.training.loop import TrainConfig


@pytest.fixture(scope="module")
def data():
    return digits(size=8, seed=0)


@pytest.fixture(scope="module")
def pair(data):
    torch.set_num_threads(1)
    return [lazy_rich_run(data, alpha, steps=100, width=64, seed=0, compare={"full": ("full", None)}) for alpha in (0.3, 100.0)]


def test_small_alpha_is_rich_and_large_alpha_lazy_by_independent_signals(pair):
    rich, lazy = pair
    assert lazy.cka_to_init > 0.95 and rich.cka_to_init < 0.7
    assert rich.nc1 < 0.2 * lazy.nc1
    assert lazy.nc1 == pytest.approx(lazy.nc1_init, rel=0.2)  # the lazy features barely moved


def test_dlr_tracks_the_ground_truth(pair):
    rich, lazy = pair
    assert lazy.dlr > rich.dlr + 0.2
    assert set(rich.compare) == {"full"} and 0.0 <= rich.compare["full"] <= 1.0


def test_seeded_runs_repeat(data):
    a = lazy_rich_run(data, 1.0, steps=5, width=16, seed=3)
    b = lazy_rich_run(data, 1.0, steps=5, width=16, seed=3)
    assert a.to_dict() == b.to_dict()


def test_inputs_are_standardised_with_training_statistics(data):
    x_train, x_test = flat_inputs(data)
    assert x_train.shape == (len(data.y_train), 64) and x_test.shape == (len(data.y_test), 64)
    varying = x_train.std(0) > 0
    assert torch.allclose(x_train.mean(0), torch.zeros(64), atol=1e-5)
    assert torch.allclose(x_train.std(0)[varying], torch.ones(int(varying.sum())), atol=1e-4)


def test_errors_name_the_parameter(data):
    with pytest.raises(ValueError, match="alpha"):
        lazy_rich_run(data, 0.0)
    with pytest.raises(ValueError, match="steps"):
        lazy_rich_run(data, 1.0, steps=0)
    with pytest.raises(ValueError, match="'rank' parameter of lazy_rich_run"):
        lazy_rich_run(data, 1.0, steps=1, rank="median")
    with pytest.raises(ValueError, match="'depth' parameter of lazy_rich_run"):
        lazy_rich_run(data, 1.0, depth=0)
    with pytest.raises(ValueError, match="'optimizer' parameter of TrainConfig"):
        TrainConfig(optimizer="adam")


def test_the_scaled_model_starts_at_zero_and_moves_alpha_times_the_network():
    torch.manual_seed(0)
    net = ImageMLP(6, 3, width=5, depth=2)
    model = LazyScaled(net, 4.0)
    x = torch.randn(7, 6)
    assert torch.equal(model(x), torch.zeros(7, 3))  # f_α = α (g − g₀) is 0 at initialisation
    before = net(x).detach()
    with torch.no_grad():
        net.readout.bias.add_(1.0)  # the frozen copy does not follow the network
    assert torch.allclose(model(x), 4.0 * (net(x) - before))
    assert [name for name, _ in model.named_parameters()] == [f"net.{n}" for n, _ in net.named_parameters()]
    model.double()  # a move or cast reaches the frozen copy too
    assert model.frozen[0].readout.weight.dtype == torch.float64 and torch.equal(model(x.double()), model(x.double()))
