"""Checks for the book's short exercises: type an answer, get a verdict, not the solution."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ..validation import check_real

__all__ = ["Verdict", "check_answer"]


@dataclass
class Verdict:
    """The outcome of an exercise check; renders as one line in Jupyter and the book."""

    status: str  # "unanswered", "correct" or "wrong"
    message: str

    def _repr_html_(self) -> str:
        colour = {"correct": "#2a7d2a", "wrong": "#b03030"}.get(self.status, "#666")
        return f"<div class='nhtlab-exercise' style='color:{colour}'>{html.escape(self.message)}</div>"

    def __repr__(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return self.status == "correct"


def check_answer(answer: float | None, expected: float, rel_tol: float = 0.05) -> Verdict:
    """Compare a reader's numeric ``answer`` with ``expected`` within a relative tolerance.

    ``None`` (the exercise's placeholder) is "not answered yet", never an error,
    so a chapter executes before the reader has tried.

    Examples
    --------
    >>> bool(check_answer(101, 100))
    True
    >>> check_answer(None, 100).status
    'unanswered'
    """
    check_real(expected, "expected", owner="check_answer")
    check_real(rel_tol, "rel_tol", 0.0, low_open=True, owner="check_answer")
    if answer is None:
        return Verdict("unanswered", "Not answered yet: replace None with your number and run the cell.")
    answer = check_real(answer, "answer", owner="check_answer")
    if math.isclose(answer, expected, rel_tol=rel_tol):
        return Verdict("correct", f"Correct: {answer:g} is within {rel_tol:.0%} of the expected value.")
    return Verdict("wrong", f"Not quite: {answer:g} is off by more than {rel_tol:.0%}. Look at the hint and try again.")
