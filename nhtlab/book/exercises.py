"""The book's exercises: a number to work out (:func:`check_answer`), a prediction the run answers
(:func:`check_prediction`) and a function to write (:func:`check_function`).

A prediction is asked before the cells that train: the reader writes a guess in the chapter's
code, and the cell after the run compares it with what the run found and says why. In the
rendered book (no reader, no guess) the run's answer sits in a closed "Show the run's answer"
block, so the reader can predict before opening it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import require_real, require_type

__all__ = ["Feedback", "check_answer", "check_prediction", "check_function"]


@dataclass
class Feedback:
    """What a reader is told about their answer to an exercise (not a claim's verdict: that is
    :class:`~nhtlab.book.claims.Check`); renders as one line in Jupyter and the book."""

    status: str  # "unanswered", "correct" or "wrong"
    message: str
    reveal: str = ""  # the run's answer and why: hidden until clicked while unanswered

    def _repr_html_(self) -> str:
        colour = {"correct": "#2a7d2a", "wrong": "#b03030"}.get(self.status, "#666")
        out = f"<div class='nhtlab-exercise' style='color:{colour}'>{html.escape(self.message)}</div>"
        if self.reveal and self.status == "unanswered":
            out += ("<details class='nhtlab-reveal'><summary>Show the run's answer</summary>"
                    f"<p>{html.escape(self.reveal)}</p></details>")
        elif self.reveal:
            out += f"<p class='nhtlab-reveal'>{html.escape(self.reveal)}</p>"
        return out

    def __repr__(self) -> str:
        return self.message + (f"\n{self.reveal}" if self.reveal and self.status != "unanswered" else "")

    def __bool__(self) -> bool:
        return self.status == "correct"


def check_answer(answer: float | None, expected: float, rel_tol: float = 0.05, why: str = "") -> Feedback:
    """Compare a reader's numeric ``answer`` with ``expected`` within a relative tolerance.

    ``None`` (the exercise's placeholder) is "not answered yet", never an error,
    so a chapter executes before the reader has tried. With ``why`` (built from the run's
    own numbers) the verdict also carries the expected value and the explanation: hidden in a
    closed block until clicked while unanswered, shown once answered.

    Examples
    --------
    >>> bool(check_answer(101, 100))
    True
    >>> check_answer(None, 100).status
    'unanswered'
    >>> print(check_answer(50, 100, why="the run measured 120"))
    Not quite: 50 is off by more than 5%. Look at the hint and try again.
    The expected answer: 100. The run measured 120.
    """
    why = why.strip()
    reveal = (f"The expected answer: {expected:,.4g}. {why[:1].upper()}{why[1:]}" + ("" if why.endswith(".") else ".")
              if why else "")
    if answer is None:
        return Feedback("unanswered", "Not answered yet: replace None with your number and run the cell.", reveal)
    answer = require_real(answer, "answer", owner="check_answer")
    if math.isclose(answer, expected, rel_tol=rel_tol):
        return Feedback("correct", f"Correct: {answer:g} is within {rel_tol:.0%} of the expected value.", reveal)
    return Feedback("wrong", f"Not quite: {answer:g} is off by more than {rel_tol:.0%}. Look at the hint and try again.",
                   reveal)


def check_prediction(guess: str | None, answer: str, choices: tuple[str, ...] | list[str], why: str) -> Feedback:
    """Compare a reader's prediction with what the run found, and say why the run came out so.

    ``guess`` None (the rendered book's case) hides the answer until clicked. Raises ValueError naming
    ``guess`` or ``answer`` when it is not one of ``choices``.

    Examples
    --------
    >>> check_prediction(None, "forward", ("backward", "forward"), "the embedding moved first").status
    'unanswered'
    >>> print(check_prediction("backward", "forward", ("backward", "forward"), "the embedding moved first"))
    The run says forward, not backward.
    The run's answer: forward. The embedding moved first.
    """
    choices = tuple(choices)
    if answer not in choices:
        raise ValueError(f"check_prediction: 'answer' must be one of {choices}, got {answer!r}")
    why = why.strip()
    reveal = f"The run's answer: {answer}. {why[:1].upper()}{why[1:]}" + ("" if why.endswith(".") else ".")
    if guess is None:
        options = " or ".join(repr(c) for c in choices)
        return Feedback("unanswered", f"Not predicted yet: write {options} as your prediction and run the cell.", reveal)
    if guess not in choices:
        raise ValueError(f"check_prediction: 'guess' must be one of {choices} or None, got {guess!r}")
    if guess == answer:
        return Feedback("correct", f"Right: the run says {answer}.", reveal)
    return Feedback("wrong", f"The run says {answer}, not {guess}.", reveal)


def _difference(got: Any, expected: Any, rtol: float, atol: float) -> str | None:
    """Why ``got`` is not ``expected`` (None when they agree): numbers within the tolerances, arrays of one
    shape, mappings with the same keys, anything else by equality."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"returned a {type(got).__name__}, expected a dict"
        if set(got) != set(expected):
            missing, extra = sorted(map(str, set(expected) - set(got))), sorted(map(str, set(got) - set(expected)))
            return f"has keys missing {missing} and extra {extra}"
        for key in expected:
            why = _difference(got[key], expected[key], rtol, atol)
            if why:
                return f"at key {key!r}: {why}"
        return None
    if isinstance(expected, str) or expected is None:
        return None if got == expected else f"returned {got!r}, expected {expected!r}"
    try:
        want = np.asarray(expected.detach().cpu() if hasattr(expected, "detach") else expected, dtype=float)
        have = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got, dtype=float)
    except (TypeError, ValueError):
        return None if got == expected else f"returned {got!r}, expected {expected!r}"
    if have.shape != want.shape:
        return f"returned shape {have.shape}, expected {want.shape}"
    if not np.allclose(have, want, rtol=rtol, atol=atol, equal_nan=True):
        worst = int(np.nanargmax(np.abs(have - want))) if want.size else 0
        return (f"returned {have.flat[worst]:.6g} where nhtlab gives {want.flat[worst]:.6g}"
                + (f" (entry {worst})" if want.size > 1 else ""))
    return None


def check_function(fn: Callable[..., Any] | None, reference: Callable[..., Any], cases: Sequence[tuple],
                   name: str = "your function", rtol: float = 1e-4, atol: float = 1e-8) -> Feedback:
    """Run a reader's function beside nhtlab's on the chapter's own inputs, and say what differs.

    A code exercise gives the reader a stub that raises ``NotImplementedError``; the chapter still
    executes ("not written yet", as for ``fn`` None), and the solution sits in a closed block of the page.
    Numbers and arrays compare with :func:`numpy.allclose`'s tolerances.

    Examples
    --------
    >>> check_function(lambda x: 2 * x, lambda x: x + x, [(1.5,), (3,)]).status
    'correct'
    >>> print(check_function(lambda x: x * x, lambda x: x + x, [(2,), (3,)], name="double"))
    Not yet: on case 2 of 2, double returned 9 where nhtlab gives 6.
    """
    require_type(name, "name", str, owner="check_function")
    cases = list(cases)
    if not cases or not all(isinstance(c, tuple) for c in cases):
        raise ValueError("check_function: 'cases' must be a non-empty sequence of argument tuples")
    if fn is None:
        return Feedback("unanswered", f"Not written yet: write {name} and run the cell.")
    if not callable(fn):
        raise TypeError(f"check_function: 'fn' must be callable or None, got {type(fn).__name__}")
    usable = []
    for args in cases:  # a case the reference itself refuses (a capped run with no event) checks nothing
        try:
            usable.append((args, reference(*args)))
        except (ValueError, TypeError) as error:
            refused = f"{type(error).__name__}: {error}"
    if not usable:
        return Feedback("unanswered", f"Nothing to check {name} on: this run gives no case nhtlab's function "
                                      f"accepts ({refused}).")
    for i, (args, expected) in enumerate(usable, 1):
        try:
            got = fn(*args)
        except NotImplementedError:
            return Feedback("unanswered", f"Not written yet: replace the body of {name} and run the cell.")
        except Exception as error:  # the reader's code: say what it raised, never crash the chapter
            return Feedback("wrong", f"On case {i} of {len(usable)}, {name} raised {type(error).__name__}: {error}")
        why = _difference(got, expected, rtol, atol)
        if why:
            return Feedback("wrong", f"Not yet: on case {i} of {len(usable)}, {name} {why}.")
    return Feedback("correct", f"Correct: {name} agrees with nhtlab on all {len(usable)} cases from this run.")
