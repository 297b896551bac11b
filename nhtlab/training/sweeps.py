"""Sweeps: one call trains a list of runs of any kind, through the result cache and a process pool.

A run is a :class:`~nhtlab.training.loop.TrainConfig` that trains itself (``run.execute``), keys the cache
(``cache_config()``) and reads its events: a new run kind needs nothing here.

Three strategies give the same histories (on the CPU bit for bit, within float rounding when stacked):
``"sequential"``, ``"parallel"`` (a process pool whose workers use one torch thread each: small models train
fastest so; any :class:`concurrent.futures.Executor` works, e.g. Dask, Ray or submitit) and ``"batched"``
(modular runs of one architecture trained as one stacked model, cached apart with ``stacked: true`` because
they round otherwise). ``"auto"`` stacks the modular runs on a GPU and trains the rest in parallel.

With a :class:`~nhtlab.training.cache.ResultCache` the local strategies *claim* each run before training it:
a run that another process is training is waited for and read, not trained twice, so the book's chapters
share their common runs in whatever order they reach them.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields
from typing import Any

import torch

from ..analysis.events import Events
from ..history import History
from ..validation import require_choice, require_int, require_type
from .batched import batch_key, train_batched
from .cache import ResultCache, put_or_note, unwritable
from .device import pick_device
from .loop import TrainConfig
from .progress import Progress, set_default_progress
from .modular_run import ModularRun

__all__ = ["STRATEGIES", "grid", "sweep", "resolve_strategy", "SweepResult", "SweepRow", "default_executor"]

STRATEGIES = ("auto", "sequential", "parallel", "batched")


def _stacks_on_gpu(run: TrainConfig) -> bool:
    # the stacked step computes cross-entropy only
    return isinstance(run, ModularRun) and run.loss == "cross_entropy" and pick_device(run.device).type == "cuda"


def resolve_strategy(runs: Sequence[TrainConfig], strategy: str = "auto", workers: int | None = None) -> str:
    """The strategy :func:`sweep` trains ``runs`` with: ``strategy`` itself, or what ``"auto"`` picks.

    ``"auto"`` stacks the modular runs on CUDA (one small run leaves a GPU idle) and trains the others
    ``"parallel"`` (on a CPU the processes give the speed-up and stacks add little, ``benchmarks/bench_sweeps.py``,
    while a run trained alone keeps the one history the cache shares), ``"sequential"`` with one worker;
    a mix gives ``"batched + parallel"``.
    """
    require_choice(strategy, "strategy", STRATEGIES, owner="sweep")
    if strategy != "auto":
        return strategy
    stacked = [_stacks_on_gpu(run) for run in runs]
    rest = "sequential" if workers == 1 else "parallel"
    if stacked and all(stacked):
        return "batched"
    return f"batched + {rest}" if any(stacked) else rest


def grid(base: TrainConfig, **axes: Iterable[Any]) -> list[TrainConfig]:
    """The runs of ``base`` over the Cartesian product of ``axes`` (field → values), last axis fastest."""
    require_type(base, "base", TrainConfig, owner="grid")
    kind = type(base).__name__
    names = {f.name for f in fields(base)}
    for key in axes:
        if key not in names:
            raise ValueError(f"The axis {key!r} of grid is not a field of {kind}; fields are {sorted(names)}.")
    values = [list(require_type(v, key, Iterable, owner="grid")) if not isinstance(v, str) else
              require_type(v, key, (list, tuple), owner="grid") for key, v in axes.items()]
    for key, vals in zip(axes, values):
        if not vals:
            raise ValueError(f"The axis {key!r} of grid must hold at least one value. Got an empty sequence.")
    return [base.replace(**dict(zip(axes, combo))) for combo in itertools.product(*values)]


@dataclass
class SweepRow:
    """One run of a sweep: its history (no model: it stayed in the worker), events, seconds and source."""

    run: TrainConfig
    history: History
    events: Events | None
    seconds: float
    source: str  # "computed" or "cache"

    @property
    def status(self) -> str:
        return self.history.status

    @property
    def cached(self) -> bool:
        """True when the history came from the cache (nothing was trained for it)."""
        return self.source == "cache"

    def record(self) -> dict[str, Any]:
        """A flat dict: config fields, events, summary numbers and status."""
        h = self.history
        config = {k: tuple(v) if isinstance(v, list) else v for k, v in self.run.to_dict().items()}
        model = {f"model.{k}": v for k, v in config.pop("model_kwargs", {}).items()}
        out: dict[str, Any] = {**config, **model}
        ev = self.events.to_dict() if self.events is not None else {}
        out.update({key: ev.get(key) for key in ("t_mem", "t_grok", "delay", "peak_step", "peak_norm", "final_norm",
                                                 "norm_at_mem", "norm_at_grok", "contraction")})
        last = h.rows[-1] if h.rows else {}
        out.update(
            final_step=last.get("step"),
            final_train_acc=last.get("train_acc"),
            final_test_acc=last.get("test_acc"),
            max_train_acc=max((r.get("train_acc", float("nan")) for r in h.rows), default=None),
            max_test_acc=max((r.get("test_acc", float("nan")) for r in h.rows), default=None),
            status=h.status,
            seconds=round(self.seconds, 3),
            source=self.source,
        )
        return out


@dataclass(eq=False)
class SweepResult(Sequence):
    """The runs of a sweep, in the order they were given (a sequence of :class:`SweepRow`)."""

    rows: list[SweepRow]
    strategy: str
    seconds: float

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):  # type: ignore[override]
        return self.rows[i]

    @property
    def histories(self) -> list[History]:
        """The histories, in the order of the runs."""
        return [row.history for row in self.rows]

    @property
    def runs(self) -> list[TrainConfig]:
        """The runs, in the order given."""
        return [row.run for row in self.rows]

    @property
    def diverged(self) -> list[TrainConfig]:
        """Configs of the runs whose history ended with ``status == "diverged"``."""
        return [row.run for row in self.rows if row.status == "diverged"]

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per run (see :meth:`SweepRow.record`): the tidy table."""
        return [row.record() for row in self.rows]

    def __repr__(self) -> str:
        n_div = len(self.diverged)
        return (f"SweepResult({len(self)} runs, strategy={self.strategy!r}, {self.seconds:.1f} s"
                + (f", {n_div} diverged" if n_div else "") + ")")


# The process that imported this module: in a forkserver pool's worker, the fork server (preloaded).
_IMPORTED_IN = os.getpid()


@contextmanager
def _at_threads(threads: int) -> Iterator[None]:
    """Torch at ``threads`` threads inside the block: a cache key holds the thread count a run trains at."""
    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if threads != before:
            torch.set_num_threads(before)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, killed but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # no /proc (macOS): the signal test above is all there is
        return True


def _watch_parent(parent: int, every: float = 0.5) -> None:
    """Exit this worker as soon as the sweep's process is gone (killed, crashed): no orphan keeps training."""
    while _alive(parent):
        time.sleep(every)
    os._exit(1)


def _init_worker(parent: int) -> None:
    torch.set_num_threads(1)
    set_default_progress("none")  # a worker's bar would interleave with the sweep's own
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="nhtlab-parent-watch").start()


# Runs seed torch's global RNG (per process) to build their model: runs sharing a process through
# a thread pool would race on it, so within one process runs take turns. Processes run freely.
_PROCESS_LOCK = threading.Lock()


def _train_one(run: TrainConfig, cache: ResultCache | None = None) -> list[tuple[dict[str, Any], float, str, str | None]]:
    """Worker entry point: a run in; its history dict, seconds, source and note out (a list of one, as a stack's).

    With a ``cache`` the run is claimed first: a run another process finished meanwhile comes from the cache.
    A cache that cannot be written leaves the run trained and returned, the reason in the note.
    """
    start = time.perf_counter()
    config = run.cache_config()
    note = None
    claim = cache.claim(config) if cache is not None else nullcontext()
    try:
        hit = claim.__enter__()
    except OSError as error:  # the lock file cannot be created: train unclaimed, uncached
        claim, hit, note, cache = nullcontext(), None, unwritable(cache, error), None
    try:
        if hit is not None:
            return [(hit.to_dict(), 0.0, "cache", None)]
        with _PROCESS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # divergence is reported in the result
            # through the cache, a run checkpoints there when its checkpoints are on (ResultCache.train)
            history = cache.train(run, progress="none") if cache is not None else run.execute(progress="none")
        if cache is not None:
            note = put_or_note(cache, config, history)
    finally:
        claim.__exit__(None, None, None)
    return [(history.to_dict(), time.perf_counter() - start, "computed", note)]  # the dict leaves the model behind


def _train_stack(runs: list[ModularRun]) -> list[tuple[dict[str, Any], float, str, str | None]]:
    """Worker entry point of the batched strategy: one stack of runs in; as :func:`_train_one`'s, one per run out."""
    start = time.perf_counter()
    with _PROCESS_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trained = train_batched(runs, progress="none")
    seconds = (time.perf_counter() - start) / len(runs)
    return [(h.to_dict(), seconds, "computed", None) for h in trained]


def default_executor(workers: int | None = None) -> ProcessPoolExecutor:
    """A local process pool: ``workers`` processes (default: CPU count), one torch thread each.

    Workers start with ``forkserver`` (``spawn`` without it): forking a parent that ran torch's thread pools
    can hang. The fork server preloads this module, so workers fork ready to train; each exits within a
    second of this process dying, so a killed kernel leaves no worker training on.
    """
    workers = require_int(workers if workers is not None else (os.cpu_count() or 1), "workers", low=1, owner="default_executor")
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        # torch._dynamo too: torch imports it lazily when a process builds its first optimiser (seconds of CPU),
        # which every fresh worker would pay again; imported in the server, workers fork with it
        context.set_forkserver_preload([__name__, "torch._dynamo"])
    # each worker watches this process and exits when it dies (a killed kernel leaves no orphans training)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_init_worker, initargs=(os.getpid(),))


def sweep(
    runs: Sequence[TrainConfig],
    strategy: str = "auto",
    executor: Executor | None = None,
    workers: int | None = None,
    cache: Any = None,
    progress: str | None = None,
    max_stack: int | None = None,
) -> SweepResult:
    """Train every run of ``runs`` (any run kinds, mixed) and return the tidy :class:`SweepResult`.

    Parameters
    ----------
    runs : list or tuple of runs
        Any :class:`~nhtlab.training.loop.TrainConfig` subclass that defines ``execute`` (see :func:`grid`).
    strategy : {"auto", "sequential", "parallel", "batched"}
        See :func:`resolve_strategy`; ``"batched"`` stacks modular runs only.
    executor : concurrent.futures.Executor, optional
        Takes single runs or whole stacks (it must pickle a run); None: a local process pool.
    workers : int >= 1, optional
        The default pool's size: CPU count, or 1 for ``"batched"``, where k > 1 trains k stacks in k processes.
    cache : object, optional
        A :class:`~nhtlab.training.cache.ResultCache` or any object with ``get(config_dict) -> History | None``
        and ``put(config_dict, history)``; a run it holds is not trained again.
    progress : str, optional
    max_stack : int >= 1, optional
        At most this many runs per stacked model.

    Notes
    -----
    In a script, a sweep that starts processes must run under the main-module guard, since each worker
    imports the script again (without it the sweep raises a RuntimeError that names the guard)::

        if __name__ == "__main__":
            result = nhtlab.sweep(runs)

    Returns
    -------
    SweepResult
        One :class:`SweepRow` per run, in order; diverged runs are kept (``.diverged``).

    Examples
    --------
    >>> result = sweep(grid(ModularRun(p=7, steps=20, device="cpu"), weight_decay=[0.0, 1.0]),
    ...                strategy="sequential", progress="none")
    >>> [row.status for row in result], [row.cached for row in result]
    (['completed', 'completed'], [False, False])
    """
    try:
        return _sweep(runs, strategy, executor, workers, cache, progress, max_stack)
    except (BrokenProcessPool, RuntimeError) as error:
        if isinstance(error, BrokenProcessPool) or "bootstrapping phase" in str(error):
            raise RuntimeError(
                f"sweep(strategy={strategy!r}) lost its worker processes ({type(error).__name__}: {error}). In a "
                f"script, call nhtlab.sweep under the guard `if __name__ == \"__main__\":` (each worker imports "
                f"the script again, and without the guard starts a sweep of its own); otherwise a worker was "
                f"killed, e.g. out of memory: try fewer workers or strategy='sequential'."
            ) from error
        raise


def _sweep(runs: Sequence[TrainConfig], strategy: str, executor: Executor | None, workers: int | None, cache: Any,
           progress: str | None, max_stack: int | None) -> SweepResult:
    """:func:`sweep` itself (the public function adds the worker-failure message)."""
    require_type(runs, "runs", (list, tuple), owner="sweep")
    for i, run in enumerate(runs):
        if not (isinstance(run, TrainConfig) and type(run).execute is not TrainConfig.execute):
            raise TypeError(f"The 'runs' parameter of sweep must hold runs that train themselves (ModularRun, "
                            f"ShortcutRun: a TrainConfig subclass with execute). runs[{i}] is {type(run).__name__}.")
    requested, strategy = strategy, resolve_strategy(runs, strategy, workers)
    if requested == "auto" and strategy.startswith("batched + "):  # the stacks on the GPU, the others apart
        stack = [i for i, run in enumerate(runs) if _stacks_on_gpu(run)]
        rest = [i for i in range(len(runs)) if i not in stack]
        parts = [(stack, _sweep([runs[i] for i in stack], "auto", executor, workers, cache, progress, max_stack)),
                 (rest, _sweep([runs[i] for i in rest], strategy.split(" + ")[1], executor, workers, cache, progress,
                               max_stack))]
        by_index = {i: row for where, part in parts for i, row in zip(where, part)}
        return SweepResult([by_index[i] for i in range(len(runs))], strategy, sum(part.seconds for _, part in parts))
    if requested == "auto" and strategy == "batched" and executor is None:
        workers = 1  # on a GPU the stacks train in this process: ``workers`` sizes a CPU pool
    if strategy == "batched":
        for i, run in enumerate(runs):
            if not isinstance(run, ModularRun):  # the strategy is what is wrong for this run: a ValueError
                raise ValueError(f"The 'strategy' parameter of sweep is 'batched', which stacks ModularRuns only; "  # noqa: TRY004
                                 f"runs[{i}] is a {type(run).__name__}. Use 'sequential' or 'parallel'.")
    if executor is not None:
        require_type(executor, "executor", Executor, owner="sweep")
    if workers is not None:
        require_int(workers, "workers", low=1, owner="sweep")
    if max_stack is not None:
        require_int(max_stack, "max_stack", low=1, owner="sweep")
    if cache is not None and not (callable(getattr(cache, "get", None)) and callable(getattr(cache, "put", None))):
        raise TypeError("The 'cache' parameter of sweep must have get(config_dict) -> History | None and "
                        f"put(config_dict, history) methods. Got {type(cache).__name__} instead.")

    start = time.perf_counter()
    # a stacked run rounds otherwise than the run trained alone: its own cache entry
    configs = [{**run.cache_config(), "stacked": True} if strategy == "batched" else run.cache_config() for run in runs]
    histories: list[History | None] = [None] * len(runs)
    seconds = [0.0] * len(runs)
    sources = ["computed"] * len(runs)
    # A CPU result depends on the torch threads it trained at (the cache keys on them): runs trained in
    # this process use its count; pool workers use one (a user's executor: assumed one, put as reported).
    local = strategy == "sequential" or (strategy == "batched" and executor is None and (workers or 1) == 1)
    threads = torch.get_num_threads() if local else 1
    if cache is not None:
        for i, config in enumerate(configs):
            with _at_threads(threads):
                hit = cache.get(config)
            if hit is not None:
                require_type(hit, "cache.get(...)", History, owner="sweep")
                histories[i], sources[i] = hit, "cache"
    todo = [i for i, h in enumerate(histories) if h is None]
    bar = Progress(len(runs), f"sweep ({strategy}, {len(todo)} to train)", mode=progress, unit="run")
    bar.update(len(runs) - len(todo))

    # On this machine (in this process, or the local pool) runs are claimed and put where they are trained;
    # a user's executor may run elsewhere, so there the cache stays with this process, as any get/put cache.
    claiming = cache if isinstance(cache, ResultCache) and executor is None and strategy != "batched" else None

    notes: list[str] = []

    def done(i: int, history: History, secs: float, source: str = "computed", note: str | None = None) -> None:
        histories[i], seconds[i], sources[i] = history, secs, source
        if cache is not None and claiming is None:
            with _at_threads(int(history.config.get("threads", threads))):
                note = put_or_note(cache, configs[i], history)
        if note is not None and not notes:
            notes.append(note)
            warnings.warn(note, RuntimeWarning, stacklevel=4)
        bar.update(1)

    def collect(chunk: list[int], results: list[tuple[dict[str, Any], float, str, str | None]]) -> None:
        for i, (history_dict, secs, source, note) in zip(chunk, results):
            done(i, History.from_dict(history_dict), secs, source, note)

    if strategy == "batched":
        groups: dict[str, list[int]] = {}
        for i in todo:
            groups.setdefault(batch_key(runs[i]), []).append(i)
        n_workers = workers or 1
        chunks = []
        for members in groups.values():
            # spread each group over the workers (one stack per worker), capped by max_stack
            size = -(-len(members) // n_workers) if executor is None else len(members)
            size = min(size, max_stack or size)
            chunks += [members[k:k + size] for k in range(0, len(members), size)]
        jobs = [(chunk, _train_stack, ([runs[i] for i in chunk],)) for chunk in chunks]
        in_process, pool_size = executor is None and n_workers == 1, min(n_workers, len(chunks))
    else:
        jobs = [([i], _train_one, (runs[i], claiming)) for i in todo]
        in_process, pool_size = strategy == "sequential", min(workers or os.cpu_count() or 1, len(todo))
    if jobs and in_process:
        for chunk, job, args in jobs:
            collect(chunk, job(*args))
    elif jobs:
        pool = executor if executor is not None else default_executor(pool_size)
        try:
            futures = [(chunk, pool.submit(job, *args)) for chunk, job, args in jobs]
            for chunk, future in futures:
                collect(chunk, future.result())
        finally:
            if executor is None:
                pool.shutdown()
    bar.close()

    rows = [SweepRow(run, history, None if history is None else run.events(history), secs, source)
            for run, history, secs, source in zip(runs, histories, seconds, sources)]
    return SweepResult(rows, strategy, time.perf_counter() - start)

