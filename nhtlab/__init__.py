
"""

__version__ = "0.1.0"

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
from .cache import ResultCache, cached_run  # noqa: E402
