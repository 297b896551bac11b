"""Live controls for a running kernel, with a static stand-in for the HTML book.

ipywidgets need a kernel: in the static book a widget is an empty, dead box. So
every control here is built only when a kernel is there to answer it; while the
book is being built (``NHTLAB_BOOK=1``) the functions return a short HTML note
that says what the cell does live, and the precomputed interactive charts carry
the exploration instead.
"""

from __future__ import annotations

import html
from typing import Any

from .. import charts
from ..analysis.events import find_events
from ..analysis.regimes import diagnose_regime
from ..build.flags import in_book_build
from ..training.modular_run import ModularRun, run_modular
from ..validation import require_int, require_real, require_type

__all__ = ["train_panel", "panel_budget", "StaticNote", "PANEL_BUDGET_CAP"]

#: The most a live panel multiplies the chapter's step budget by (a λ near 0 would ask for ever more).
PANEL_BUDGET_CAP = 10


class StaticNote:
    """What a live control shows in the static book: a sentence, not a dead widget."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return f"<div class='nhtlab-live-note'><b>Live control.</b> {html.escape(self.text)}</div>"

    def __repr__(self) -> str:
        return f"Live control. {self.text}"


def _static() -> bool:
    return in_book_build()


def panel_budget(steps: int, rate: float, new_rate: float, cap: float = PANEL_BUDGET_CAP) -> int:
    """The step budget for a run at decay rate ``new_rate`` = ηλ, scaled from ``steps`` at ``rate``.

    The delay law's time scale goes as 1/(ηλ), so a run at a tenth of the rate needs about ten times
    the steps to get as far; the budget is ``steps · rate / new_rate``, never below ``steps`` and at
    most ``cap · steps`` (ηλ = 0, no decay, gets the cap).

    Parameters
    ----------
    steps : int
        The chapter's budget at ``rate`` (chapter 01: its λ = 1 runs).
    rate : float
        ηλ of that budget, > 0.
    new_rate : float
        ηλ of the run to budget, ≥ 0.
    cap : float
        The largest multiple of ``steps``, ≥ 1.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Naming the parameter out of range.

    Examples
    --------
    >>> panel_budget(4000, 1e-3, 1e-4)
    40000
    >>> panel_budget(4000, 1e-3, 3e-3), panel_budget(4000, 1e-3, 0.0), panel_budget(4000, 1e-3, 1e-5)
    (4000, 40000, 40000)
    """
    require_int(steps, "steps", 1, owner="panel_budget")
    require_real(rate, "rate", 0.0, low_open=True, owner="panel_budget")
    require_real(new_rate, "new_rate", 0.0, owner="panel_budget")
    require_real(cap, "cap", 1.0, owner="panel_budget")
    if new_rate == 0.0 or rate / new_rate >= cap:
        return int(round(cap * steps))
    return int(round(steps * max(1.0, rate / new_rate)))


def train_panel(base: ModularRun, weight_decays: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)) -> Any:
    """A λ slider and a *Train* button that trains ``base`` with the chosen λ, draws its curves and diagnoses it.

    The budget scales with 1/(ηλ) from ``base``'s (:func:`panel_budget`, at most
    :data:`PANEL_BUDGET_CAP` times it), so that a smaller λ gets the time its delay needs; the
    regime is :func:`~nhtlab.analysis.regimes.diagnose_regime`'s, the rule chapter 02 states.

    Parameters
    ----------
    base : ModularRun
        The chapter's run (its λ > 0 and steps set the budget rule).
    weight_decays : tuple of float
        The λ the slider offers.

    Returns
    -------
    ipywidgets.VBox or StaticNote
        The panel in a live kernel, a note in the book build.
    """
    require_type(base, "base", ModularRun, owner="train_panel")
    require_real(base.weight_decay, "base.weight_decay", 0.0, low_open=True, owner="train_panel")
    if _static():
        return StaticNote(
            f"Run this notebook in Jupyter or Colab to get a λ slider ({', '.join(map(str, weight_decays))}) "
            "and a Train button that retrains this chapter's model, redraws its accuracy and norm curves and "
            f"prints its regime. The budget scales with 1/(ηλ) from this chapter's {base.steps:,} steps at "
            f"λ = {base.weight_decay:g}, at most {PANEL_BUDGET_CAP}× that.")
    import ipywidgets as widgets  # local: Jupyter machinery, needed only by a live panel
    from IPython.display import display

    slider = widgets.SelectionSlider(options=list(weight_decays), value=base.weight_decay if base.weight_decay in weight_decays else weight_decays[0],
                                     description="λ")
    button = widgets.Button(description="Train", button_style="primary")
    output = widgets.Output()

    def on_click(_: Any) -> None:
        with output:
            output.clear_output()
            lam = float(slider.value)
            steps = panel_budget(base.steps, base.lr * base.weight_decay, base.lr * lam)
            print(f"λ = {lam:g}: {steps:,} steps (the budget scales with 1/(ηλ) from {base.steps:,} at "
                  f"λ = {base.weight_decay:g}, at most {PANEL_BUDGET_CAP}× that)")
            history = run_modular(base.replace(weight_decay=lam, steps=steps), progress="widget")
            display(charts.training_curves(history, find_events(history), title=f"λ = {lam:g}"))
            regime = diagnose_regime(history)
            print(f"Diagnosis (chapter 02's rule): {regime.regime}: {regime.reason}.")

    button.on_click(on_click)
    return widgets.VBox([widgets.HBox([slider, button]), output])
