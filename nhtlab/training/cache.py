"""A result cache: finished runs are kept on disk and reused instead of retrained.

An entry is keyed by :func:`~nhtlab.training.cache_key.config_key` (the config and what computes its
numbers): any change of setting or of that code misses; a docstring or comment edit does not. An entry is one
JSON file with a SHA-256 checksum, written atomically; a damaged one is moved aside with a warning and counts
as a miss. A cache that cannot be written costs no training: the history is returned with a warning.

With ``checkpoints=True`` a run trained through the cache checkpoints into ``<root>/checkpoints/<key>`` and a
killed process resumes there. It reads no environment variable: the book wraps it
(:class:`nhtlab.book.runs.BookCache`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:  # POSIX file locks; elsewhere claim() does not wait (see ResultCache.claim)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from .. import _version
from ..history import History
from ..validation import require_bool, require_type
from .cache_key import canonical, config_key, key_threads, sha256  # noqa: F401  (key_threads: read from here)
from .checkpoint import atomic_write_bytes
from .modular_run import ModularRun, run_modular

__all__ = ["ResultCache", "default_cache_dir", "config_key", "cached_run"]

_FINISHED = ("completed", "stopped", "diverged")


def default_cache_dir() -> Path:
    """``~/.cache/nhtlab``: where a cache given no ``root`` lives."""
    return Path.home() / ".cache" / "nhtlab"


class ResultCache:
    """Finished runs on disk under ``root`` (default :func:`default_cache_dir`), keyed by :func:`config_key`."""

    def __init__(self, root: str | os.PathLike | None = None, checkpoints: bool = False):
        if root is not None:
            require_type(root, "root", (str, os.PathLike), owner="ResultCache")
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.checkpoints = require_bool(checkpoints, "checkpoints", owner="ResultCache")

    def run_dir(self, config: Mapping[str, Any]) -> Path:
        """Where an unfinished run of ``config`` keeps its checkpoints (``<root>/checkpoints/<key>``)."""
        return self.root / "checkpoints" / config_key(config)

    def train(self, run: Any, **kwargs: Any) -> History:
        """``run.execute(**kwargs)``, checkpointing into :meth:`run_dir` when checkpoints are on."""
        return run.execute(**self.checkpointing(run, kwargs))

    def checkpointing(self, run: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with ``run_dir`` set to :meth:`run_dir` when checkpoints are on and none is given."""
        if self.checkpoints and kwargs.get("run_dir") is None:
            return {**kwargs, "run_dir": self.run_dir(run.cache_config())}
        return kwargs

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    def path(self, config: Mapping[str, Any]) -> Path:
        """File of the entry for ``config`` (which may not exist)."""
        key = config_key(config)
        return self.root / key[:2] / f"{key}.json"

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        return self.path(config).exists()

    def get(self, config: Mapping[str, Any]) -> History | None:
        """The cached history of ``config``, or None on a miss (a damaged entry too, set aside with a warning)."""
        path = self.path(config)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            body = entry["body"]
            if sha256(canonical(body)) != entry["checksum"]:
                raise ValueError("checksum mismatch")
            if body["key"] != path.stem:
                raise ValueError("the entry belongs to another key")
            history = History.from_dict(body["history"])
            if "columns" in body:  # the canonical JSON sorted each row's keys: put the history's own order back
                rank = {name: i for i, name in enumerate(body["columns"])}  # keys not listed go last, as they are
                history.rows = [dict(sorted(row.items(), key=lambda item: rank.get(item[0], len(rank))))
                                for row in history.rows]
        except Exception as error:  # noqa: BLE001 — every kind of damage is handled alike
            self._set_aside(path, error)
            return None
        return history

    def put(self, config: Mapping[str, Any], history: History) -> Path:
        """Store the finished ``history`` of ``config`` (a ``"running"`` one is refused); returns the entry's file."""
        require_type(config, "config", Mapping, owner="ResultCache.put")
        require_type(history, "history", History, owner="ResultCache.put")
        if history.status not in _FINISHED:
            raise ValueError(
                f"The 'history' parameter of ResultCache.put must be a finished run (status one of "
                f"{', '.join(repr(s) for s in _FINISHED)}). Got status {history.status!r} instead."
            )

        path = self.path(config)

        body = {"key": path.stem, "nhtlab": _version.__version__, "config": dict(config), "history": history.to_dict(),
                # the canonical JSON sorts a row's keys; this list keeps their order, which is the model's layer
                # order in norm/<layer> (analysis reads the first layer off it)
                "columns": history.columns}
        body = json.loads(canonical(body))  # the stored form: what get() will checksum
        entry = {"checksum": sha256(canonical(body)), "body": body}
        atomic_write_bytes(path, canonical(entry).encode("utf-8"))
        shutil.rmtree(self.run_dir(config), ignore_errors=True)  # a stored run needs no checkpoint
        return path

    @contextmanager
    def claim(self, config: Mapping[str, Any]) -> Iterator[History | None]:
        """Hold the right to train ``config``'s run, so that processes sharing the cache train it once.

        Waits while another process holds the claim (a file lock, released on an error or death too), then
        yields the cached history or None: the caller trains and puts it *before leaving the block*.
        Without POSIX file locks (Windows) nothing waits.
        """
        require_type(config, "config", Mapping, owner="ResultCache.claim")
        if fcntl is None:  # pragma: no cover - Windows
            yield self.get(config)
            return
        path = self.path(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # blocks while another process trains this run
            try:
                yield self.get(config)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def clear(self) -> int:
        """Delete every entry, set-aside and leftover temporary file; return how many entries were removed."""
        removed = 0
        if self.root.exists():
            for file in {*self.root.glob("*/*.json*"), *self.root.glob("*/.*.tmp")}:
                removed += file.suffix == ".json"
                file.unlink(missing_ok=True)
        return removed

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.exists() else 0

    @staticmethod
    def _set_aside(path: Path, error: Exception) -> None:
        aside = path.with_name(path.name + ".corrupt")
        with contextlib.suppress(OSError):
            os.replace(path, aside)
        warnings.warn(
            f"Ignoring a damaged result-cache entry {path} ({type(error).__name__}: {error}); "
            f"it was moved to {aside.name} and the run will be recomputed.",
            RuntimeWarning,
            stacklevel=3,
        )


def cached_run(run: Any, cache: ResultCache | None = None, *, use_cache: bool = True, **kwargs: Any) -> History:
    """:func:`nhtlab.run_modular` on ``run`` through ``cache`` (default ``ResultCache()``).

    ``use_cache=False`` neither reads nor writes. A cached history has no ``model`` (only the measurements
    are stored); ``history.cached`` tells which.
    """
    require_type(run, "run", ModularRun, owner="cached_run")
    if cache is not None:
        require_type(cache, "cache", ResultCache, owner="cached_run")
    require_bool(use_cache, "use_cache", owner="cached_run")
    if kwargs.get("callbacks"):
        raise ValueError("The 'callbacks' parameter of cached_run is not supported: a cached run would skip them. "
                         "Call run_modular directly.")
    config = run.cache_config()
    if cache is None:
        cache = ResultCache()
    if not use_cache:
        history = run_modular(run, **kwargs)
        history.cached = False  # type: ignore[attr-defined]
        return history
    try:
        with cache.claim(config) as hit:  # another process training this run: wait for it, then read it
            history = hit if hit is not None else cache.train(run, **kwargs)
            note = None if hit is not None else put_or_note(cache, config, history)
    except OSError as error:  # an unusable cache (no claim): read it if it can be read, else train uncached
        hit = cache.get(config)
        history, note = (hit, None) if hit is not None else (run_modular(run, **kwargs), unwritable(cache, error))
    if note is not None:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    history.cached = hit is not None  # type: ignore[attr-defined]
    return history


def unwritable(cache: Any, error: Exception) -> str:
    """Why ``cache`` could not keep a run: the finished history is returned anyway."""
    return (f"The cache {cache!r} could not be written ({type(error).__name__}: {error}); the finished "
            f"histories are returned but not cached, so they will be trained again next time.")


def put_or_note(cache: Any, config: Mapping[str, Any], history: History) -> str | None:
    """``cache.put``; on an OSError (a read-only or full disk) the reason, the history being kept anyway."""
    try:
        cache.put(config, history)
    except OSError as error:
        return unwritable(cache, error)
    return None
