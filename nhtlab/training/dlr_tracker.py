"""A training callback that records DLR (and NC1, CKA to the initial kernel) on a fixed probe set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn

from ..measures.collapse import nc1
from ..measures.dlr import DEFAULT_RANK, _check_rank, _Prepared
from ..measures.features import capture
from ..measures.norms import total_norm
from ..measures.spectra import Spectrum, feature_spectrum
from ..validation import require_tensor, require_type

__all__ = ["DLRTracker"]


@dataclass
class DLRTracker:
    """Training callback: DLR (and its terms, NC1, spectra) on fixed inputs at each evaluation.

    Writes ``dlr``, ``dlr_f_in``, ``dlr_pr``, ``dlr_rank``, ``dlr_balance`` (√(PR / r), so that
    DLR = 1 − f_in · balance), ``dlr[<name>]`` per rule in ``compare``, ``param_norm`` and, with labels, ``nc1``.

    Parameters
    ----------
    x : Tensor
        Inputs on which features are measured (e.g. the whole p × p table).
    labels : Tensor, optional
        Only for NC1 and the quality Π*; DLR itself never uses them.
    rank, tol, compare
        The main rank rule (see :func:`dlr`) and further ones (name → (rank, tol)) recorded beside it.
    layer, which
        Where features are read (:func:`nhtlab.measures.features.capture`).
    spectra, top : bool, int
        Keep the top ``top`` eigenpairs at each evaluation in :attr:`spectra_list`, as ``(step, Spectrum)``.
    prefix : str
        Prepended to every column name, so that two trackers can write into one history.
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
        owner = "DLRTracker"
        require_tensor(self.x, "x", owner=owner)
        if self.x.dim() == 0 or len(self.x) < 2 or (self.x.is_floating_point() and not bool(torch.isfinite(self.x).all())):
            raise ValueError(f"The 'x' parameter of {owner} must hold at least 2 finite probe inputs (DLR compares "
                             f"samples). Got shape {tuple(self.x.shape)}"
                             f"{', with NaN or inf' if self.x.dim() and self.x.is_floating_point() else ''}.")
        if self.labels is not None:
            require_tensor(self.labels, "labels", owner=owner)
            if (self.labels.dim() != 1 or self.labels.is_floating_point() or self.labels.dtype == torch.bool
                    or len(self.labels) != len(self.x)):
                raise ValueError(f"The 'labels' parameter of {owner} must be a 1-d integer tensor with one label per "
                                 f"input of 'x' ({len(self.x)}). Got {self.labels.dtype} of shape {tuple(self.labels.shape)}.")
        require_type(self.prefix, "prefix", str, owner=owner)
        _check_rank(self.rank, self.tol, "DLRTracker")
        for name, (rank, tol) in (self.compare or {}).items():
            _check_rank(rank, tol, "DLRTracker")

    def measure(self, model: nn.Module) -> tuple[dict[str, float], Spectrum | None]:
        """The row entries for ``model`` now, and its spectrum if ``spectra`` (usable outside training)."""
        cap = capture(model, self.x, layer=self.layer, which=self.which)
        try:
            prepared = _Prepared(cap.features, cap.outputs, "DLRTracker")  # one SVD and one kernel norm for all rules
        except ValueError as error:  # features constant across the probe, or not finite: name the probe and the model
            raise ValueError(f"The 'x' parameter of DLRTracker (the probe) gives the model no DLR: {error}") from None
        terms = prepared.terms(*_check_rank(self.rank, self.tol, "DLRTracker"))
        row = {"dlr": terms.dlr, "dlr_f_in": terms.f_in, "dlr_pr": terms.participation_ratio,
               "dlr_balance": (terms.participation_ratio / terms.rank) ** 0.5,
               "dlr_rank": float(terms.rank), "dlr_full_rank": float(terms.full_rank), "param_norm": total_norm(model)}
        for name, (rank, tol) in (self.compare or {}).items():
            other = prepared.terms(*_check_rank(rank, tol, "DLRTracker"))
            row[f"dlr[{name}]"], row[f"dlr_rank[{name}]"] = other.dlr, float(other.rank)
        if self.labels is not None:
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
        return [record for step, spectrum in self.spectra_list for record in spectrum.to_records(step=step)]

