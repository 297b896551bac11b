"""Modular-arithmetic datasets: every pair (a, b) labelled with (a ∘ b) mod p.

The grokking literature (Power et al. 2022; Nanda et al. 2023) trains on a random
fraction of the p × p table and tests on the rest. The whole table is small
(p = 97 gives 9,409 pairs), so the data live on the training device as tensors
and full-batch training needs no DataLoader.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from ..validation import MAX_SEED, require_choice, require_int, require_real, require_seed  # noqa: F401 (MAX_SEED, require_seed: importable here too)

__all__ = ["OPERATIONS", "ModularData", "modular_data", "is_prime"]

OPERATIONS = ("+", "-", "*", "/")
#: The largest modulus: the p² pairs are built in memory (4096² ≈ 16.8 M pairs, ~270 MB as int64).
MAX_P = 4096


def require_p(p: Any, owner: str) -> int:
    """``p`` as an int in [2, :data:`MAX_P`], else an error naming ``owner`` (the p² pairs are built in memory)."""
    return require_int(p, "p", low=2, high=MAX_P, owner=owner, why="the p² pairs are built in memory")


def is_prime(n: int) -> bool:
    """Return True when ``n`` is a prime number (trial division; n is small here)."""
    return n >= 2 and all(n % k for k in range(2, math.isqrt(n) + 1))


@dataclass
class ModularData:
    """Train/test split of a modular-arithmetic table: pairs (a, b) (n, 2) labelled (a ∘ b) mod p.

    ``p`` is also the number of classes and of input tokens.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    p: int
    operation: str

    @property
    def num_classes(self) -> int:
        return self.p

    def to(self, device: torch.device | str) -> "ModularData":
        """Return a copy with every tensor on ``device``."""
        return ModularData(*(t.to(device) for t in (self.x_train, self.y_train, self.x_test, self.y_test)), self.p,
                           self.operation)


def _labels(a: torch.Tensor, b: torch.Tensor, p: int, operation: str) -> torch.Tensor:
    if operation == "/":  # a / b = a · b^(p-2) mod p by Fermat's little theorem (p prime, b ≠ 0)
        b, operation = torch.tensor([pow(int(v), p - 2, p) for v in range(p)], dtype=torch.long)[b], "*"
    return (a + b if operation == "+" else a - b if operation == "-" else a * b) % p


def modular_data(p: int = 97, operation: str = "+", train_fraction: float = 0.5, seed: int = 0) -> ModularData:
    """Build the table of (a ∘ b) mod p and split it at random into train and test.

    Parameters
    ----------
    p : int
        Modulus, at least 2; prime for ``"/"``.
    operation : {"+", "-", "*", "/"}
        For ``"/"`` pairs with b = 0 are left out.
    train_fraction : float in (0, 1)
    seed : int
        Seed of the split (independent of the global RNG).

    Returns
    -------
    ModularData

    Examples
    --------
    >>> data = modular_data(p=7, train_fraction=0.5, seed=0)
    >>> len(data.y_train) + len(data.y_test)
    49
    """
    p = require_p(p, "modular_data")
    require_choice(operation, "operation", OPERATIONS, owner="modular_data")
    require_real(train_fraction, "train_fraction", 0.0, 1.0, low_open=True, high_open=True, owner="modular_data")
    seed = require_seed(seed, "modular_data")
    if operation == "/" and not is_prime(p):
        raise ValueError(
            f"The 'p' parameter of modular_data must be a prime number when operation='/'"
            f" (division needs every b ≠ 0 to be invertible mod p). Got {p} instead."
        )
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    a, b = a.reshape(-1), b.reshape(-1)
    if operation == "/":
        keep = b != 0
        a, b = a[keep], b[keep]
    x = torch.stack([a, b], dim=1)
    y = _labels(a, b, p, operation)
    n = len(y)
    n_train = int(round(train_fraction * n))
    if not 0 < n_train < n:
        raise ValueError(
            f"The 'train_fraction' parameter of modular_data leaves an empty train or test set "
            f"with p={p} ({n} pairs). Got {train_fraction} instead."
        )
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=generator)
    train, test = order[:n_train], order[n_train:]
    return ModularData(x[train], y[train], x[test], y[test], p, operation)
