"""Centred linear CKA (Kornblith et al. 2019), computed in feature space.

For column-centred X (n, p), Y (n, q) with Gram matrices K = XXᵀ, L = YYᵀ:

    CKA(X, Y) = ⟨K, L⟩_F / (‖K‖_F ‖L‖_F) = ‖YᵀX‖_F² / (‖XᵀX‖_F ‖YᵀY‖_F).

The right-hand side never forms an n × n matrix (O(n·(p² + pq + q²)) time, O(p² + q²)
memory), so it runs on tens of thousands of samples where the Gram form
(:func:`linear_cka_gram`, the reference for tests) needs n². Sums are in float64.
CKA is invariant to isotropic scaling and orthogonal transforms, lies in [0, 1] and is 1
when X = Y. It is *not* 0 for independent random features at finite n: for i.i.d.
Gaussian X, Y it is about √(p q / ((n + p)(n + q))), ≈ √(pq)/n when p, q ≪ n.
"""

from __future__ import annotations

import math

import torch

from ..validation import require_tensor

__all__ = ["centre", "linear_cka", "linear_cka_gram", "as_float64_matrix", "rescaled"]

# Relative size below which a centred matrix counts as zero (constant columns).
_ZERO_TOL = 1e-12


def as_float64_matrix(x: torch.Tensor, name: str, owner: str) -> torch.Tensor:
    """``x`` as a float64 (n, d) matrix (trailing dims flattened), on its own device: ≥ 2 rows, finite."""
    require_tensor(x, name, owner=owner)  # complex or meta: the cast below would drop the imaginary part, or fail
    if x.dim() == 1:
        x = x[:, None]
    if x.dim() == 0 or x.shape[0] < 2:
        raise ValueError(
            f"The {name!r} parameter of {owner} must have at least 2 rows (samples). Got shape {tuple(x.shape)} instead."
        )
    x = x.reshape(x.shape[0], -1).to(torch.float64)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"The {name!r} parameter of {owner} must be finite. Got NaN or inf entries.")
    return x


def rescaled(x: torch.Tensor) -> torch.Tensor:
    """``x`` divided by the power of two nearest its largest entry: exact, and no later sum of products overflows.

    Every later rounding is the same as on ``x``, whether it is 1e-200 or 1e200. A measure
    invariant to the inputs' scale (CKA, DLR, the participation ratio, NC1) calls it first.

    >>> rescaled(torch.tensor([3.0, -0.5], dtype=torch.float64)).tolist()
    [0.75, -0.125]
    """
    top = float(x.abs().max()) if x.numel() else 0.0
    if top == 0.0 or not math.isfinite(top):
        return x
    return x * 2.0 ** -math.frexp(top)[1]


def _paired_matrices(x: torch.Tensor, y: torch.Tensor, owner: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` and ``y`` as float64 matrices with the same number of rows (samples), as both CKA forms need them."""
    # CKA is scale-free: only the scale changes, and ‖YᵀX‖² neither overflows nor underflows
    x64, y64 = rescaled(as_float64_matrix(x, "x", owner)), rescaled(as_float64_matrix(y, "y", owner))
    if x64.shape[0] != y64.shape[0]:
        raise ValueError(
            f"The 'y' parameter of {owner} must have as many rows as 'x' ({x64.shape[0]}). Got {y64.shape[0]} instead."
        )
    return x64, y64


def centre(x: torch.Tensor) -> torch.Tensor:
    """Subtract the column means: x (n, d) → x − 1 μᵀ, in float64."""
    x = x.to(torch.float64)
    return x - x.mean(dim=0, keepdim=True)


def _check_not_constant(xc: torch.Tensor, x: torch.Tensor, name: str, owner: str) -> None:
    scale = float(x.abs().max()) if x.numel() else 0.0
    if float(xc.abs().max()) <= _ZERO_TOL * max(scale, 1e-300):
        raise ValueError(
            f"The {name!r} parameter of {owner} is constant across samples (zero variance after centring): "
            "its centred kernel is 0 and CKA is undefined."
        )


def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Centred linear CKA of two representations of the same n samples, in O(n p²).

    Parameters
    ----------
    x : Tensor, shape (n, p)
        Trailing dimensions are flattened.
    y : Tensor, shape (n, q)
        Same n and same device.

    Returns
    -------
    float in [0, 1]
        A constant input (centred kernel zero, CKA 0/0) raises ValueError.

    Examples
    --------
    >>> x = torch.randn(100, 5, generator=torch.Generator().manual_seed(0))
    >>> round(linear_cka(x, 3.0 * x), 12)
    1.0
    """
    owner = "linear_cka"
    x64, y64 = _paired_matrices(x, y, owner)
    xc, yc = centre(x64), centre(y64)
    _check_not_constant(xc, x64, "x", owner)
    _check_not_constant(yc, y64, "y", owner)
    cross = torch.linalg.matrix_norm(yc.T @ xc) ** 2  # ‖YᵀX‖_F², (q, p) product
    norm_x = torch.linalg.matrix_norm(xc.T @ xc)  # ‖XᵀX‖_F = ‖K‖_F
    norm_y = torch.linalg.matrix_norm(yc.T @ yc)
    return float(min(1.0, max(0.0, float(cross / (norm_x * norm_y)))))


def _double_centre(k: torch.Tensor) -> torch.Tensor:
    """HKH for a symmetric (n, n) K, in place, without forming H: K − row means − column means + grand mean."""
    row = k.mean(dim=1, keepdim=True)  # (n, 1); column means are the same by symmetry
    k -= row
    k -= row.T
    k += row.mean()
    return k


def linear_cka_gram(x: torch.Tensor, y: torch.Tensor) -> float:
    """Reference CKA through the n × n Gram matrices: ⟨HKH, HLH⟩ / (‖HKH‖ ‖HLH‖).

    K and L are formed on the raw inputs and double-centred, so this path shares no algebra
    with :func:`linear_cka`. O(n²) memory: for tests and benchmarks only.
    """
    owner = "linear_cka_gram"
    x64, y64 = _paired_matrices(x, y, owner)
    k = _double_centre(x64 @ x64.T)  # HKH with H = I − 11ᵀ/n, (n, n)
    l = _double_centre(y64 @ y64.T)  # HLH, (n, n)
    norm_k, norm_l = torch.linalg.matrix_norm(k), torch.linalg.matrix_norm(l)
    if float(norm_k) == 0.0 or float(norm_l) == 0.0:
        raise ValueError(f"An input of {owner} is constant across samples: CKA is undefined.")
    return float((k * l).sum() / (norm_k * norm_l))
