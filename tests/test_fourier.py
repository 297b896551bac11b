"""The Fourier view of a token embedding: closed forms, invariances, named errors, and its columns in a run."""

import math

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.measures.fourier import (
    KEY_FREQUENCIES,
    fourier_share,
    fourier_spectrum,
    key_frequencies,
    token_embedding,
)
from nhtlab.models import Transformer
from nhtlab.training.batched import train_batched


def cosine_embedding(p: int, k: int, d: int = 8) -> torch.Tensor:
    """E[t, j] = a_j cos(2πkt/p + φ_j): every dimension a wave of frequency k, with its own amplitude and phase."""
    g = torch.Generator().manual_seed(0)
    t = torch.arange(p, dtype=torch.float64)[:, None]
    return torch.rand(d, generator=g, dtype=torch.float64) * torch.cos(
        2 * math.pi * k * t / p + 6 * torch.rand(d, generator=g, dtype=torch.float64))


@pytest.mark.parametrize("p, k", [(97, 7), (97, 90), (12, 6), (12, 1)])
def test_a_pure_cosine_has_all_its_power_at_its_frequency(p, k):
    spectrum = fourier_spectrum(cosine_embedding(p, k))
    merged = min(k, p - k)  # k and p − k are one frequency of a real embedding
    assert len(spectrum) == p // 2 + 1 and key_frequencies(spectrum, 1) == [merged]
    assert spectrum.sum() == pytest.approx(float(cosine_embedding(p, k).pow(2).sum()), rel=1e-12)  # Parseval
    assert float(spectrum[merged]) == pytest.approx(float(spectrum.sum()), rel=1e-12)
    assert float(fourier_share(spectrum, 1)) == pytest.approx(1.0, abs=1e-12)


def test_a_random_embedding_spreads_its_power_evenly():
    """Gaussian entries: each frequency holds about 1/(p//2) of the non-constant power; with 4,096 dimensions a
    frequency's power varies by about 1.6% around that, so the top K hold K/(p//2) within 10% (seed 0)."""
    p = 97
    spectrum = fourier_spectrum(torch.randn(p, 4096, generator=torch.Generator().manual_seed(0)))
    share = float(fourier_share(spectrum))
    assert share == pytest.approx(KEY_FREQUENCIES / (p // 2), rel=0.10)
    assert share >= KEY_FREQUENCIES / (p // 2)  # the top K can never hold less than an even share


def test_the_spectrum_is_unchanged_by_a_rotation_of_the_embedding_space():
    g = torch.Generator().manual_seed(1)
    embedding = torch.randn(31, 16, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=torch.float64))
    assert torch.allclose(fourier_spectrum(embedding @ q), fourier_spectrum(embedding), rtol=1e-10, atol=1e-12)
    stacked = torch.stack([embedding, embedding @ q])  # (R, p, d): one spectrum per run
    assert torch.allclose(*fourier_spectrum(stacked), rtol=1e-10) and fourier_share(fourier_spectrum(stacked)).shape == (2,)


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="'embedding'"):
        fourier_spectrum(np.ones((7, 3)))
    with pytest.raises(ValueError, match="'embedding'"):
        fourier_spectrum(torch.ones(7))
    spectrum = fourier_spectrum(torch.randn(11, 3))
    with pytest.raises(ValueError, match="'top'"):
        fourier_share(spectrum, 0)
    with pytest.raises(ValueError, match="'top'"):
        key_frequencies(spectrum, 6)  # p = 11 has 5 non-constant frequencies
    with pytest.raises(ValueError, match="'spectrum'"):
        fourier_share(torch.ones(1))


RUN = nhtlab.ModularRun(p=13, model="transformer", model_kwargs={"d_model": 16, "n_heads": 2, "d_ff": 32}, steps=40,
                        eval_every=20, batch_size=32, device="cpu")


def test_runs_record_the_share_and_the_spectrum_at_every_evaluation():
    history = nhtlab.run_modular(RUN)
    model = history.model
    assert np.isfinite(history["fourier"]).all() and len(history["fourier"]) == len(history)
    assert sum(history.rows[-1][f"fourier/{k}"] for k in range(13 // 2 + 1)) == pytest.approx(
        history.rows[-1]["norm/tok"], rel=1e-9)
    assert history.rows[-1]["fourier"] == pytest.approx(
        float(fourier_share(fourier_spectrum(token_embedding(model, model.token_embeddings)))), rel=1e-12)
    stacked = train_batched([RUN, RUN.replace(seed=1)])[0]
    assert stacked["fourier"] == pytest.approx(history["fourier"], rel=1e-4)
    mlp = nhtlab.run_modular(nhtlab.ModularRun(p=7, steps=20, eval_every=10, device="cpu"))  # p//2 = 3 < K
    assert np.isfinite(mlp["fourier"]).all() and "fourier/3" in mlp.columns


def test_the_cache_key_names_the_recorded_columns():
    """A run cached before the Fourier columns existed had the plain dict as key: it is trained again."""
    assert RUN.cache_config() == {**RUN.to_dict(), "records": ["fourier"]}


def test_embed_init_scale_scales_only_the_embeddings_and_defaults_to_the_same_numbers():
    torch.manual_seed(0)
    plain = Transformer(11, d_model=16, n_heads=2, d_ff=32)
    torch.manual_seed(0)
    small = Transformer(11, d_model=16, n_heads=2, d_ff=32, embed_init_scale=0.1)
    for (name, a), b in zip(plain.named_parameters(), small.parameters()):
        assert torch.equal(b, a * 0.1 if name in ("tok.weight", "pos.weight") else a), name
    assert "embed_init_scale" not in nhtlab.ModularRun(model="transformer", model_kwargs={"embed_init_scale": 1.0}).model_kwargs
    with pytest.raises(ValueError, match="'embed_init_scale'"):
        Transformer(11, embed_init_scale=0.0)
