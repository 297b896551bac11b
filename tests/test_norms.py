import pytest
import torch
import torch.nn as nn

from nhtlab.models import EmbeddingMLP, Transformer
from nhtlab.measures.norms import layer_names, layer_norms, total_norm


def hand_built() -> nn.Module:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1, bias=False))
    with torch.no_grad():
        model[0].weight.fill_(1.0)   # 6 entries of 1 → 6
        model[0].bias.fill_(2.0)     # 2 entries of 2 → 8
        model[2].weight.fill_(3.0)   # 2 entries of 3 → 18
    return model


def test_known_values_grouped_by_module():
    model = hand_built()
    assert layer_norms(model) == {"0": 14.0, "2": 18.0}
    assert total_norm(model) == 32.0
    assert layer_names(model) == ["0", "2"]


def test_layers_add_up_to_total_on_real_models():
    torch.manual_seed(0)
    for model in (EmbeddingMLP(7, width=16, depth=2), Transformer(7, d_model=16, n_heads=2, d_ff=32)):
        per_layer = layer_norms(model)
        assert sum(per_layer.values()) == pytest.approx(total_norm(model), rel=1e-12)
        assert "readout" in per_layer


def test_scaling_weights_scales_norm_quadratically():
    model = hand_built()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    assert total_norm(model) == 4 * 32.0


def test_rejects_non_modules():
    with pytest.raises(TypeError, match="'model' parameter of total_norm must be of type Module"):
        total_norm([1, 2])
