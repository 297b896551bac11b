"""A verdict: whether a claim held on a run, and the measurement it was decided on.

Every rule that can fail returns one (the NHT paper's six predictions, the book's closing checks), so a ✓ or ✗
always carries its number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One claim a chapter asserts on its own run: whether it held, and the measurement behind it.

    ``bool(check)`` is whether it passed, so a chapter writes ``assert check, check.detail``. ``value`` is the
    number the rule compared (a ratio, a score), NaN where there is none.
    """

    name: str
    passed: bool
    detail: str = ""
    value: float = math.nan

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __str__(self) -> str:
        return f"{'✓' if self.passed else '✗'} {self.name}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "holds": "✓" if self.passed else "✗", "measured": self.detail}
