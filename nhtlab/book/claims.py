"""Claims a chapter states: checks that return verdicts, and qualitative readings counted over seeds.

A reading (a layer order, a regime, a border dropped or kept, a warning that leads)
can flip with the float rounding of another CPU when it rests on one seed. It
becomes a claim only over seeds: :func:`over_seeds` counts in how many of ``n``
seeds the reading came out as stated, and says whether the rule fixed before the
run (``"all"`` seeds or a strict ``"majority"``) holds. A chapter asserts only
readings whose rule holds, prints ``k of n`` beside each, and shows a reading that
flips between seeds as flipping.

>>> r = over_seeds("layer order", {0: "backward", 1: "forward", 2: "backward"}, expected="backward")
>>> r.k, r.n, r.holds, r.flips
(2, 3, True, True)
>>> r.text()
'backward in 2 of 3 seeds (seed 0: backward, seed 1: forward, seed 2: backward)'
>>> bool(Check("memorises", True, "T_mem = 600"))
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..analysis.checks import Check
from ..validation import require_choice, require_type

__all__ = ["Check", "Reading", "over_seeds", "check_reading", "reading_answer", "reading_rows"]

RULES = ("all", "majority")


@dataclass(frozen=True)
class Reading:
    """A qualitative reading over seeds, and whether the rule fixed before the run holds.

    ``by_seed`` maps seed → that seed's reading (None where it could not be read).
    """

    name: str
    by_seed: dict[int, Any] = field(default_factory=dict)
    expected: Any = None
    rule: str = "majority"

    @property
    def n(self) -> int:
        """Number of seeds read."""
        return len(self.by_seed)

    @property
    def k(self) -> int:
        """Number of seeds whose reading is the expected one."""
        return sum(value == self.expected for value in self.by_seed.values())

    @property
    def holds(self) -> bool:
        """Whether the rule holds: every seed (``all``) or more than half (``majority``); False with no seed."""
        if self.n == 0:
            return False
        return self.k == self.n if self.rule == "all" else 2 * self.k > self.n

    @property
    def flips(self) -> bool:
        """Whether the seeds disagree."""
        return len({repr(v) for v in self.by_seed.values()}) > 1

    def text(self) -> str:
        """``"<expected> in k of n seeds (seed 0: …, …)"``."""
        seeds = ", ".join(f"seed {s}: {v}" for s, v in self.by_seed.items())
        return f"{self.expected} in {self.k} of {self.n} seeds ({seeds})"


def over_seeds(name: str, by_seed: Mapping[int, Any], expected: Any, rule: str = "majority") -> Reading:
    """Count a qualitative reading over seeds against the reading the text states."""
    require_type(name, "name", str, owner="over_seeds")
    require_type(by_seed, "by_seed", Mapping, owner="over_seeds")
    require_choice(rule, "rule", RULES, owner="over_seeds")
    return Reading(name=name, by_seed=dict(by_seed), expected=expected, rule=rule)


def check_reading(reading: Reading) -> Check:
    """A reading over seeds as a check: it passes when the reading's rule, fixed before the run, holds.

    Examples
    --------
    >>> print(check_reading(over_seeds("border", {0: "dropped", 1: "kept", 2: "dropped"}, expected="dropped")))
    ✓ border: dropped in 2 of 3 seeds (seed 0: dropped, seed 1: kept, seed 2: dropped); rule: majority
    """
    require_type(reading, "reading", Reading, owner="check_reading")
    return Check(reading.name, reading.holds, f"{reading.text()}; rule: {reading.rule}")


def reading_answer(reading: Reading, yes: str = "yes", no: str = "no",
                   detail: str = "") -> tuple[str, tuple[str, str], str]:
    """A reading over seeds as the answer to a two-way prediction, for :func:`~nhtlab.book.check_prediction`.

    The question is whether the runs show ``reading.expected``: ``yes`` when the reading's rule holds (a
    strict majority of the seeds by default, the rule of the chapter's checks, so a tie reads ``no``).

    Examples
    --------
    >>> r = over_seeds("the delay falls as λ grows", {0: "falls", 1: "falls", 2: "rises"}, expected="falls")
    >>> reading_answer(r, "falls", "does not fall")
    ('falls', ('falls', 'does not fall'), 'the delay falls as λ grows: falls in 2 of 3 seeds (seed 0: falls, seed 1: falls, seed 2: rises), and a majority of seeds decides')
    >>> reading_answer(over_seeds("x", {0: "a", 1: "b"}, expected="a"), detail="a tie")[0::2]
    ('no', 'x: a in 1 of 2 seeds (seed 0: a, seed 1: b), and a majority of seeds decides; a tie')
    """
    require_type(reading, "reading", Reading, owner="reading_answer")
    require_type(detail, "detail", str, owner="reading_answer")
    rule = "every seed" if reading.rule == "all" else "a majority of seeds"
    why = f"{reading.name}: {reading.text()}, and {rule} decides" + (f"; {detail}" if detail else "")
    return (yes if reading.holds else no), (yes, no), why


def reading_rows(readings: Iterable[Reading] | Mapping[Any, Reading],
                 paper: Mapping[Any, str] | None = None) -> list[dict[str, Any]]:
    """Readings over seeds as table rows, the one way the chapters table them.

    ``paper`` (with ``readings`` a mapping, keyed alike) adds the paper's claim per reading as a ``paper`` column.

    Examples
    --------
    >>> reading_rows([over_seeds("border", {0: "dropped", 1: "kept"}, expected="dropped")])
    [{'reading': 'border', 'stated': 'dropped', 'seeds': '1 of 2', 'by seed': '0: dropped, 1: kept', 'rule': 'majority', 'holds': '✗', 'flips': 'yes'}]
    """
    items = list(readings.items()) if isinstance(readings, Mapping) else list(enumerate(readings))
    if paper is not None and not isinstance(readings, Mapping):
        raise TypeError("reading_rows: 'paper' needs 'readings' as a mapping, keyed as 'paper' is")
    rows = []
    for key, r in items:
        row = {"reading": r.name, "stated": r.expected}
        if paper is not None:
            row["paper"] = paper.get(key)
        row.update({"seeds": f"{r.k} of {r.n}", "by seed": ", ".join(f"{s}: {v}" for s, v in r.by_seed.items()),
                    "rule": r.rule, "holds": "✓" if r.holds else "✗", "flips": "yes" if r.flips else "no"})
        rows.append(row)
    return rows
