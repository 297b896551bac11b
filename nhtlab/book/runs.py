"""How the book trains its runs: the core's result cache, wrapped from outside by the build's plumbing.

:class:`BookCache` is the core's :class:`~nhtlab.training.cache.ResultCache` with what the build adds around
each ``run.execute()``: a machine-wide CPU slot (chapters side by side never run more trainings than there are
cores), chapter 04's shared DLR probe (:func:`~nhtlab.book.dlr_probes.shared_probe`: such a run is trained
once, with its probe) and a line in the ledger of trainings. :func:`cache` is the one the chapters use."""

from __future__ import annotations

import time
from typing import Any

from ..history import History
from ..plumbing.cpu_slots import cpu_slot
from ..plumbing.flags import cache_dir, cache_enabled, checkpoints_enabled
from ..plumbing.ledger import record_training
from ..training.cache import ResultCache, config_key
from ..training.lazy_rich_run import LazyRichResult
from ..training.lazy_rich_run import lazy_rich_run as _lazy_rich_run
from .dlr_probes import shared_probe, train_probed

__all__ = ["BookCache", "cache", "lazy_rich_run"]


class BookCache(ResultCache):
    """A :class:`~nhtlab.training.cache.ResultCache` whose trainings hold a CPU slot, carry the shared probe
    and are written to the ledger; reading and storing are the core cache's."""

    def train(self, run: Any, **kwargs: Any) -> History:
        """Train ``run`` as :meth:`ResultCache.train` does, inside a CPU slot, with its shared probe when it
        has one (both entries are put here), and add the training to the ledger."""
        probe = None if kwargs.get("callbacks") else shared_probe(run)
        cpu, wall = time.process_time(), time.perf_counter()
        with cpu_slot():
            history = super().train(run, **kwargs) if probe is None else train_probed(
                run, probe, self, **self.checkpointing(run, kwargs))
        record_training(self.root, config_key(run.cache_config()), run, history,
                        cpu_seconds=time.process_time() - cpu, wall_seconds=time.perf_counter() - wall,
                        how="alone" if probe is None else "probed")
        return history


def cache() -> BookCache | None:
    """The chapters' cache: a :class:`BookCache` at ``NHTLAB_CACHE_DIR`` (default ``~/.cache/nhtlab``), with
    checkpoints when ``NHTLAB_CHECKPOINTS`` is on; None when ``NHTLAB_CACHE`` is off (every run trains)."""
    return BookCache(cache_dir(), checkpoints_enabled()) if cache_enabled() else None


def lazy_rich_run(*args: Any, **kwargs: Any) -> LazyRichResult:
    """:func:`nhtlab.training.lazy_rich_run.lazy_rich_run` inside a CPU slot, as the book's other trainings."""
    with cpu_slot():
        return _lazy_rich_run(*args, **kwargs)
