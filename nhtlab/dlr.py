"""DLR, a label-free measure of dynamical richness, and the spectra behind it.

Nam et al. (ICLR 2026, arXiv 2410.04264) compare two kernels on the data:

* T = Σ_k Φ_k Φ_kᵀ (the sum of outer products), the kernel of the p penultimate features Φ;
* T_MP[u] = a₁⟨1|u⟩1 + a₂ P_Ĥ(u), the *minimum projection* onto Ĥ, the span of
  the learned output functions f̂_1 … f̂_C (plus constants),

and define DLR = 1 − CKA(T, T_MP). DLR ≈ 0 means the features are exactly what
the outputs need and nothing else ("rich"; neural collapse is the special case);
DLR ≈ 1 means the features carry much that the outputs do not use ("lazy").
No labels and no accuracy enter.

Estimator (the paper's appendix estimator is not reproduced here; this one is
documented in full). On n samples let Φ_c (n, p) be the centred features, F_c
(n, C) the centred outputs and Q (n, r) an orthonormal basis of the span of
F_c's top r left singular vectors. Centring removes the a₁ term, and an output
bias drops out. With K = Φ_cΦ_cᵀ and L = QQᵀ (a projection),

    DLR = 1 − ‖QᵀΦ_c‖_F² / (‖Φ_cᵀΦ_c‖_F · √r) = 1 − f_in · √(PR / r),

where f_in = ‖QᵀΦ_c‖²/‖Φ_c‖² is the share of feature energy inside the output
span and PR = ‖Φ_c‖_F⁴ / ‖Φ_cᵀΦ_c‖_F² the participation ratio (effective rank)
of the features. Nothing n × n is formed: cost O(n p (p + r) + n C²).

**The rank r decides the value.** A C-class output matrix is numerically full
rank even when the learned function lives in a few directions, so taking r = C
counts noise directions as "learned functions" and multiplies 1 − DLR by about
√(r_true / C).
``rank`` makes the choice explicit:

* ``"energy"`` (default, ``tol = 0.99``): the fewest directions holding a
  fraction ``tol`` of the centred outputs' energy Σ s_i²;
* ``"relative"`` (``tol = 1e-2``): directions with s_i > tol · s_max;
* ``"full"``: the numerical rank (s_i > s_max · max(n, C) · ε of the outputs' dtype);
* an int: exactly that many directions.

Why ``"energy", 0.99`` is the default (measured in the chapter "DLR: richness
without accuracy"; two-hidden-layer embedding MLP grokking (a + b) mod 47, DLR at
memorisation → after grokking): energy 0.9: 0.20 → 0.05, energy 0.99: 0.20 → 0.07,
energy 0.999: 0.21 → 0.14, relative 1e-1: 0.21 → 0.10, relative 1e-2: 0.22 → 0.24,
full: 0.22 → 0.38. Grokking compresses the features (participation ratio 52 → 18);
``"full"`` keeps r = 47 regardless, so it reports the network as getting *lazier*;
relative thresholds swing with the threshold; energy fractions 0.9–0.99 agree within
0.03, and at 0.99 the final r (19) matches the features' participation ratio (18),
as T = T_MP requires. An offline run of the paper's architecture (2-layer
transformer, (a + b) mod 47, batch 512, one seed; not re-run by the book) agrees:
from T_mem (step 250) to T_grok (step 3500) energy 0.99 gives 0.19 → 0.06 and
energy 0.9 0.10 → 0.07, while relative 1e-2 gives 0.29 → 0.40 and full 0.29 → 0.50
(PR 29 → 12). Its cost: a neurally collapsed network whose read-out gives
some class direction less than 1% of the output variance gets a DLR slightly
above 0 (C = 10, one direction dropped: 1 − √(8/9) ≈ 0.06). Report the rule with
every DLR value.

Invariances: DLR is unchanged by scaling or orthogonally rotating the features,
by an output bias, and by scaling or rotating the outputs, under every rule.
Under a general invertible linear map of the outputs it is unchanged with
``rank="full"``, and with the other rules whenever the map keeps the same
directions above the threshold (e.g. outputs of exact rank r).

Degenerate inputs never give NaN: constant features or constant outputs raise a
ValueError naming the argument (their centred kernel is zero and CKA is 0/0);
rank-deficient features are fine (PR counts only their non-zero directions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from .cka import _ZERO_TOL, as_float64_matrix, centre
from .features import capture
from .norms import total_norm
from .validation import check_int, check_real, check_type

__all__ = [
    "RANK_RULES", "DEFAULT_RANK", "DEFAULT_TOL", "DLRTerms", "Spectrum",
    "output_singular_values", "output_rank", "dlr", "dlr_terms", "participation_ratio",
    "feature_spectrum", "eigenfunctions", "cumulative_share", "DLRTracker",
]

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
            return rank, check_real(tol, "tol", 0.0, 1.0, low_open=True, owner=owner)
        return rank, check_real(tol, "tol", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
    if isinstance(rank, Integral) and not isinstance(rank, bool):
        if tol is not None:
            raise ValueError(f"The 'tol' parameter of {owner} must be None when rank is an int. Got {tol!r} instead.")
        return check_int(rank, "rank", low=1, owner=owner), None
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


def output_singular_values(outputs: torch.Tensor) -> torch.Tensor:
    """Singular values (descending, float64) of the centred outputs F_c (n, C)."""
    f = as_float64_matrix(outputs, "outputs", "output_singular_values")
    return torch.linalg.svdvals(centre(f))


def output_rank(outputs: torch.Tensor, rank: str | int = DEFAULT_RANK, tol: float | None = None) -> int:
    """The r that ``rank``/``tol`` pick for these outputs (see the module docstring)."""
    owner = "output_rank"
    rank, tol = _check_rank(rank, tol, owner)
    f = as_float64_matrix(outputs, "outputs", owner)
    s = torch.linalg.svdvals(centre(f))
    full = _numerical_rank(s, f.shape, _eps(outputs))
    if full == 0:
        raise ValueError(f"The 'outputs' parameter of {owner} is constant across samples: the learned function space is empty.")
    return _rank_from_rule(s, full, rank, tol, owner)


@dataclass
class DLRTerms:
    """DLR and the three numbers it is made of: DLR = 1 − f_in · √(PR / r).

    Attributes
    ----------
    dlr : float in [0, 1]
    f_in : float in [0, 1]
        Share of the centred feature energy inside the r-dimensional output span.
    participation_ratio : float ≥ 1
        (Σρ)²/Σρ² of the feature covariance eigenvalues: the effective number of features.
    rank : int
        r, the dimension of the output span used.
    full_rank : int
        Numerical rank of the centred outputs (what ``rank="full"`` would use).
    rule : str
        The rank rule, e.g. ``"energy 0.99"``.
    """

    dlr: float
    f_in: float
    participation_ratio: float
    rank: int
    full_rank: int
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _centred_pair(features: torch.Tensor, outputs: torch.Tensor, owner: str) -> tuple[torch.Tensor, torch.Tensor]:
    phi = as_float64_matrix(features, "features", owner)
    f = as_float64_matrix(outputs, "outputs", owner)
    if phi.shape[0] != f.shape[0]:
        raise ValueError(
            f"The 'outputs' parameter of {owner} must have as many rows as 'features' ({phi.shape[0]}). Got {f.shape[0]} instead."
        )
    if f.device != phi.device:
        f = f.to(phi.device)
    phi_c, f_c = centre(phi), centre(f)
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
    """Dynamical low-rank measure DLR = 1 − CKA(T, T_MP), from features and outputs only.

    Parameters
    ----------
    features : Tensor, shape (n, p)
        Penultimate features Φ(x) on n samples (see :func:`nhtlab.features.capture`).
    outputs : Tensor, shape (n, C)
        The learned functions f̂(x) on the same samples (logits). No labels.
    rank : {"energy", "relative", "full"} or int
        How the dimension r of the output span is chosen (module docstring).
    tol : float, optional
        The rule's threshold: energy fraction for ``"energy"`` (default 0.99),
        relative singular-value cut for ``"relative"`` (default 1e-2); must be
        None for ``"full"`` and int ranks.

    Returns
    -------
    float in [0, 1]
        0 when the feature kernel is a multiple of the projection onto the
        output span (rich; neural collapse), near 1 when the features spread
        their energy over many directions the outputs ignore (lazy). For random
        Gaussian features unrelated to the outputs, 1 − DLR ≈ √(r p / (n (n + p))).

    Raises
    ------
    ValueError
        Constant features or outputs, mismatched rows, a bad rule or threshold.

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


def participation_ratio(features: torch.Tensor) -> float:
    """(Σρ_k)² / Σρ_k² of the feature covariance: 1 for one direction, p for isotropic features."""
    phi_c = centre(as_float64_matrix(features, "features", "participation_ratio"))
    energy = torch.linalg.matrix_norm(phi_c) ** 2
    if float(energy) == 0.0:
        raise ValueError("The 'features' parameter of participation_ratio is constant across samples.")
    return float(energy ** 2 / torch.linalg.matrix_norm(phi_c.T @ phi_c) ** 2)


# ---------------------------------------------------------------------------
# Spectra: eigenpairs of the feature covariance, Nyström eigenfunctions, Π*, Π̂.


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
    """Eigenvalues ρ_k of the feature covariance and Nyström eigenfunctions e_k.

    With Σ = Φ_cᵀΦ_c / n = Σ_k ρ_k v_k v_kᵀ, the eigenfunctions of the (centred)
    feature kernel are e_k(x) = (Φ(x) − μ)ᵀ v_k / √ρ_k, orthonormal in the
    sample mean: (1/n) Σ_i e_j(x_i) e_k(x_i) = δ_jk. Directions with
    ρ_k ≤ 1e-12 ρ_1 (rank-deficient features) are dropped: they have no
    eigenfunction.

    Parameters
    ----------
    features : Tensor, shape (n, p)
    top : int, optional
        Keep the ``top`` largest eigenpairs.
    at : Tensor, shape (m, p), optional
        Features of other inputs at which to evaluate e_k (the Nyström
        extension); defaults to the n samples themselves.

    Returns
    -------
    rho : Tensor, shape (k,)
        Descending eigenvalues, float64.
    e : Tensor, shape (n or m, k)
    """
    owner = "eigenfunctions"
    phi = as_float64_matrix(features, "features", owner)
    mean = phi.mean(0, keepdim=True)
    phi_c = phi - mean
    if float(phi_c.abs().max()) <= _ZERO_TOL * max(float(phi.abs().max()), 1e-300):
        raise ValueError(f"The 'features' parameter of {owner} is constant across samples: no eigenfunction exists.")
    if top is not None:
        check_int(top, "top", low=1, owner=owner)
    rho, v = _eigen(phi_c, top, 1e-12)
    points = phi_c if at is None else as_float64_matrix(at, "at", owner).to(phi.device) - mean
    return rho, points @ v / rho.sqrt()


def _as_target(target: torch.Tensor, n: int, device: torch.device, owner: str) -> torch.Tensor:
    check_type(target, "target", torch.Tensor, owner=owner)
    if target.dim() == 1 and not target.is_floating_point():
        target = torch.nn.functional.one_hot(target.long()).to(torch.float64)  # labels → one-hot (n, C)
    y = as_float64_matrix(target, "target", owner).to(device)
    if y.shape[0] != n:
        raise ValueError(f"The 'target' parameter of {owner} must have {n} rows. Got {y.shape[0]} instead.")
    return y


def cumulative_share(e: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Π(k): share of the centred target's energy expressed by the first k eigenfunctions.

    With e (n, k) orthonormal in the sample mean and Y_c the centred target
    (n, q), Π(k) = Σ_{j ≤ k} ‖(1/n) e_jᵀ Y_c‖² / ((1/n) ‖Y_c‖_F²). It rises to
    the share of the target inside the feature span (1 when the target is a
    linear function of the features, as the learned outputs are).
    An integer label vector (n,) is one-hot encoded. A constant target raises.
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

    Attributes
    ----------
    eigenvalues : ndarray, shape (k,)
        ρ_k of the centred feature covariance, descending.
    relative : ndarray, shape (k,)
        ρ_k / ρ_1.
    quality : ndarray or None, shape (k,)
        Cumulative quality Π*(k) of the target (None when no target was given).
    utilisation : ndarray or None, shape (k,)
        Cumulative utilisation Π̂(k) of the learned outputs (None without outputs).
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
    """Eigenvalues of the feature covariance with cumulative quality and utilisation.

    Parameters
    ----------
    features : Tensor, shape (n, p)
    outputs : Tensor, shape (n, C), optional
        Learned outputs: gives the utilisation Π̂(k).
    target : Tensor, shape (n, q) or integer labels (n,), optional
        Any target function (labels are one-hot encoded): gives the quality Π*(k).
    top : int, optional
        Keep the first ``top`` eigenpairs.

    Returns
    -------
    Spectrum
    """
    rho, e = eigenfunctions(features, top=top)
    quality = None if target is None else cumulative_share(e, target).cpu().numpy()
    utilisation = None if outputs is None else cumulative_share(e, outputs).cpu().numpy()
    rho_np = rho.cpu().numpy()
    return Spectrum(rho_np, rho_np / rho_np[0], quality, utilisation)


# ---------------------------------------------------------------------------
# A training callback.


@dataclass
class DLRTracker:
    """Training callback: DLR (and its terms, NC1, spectra) on fixed inputs at each evaluation.

    Writes into each history row: ``dlr``, ``dlr_f_in``, ``dlr_pr``, ``dlr_rank``,
    ``dlr_balance`` (√(PR / r), so that DLR = 1 − f_in · balance) for the main rule; ``dlr[<name>]`` and ``dlr_rank[<name>]`` for each rule in
    ``compare``; ``param_norm`` (‖θ‖²); ``nc1`` when ``labels`` are given. When
    ``spectra`` is True it also keeps :attr:`spectra_list`, a list of ``(step, Spectrum)``.

    Parameters
    ----------
    x : Tensor
        Inputs on which features are measured (e.g. the whole p × p table).
    labels : Tensor, optional
        Only for NC1 and the quality Π*; DLR itself never uses them.
    rank, tol
        Main rank rule (see :func:`dlr`).
    compare : mapping name → (rank, tol), optional
        Further rank rules to record side by side.
    layer, which
        Layer to read features from (see :func:`nhtlab.features.capture`).
    spectra : bool
        Keep the spectrum (top ``top`` eigenpairs) at each evaluation.
    top : int
        Number of eigenpairs kept in spectra.
    prefix : str
        Prepended to every column name, so that two trackers (e.g. two layers)
        can write into the same history.
    """

    x: torch.Tensor
    labels: torch.Tensor | None = None
    rank: str | int = DEFAULT_RANK
    tol: float | None = None
    compare: Mapping[str, tuple[str | int, float | None]] | None = None
    layer: str | None = None
    which: str = "output"
    spectra: bool = False
    top: int = 64
    prefix: str = ""
    spectra_list: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        check_type(self.x, "x", torch.Tensor, owner="DLRTracker")
        check_type(self.prefix, "prefix", str, owner="DLRTracker")
        _check_rank(self.rank, self.tol, "DLRTracker")
        for name, (rank, tol) in (self.compare or {}).items():
            _check_rank(rank, tol, "DLRTracker")

    def measure(self, model: nn.Module) -> tuple[dict[str, float], Spectrum | None]:
        """The row entries for ``model`` now, and its spectrum if ``spectra`` (usable outside training)."""
        cap = capture(model, self.x, layer=self.layer, which=self.which)
        prepared = _Prepared(cap.features, cap.outputs, "DLRTracker")  # one SVD and one kernel norm for all rules
        terms = prepared.terms(*_check_rank(self.rank, self.tol, "DLRTracker"))
        row = {"dlr": terms.dlr, "dlr_f_in": terms.f_in, "dlr_pr": terms.participation_ratio,
               "dlr_balance": (terms.participation_ratio / terms.rank) ** 0.5,
               "dlr_rank": float(terms.rank), "dlr_full_rank": float(terms.full_rank), "param_norm": total_norm(model)}
        for name, (rank, tol) in (self.compare or {}).items():
            other = prepared.terms(*_check_rank(rank, tol, "DLRTracker"))
            row[f"dlr[{name}]"], row[f"dlr_rank[{name}]"] = other.dlr, float(other.rank)
        if self.labels is not None:
            from .collapse import nc1
            row["nc1"] = nc1(cap.features, self.labels)
        spectrum = feature_spectrum(cap.features, cap.outputs, self.labels, top=self.top) if self.spectra else None
        return row, spectrum

    def __call__(self, state: Any) -> None:
        row, spectrum = self.measure(state.model)
        state.row.update({self.prefix + k: v for k, v in row.items()})
        if spectrum is not None:
            self.spectra_list.append((state.step, spectrum))

    def spectrum_records(self) -> list[dict[str, Any]]:
        """All kept spectra as tidy records with a ``step`` field (for charts)."""
        out: list[dict[str, Any]] = []
        for step, spectrum in self.spectra_list:
            out += spectrum.to_records(step=step)
        return out
