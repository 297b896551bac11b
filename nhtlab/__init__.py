"""nhtlab: see why neural networks abandon shortcuts.

Datasets, models, training with norm tracking, the NHT delay law, the clean-norm-separation
score, DLR and its spectra, and charts. The package has two layers and the build's plumbing:

* the science core, imports pointing down the list: the ground (:mod:`nhtlab.history`,
  :mod:`nhtlab.validation`, :mod:`nhtlab.papers`), then :mod:`nhtlab.data`,
  :mod:`nhtlab.models`, :mod:`nhtlab.measures`, then :mod:`nhtlab.analysis`, :mod:`nhtlab.training`,
  :mod:`nhtlab.charts`;
* the book's layer, :mod:`nhtlab.book`: each chapter's reports, claims, tables, profiles, stamp,
  exercises, widgets and Colab (chapters use it as ``from nhtlab import book as nb``);
* the build's plumbing, :mod:`nhtlab.plumbing`: CPU slots, the ledger of trainings, the device audit,
  the smoke cap, the offline chart renderer, the environment variables.

The core imports neither of the other two and reads no environment variable: the book's layer wraps
it from outside (:class:`nhtlab.book.runs.BookCache`), and ``import nhtlab`` loads the core alone.

The names below are the public face; everything else stays importable from its module.
"""

import importlib

from . import papers
from ._version import __version__
from .analysis import emergence, layers
from .analysis.delay import delay_summary, predicted_delay
from .analysis.eta import predict_grok
from .analysis.events import border_times, find_events
from .analysis.layers import contraction_order, early_warning
from .analysis.regimes import diagnose_regime, fit_threshold, regime_table
from .analysis.separation import clean_norm_separation
from .data.cues import border_shortcut
from .data.images import cifar10, digits
from .data.mnist import mnist
from .data.modular import modular_data
from .data.noise import noisy_labels
from .history import History
from .measures.cka import linear_cka
from .measures.dlr import dlr
from .measures.features import capture
from .measures.norms import layer_norms, total_norm
from .measures.predictions import accuracy, loss_and_accuracy, readout_dlr
from .models import ResNet18, SimpleCNN, make_model
from .training import presets
from .training.device import pick_device, seed_everything
from .training.dlr_tracker import DLRTracker
from .training.loop import TrainConfig, train
from .training.modular_run import ModularRun, run_modular
from .training.monitor import Monitor
from .training.presets import companion, companion_sweep
from .training.shortcut_run import ShortcutRun
from .training.sweeps import sweep

# Imported on first use: the charts load altair, an import that `import nhtlab` -- in every sweep
# worker and script -- need not pay.
_LAZY_MODULES = {"charts": ".charts", "book": ".book"}  # the book's layer wraps the core; loaded when asked for


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        module = importlib.import_module(_LAZY_MODULES[name], __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'nhtlab' has no attribute {name!r}")


__all__ = [
    "__version__", "History",
    # data
    "modular_data", "digits", "mnist", "cifar10", "border_shortcut", "noisy_labels",
    # models
    "make_model", "SimpleCNN", "ResNet18",
    # measures
    "total_norm", "layer_norms", "dlr", "readout_dlr", "accuracy", "loss_and_accuracy", "capture", "linear_cka",
    # training
    "TrainConfig", "train", "Monitor", "DLRTracker", "pick_device", "seed_everything",
    # runs, sweeps and the result cache
    "ModularRun", "run_modular", "ShortcutRun", "companion", "companion_sweep", "sweep",
    # analysis
    "find_events", "border_times", "delay_summary", "predicted_delay", "predict_grok", "diagnose_regime", "fit_threshold",
    "regime_table", "contraction_order", "early_warning", "clean_norm_separation",
    # modules read by attribute (nhtlab.charts.training_curves, nhtlab.papers.NHT_PAPER, …)
    "charts", "papers", "presets", "layers", "emergence",
]
