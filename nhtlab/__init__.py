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
from .analysis.comparison import (PaperComparison, check_lambdas_grok, check_norm_halves, check_reading,
                                  contraction_records, delay_readings, delay_records, eta_comparison,
                                  fit_records, law_fits, paper_comparison, ratio_records, run_records)
from .analysis.eta import EtaCalibration, GrokEstimate, calibrate_eta, eta_verdict, eta_evaluation, evaluate_eta, predict_grok, saved_evaluation
from .analysis.events import Events, border_times, find_events
from .analysis.layers import (early_warning, head_to_first_ratio, is_backward, layer_records, layer_transitions,
                              peak_order)
from .analysis.layers import (ContractionOrder, contraction_order, layer_window_records, order_determined,
                              order_readings)
from .analysis.layer_report import image_readings, image_run_rows, modular_order_rows, reading_rows, signal_records
from .analysis.regimes import diagnose_regime, regime_curves, regime_order_ok, regime_table
from .analysis.scale_report import (check_law_link, check_sizes_generalise, direction_by_seed, law_link,
                                    trend_records)
from .analysis.regime_report import (check_regime_order, norm_start_records, regime_readings, regime_records,
                                     regime_seed_records, regimes_by_lambda)
from .analysis.run_report import (check_contraction, check_grokking, check_norm_largest_at_init, check_weak,
                                  checks_over_seeds, delay_law_records, events_vs_paper,
                                  reading_records)
from .analysis.warnings import evaluate_warnings, supported_signal, warning_step
from .analysis.scorecard import cue_escape_step, prediction_readings, score_predictions, scorecard_rows, scorecard_text
from .analysis.shortcut_report import (RECORD_COLUMNS, RECORD_FORMATS, SET_LABELS, border_reading, border_record,
                                       check_border_escape, check_rho_trend,
                                       check_separation_defined, final_accuracy_records, higher_reading, norm_record,
                                       read_probe, reading_sentence, rho_reading, seed_reading_records,
                                       separation_records)
from .analysis.separation import clean_norm_separation, separation_from_history
from .analysis.tuning import (fit_threshold, lambda_checks, lambda_grid_records, lambda_readings, lambda_recipe,
                              monitor_dlr_check, norm_curve_records, regimes_by_seed)
from .data.cues import border_shortcut, tint_shortcut
from .data.images import ImageData, cifar10, digits
from .data.modular import ModularData, modular_data
from .data.noise import noisy_labels
from .history import History
from .measures.cka import linear_cka
from .measures.collapse import nc1
from .measures.dlr import dlr, dlr_terms, output_rank
from .measures.features import Captured, capture, hooked
from .measures.norms import layer_norms, total_norm
from .measures.predictions import accuracy, loss_and_accuracy, readout_dlr
from .measures.spectra import eigenfunctions, feature_spectrum
from .models import EmbeddingMLP, ResNet18, SimpleCNN, Transformer, make_model
from .notebook import exercises
from .notebook.profiles import select_profile
from .notebook.closing import closing_checks
from .notebook.colab import colab_launch, keep_on_drive
from .notebook.report import Markdown, eta_report, held_out_eta_report, md, table
from .notebook.stamp import stamp
from .smoke import science_checks, smoke_enabled
from .training import lazy_rich, monitor
from .training.batched import train_batched
from .training.cache import ResultCache, cached_run, default_cache
from .training.domains import domain_of, score_runs, sweep_records
from .training.shortcut_study import ShortcutStudy
from .training.device import pick_device, seed_everything
from .training.dlr_tracker import DLRTracker
from .analysis import dlr_report
from .training.tracked import companion_probe, pair_probe, same_run_check, shared_probe, tracked_run
from .notebook.dlr_tables import dlr_table
from .training.shortcut_run import ShortcutRun, run_shortcut
from .training.loop import TrainConfig, train
from .training.monitor import Monitor, online_regime
from .training.presets import BORDER_DESIGN, BORDER_DESIGN_CIFAR10, companion, companion_grid_run, companion_sweep
from .training.modular_run import ModularRun, run_modular
from .training.cpu_slots import cpu_slot
from .training.sweeps import SweepResult, grid, sweep

# Imported on first use: the charts (and the widgets, which draw them) load altair, an import that
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
    "noisy_labels",
    # models
    "EmbeddingMLP", "Transformer", "SimpleCNN", "ResNet18", "make_model",
    # measures
    "total_norm", "layer_norms", "linear_cka", "nc1", "capture", "hooked", "Captured",
    "accuracy", "loss_and_accuracy", "readout_dlr",
    "dlr", "dlr_terms", "output_rank", "feature_spectrum", "eigenfunctions",
    # analysis
    "Check", "Reading", "over_seeds", "failed_checks",
    "Events", "find_events", "border_times",
    "predict_grok", "calibrate_eta", "evaluate_eta", "eta_verdict", "EtaCalibration", "GrokEstimate", "saved_evaluation", "eta_evaluation",
    "evaluate_warnings", "warning_step", "supported_signal",
    "delay_point", "delay_summary", "delay_fits", "linear_fit", "contraction_fit", "predicted_delay",
    "paper_comparison", "PaperComparison", "delay_records", "run_records", "eta_comparison", "law_fits",
    "fit_records", "contraction_records", "ratio_records", "delay_readings", "check_lambdas_grok",
    "check_norm_halves", "check_reading",
    "diagnose_regime", "regime_curves", "regime_table", "regime_order_ok",
    "law_link", "check_law_link", "check_sizes_generalise", "direction_by_seed", "trend_records",
    "regime_records", "regimes_by_lambda", "regime_readings", "check_regime_order", "norm_start_records",
    "regime_seed_records",
    "check_grokking", "check_contraction", "check_weak", "check_norm_largest_at_init", "checks_over_seeds",
    "reading_records", "events_vs_paper", "delay_law_records",
    "layer_records", "layer_transitions", "peak_order", "ContractionOrder", "contraction_order",
    "layer_window_records", "order_determined", "order_readings", "image_readings", "image_run_rows", "modular_order_rows",
    "reading_rows", "signal_records", "is_backward", "head_to_first_ratio", "early_warning",
    "clean_norm_separation", "separation_from_history",
    "score_predictions", "scorecard_text", "cue_escape_step",
    "scorecard_rows", "prediction_readings", "score_runs", "domain_of", "sweep_records", "ShortcutStudy",
    "border_record", "norm_record", "border_reading", "higher_reading", "rho_reading", "final_accuracy_records",
    "separation_records", "seed_reading_records", "check_border_escape", "check_rho_trend", "check_separation_defined",
    "read_probe", "reading_sentence", "RECORD_COLUMNS", "RECORD_FORMATS", "SET_LABELS",
    "fit_threshold", "lambda_grid_records", "regimes_by_seed", "lambda_recipe", "lambda_readings", "lambda_checks",
    "norm_curve_records", "monitor_dlr_check",
    # training
    "TrainConfig", "train", "ModularRun", "run_modular", "ShortcutRun", "run_shortcut", "companion", "companion_sweep", "companion_grid_run", "BORDER_DESIGN", "BORDER_DESIGN_CIFAR10",
    "grid", "sweep", "SweepResult", "train_batched", "ResultCache", "cached_run", "default_cache",
    "tracked_run", "same_run_check", "pair_probe", "companion_probe", "shared_probe", "dlr_report", "dlr_table",
    "Monitor", "online_regime", "DLRTracker", "pick_device", "seed_everything", "cpu_slot",
    "science_checks", "smoke_enabled",
    # notebook
    "select_profile", "stamp", "Markdown", "md", "table", "eta_report", "held_out_eta_report", "closing_checks", "keep_on_drive", "colab_launch",
    # modules the chapters reach by attribute (nhtlab.delay.mean_std, …)
    "charts", "papers", "delay", "emergence", "layers", "regimes", "scorecard", "separation", "lazy_rich", "monitor",
    "exercises", "widgets",
]
