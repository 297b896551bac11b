"""The NHT paper's six predictions, scored on a domain's own runs with explicit rules.

Khanh & Hoa (arXiv 2603.07323) score six predictions per domain (P1 norm
ordering, P2 three regimes, P3 clean/worst-group ordering, P4 layer hierarchy,
P5 clean norm separation, P6 delay scaling) but give no operational rules. These
are nhtlab's, stated here so a ✓ or ✗ can be checked:

* P1: at the main λ, shortcut reliance φ fell by more than 0.1 after the norm
  peak and ‖θ‖² contracted by more than 5% (the shortcut is the high-norm state);
* P2: the λ sweep's regimes, in increasing λ, read weak → intermediate → strong;
* P3: the main λ ends with a higher score (clean or test accuracy) than the
  weakest λ and, where there is one, a higher worst-group accuracy;
* P4: at the main λ the read-out peaks before the first layer (backward order);
* P5: the clean-norm-separation score is at least 0.5;
* P6: over the intermediate runs T·λ varies by less than a factor 1.5 (T ∝ 1/λ).
"""

from __future__ import annotations

from collections.abc import Mapping

from .layers import is_backward, layer_transitions
from .separation import Separation
from .train import History
from .validation import check_real, check_type

__all__ = ["PREDICTIONS", "cue_escape_step", "regimes_in_order", "delay_scaling_ok", "score_predictions", "scorecard_text"]

PREDICTIONS = ("P1 norm ordering", "P2 three regimes", "P3 clean/worst-group", "P4 layer hierarchy",
               "P5 clean separation", "P6 delay scaling")


def cue_escape_step(history: History, separation: Separation, cue_column: str = "cue_acc",
                    chance: float = 0.1, fraction: float = 0.5) -> int | None:
    """First step after the norm peak at which reliance on the cue has halved.

    Reliance is φ = (cue accuracy − chance) / (1 − chance); the step returned is
    the first evaluated step after ``separation.peak_step`` with
    φ ≤ ``fraction`` · φ at the peak, or None if reliance never fell that far.
    """
    check_type(history, "history", History, owner="cue_escape_step")
    check_real(chance, "chance", 0.0, 1.0, high_open=True, owner="cue_escape_step")
    check_real(fraction, "fraction", 0.0, 1.0, owner="cue_escape_step")
    for step, accuracy in zip(history.column("step"), history.column(cue_column)):
        if step > separation.peak_step and (accuracy - chance) / (1 - chance) <= fraction * separation.phi_at_peak:
            return int(step)
    return None


def regimes_in_order(regimes: Mapping[float, str]) -> bool:
    """True when the regimes, read in increasing λ, are exactly weak → intermediate → strong.

    Repeats collapse (weak, weak, intermediate, … counts) and ``"too early"``
    calls (a run too short to judge) are ignored.
    """
    sequence = [r for r in dict.fromkeys(regimes[lam] for lam in sorted(regimes)) if r != "too early"]
    return sequence == ["weak", "intermediate", "strong"]


def delay_scaling_ok(escape: Mapping[float, int | None], tolerance: float = 1.5) -> bool:
    """True when T·λ varies by less than ``tolerance`` over the runs with a measured escape T.

    Fewer than two measured runs give False: the scaling is then not shown.
    """
    check_real(tolerance, "tolerance", 1.0, low_open=True, owner="delay_scaling_ok")
    products = [t * lam for lam, t in escape.items() if t]
    return len(products) >= 2 and max(products) / min(products) < tolerance


def score_predictions(*, separation: Separation, regimes: Mapping[float, str], main: History, weakest: History,
                      score_column: str, worst_column: str | None, first_layer: str,
                      escape: Mapping[float, int | None], head: str = "readout") -> dict[str, bool]:
    """The six predictions for one domain, by the rules of this module's docstring.

    Parameters
    ----------
    separation : Separation
        The main λ's clean-norm-separation result.
    regimes : mapping λ → regime name
        The domain's λ sweep, diagnosed.
    main, weakest : History
        The run at the main λ and the run at the smallest λ.
    score_column, worst_column : str
        Final-row columns compared in P3 (``worst_column`` None where the domain has no worst group).
    first_layer : str
        Name of the first layer for P4.
    escape : mapping λ → escape step (or None)
        The intermediate runs' escape times, for P6.
    """
    last, base = main.rows[-1], weakest.rows[-1]
    better = last[score_column] > base[score_column]
    if worst_column is not None:
        better = better and last[worst_column] > base[worst_column]
    return {
        "P1 norm ordering": separation.phi_drop > 0.1 and separation.norm_contraction > 0.05,
        "P2 three regimes": regimes_in_order(regimes),
        "P3 clean/worst-group": bool(better),
        "P4 layer hierarchy": is_backward(layer_transitions(main), head, first_layer),
        "P5 clean separation": separation.score >= 0.5,
        "P6 delay scaling": delay_scaling_ok(escape),
    }


def scorecard_text(scorecard: Mapping[str, Mapping[str, bool]]) -> str:
    """One line per domain: ✓/✗ for P1…P6 and the total."""
    lines = []
    for domain, row in scorecard.items():
        marks = "  ".join(f"{name.split()[0]} {'✓' if ok else '✗'}" for name, ok in row.items())
        lines.append(f"{domain:>20}: {marks}   ({sum(row.values())}/6)")
    return "\n".join(lines)
