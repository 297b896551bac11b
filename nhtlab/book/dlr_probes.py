"""One run, measured by a probe callback, kept in the result cache beside the plain run it is.

:func:`tracked_run` trains a run *with* a probe (DLR needs the model's features at every evaluation) once and
keeps two entries: the tracked history (keyed by the run's config and the probe's settings) and the plain
history under the run's own key. A probe only reads the model, so the trajectory is the plain run's
(:func:`same_run_check` compares them number for number). A run chapter 4 probes (:func:`shared_probe`) is
trained with its probe by whichever chapter trains it first (:meth:`BookCache.train
<nhtlab.book.runs.BookCache.train>`); any other probe on a cached run trains it again, since the cache holds
measurements, not models.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

import torch

from ..data.modular import modular_data
from ..history import History
from ..measures.dlr import CANDIDATE_RULES, DEFAULT_RANK, DEFAULT_TOL
from ..plumbing.flags import cache_dir, cache_enabled
from ..plumbing.ledger import record_training
from ..training.cache import ResultCache, config_key
from ..training.checkpoint import checkpoint_path
from ..training.dlr_tracker import DLRTracker
from ..training.modular_run import ModularRun, run_modular
from ..training.presets import COMPANION_SWEEPS, companion_grid_run
from ..validation import require_type
from .claims import Check

__all__ = ["tracked_run", "same_run_check", "probe_key", "pair_probe", "companion_probe", "shared_probe",
           "train_probed", "COMPANION_PROBE_TOP"]

#: Eigenpairs kept in the spectra of :func:`companion_probe` (the companion transformer has 128 features).
COMPANION_PROBE_TOP = 64


def _tensor_digest(x: torch.Tensor | None) -> str | None:
    if x is None:
        return None
    data = x.detach().cpu().contiguous()
    return hashlib.sha256(str((tuple(data.shape), str(data.dtype))).encode() + data.numpy().tobytes()).hexdigest()


def probe_key(tracker: DLRTracker) -> dict[str, Any]:
    """The settings of a :class:`DLRTracker` that decide what it writes, as plain JSON values."""
    require_type(tracker, "tracker", DLRTracker, owner="probe_key")
    return {
        "probe": "DLRTracker", "x": _tensor_digest(tracker.x), "labels": _tensor_digest(tracker.labels),
        "rank": tracker.rank, "tol": tracker.tol,
        "compare": {name: list(rule) for name, rule in sorted((tracker.compare or {}).items())},
        "layer": tracker.layer, "which": tracker.which, "spectra": tracker.spectra,
        "top": tracker.top if tracker.spectra else None, "prefix": tracker.prefix,
    }


def pair_probe(run: ModularRun, compare: Mapping[str, tuple[str | int, float | None]] | None = None,
               spectra: bool = False, top: int = 64) -> DLRTracker:
    """A :class:`DLRTracker` on every pair (a, b) of ``run``'s table (training pairs first), with the labels."""
    require_type(run, "run", ModularRun, owner="pair_probe")
    data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    return DLRTracker(torch.cat([data.x_train, data.x_test]), labels=torch.cat([data.y_train, data.y_test]),
                      compare=dict(compare) if compare else None, spectra=spectra, top=top)


def companion_probe(run: ModularRun) -> DLRTracker:
    """Chapter 4's DLR probe of ``run``: every pair, the candidate rank rules, NC1 and spectra."""
    default = (DEFAULT_RANK, DEFAULT_TOL[DEFAULT_RANK])
    compare = {name: rule for name, rule in CANDIDATE_RULES.items() if tuple(rule) != default}
    return pair_probe(run, compare, spectra=True, top=COMPANION_PROBE_TOP)


def shared_probe(run: Any) -> DLRTracker | None:
    """The probe a chapter reads of ``run`` (else None), so that whoever trains the run trains it with the probe.

    Chapter 4 reads DLR on the λ = 1 runs of any profile's companion grid (any seed), which chapters 1, 2 and 3
    train too, at the probe's price: a forward pass over the p² pairs and a few small eigendecompositions.
    """
    shared = (isinstance(run, ModularRun) and run.weight_decay == 1.0
              and any(run == companion_grid_run(grid, 1.0, run.seed) for grid in COMPANION_SWEEPS.values()))
    return companion_probe(run) if shared else None


def plain_history(history: History, probe_columns: set[str]) -> History:
    """``history`` without the probe's columns: the plain run's rows."""
    rows = [{k: v for k, v in row.items() if k not in probe_columns} for row in history.rows]
    return History(rows=rows, status=history.status, message=history.message, config=dict(history.config))


def tracked_configs(run: ModularRun, tracker: DLRTracker) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cache keys of ``run`` measured by ``tracker``: its history, and its spectra (JSON-able dicts)."""
    tracked = {"tracked": run.cache_config(), "probe": probe_key(tracker)}
    return tracked, {"spectra_of": tracked}


def train_tracked(run: ModularRun, tracker: DLRTracker, cache: Any, **kwargs: Any) -> tuple[History, set[str]]:
    """Train ``run`` with ``tracker``, put the tracked entry and its spectra; the history and the probe's columns."""
    columns: set[str] = set()

    def recording(state: Any) -> None:  # the tracker, remembering which columns it wrote
        before = set(state.row)
        tracker(state)
        columns.update(set(state.row) - before)

    history = run_modular(run, callbacks=[recording], **kwargs)
    tracked_config, spectra_config = tracked_configs(run, tracker)
    cache.put(tracked_config, history)
    if tracker.spectra:
        cache.put(spectra_config, History(rows=tracker.spectrum_records(), status="completed"))
    return history, columns


def train_probed(run: ModularRun, tracker: DLRTracker, cache: Any, **kwargs: Any) -> History:
    """Train ``run`` with ``tracker``, put the tracked entry in ``cache``, return the plain history.

    What :meth:`ResultCache.train <nhtlab.training.cache.ResultCache.train>` does for a run with a
    :func:`shared_probe`; the caller holds the plain run's claim and puts the plain entry. A run that
    resumes from a checkpoint (``run_dir``) trains without the probe: the probe would miss the
    evaluations before it, and :func:`tracked_run` trains its own entry later.
    """
    run_dir = kwargs.get("run_dir")
    if run_dir is not None and checkpoint_path(run_dir).exists():
        return run_modular(run, **kwargs)
    history, columns = train_tracked(run, tracker, cache, **kwargs)
    plain = plain_history(history, columns)
    plain.model = history.model  # type: ignore[attr-defined]
    return plain


def tracked_run(run: ModularRun, tracker: DLRTracker, cache: ResultCache | None = None, *,
                use_cache: bool | None = None, progress: str | None = None, desc: str | None = None) -> History:
    """``run`` with ``tracker`` as a callback, through the result cache, sharing the plain run's entry.

    The history carries ``cached`` (the tracked entry was read), ``spectra`` (spectrum records, possibly
    empty), ``plain`` (``"cached before"``: the plain entry existed and was compared; ``"written"``: this
    call wrote it; ``"cached"``: both entries were read; None without cache) and ``plain_history``.
    """
    require_type(run, "run", ModularRun, owner="tracked_run")
    require_type(tracker, "tracker", DLRTracker, owner="tracked_run")
    if cache is not None:
        require_type(cache, "cache", ResultCache, owner="tracked_run")
    use_cache = cache_enabled() if use_cache is None else use_cache
    if not use_cache:
        history = run_modular(run, callbacks=[tracker], progress=progress, desc=desc)
        history.cached, history.plain, history.plain_history = False, None, None  # type: ignore[attr-defined]
        history.spectra = tracker.spectrum_records()  # type: ignore[attr-defined]
        return history
    cache = cache if cache is not None else ResultCache(cache_dir())
    plain_config = run.cache_config()
    hit = _read_tracked(cache, run, tracker)
    if hit is not None:
        hit.plain_history = cache.get(plain_config)  # type: ignore[attr-defined]
        return hit
    with cache.claim(plain_config) as plain_hit:  # chapter 1 reaching the run meanwhile waits, then reads it
        if plain_hit is not None:  # whoever trained it meanwhile may have probed it (shared_probe)
            hit = _read_tracked(cache, run, tracker)
            if hit is not None:
                hit.plain_history = plain_hit  # type: ignore[attr-defined]
                return hit
        cpu, wall = time.process_time(), time.perf_counter()
        history, columns = train_tracked(run, tracker, cache, progress=progress, desc=desc)
        record_training(cache.root, config_key(run.cache_config()), run, history,
                        cpu_seconds=time.process_time() - cpu, wall_seconds=time.perf_counter() - wall, how="probed")
        history.plain = "cached before" if plain_hit is not None else "written"  # type: ignore[attr-defined]
        if plain_hit is None:
            plain_hit = plain_history(history, columns)
            cache.put(plain_config, plain_hit)
    history.cached, history.plain_history = False, plain_hit  # type: ignore[attr-defined]
    history.spectra = tracker.spectrum_records()  # type: ignore[attr-defined]
    return history


def _read_tracked(cache: ResultCache, run: ModularRun, tracker: DLRTracker) -> History | None:
    """The tracked entry with its spectra (``plain = "cached"``), or None when either is missing."""
    tracked_config, spectra_config = tracked_configs(run, tracker)
    hit = cache.get(tracked_config)
    spectra = cache.get(spectra_config) if tracker.spectra else History(status="completed")
    if hit is None or spectra is None:
        return None
    hit.cached, hit.spectra, hit.plain = True, spectra.rows, "cached"  # type: ignore[attr-defined]
    return hit


def same_run_check(tracked: History, plain: History | None = None) -> Check:
    """Whether a tracked history is the plain run (default ``tracked.plain_history``; none fails): the same steps
    and the same value in every plain column."""
    require_type(tracked, "tracked", History, owner="same_run_check")
    plain = plain if plain is not None else getattr(tracked, "plain_history", None)
    name = "the DLR run is the plain run (same steps, same measurements)"
    if plain is None:
        why = ("no result cache (NHTLAB_CACHE off): no entry is shared, so nothing was compared"
               if getattr(tracked, "plain", "") is None else "no plain entry to compare with")
        return Check(name, False, why)
    require_type(plain, "plain", History, owner="same_run_check")
    origin = {"cached before": "the plain entry was cached before the probed run (another chapter's run)",
              "cached": "both entries read from the cache",
              "written": "the plain entry was written from this run"}.get(getattr(tracked, "plain", None), "")
    if len(plain) != len(tracked):
        return Check(name, False, f"{len(tracked)} rows against {len(plain)}")
    for mine, theirs in zip(tracked.rows, plain.rows):
        differ = [k for k, v in theirs.items() if mine.get(k) != v]
        if differ:
            return Check(name, False, f"step {theirs.get('step')}: {', '.join(differ[:4])} differ")
    return Check(name, True, f"{origin + '; ' if origin else ''}{len(plain)} evaluations, "
                             f"{len(plain.columns)} columns equal")
