"""Neural collapse NC1: within-class variability relative to between-class spread.

Papyan, Han & Donoho (2020): for features h_i with labels y_i among C classes, class
means μ_c, global mean μ_G and ⁺ the Moore–Penrose inverse,

    Σ_W = (1/n) Σ_i (h_i − μ_{y_i})(h_i − μ_{y_i})ᵀ,   Σ_B = (1/C) Σ_c (μ_c − μ_G)(μ_c − μ_G)ᵀ,
    NC1 = tr(Σ_W Σ_B⁺) / C.

NC1 → 0 as every sample collapses onto its class mean. Unlike DLR it needs labels and is
unbounded above: scale-free, but within-class noise where class means barely differ
blows it up. No p × p matrix is formed: with [μ_c − μ_G] = U S Vᵀ (thin SVD),
NC1 = Σ_j (u_jᵀ Σ_W u_j) / s_j² over the non-zero s_j. Cost O(n p C), float64.
"""

from __future__ import annotations

import torch

from ..validation import require_type
from .cka import _ZERO_TOL, as_float64_matrix, rescaled

__all__ = ["nc1"]


def nc1(features: torch.Tensor, labels: torch.Tensor) -> float:
    """NC1 = tr(Σ_W Σ_B⁺) / C over the classes present in ``labels`` (any integers): ≥ 0, 0 when collapsed.

    Fewer than two classes, or class means that all coincide (Σ_B = 0), raise ValueError.

    >>> means = torch.eye(3)
    >>> labels = torch.tensor([0, 1, 2, 0, 1, 2])
    >>> nc1(means[labels], labels)
    0.0
    """
    owner = "nc1"
    phi = rescaled(as_float64_matrix(features, "features", owner))  # NC1 is scale-free
    require_type(labels, "labels", torch.Tensor, owner=owner)
    if labels.dim() != 1 or labels.shape[0] != phi.shape[0] or labels.is_floating_point():
        raise ValueError(
            f"The 'labels' parameter of {owner} must be an integer tensor of shape ({phi.shape[0]},). "
            f"Got {labels.dtype} of shape {tuple(labels.shape)} instead."
        )
    classes, index = torch.unique(labels.to(phi.device), return_inverse=True)
    c = len(classes)
    if c < 2:
        raise ValueError(f"The 'labels' parameter of {owner} must hold at least 2 classes. Got {c}.")
    counts = torch.bincount(index, minlength=c).to(torch.float64)  # (C,)
    sums = torch.zeros(c, phi.shape[1], dtype=torch.float64, device=phi.device).index_add_(0, index, phi)
    means = sums / counts[:, None]  # (C, p)
    global_mean = phi.mean(dim=0)  # (p,)
    between = (means - global_mean).T  # (p, C), columns μ_c − μ_G
    u, s, _ = torch.linalg.svd(between, full_matrices=False)  # u (p, C), s (C,)
    eps = torch.finfo(features.dtype if features.is_floating_point() else torch.float64).eps
    # a direction of Σ_B within the rounding of the features themselves is no direction (phi's entries are below 1)
    tol = max(float(s.max()), float(phi.abs().max())) * max(between.shape) * eps
    keep = s > tol
    # class means within rounding of each other (phi is rescaled to entries below 1): Σ_B is 0 at any scale
    if not bool(keep.any()) or float(s.max()) <= _ZERO_TOL * float(phi.abs().max()):
        raise ValueError(f"The class means given to {owner} all coincide (Σ_B = 0): NC1 is undefined.")
    u, s = u[:, keep], s[keep]
    within = phi - means[index]  # (n, p), h_i − μ_{y_i}
    # u_jᵀ Σ_W u_j = ‖within · u_j‖² / n; Σ_B⁺ = C U S⁻² Uᵀ because Σ_B = U S² Uᵀ / C.
    spread = (within @ u).pow(2).sum(dim=0) / phi.shape[0]  # (r,)
    return float((spread / s.pow(2)).sum())
