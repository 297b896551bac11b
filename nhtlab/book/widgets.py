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
from .regime_report import PANEL_BUDGET_CAP, panel_budget
from ..analysis.events import find_events
from ..analysis.regimes import diagnose_regime
from ..plumbing.flags import in_book_build
from ..training.modular_run import ModularRun, run_modular
from ..validation import require_real, require_type

__all__ = ["train_panel", "StaticNote"]


class StaticNote:
    """What a live control shows in the static book: a sentence, not a dead widget."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return f"<div class='nhtlab-live-note'><b>Live control.</b> {html.escape(self.text)}</div>"

    def __repr__(self) -> str:
        return f"Live control. {self.text}"


def train_panel(base: ModularRun, weight_decays: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)) -> Any:
    """A λ slider and a *Train* button that trains ``base`` at that λ for :func:`panel_budget`'s steps, draws its
    curves and diagnoses it; in the book build, a :class:`StaticNote`."""
    require_type(base, "base", ModularRun, owner="train_panel")
    require_real(base.weight_decay, "base.weight_decay", 0.0, low_open=True, owner="train_panel")
    if in_book_build():
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
