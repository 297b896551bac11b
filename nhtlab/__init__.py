"""nhtlab: see why neural networks abandon shortcuts.

Datasets, models, training with norm tracking, sweeps, the NHT delay law, the
clean-norm-separation score, DLR and its spectra, and charts, for the nhtlab book.
"""

__version__ = "0.2.0"

from .device import pick_device, seed_everything  # noqa: E402
from .events import Events, find_events  # noqa: E402
from .experiment import ModularRun, run_modular  # noqa: E402
from .models import EmbeddingMLP, Transformer, make_model  # noqa: E402
from .modular import ModularData, modular_data  # noqa: E402
from .norms import layer_norms, total_norm  # noqa: E402
from .train import History, TrainConfig, train  # noqa: E402
from .profiles import select_profile  # noqa: E402
from .stamp import stamp  # noqa: E402
from . import exercises, widgets  # noqa: E402,F401
from .delay import delay_summary, predicted_delay  # noqa: E402
from .cache import ResultCache, cached_run, default_cache  # noqa: E402
from .monitor import Monitor, online_regime  # noqa: E402
from . import emergence  # noqa: E402
from .cka import linear_cka  # noqa: E402
from .collapse import nc1  # noqa: E402
from .features import Captured, capture, hooked  # noqa: E402
from .dlr import DLRTracker, dlr, dlr_terms, eigenfunctions, feature_spectrum, output_rank  # noqa: E402
from .images import ImageData, cifar10, digits  # noqa: E402
from .cnn import ResNet18, SimpleCNN  # noqa: E402
from .shortcuts import ShortcutRun, border_shortcut, run_shortcut, run_shortcuts, tint_shortcut  # noqa: E402
from .layers import early_warning, head_to_first_ratio, is_backward, layer_records, layer_transitions, peak_order  # noqa: E402
from .separation import clean_norm_separation, separation_from_history  # noqa: E402
from .sweeps import SweepResult, grid, sweep  # noqa: E402
from .batched import train_batched  # noqa: E402
from .regimes import diagnose_regime, regime_curves, regime_order_ok, regime_table  # noqa: E402
from .delay import contraction_fit, delay_fits, delay_point, linear_fit  # noqa: E402
from .scorecard import cue_escape_step, score_predictions, scorecard_text  # noqa: E402
from .presets import companion  # noqa: E402
from . import papers  # noqa: E402,F401
from .smoke import science_checks, smoke_enabled  # noqa: E402
