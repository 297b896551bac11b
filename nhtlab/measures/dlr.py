"""DLR, a label-free measure of dynamical richness, and the spectra behind it.

Nam et al. (ICLR 2026, arXiv 2410.04264) compare the kernel T = Σ_k Φ_k Φ_kᵀ of the p
penultimate features Φ with the *minimum projection* T_MP[u] = a₁⟨1|u⟩1 + a₂ P_Ĥ(u) onto
Ĥ, the span of the learned outputs f̂_1 … f̂_C (plus constants): DLR = 1 − CKA(T, T_MP).
DLR ≈ 0: the features are what the outputs need and nothing else ("rich"; neural
collapse is the special case); DLR ≈ 1: they carry much the outputs do not use ("lazy").
No labels and no accuracy enter.

Estimator (not the paper's appendix one). With Φ_c (n, p) and F_c (n, C) centred (which
removes a₁ and any output bias) and Q (n, r) an orthonormal basis of F_c's top r left
singular vectors:

    DLR = 1 − ‖QᵀΦ_c‖_F² / (‖Φ_cᵀΦ_c‖_F · √r) = 1 − f_in · √(PR / r),

f_in the share of feature energy inside the output span, PR = ‖Φ_c‖_F⁴ / ‖Φ_cᵀΦ_c‖_F²
the features' participation ratio. Nothing n × n is formed: O(n p (p + r) + n C²).

**The rank r decides the value.** C-class outputs are numerically full rank even when
the learned function lives in a few directions, so r = C counts noise as "learned
functions" and multiplies 1 − DLR by about √(r_true / C). ``rank`` chooses:
``"energy"`` (default, ``tol = 0.99``): the fewest directions holding ``tol`` of Σ s_i²;
``"relative"`` (``tol = 1e-2``): s_i > tol · s_max; ``"full"``: the numerical rank
(s_i > s_max · max(n, C) · ε of the outputs' dtype); an int: exactly that many.

Why ``"energy", 0.99``: the rule decides the story (with ``"full"`` DLR rises through
grokking, with thresholds it falls), so it is fixed by four properties that say nothing
about grokking, with pass thresholds (:data:`RULE_THRESHOLDS`) set before any rule was
scored, each pinned by a test (``tests/test_dlr_rank.py``,
``tests/test_lazy_rich_run.py``): (1) directions carrying 10⁻³ of the outputs'
energy change DLR by ≤ 0.01; (2) on outputs of known rank DLR equals its value at the
true r; (3) logits and class-centred log-probabilities agree; (4) on runs CKA-to-init
and NC1 call lazy or rich, lazy DLR exceeds rich by ≥ 0.2.
:func:`nhtlab.book.dlr_report.rule_properties` scores every rule; where several pass the
incumbent stays, the others give a band (:func:`nhtlab.book.dlr_report.rule_band`).
Caveats: the incumbent was first picked on MLP grokking runs (the properties could have
overturned it and did not), and (3) was restated with class-centred log-probabilities
after raw ones, which carry the log-sum-exp direction, failed every rule. Cost: a
collapsed network whose read-out gives a class direction < 1% of the output variance
gets DLR slightly above 0 (C = 10, one dropped: 1 − √(8/9) ≈ 0.06). Report the rule
with every DLR value.

DLR is invariant to scaling or rotating the features or the outputs and to an output
bias; to any invertible map of the outputs under ``"full"`` (under the other rules when
it keeps the same directions above the threshold). It is never NaN: constant features
or outputs, or no columns, raise a ValueError naming the argument (CKA would be 0/0); a
:class:`RuntimeWarning` marks n ≤ p (DLR then describes the sample: the centred features
span at most n − 1 directions) and outputs whose rank is within float rounding. Inputs
are rescaled by a power of two first (float64 at 1e±80, float32 at 1e±30 give the value at 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import warnings
from numbers import Integral
from typing import Any

import torch

from ..validation import require_int, require_real, require_tensor
from .cka import _ZERO_TOL, as_float64_matrix, centre, rescaled

__all__ = ["RANK_RULES", "DEFAULT_RANK", "DEFAULT_TOL", "DLRTerms", "output_rank", "dlr",
           "dlr_terms", "CANDIDATE_RULES", "RULE_THRESHOLDS"]

RANK_RULES = ("energy", "relative", "full")
DEFAULT_RANK = "energy"
DEFAULT_TOL = {"energy": 0.99, "relative": 1e-2}


def _check_rank(rank: Any, tol: float | None, owner: str) -> tuple[str | int, float | None]:
    if isinstance(rank, str):
        if rank not in RANK_RULES:
            raise ValueError(
                f"The 'rank' parameter of {owner} must be one of {', '.join(map(repr, RANK_RULES))} or a positive int. "
                f"Got {rank!r} instead."
            )
        if rank == "full":
            if tol is not None:
                raise ValueError(f"The 'tol' parameter of {owner} must be None when rank='full'. Got {tol!r} instead.")
            return rank, None
        tol = DEFAULT_TOL[rank] if tol is None else tol
        if rank == "energy":
            return rank, require_real(tol, "tol", 0.0, 1.0, low_open=True, owner=owner)
        return rank, require_real(tol, "tol", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
    if isinstance(rank, Integral) and not isinstance(rank, bool):
        if tol is not None:
            raise ValueError(f"The 'tol' parameter of {owner} must be None when rank is an int. Got {tol!r} instead.")
        return require_int(rank, "rank", low=1, owner=owner), None
    raise TypeError(
        f"The 'rank' parameter of {owner} must be one of {', '.join(map(repr, RANK_RULES))} or a positive int. "
        f"Got {rank!r} of type {type(rank).__name__} instead."
    )


def _eps(x: torch.Tensor) -> float:
    return torch.finfo(x.dtype).eps if x.is_floating_point() else torch.finfo(torch.float64).eps


def _numerical_rank(s: torch.Tensor, shape: Sequence[int], eps: float) -> int:
    if s.numel() == 0 or float(s[0]) == 0.0:
        return 0
    return int((s > float(s[0]) * max(shape) * eps).sum())


def _rank_from_rule(s: torch.Tensor, full: int, rank: str | int, tol: float | None, owner: str) -> int:
    if isinstance(rank, int):
        if rank > full:
            raise ValueError(
                f"The 'rank' parameter of {owner} asks for {rank} output directions, but the centred outputs "
                f"have numerical rank {full}."
            )
        return rank
    if rank == "full":
        return full
    s = s[:full]
    if rank == "relative":
        return max(1, int((s > tol * s[0]).sum()))
    energy = torch.cumsum(s.pow(2), 0)
    # fewest directions whose energy reaches tol (a tiny slack absorbs rounding at tol = 1)
    return min(full, int((energy < tol * energy[-1] * (1 - 1e-12)).sum()) + 1)


def output_rank(outputs: torch.Tensor, rank: str | int = DEFAULT_RANK, tol: float | None = None) -> int:
    """The r that ``rank``/``tol`` pick for these (n, C) outputs: 1 to their centred numerical rank."""
    owner = "output_rank"
    rank, tol = _check_rank(rank, tol, owner)
    require_tensor(outputs, "outputs", owner, half=False)
    f = as_float64_matrix(outputs, "outputs", owner)
    s = torch.linalg.svdvals(centre(f))
    full = _numerical_rank(s, f.shape, _eps(outputs))
    if full == 0:
        raise ValueError(f"The 'outputs' parameter of {owner} is constant across samples: the learned function space is empty.")
    return _rank_from_rule(s, full, rank, tol, owner)


@dataclass
class DLRTerms:
    """DLR and the numbers it is made of: DLR = 1 − f_in · √(PR / r).

    ``f_in``: share of the centred feature energy inside the r-dimensional output span;
    ``participation_ratio``: (Σρ)²/Σρ² of the feature covariance eigenvalues; ``full_rank``:
    what ``rank="full"`` would use; ``rule`` e.g. ``"energy 0.99"``.
    """

    dlr: float
    f_in: float
    participation_ratio: float
    rank: int
    full_rank: int
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _no_columns(x: Any, name: str, owner: str) -> None:
    if isinstance(x, torch.Tensor) and x.dim() >= 1 and x.shape[0] >= 2 and x.numel() == 0:
        raise ValueError(f"The {name!r} parameter of {owner} must have at least one column per sample. "
                         f"Got shape {tuple(x.shape)} instead (no {name} to compare).")


def _centred_pair(features: torch.Tensor, outputs: torch.Tensor, owner: str) -> tuple[torch.Tensor, torch.Tensor]:
    _no_columns(features, "features", owner)
    _no_columns(outputs, "outputs", owner)
    require_tensor(outputs, "outputs", owner, half=False)  # their dtype's rounding sets the output rank
    phi = rescaled(as_float64_matrix(features, "features", owner))  # DLR is scale-free: only the scale changes
    f = rescaled(as_float64_matrix(outputs, "outputs", owner))
    distinct = len(torch.unique(phi, dim=0)) if phi.shape[0] > phi.shape[1] else phi.shape[0]
    if 1 < distinct <= phi.shape[1]:  # repeated samples add no direction (one: constant, refused below)
        warnings.warn(
            f"{owner}: n = {distinct} {'distinct ' if distinct < phi.shape[0] else ''}samples ≤ p = {phi.shape[1]} features, so the centred features span "
            f"at most n − 1 = {distinct - 1} directions and DLR describes this sample, not the features: "
            f"measure on more samples than features.", RuntimeWarning, stacklevel=4)
    if phi.shape[0] != f.shape[0]:
        raise ValueError(
            f"The 'outputs' parameter of {owner} must have as many rows as 'features' ({phi.shape[0]}). Got {f.shape[0]} instead."
        )
    if f.device != phi.device:
        f = f.to(phi.device)
    phi_c, f_c = centre(phi), centre(f)
    top = float(f.abs().max())
    spread = float(f_c.abs().max()) / top if top > 0 else 0.0
    if 0.0 < spread < 1e3 * _eps(outputs):
        warnings.warn(
            f"{owner}: the outputs vary across samples by {spread:.1e} of their size, within 1e3 × the float "
            f"rounding of {outputs.dtype} ({_eps(outputs):.1e}): their rank, and so the output span, cannot be "
            f"resolved from rounding.", RuntimeWarning, stacklevel=4)
    if float(phi_c.abs().max()) <= _ZERO_TOL * max(float(phi.abs().max()), 1e-300):
        raise ValueError(
            f"The 'features' parameter of {owner} is constant across samples: the feature kernel is 0 and DLR is undefined."
        )
    return phi_c, f_c


class _Prepared:
    """The rule-independent pieces of DLR for one (features, outputs) pair, computed once."""

    def __init__(self, features: torch.Tensor, outputs: torch.Tensor, owner: str):
        phi_c, f_c = _centred_pair(features, outputs, owner)
        self.u, self.s, _ = torch.linalg.svd(f_c, full_matrices=False)  # u (n, min(n, C)), s descending
        self.full = _numerical_rank(self.s, f_c.shape, _eps(outputs))
        if self.full == 0:
            raise ValueError(
                f"The 'outputs' parameter of {owner} is constant across samples: the learned function space Ĥ is "
                "only the constants, so T_MP is 0 after centring and DLR is undefined."
            )
        self.phi_c = phi_c
        self.energy = torch.linalg.matrix_norm(phi_c) ** 2  # ‖Φ_c‖_F² = tr K
        self.kernel_norm = torch.linalg.matrix_norm(phi_c.T @ phi_c)  # ‖Φ_cᵀΦ_c‖_F = ‖K‖_F, (p, p) product
        self.owner = owner

    def terms(self, rank: str | int, tol: float | None) -> DLRTerms:
        r = _rank_from_rule(self.s, self.full, rank, tol, self.owner)
        q = self.u[:, :r]  # (n, r) orthonormal basis of the output span
        inside = torch.linalg.matrix_norm(q.T @ self.phi_c) ** 2  # ‖QᵀΦ_c‖_F²
        cka = float(inside / (self.kernel_norm * r ** 0.5))
        return DLRTerms(
            dlr=min(1.0, max(0.0, 1.0 - cka)),
            f_in=float(inside / self.energy),
            participation_ratio=float(self.energy ** 2 / self.kernel_norm ** 2),
            rank=r,
            full_rank=self.full,
            rule=f"{rank} {tol:g}" if tol is not None else str(rank),
        )


def dlr_terms(
    features: torch.Tensor, outputs: torch.Tensor, rank: str | int = DEFAULT_RANK, tol: float | None = None
) -> DLRTerms:
    """DLR = 1 − CKA(T, T_MP) with its decomposition; see :func:`dlr`."""
    rank, tol = _check_rank(rank, tol, "dlr")
    return _Prepared(features, outputs, "dlr").terms(rank, tol)


def dlr(features: torch.Tensor, outputs: torch.Tensor, rank: str | int = DEFAULT_RANK, tol: float | None = None) -> float:
    """Dynamical low-rank measure DLR = 1 − CKA(T, T_MP), from features and outputs only (no labels).

    Parameters
    ----------
    features : Tensor, shape (n, p)
        Penultimate features Φ(x) (see :func:`nhtlab.measures.features.capture`).
    outputs : Tensor, shape (n, C)
        The learned functions f̂(x) on the same samples (logits).
    rank : {"energy", "relative", "full"} or int
        How the dimension r of the output span is chosen (module docstring).
    tol : float, optional
        The rule's threshold (0.99 energy, 1e-2 relative); None for ``"full"`` and int ranks.

    Returns
    -------
    float in [0, 1]
        0 when the feature kernel is a multiple of the projection onto the output span (rich),
        near 1 when the features spread over directions the outputs ignore (lazy). For random
        Gaussian features unrelated to the outputs, 1 − DLR ≈ √(r p / (n (n + p))).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.randn(200, 3, generator=g, dtype=torch.float64)
    >>> q, _ = torch.linalg.qr(z - z.mean(0))       # 3 centred orthonormal features...
    >>> outputs = q @ torch.randn(3, 5, generator=g, dtype=torch.float64)  # ...spanning the outputs
    >>> round(dlr(q, outputs, rank="full"), 6)
    0.0
    >>> dlr(torch.randn(200, 50, generator=g), outputs) > 0.8  # unrelated random features: lazy
    True
    """
    return dlr_terms(features, outputs, rank, tol).dlr


# ---------------------------------------------------------------------------
# The evidence behind the default rank rule: properties stated in advance.

#: The rules compared when the default was chosen (name → (rank, tol)).
CANDIDATE_RULES: dict[str, tuple[str | int, float | None]] = {
    "energy 0.9": ("energy", 0.9), "energy 0.99": ("energy", 0.99), "energy 0.999": ("energy", 0.999),
    "relative 1e-1": ("relative", 0.1), "relative 1e-2": ("relative", 1e-2), "full": ("full", None),
}

#: Pass thresholds of the properties, fixed before any rule was scored on them.
RULE_THRESHOLDS = {"noise": 0.01, "known_rank": 0.01, "log_probs": 0.03}
