"""nhtlab: see why neural networks abandon shortcuts.

Datasets, models, training with norm tracking, sweeps, the NHT delay law, the
clean-norm-separation score, DLR and its spectra, and charts, for the nhtlab book.

The package is layered; imports only point down the list:

* ground: :mod:`nhtlab.history` (the record of a run), :mod:`nhtlab.validation`,
  :mod:`nhtlab.smoke`, :mod:`nhtlab.flags`, :mod:`nhtlab.papers`, the version;
* :mod:`nhtlab.data`, :mod:`nhtlab.models`, :mod:`nhtlab.measures` (tensors in, numbers out);
* :mod:`nhtlab.analysis` (numpy over histories);
* :mod:`nhtlab.training` (running experiments: loop, runs, sweeps, cache, callbacks);
* :mod:`nhtlab.charts`, then :mod:`nhtlab.notebook` (what the chapters need around the science).

The names below are the public surface; every one is also importable from its module.
"""

import importlib

from . import papers
from ._version import __version__
from .analysis import delay, emergence, layers, regimes, scorecard, separation
from .analysis.claims import Check, Reading, failed_checks, over_seeds
from .analysis.delay import contraction_fit, delay_fits, delay_point, delay_summary, linear_fit, predicted_delay
from .analysis.events import Events, border_times, find_events
from .analysis.layers import (early_warning, head_to_first_ratio, is_backward, layer_records, layer_transitions,
                              peak_order)
from .analysis.regimes import diagnose_regime, regime_curves, regime_order_ok, regime_table
from .analysis.scorecard import cue_escape_step, score_predictions, scorecard_text
from .analysis.separation import clean_norm_separation, separation_from_history
from .data.cues import border_shortcut, tint_shortcut
from .data.images import ImageData, cifar10, digits
from .data.modular import ModularData, modular_data
from .history import History
from .measures.cka import linear_cka
from .measures.collapse import nc1
from .measures.dlr import dlr, dlr_terms, output_rank
from .measures.features import Captured, capture, hooked
from .measures.norms import layer_norms, total_norm
from .measures.spectra import eigenfunctions, feature_spectrum
from .models import EmbeddingMLP, ResNet18, SimpleCNN, Transformer, make_model
from .notebook import exercises
from .notebook.profiles import select_profile
from .notebook.report import Markdown, md, table
from .notebook.stamp import stamp
from .smoke import science_checks, smoke_enabled
from .training import lazy_rich, monitor
from .training.batched import train_batched
from .training.cache import ResultCache, cached_run, default_cache
from .training.device import pick_device, seed_everything
from .training.dlr_tracker import DLRTracker
from .training.image_runs import ShortcutRun, run_shortcut
from .training.loop import TrainConfig, train
from .training.monitor import Monitor, online_regime
from .training.presets import BORDER_DESIGN, BORDER_DESIGN_CIFAR10, companion
from .training.runs import ModularRun, run_modular
from .training.slots import cpu_slot
from .training.sweeps import SweepResult, grid, sweep

# Imported on first use: the charts (and the widgets, which draw them) load altair, about 0.3 s that
# `import nhtlab` -- in every sweep worker and script -- need not pay.
_LAZY_MODULES = {"charts": ".charts", "widgets": ".notebook.widgets"}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        module = importlib.import_module(_LAZY_MODULES[name], __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'nhtlab' has no attribute {name!r}")


__all__ = [
    "__version__",
    # the record of a run
    "History",
    # data
    "ModularData", "modular_data", "ImageData", "digits", "cifar10", "border_shortcut", "tint_shortcut",
    # models
    "EmbeddingMLP", "Transformer", "SimpleCNN", "ResNet18", "make_model",
    # measures
    "total_norm", "layer_norms", "linear_cka", "nc1", "capture", "hooked", "Captured",
    "dlr", "dlr_terms", "output_rank", "feature_spectrum", "eigenfunctions",
    # analysis
    "Check", "Reading", "over_seeds", "failed_checks",
    "Events", "find_events", "border_times",
    "delay_point", "delay_summary", "delay_fits", "linear_fit", "contraction_fit", "predicted_delay",
    "diagnose_regime", "regime_curves", "regime_table", "regime_order_ok",
    "layer_records", "layer_transitions", "peak_order", "is_backward", "head_to_first_ratio", "early_warning",
    "clean_norm_separation", "separation_from_history",
    "score_predictions", "scorecard_text", "cue_escape_step",
    # training
    "TrainConfig", "train", "ModularRun", "run_modular", "ShortcutRun", "run_shortcut", "companion", "BORDER_DESIGN", "BORDER_DESIGN_CIFAR10",
    "grid", "sweep", "SweepResult", "train_batched", "ResultCache", "cached_run", "default_cache",
    "Monitor", "online_regime", "DLRTracker", "pick_device", "seed_everything", "cpu_slot",
    "science_checks", "smoke_enabled",
    # notebook
    "select_profile", "stamp", "Markdown", "md", "table",
    # modules the chapters reach by attribute (nhtlab.delay.mean_std, …)
    "charts", "papers", "delay", "emergence", "layers", "regimes", "scorecard", "separation", "lazy_rich", "monitor",
    "exercises", "widgets",
]
