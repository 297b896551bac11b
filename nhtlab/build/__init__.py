"""The book build's plumbing: CPU slots, the ledger of trainings, the device audit, the smoke cap,
the offline chart renderer and the build's flag.

None of it is science. Importing this package (``import nhtlab`` does) registers the slot, the
ledger, the smoke cap and the renderer into :mod:`nhtlab.hooks`, and with ``NHTLAB_DEVICE_CHECK=1``
starts the device audit for the whole process (:mod:`nhtlab.build.device_audit`).
"""

import importlib

from .. import hooks
from . import device_audit  # noqa: F401  (NHTLAB_DEVICE_CHECK=1: the process runs under the audit)
from . import smoke
from .cpu_slots import cpu_slot
from .ledger import record_training


def _offline_charts() -> None:  # altair is imported with the charts, not with nhtlab
    importlib.import_module(".offline_charts", __name__)


hooks.register(slot=cpu_slot, ledger=record_training, cap=smoke, on_charts=_offline_charts)
