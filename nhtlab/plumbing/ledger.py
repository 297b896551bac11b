"""The ledger of trainings: which runs a result cache trained, what each cost, and whether any twice.

Every run trained for a :class:`~nhtlab.training.cache.ResultCache` adds one JSON line to
``<cache root>/trained.jsonl``. Reading it back answers what a build cost and where
(:func:`summarise`), and whether the chapters, which share runs through the cache, trained any run
twice: two lines with the same ``run`` key. A probed or stacked training of a run counts as a
training of that run, since it repeats the same steps. Lines are appended with one ``write`` each
(``O_APPEND``), so processes sharing a cache add to the same ledger without a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_NAME", "CHAPTER_VARIABLE", "record_training", "read_ledger", "LedgerSummary", "summarise"]

#: The ledger's file name inside a cache's root.
LEDGER_NAME = "trained.jsonl"

#: Environment variable naming the chapter whose process trains (``make book`` sets it for each chapter's
#: kernel, whose pool workers inherit it): a ledger line then says which chapter paid for the training.
CHAPTER_VARIABLE = "NHTLAB_CHAPTER"

# Folders whose ledger this process could not write (warned about once each).
_UNWRITABLE: set[str] = set()


def _label(run: Any) -> str:
    """A short human name of ``run``: its kind, model and the settings a reader tells runs apart by."""
    config = run.cache_config() if hasattr(run, "cache_config") else {}
    model = config.get("model", "")
    extra = config.get("model_kwargs") or config.get("channels") or ""
    parts = [type(run).__name__, str(model), f"λ={config.get('weight_decay')}", f"lr={config.get('lr')}",
             f"seed={config.get('seed')}", f"steps={config.get('steps')}"]
    # the settings a run kind names as telling its runs apart (ShortcutRun.label_fields)
    parts += [f"{name}={config[name]}" for name in getattr(run, "label_fields", ()) if name in config]
    if extra:
        parts.append(json.dumps(extra, sort_keys=True, separators=(",", ":")))
    return " ".join(p for p in parts if p)


def record_training(root: str | os.PathLike, run_key: str, run: Any, history: Any, *,
                    cpu_seconds: float | None, wall_seconds: float, how: str = "alone") -> None:
    """Append one training of ``run`` to the ledger in ``root``.

    ``how`` is ``"alone"``, ``"probed"`` (with a DLR probe) or ``"stacked"``; ``cpu_seconds`` None where
    not known (a stack trained elsewhere). A ledger that cannot be written (a read-only cache) is skipped
    with one warning per folder and process: the run's result is unaffected, but the ledger undercounts.
    """
    rows = getattr(history, "rows", None) or []
    line = {"run": run_key, "kind": type(run).__name__, "label": _label(run),
            "steps": int(rows[-1].get("step", 0)) if rows else 0, "status": getattr(history, "status", None),
            "cpu_s": None if cpu_seconds is None else round(float(cpu_seconds), 3),
            "wall_s": round(float(wall_seconds), 3), "how": how, "pid": os.getpid()}
    if hasattr(run, "to_dict"):  # the run's settings: what the step's floor is counted from (nhtlab.plumbing.floor)
        line["config"] = run.to_dict()
    if os.environ.get(CHAPTER_VARIABLE):
        line["chapter"] = os.environ[CHAPTER_VARIABLE]
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        with open(Path(root) / LEDGER_NAME, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as error:  # the training itself is done and kept; only its accounting is lost
        if str(root) not in _UNWRITABLE:
            _UNWRITABLE.add(str(root))
            warnings.warn(f"record_training could not write the ledger in {root} ({type(error).__name__}: {error}); "
                          "this process's trainings are missing from it, so a build's count of runs trained (and "
                          "of any trained twice) is incomplete.", RuntimeWarning, stacklevel=2)


def read_ledger(root: str | os.PathLike) -> list[dict[str, Any]]:
    """Every training recorded in the cache at ``root``, in the order they finished (empty when none).

    A line cut short (a process killed while writing) is skipped.
    """
    path = Path(root) / LEDGER_NAME
    lines = []
    for text in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        with contextlib.suppress(json.JSONDecodeError):
            lines.append(json.loads(text))
    return lines


@dataclass
class LedgerSummary:
    """What a ledger says: trainings, their cost by kind, and the runs trained more than once.

    ``by_chapter`` is the CPU seconds of each chapter's process (lines that name a chapter,
    :data:`CHAPTER_VARIABLE`); a run that several share counts for whichever reached it first.
    """

    trainings: int
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    twice: list[dict[str, Any]] = field(default_factory=list)
    by_chapter: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        """CPU seconds of every training that recorded them."""
        return sum(kind["cpu_s"] for kind in self.by_kind.values())

    def lines(self) -> list[str]:
        """The summary as printable lines (what ``make book`` prints)."""
        out = [f"Runs trained: {self.trainings}, {self.cpu_s:,.0f} CPU s of training"]
        for kind, totals in self.by_kind.items():
            out.append(f"  {kind}: {totals['trainings']:.0f} runs, {totals['steps']:,.0f} steps, "
                       f"{totals['cpu_s']:,.0f} CPU s")
        if self.twice:
            out.append(f"  trained more than once: {len(self.twice)} runs")
            out += [f"    {entry['label']}: {entry['times']} times" for entry in self.twice]
        else:
            out.append("  no run trained twice")
        return out


def summarise(lines: Iterable[Mapping[str, Any]]) -> LedgerSummary:
    """Totals by run kind and the runs trained more than once, from :func:`read_ledger`'s lines.

    Examples
    --------
    >>> summary = summarise([{"run": "a", "kind": "ModularRun", "label": "A", "steps": 100, "cpu_s": 2.0},
    ...                      {"run": "a", "kind": "ModularRun", "label": "A probed", "steps": 100, "cpu_s": 3.0},
    ...                      {"run": "b", "kind": "ShortcutRun", "label": "B", "steps": 50, "cpu_s": None}])
    >>> summary.trainings, summary.cpu_s, summary.by_kind["ModularRun"]["steps"], summary.twice[0]["times"]
    (3, 5.0, 200, 2)
    """
    lines = list(lines)
    by_kind: dict[str, dict[str, float]] = {}
    by_chapter: dict[str, float] = {}
    for line in lines:
        if line.get("chapter"):
            by_chapter[line["chapter"]] = by_chapter.get(line["chapter"], 0.0) + (line.get("cpu_s") or 0.0)
        totals = by_kind.setdefault(line["kind"], {"trainings": 0, "steps": 0, "cpu_s": 0.0})
        totals["trainings"] += 1
        totals["steps"] += line.get("steps") or 0
        totals["cpu_s"] += line.get("cpu_s") or 0.0
    counts = Counter(line["run"] for line in lines)
    first_label = {line["run"]: line.get("label", line["run"]) for line in reversed(lines)}  # the first line wins
    twice = [{"run": key, "label": first_label[key], "times": n} for key, n in counts.items() if n > 1]
    return LedgerSummary(trainings=len(lines), by_kind=by_kind, twice=twice, by_chapter=by_chapter)
