"""Spectra of the penultimate features: eigenpairs of the feature covariance,
Nyström eigenfunctions, and the cumulative quality and utilisation curves
(Nam et al., ICLR 2026) that DLR summarises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..validation import require_int, require_type
from .cka import _ZERO_TOL, as_float64_matrix, centre, rescaled

__all__ = ["Spectrum", "participation_ratio", "feature_spectrum", "eigenfunctions"]


def participation_ratio(features: torch.Tensor) -> float:
    """(Σρ_k)² / Σρ_k² of the feature covariance: 1 for one direction, p for isotropic features."""
    phi_c = centre(rescaled(as_float64_matrix(features, "features", "participation_ratio")))  # scale-free
    energy = torch.linalg.matrix_norm(phi_c) ** 2
    if float(energy) == 0.0:
        raise ValueError("The 'features' parameter of participation_ratio is constant across samples.")
    return float(energy ** 2 / torch.linalg.matrix_norm(phi_c.T @ phi_c) ** 2)


def _eigen(phi_c: torch.Tensor, top: int | None, rel_tol: float) -> tuple[torch.Tensor, torch.Tensor]:
    n = phi_c.shape[0]
    rho, v = torch.linalg.eigh(phi_c.T @ phi_c / n)  # ascending, (p,), (p, p)
    rho, v = rho.flip(0), v.flip(1)
    keep = rho > rel_tol * rho[0]
    rho, v = rho[keep], v[:, keep]
    if top is not None:
        rho, v = rho[:top], v[:, :top]
    return rho, v


def eigenfunctions(features: torch.Tensor, top: int | None = None, at: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues ρ_k (descending, float64) of the feature covariance and Nyström eigenfunctions e_k.

    With Σ = Φ_cᵀΦ_c / n = Σ_k ρ_k v_k v_kᵀ, e_k(x) = (Φ(x) − μ)ᵀ v_k / √ρ_k, orthonormal in
    the sample mean. Directions with ρ_k ≤ 1e-12 ρ_1 (rank-deficient features) have no
    eigenfunction and are dropped. ``at`` (m, p): features of other inputs to evaluate e_k
    at (the Nyström extension); default the n samples.
    """
    owner = "eigenfunctions"
    phi = as_float64_matrix(features, "features", owner)
    mean = phi.mean(0, keepdim=True)
    phi_c = phi - mean
    if float(phi_c.abs().max()) <= _ZERO_TOL * max(float(phi.abs().max()), 1e-300):
        raise ValueError(f"The 'features' parameter of {owner} is constant across samples: no eigenfunction exists.")
    if top is not None:
        require_int(top, "top", low=1, owner=owner)
    rho, v = _eigen(phi_c, top, 1e-12)
    if at is not None:
        require_type(at, "at", torch.Tensor, owner=owner)
        if at.dim() < 2 or at[0].numel() != phi.shape[1]:  # one sample given as a vector would broadcast
            raise ValueError(f"The 'at' parameter of {owner} must be a matrix (m, {phi.shape[1]}): one row of "
                             f"features per input. Got shape {tuple(at.shape)}; several inputs are at[:m].")
    points = phi_c if at is None else as_float64_matrix(at, "at", owner).to(phi.device) - mean
    return rho, points @ v / rho.sqrt()


def _as_target(target: torch.Tensor, n: int, device: torch.device, owner: str) -> torch.Tensor:
    require_type(target, "target", torch.Tensor, owner=owner)
    if target.dim() == 1 and not target.is_floating_point():
        target = torch.nn.functional.one_hot(target.long()).to(torch.float64)  # labels → one-hot (n, C)
    y = as_float64_matrix(target, "target", owner).to(device)
    if y.shape[0] != n:
        raise ValueError(f"The 'target' parameter of {owner} must have {n} rows. Got {y.shape[0]} instead.")
    return y


def cumulative_share(e: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Π(k): share of the centred target's energy expressed by the first k eigenfunctions.

    Π(k) = Σ_{j ≤ k} ‖(1/n) e_jᵀ Y_c‖² / ((1/n) ‖Y_c‖_F²) rises to the share of the target
    inside the feature span (1 for a linear function of the features, as the learned
    outputs are). Integer labels (n,) are one-hot encoded; a constant target raises.
    """
    owner = "cumulative_share"
    e = as_float64_matrix(e, "e", owner)
    y_c = centre(_as_target(target, e.shape[0], e.device, owner))
    total = float((y_c ** 2).sum())
    if total == 0.0:
        raise ValueError(f"The 'target' parameter of {owner} is constant across samples: it has no energy to share.")
    n = e.shape[0]
    coef = e.T @ y_c / n  # (k, q)
    return torch.cumsum(coef.pow(2).sum(1), 0) / (total / n)


@dataclass
class Spectrum:
    """The spectral picture of one set of features (Nam et al., section on visualisation).

    ``relative`` is ρ_k / ρ_1; ``quality`` the cumulative Π*(k) of the target and
    ``utilisation`` Π̂(k) of the learned outputs (None when not given).
    """

    eigenvalues: np.ndarray
    relative: np.ndarray
    quality: np.ndarray | None = None
    utilisation: np.ndarray | None = None

    def to_records(self, **constants: Any) -> list[dict[str, Any]]:
        """One dict per k (1-based): ``k``, ``relative``, ``quality``, ``utilisation`` and ``constants``."""
        rows = []
        for i in range(len(self.eigenvalues)):
            row = {"k": i + 1, "eigenvalue": float(self.eigenvalues[i]), "relative": float(self.relative[i])}
            if self.quality is not None:
                row["quality"] = float(self.quality[i])
            if self.utilisation is not None:
                row["utilisation"] = float(self.utilisation[i])
            rows.append({**row, **constants})
        return rows


def feature_spectrum(
    features: torch.Tensor,
    outputs: torch.Tensor | None = None,
    target: torch.Tensor | None = None,
    top: int | None = None,
) -> Spectrum:
    """Eigenvalues of the feature covariance with cumulative quality (``target``) and utilisation (``outputs``)."""
    rho, e = eigenfunctions(features, top=top)
    quality = None if target is None else cumulative_share(e, target).cpu().numpy()
    utilisation = None if outputs is None else cumulative_share(e, outputs).cpu().numpy()
    rho_np = rho.cpu().numpy()
    return Spectrum(rho_np, rho_np / rho_np[0], quality, utilisation)

