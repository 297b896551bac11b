"""The Fourier view of a model on Z_p: how its token embedding's power spreads over the frequencies of Z_p.

A transformer that has grokked modular addition embeds token a through cos(2πka/p) and sin(2πka/p) at a
few *key frequencies* k (Nanda et al., 2023). The spectrum here is the DFT of the token embedding
E (p × d) along the token axis, its power summed over the d dimensions, frequency k merged with p − k
(the same power for a real E): it sums to ‖E‖² (Parseval) and a rotation E → EQ leaves it unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validation import require_int, require_type

__all__ = [
    "KEY_FREQUENCIES",
    "fourier_columns",
    "fourier_rows",
    "fourier_share",
    "fourier_spectrum",
    "key_frequencies",
    "token_embedding",
]

#: K, fixed before any run: Nanda et al. (2023) read 5 key frequencies in their grokked transformer (p = 113).
KEY_FREQUENCIES = 5


def fourier_spectrum(embedding: torch.Tensor) -> torch.Tensor:
    """Power of ``embedding`` (…, p, d) at k = 0 … p//2, shape (…, p//2 + 1), float64; sums to ‖E‖²."""
    require_type(embedding, "embedding", torch.Tensor, owner="fourier_spectrum")
    if embedding.ndim < 2 or embedding.shape[-2] < 2 or embedding.is_complex():
        raise ValueError(f"The 'embedding' parameter of fourier_spectrum must be a real (…, p, d) tensor with p ≥ 2 "
                         f"tokens on its second-last axis. Got shape {tuple(embedding.shape)} instead.")
    p = embedding.shape[-2]
    power = torch.fft.rfft(embedding.detach().double(), dim=-2).abs().pow(2).sum(-1) / p
    power[..., 1:(p + 1) // 2] *= 2  # k and p − k; an even p's k = p/2 has no partner
    return power


def _top(spectrum: torch.Tensor, top: int, owner: str) -> torch.Tensor:
    require_type(spectrum, "spectrum", torch.Tensor, owner=owner)
    if spectrum.ndim < 1 or spectrum.shape[-1] < 2:
        raise ValueError(f"The 'spectrum' parameter of {owner} must hold k = 0 … p//2 on its last axis "
                         f"(fourier_spectrum). Got shape {tuple(spectrum.shape)} instead.")
    require_int(top, "top", low=1, high=spectrum.shape[-1] - 1, owner=owner)
    return spectrum[..., 1:].topk(top, dim=-1)  # the constant k = 0 says nothing about which token it is


def key_frequencies(spectrum: torch.Tensor, top: int = KEY_FREQUENCIES) -> list[int]:
    """The ``top`` non-constant frequencies of a 1-d spectrum, strongest first."""
    require_type(spectrum, "spectrum", torch.Tensor, owner="key_frequencies")
    if spectrum.dim() != 1:  # a batch would be read from its first row alone
        raise ValueError(f"The 'spectrum' parameter of key_frequencies must be one spectrum (1-d). Got shape "
                         f"{tuple(spectrum.shape)}; call it once per row.")
    return [int(k) + 1 for k in _top(spectrum, top, "key_frequencies").indices.reshape(-1)[:top]]


def fourier_share(spectrum: torch.Tensor, top: int = KEY_FREQUENCIES) -> torch.Tensor:
    """Share of the non-constant power in the ``top`` strongest frequencies: 1 for a pure cosine, ≈ top/(p//2) when
    the power is spread evenly (a random embedding of many dimensions); NaN for a constant embedding. Shape: the
    spectrum's, less its last axis."""
    return _top(spectrum, top, "fourier_share").values.sum(-1) / spectrum[..., 1:].sum(-1)


def token_embedding(params: nn.Module | dict[str, torch.Tensor], names: tuple[str, ...]) -> torch.Tensor:
    """The token embedding (…, p, d) of a model (or of ``{name: (R, …)}`` stacked parameters): the tables
    ``names`` (a model's ``token_embeddings``) side by side, as one linear map of the one-hot token."""
    tables = dict(params.named_parameters()) if isinstance(params, nn.Module) else params
    return torch.cat([tables[name].detach() for name in names], dim=-1)


def fourier_columns(spectrum: torch.Tensor) -> dict[str, float]:
    """A 1-d spectrum as history columns: ``fourier`` (:func:`fourier_share`, K capped at p//2) and ``fourier/<k>``."""
    share = fourier_share(spectrum, min(KEY_FREQUENCIES, len(spectrum) - 1))
    return {"fourier": float(share), **{f"fourier/{k}": float(v) for k, v in enumerate(spectrum)}}


def fourier_rows(params: nn.Module | dict[str, torch.Tensor], names: tuple[str, ...]) -> list[dict[str, float]]:
    """The Fourier history columns (:func:`fourier_columns`) of a model's token tables ``names``: one dict, or
    one per run of ``{name: (R, …)}`` stacked parameters."""
    spectrum = fourier_spectrum(token_embedding(params, names))
    return [fourier_columns(s) for s in spectrum.reshape(-1, spectrum.shape[-1])]
