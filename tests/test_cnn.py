"""SimpleCNN and ResNet18: the model contract, parameter counts, normalisation options."""

import pytest
import torch
import torch.nn as nn

from nhtlab.models.cnn import ResNet18, SimpleCNN
from nhtlab.measures.norms import layer_norms


def test_simple_cnn_has_the_papers_size():
    assert sum(p.numel() for p in SimpleCNN(10).parameters()) == 288_298  # the NHT paper's "about 288k" 6-layer CNN


@pytest.mark.parametrize("norm", ["none", "batch", "group"])
def test_simple_cnn_contract(norm):
    torch.manual_seed(0)
    model = SimpleCNN(10, norm=norm, channels=(4, 4, 8, 8, 8, 8)).eval()
    x = torch.rand(5, 3, 12, 12)
    feats = model.features(x)
    assert feats.shape == (5, 8)
    torch.testing.assert_close(model(x), model.readout(feats))
    logits, f2 = model(x, return_features=True)
    torch.testing.assert_close(f2, feats)
    names = list(layer_norms(model))
    assert names[0] == "conv1" and names[-1] == "readout"
    assert any(isinstance(m, nn.BatchNorm2d) for m in model.modules()) == (norm == "batch")
    assert any(isinstance(m, nn.GroupNorm) for m in model.modules()) == (norm == "group")


@pytest.mark.parametrize("norm", ["batch", "none", "group"])
def test_resnet18_adapted_to_small_images(norm):
    model = ResNet18(10, norm=norm).eval()
    assert model.net.conv1.stride == (1, 1) and isinstance(model.net.maxpool, nn.Identity)
    x = torch.rand(2, 3, 16, 16)
    with torch.no_grad():
        feats = model.features(x)
        assert feats.shape == (2, 512)
        torch.testing.assert_close(model(x), model.readout(feats))
    has_bn = any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    has_gn = any(isinstance(m, nn.GroupNorm) for m in model.modules())
    assert (has_bn, has_gn) == (norm == "batch", norm == "group")


def test_bad_cnn_arguments():
    with pytest.raises(ValueError, match="'norm' parameter of SimpleCNN must be one of 'none', 'batch', 'group'. Got 'layer'"):
        SimpleCNN(10, norm="layer")
    with pytest.raises(ValueError, match="'channels' parameter of SimpleCNN must hold 6 ints"):
        SimpleCNN(10, channels=(8, 8))
    with pytest.raises(ValueError, match="'num_classes' parameter of ResNet18"):
        ResNet18(1)
