"""One run, measured by a probe callback, kept in the result cache beside the plain run it is.

A chapter that needs more than a run's history (DLR on a fixed probe, which needs the
model's features at every evaluation) would otherwise train a run another chapter
already trained. :func:`tracked_run` trains the run *with* the probe once and keeps two
entries: the tracked history (keyed by the run's config together with the probe's
settings) and the plain history, under the run's own key, which is what
:func:`nhtlab.sweep` and :func:`nhtlab.cached_run` read. A probe only reads the model
(evaluation mode, no gradient, no random numbers), so the training trajectory is the
plain run's: when the plain entry already exists the tracked run's own columns are
compared with it, number for number (:func:`same_run_check`).

What it does not avoid: when the plain run was cached first (chapter 1 reached it
first), the tracked run is trained once more, the one time its own entry is missing;
the cache holds measurements, not the models needed to compute a probe afterwards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import torch

from ..analysis.claims import Check
from ..data.modular import modular_data
from ..history import History
from ..validation import check_type
from .cache import ResultCache, cache_enabled
from .dlr_tracker import DLRTracker
from .modular_run import ModularRun, run_modular

__all__ = ["tracked_run", "probe_key", "same_run_check", "pair_probe"]


def _tensor_digest(x: torch.Tensor | None) -> str | None:
    if x is None:
        return None
    data = x.detach().cpu().contiguous()
    return hashlib.sha256(str((tuple(data.shape), str(data.dtype))).encode() + data.numpy().tobytes()).hexdigest()


def probe_key(tracker: DLRTracker) -> dict[str, Any]:
    """The settings of a :class:`DLRTracker` that decide what it writes, as plain JSON values.

    Parameters
    ----------
    tracker : DLRTracker
        The probe.

    Returns
    -------
    dict
        Its rank rules, layer, spectra settings and SHA-256 digests of its inputs and labels.

    Examples
    --------
    >>> a = DLRTracker(torch.zeros(4, 2, dtype=torch.long))
    >>> probe_key(a) == probe_key(DLRTracker(torch.zeros(4, 2, dtype=torch.long)))
    True
    """
    check_type(tracker, "tracker", DLRTracker, owner="probe_key")
    return {
        "probe": "DLRTracker", "x": _tensor_digest(tracker.x), "labels": _tensor_digest(tracker.labels),
        "rank": tracker.rank, "tol": tracker.tol,
        "compare": {name: list(rule) for name, rule in sorted((tracker.compare or {}).items())},
        "layer": tracker.layer, "which": tracker.which, "spectra": tracker.spectra,
        "top": tracker.top if tracker.spectra else None, "prefix": tracker.prefix,
    }


class _Recording:
    """Calls the tracker and remembers which columns it wrote."""

    def __init__(self, tracker: DLRTracker):
        self.tracker, self.columns = tracker, set()

    def __call__(self, state: Any) -> None:
        before = set(state.row)
        self.tracker(state)
        self.columns |= set(state.row) - before


def _plain(history: History, probe_columns: set[str]) -> History:
    rows = [{k: v for k, v in row.items() if k not in probe_columns} for row in history.rows]
    return History(rows=rows, status=history.status, message=history.message, config=dict(history.config))


def tracked_run(run: ModularRun, tracker: DLRTracker, cache: ResultCache | None = None, *,
                use_cache: bool | None = None, progress: str | None = None, desc: str | None = None) -> History:
    """``run`` with ``tracker`` as a callback, through the result cache, sharing the plain run's entry.

    Parameters
    ----------
    run : ModularRun
        The run, exactly as another chapter defines it (its cache key is unchanged).
    tracker : DLRTracker
        The probe; its spectra (when ``tracker.spectra``) come back as ``history.spectra``.
    cache : ResultCache, optional
        Defaults to ``ResultCache()``.
    use_cache : bool, optional
        False trains without reading or writing; defaults to the ``NHTLAB_CACHE`` setting.
    progress, desc : str, optional
        Passed to :func:`nhtlab.run_modular` when the run is trained.

    Returns
    -------
    History
        The run's rows with the probe's columns. Attributes: ``cached`` (the tracked entry
        was read, nothing trained), ``spectra`` (spectrum records with a ``step``, possibly
        empty), ``plain`` (``"cached before"``: the run's plain entry existed, e.g. chapter
        1's, and was compared; ``"written"``: this call wrote it; ``"cached"``: the tracked entry
        was read; None without cache) and
        ``plain_history`` (the plain entry, or None).
    """
    check_type(run, "run", ModularRun, owner="tracked_run")
    check_type(tracker, "tracker", DLRTracker, owner="tracked_run")
    if cache is not None:
        check_type(cache, "cache", ResultCache, owner="tracked_run")
    use_cache = cache_enabled() if use_cache is None else use_cache
    plain_config = run.cache_config()
    tracked_config = {"tracked": plain_config, "probe": probe_key(tracker)}
    spectra_config = {"spectra_of": tracked_config}
    if not use_cache:
        history = run_modular(run, callbacks=[tracker], progress=progress, desc=desc)
        history.cached, history.plain, history.plain_history = False, None, None  # type: ignore[attr-defined]
        history.spectra = tracker.spectrum_records()  # type: ignore[attr-defined]
        return history
    cache = cache if cache is not None else ResultCache()
    hit = cache.get(tracked_config)
    spectra = cache.get(spectra_config) if tracker.spectra else History(status="completed")
    if hit is not None and spectra is not None:
        hit.cached, hit.spectra = True, spectra.rows  # type: ignore[attr-defined]
        hit.plain, hit.plain_history = "cached", cache.get(plain_config)  # type: ignore[attr-defined]
        return hit
    with cache.claim(plain_config) as plain_hit:  # chapter 1 reaching the run meanwhile waits, then reads it
        recording = _Recording(tracker)
        history = run_modular(run, callbacks=[recording], progress=progress, desc=desc)
        if plain_hit is None:
            plain_hit = _plain(history, recording.columns)
            cache.put(plain_config, plain_hit)
            history.plain = "written"  # type: ignore[attr-defined]
        else:
            history.plain = "cached before"  # type: ignore[attr-defined]
    cache.put(tracked_config, history)
    if tracker.spectra:
        cache.put(spectra_config, History(rows=tracker.spectrum_records(), status="completed"))
    history.cached, history.plain_history = False, plain_hit  # type: ignore[attr-defined]
    history.spectra = tracker.spectrum_records()  # type: ignore[attr-defined]
    return history


def same_run_check(tracked: History, plain: History | None = None) -> Check:
    """Whether a tracked history is the plain run: the same steps and the same value in every plain column.

    Parameters
    ----------
    tracked : History
        The run trained with a probe (:func:`tracked_run`).
    plain : History, optional
        The run's plain cached history; defaults to ``tracked.plain_history``. None there fails the check.

    Returns
    -------
    Check
        Passed when every row of ``plain`` equals the same row of ``tracked`` on ``plain``'s columns; the
        detail says whether the plain entry was cached before (another chapter's run) or written by this call.
    """
    check_type(tracked, "tracked", History, owner="same_run_check")
    plain = plain if plain is not None else getattr(tracked, "plain_history", None)
    name = "the DLR run is the plain run (same steps, same measurements)"
    if plain is None:
        why = ("no result cache (NHTLAB_CACHE off): no entry is shared, so nothing was compared"
               if getattr(tracked, "plain", "") is None else "no plain entry to compare with")
        return Check(name, False, why)
    check_type(plain, "plain", History, owner="same_run_check")
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


def pair_probe(run: ModularRun, compare: Mapping[str, tuple[str | int, float | None]] | None = None,
               spectra: bool = False, top: int = 64) -> DLRTracker:
    """A :class:`DLRTracker` on every pair (a, b) of ``run``'s table, with the labels (for NC1 and Π*).

    Parameters
    ----------
    run : ModularRun
        Its modulus, operation, split and seed give the table (training pairs first, then test pairs).
    compare : mapping, optional
        Further rank rules, name → (rank, tol).
    spectra : bool
        Keep the spectrum at each evaluation.
    top : int
        Eigenpairs kept.

    Returns
    -------
    DLRTracker
        Its ``x`` is the p² × 2 table of pairs.
    """
    check_type(run, "run", ModularRun, owner="pair_probe")
    data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    return DLRTracker(torch.cat([data.x_train, data.x_test]), labels=torch.cat([data.y_train, data.y_test]),
                      compare=dict(compare) if compare else None, spectra=spectra, top=top)
