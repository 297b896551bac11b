"""The book's layer: each chapter's reports, its claims and closing checks, tables, profiles, the
run stamp, exercises, widgets and Colab.

Every chapter imports it one way, beside the core's top-level names::

    import nhtlab
    from nhtlab import book as nb

    history = nhtlab.run_modular(nhtlab.companion(weight_decay=1.0))  # the science: nhtlab.X
    nb.closing_checks([nb.check_grokking(history)], cfg)             # the chapter's report: nb.X

The names are flat (``nb.rule_records``, not ``nb.dlr_report.rule_records``). Nothing in the core
imports this package.
"""

import importlib

from .claims import *  # noqa: F401,F403
from .closing import *  # noqa: F401,F403
from .colab import *  # noqa: F401,F403
from .delay_law_report import *  # noqa: F401,F403
from .dlr_probes import *  # noqa: F401,F403
from .dlr_report import *  # noqa: F401,F403
from .emergence_report import *  # noqa: F401,F403
from .exercises import check_answer, check_function, check_prediction  # noqa: F401
from .grokking_report import *  # noqa: F401,F403
from .held_out_eta import *  # noqa: F401,F403
from .layer_report import *  # noqa: F401,F403
from .off_grid_eta import *  # noqa: F401,F403
from .profiles import *  # noqa: F401,F403
from .regime_report import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .run_stamp import *  # noqa: F401,F403
from .runs import *  # noqa: F401,F403
from .shortcut_report import *  # noqa: F401,F403
from .shortcut_study import *  # noqa: F401,F403
from .tuning_report import *  # noqa: F401,F403

_MODULES = ["claims", "closing", "colab", "delay_law_report", "dlr_probes", "dlr_report",
            "emergence_report", "grokking_report", "held_out_eta", "layer_report", "off_grid_eta",
            "profiles", "regime_report", "report", "run_stamp", "runs", "shortcut_report",
            "shortcut_study", "tuning_report"]

# The widgets and the Fourier charts draw charts (altair, slow to import): loaded on first use.
_LAZY = {"train_panel": ".widgets", "StaticNote": ".widgets",
         "widgets": ".widgets", "fourier_spectrum_chart": ".fourier_charts", "fourier_curves": ".fourier_charts",
         # each chapter's own charts (one chapter draws each: they are the book's, not the core's)
         **dict.fromkeys(['dlr_timeline', 'dlr_decomposition', 'spectra_explorer', 'compare_measures', 'toy_chart', 'dlr_band', 'lr_panels'], ".dlr_charts"),
         **dict.fromkeys(['REGIME_COLORS', 'regime_norm_curves', 'lambda_slider', 'delay_fit_chart', 'contraction_chart'], ".regime_charts"),
         **dict.fromkeys(['gap_and_delay', 'fraction_threshold', 'monitor_chart', 'lambda_grid'], ".emergence_charts"),
         **dict.fromkeys(['warning_signals', 'sweep_lines', 'score_bars', 'contraction_curves', 'layer_peak_chart'], ".layer_charts")}


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name], __name__)
        value = module if name == "widgets" else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nhtlab.book' has no attribute {name!r}")


__all__ = [name for module in _MODULES for name in importlib.import_module(f".{module}", __name__).__all__]
__all__ += ["check_answer", "check_function", "check_prediction", "train_panel", "StaticNote", "fourier_spectrum_chart",  # noqa: F405
            "fourier_curves"]
__all__ += [name for name, where in _LAZY.items() if where.endswith("_charts") and where != ".fourier_charts"]
