"""The scorecard as the book shows it: a table of the six predictions per domain, and each read over seeds.

The rules themselves are the core's (:mod:`nhtlab.analysis.scorecard`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.checks import Check
from ..validation import require_type
from .claims import Reading, over_seeds

__all__ = ["scorecard_rows", "prediction_readings", "sweep_checks"]


def _cell(check: Check) -> str:
    """A prediction's verdict and its measurement, "✓ V_mem/V_post = 2.50"."""
    return f"{'✓' if check.passed else '✗'} {check.detail}"


def scorecard_rows(scorecard: Mapping[str, Mapping[str, Check]]) -> list[dict[str, str]]:
    """One row per prediction, one column per domain, each cell "✓ number" or "✗ number" (for a table).

    A last ``"passed"`` row counts each domain's held predictions ("4/6").
    """
    names = list(dict.fromkeys(name for row in scorecard.values() for name in row))
    rows = [{"prediction": name, **{domain: _cell(row[name]) for domain, row in scorecard.items() if name in row}}
            for name in names]
    rows.append({"prediction": "passed", **{domain: f"{sum(v.passed for v in row.values())}/{len(row)}"
                                            for domain, row in scorecard.items()}})
    return rows


def prediction_readings(cards: Mapping[int, Mapping[str, Check]],
                        names: Sequence[str] | None = None) -> list[Reading]:
    """Each prediction's verdict over seeds: the paper's claim, read as ✓ or ✗ in every seed.

    The paper predicts every rule passes, so the expected reading is ``"✓"``; a reading that
    holds in too few seeds is the paper's claim failing on these runs (displayed, not asserted).
    """
    require_type(cards, "cards", Mapping, owner="prediction_readings")
    if not cards:
        return []
    names = list(names) if names is not None else list(next(iter(cards.values())))
    return [over_seeds(name, {seed: "✓" if card[name].passed else "✗" for seed, card in cards.items()},
                       expected="✓") for name in names]


#: The predictions a domain scores on its λ sweep as a whole (one sweep: one seed per λ), not per seed.
SWEEP_PREDICTIONS = ("P2 three regimes", "P6 delay scaling")


def sweep_checks(card: Mapping[str, Check], names: Sequence[str] = SWEEP_PREDICTIONS) -> list[Check]:
    """The predictions read on one λ sweep, as checks a chapter's closing cell can show (never assert).

    P2 and P6 are read on a whole sweep, one seed per λ, so no count over seeds exists for them; the
    findings page (``tools/findings_page.py``) marks them "1 seed". Passing them as ``shown`` records
    a paper's ✗ there without asserting it.

    Examples
    --------
    >>> card = {"P2 three regimes": Check("three regimes", False, "weak → intermediate", 2.0)}
    >>> [str(c) for c in sweep_checks(card)]
    ['✗ P2 three regimes (one sweep): one sweep, 1 seed: weak → intermediate']
    """
    require_type(card, "card", Mapping, owner="sweep_checks")
    return [Check(f"{name} (one sweep)", card[name].passed, f"one sweep, 1 seed: {card[name].detail}", card[name].value)
            for name in names if name in card]
