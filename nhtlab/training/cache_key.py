"""A run's key: what computed its numbers, hashed, so that a cached result or a checkpoint is never stale or foreign.

:func:`config_key` is the SHA-256 of the canonical JSON of the run's configuration (numbers in one
spelling), nhtlab's and torch's versions, the device kind, the default dtype, :func:`numerics_hash` (the
numbers' source without docstrings or comments: a documentation edit still hits) and the thread count of a
multi-threaded CPU run (:func:`key_threads`).

Nothing of the build enters it: a capped run (the book's smoke cap) has a capped config, hence its own key.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import torch

from .. import _version
from ..validation import require_type

__all__ = ["NUMERICS", "canonical", "sha256", "numerics_hash", "key_threads", "config_key"]

#: The parts of nhtlab whose code decides a run's numbers (not its docs, charts, analysis or book).
NUMERICS = ("data", "models", "measures", "training", "history.py", "thresholds.py")
#: Where :func:`numerics_hash` reads them: the imported package.
NUMERICS_ROOT = Path(__file__).resolve().parents[1]


def _plain(value: Any) -> Any:
    """JSON fallback for NumPy (and PyTorch) scalars and arrays."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot store a value of type {type(value).__name__} in the result cache: {value!r}")


def canonical(obj: Any) -> str:
    """Sorted keys, no spaces; NaN and ±inf allowed (a diverged run's history holds them)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_plain, allow_nan=True)


def sha256(text: str) -> str:  # noqa: D103
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _one_spelling(value: Any) -> Any:
    """Equal numbers written alike (1, 1.0, numpy.int64(1) → 1), tuples as lists, recursively."""
    if isinstance(value, Mapping):
        return {str(k): _one_spelling(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_one_spelling(v) for v in value]
    if isinstance(value, bool) or not isinstance(value, Real):
        return _plain(value) if hasattr(value, "item") else value
    if isinstance(value, Integral) or (math.isfinite(value) and float(value).is_integer()):
        return int(value)
    return float(value)


@functools.lru_cache(maxsize=8)
def numerics_hash(root: Path | None = None) -> str:
    """SHA-256 of the syntax trees of the :data:`NUMERICS` source under ``root``, docstrings stripped.

    Comments never reach the tree, so only code counts. Read once per process: the code a process runs is
    what it imported.
    """
    root = NUMERICS_ROOT if root is None else Path(root)
    digest = hashlib.sha256()
    for part in NUMERICS:
        for path in sorted((root / part).rglob("*.py")) if (root / part).is_dir() else [root / part]:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if isinstance(body, list):
                    node.body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                        and isinstance(s.value.value, str))] or [ast.Pass()]
            digest.update(path.relative_to(root).as_posix().encode() + ast.dump(tree).encode())
    return digest.hexdigest()


def _on_cuda(config: Mapping[str, Any]) -> bool:
    device = config.get("device", "auto")
    return device == "cuda" or (device == "auto" and torch.cuda.is_available())


def key_threads(config: Mapping[str, Any]) -> int | None:
    """The torch thread count that can change ``config``'s result, or None (CUDA, one thread).

    A CPU kernel splits its sums over the threads: 1 and 2 threads round differently.
    """
    threads = torch.get_num_threads()
    return None if _on_cuda(config) or threads == 1 else threads


def config_key(config: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``config`` and of what computes its run (the module docstring lists it)."""
    require_type(config, "config", Mapping, owner="config_key")
    keyed: dict[str, Any] = {"config": _one_spelling(config), "nhtlab": _version.__version__,  # read at call time
                             "torch": torch.__version__, "device": "cuda" if _on_cuda(config) else "cpu",
                             "dtype": str(torch.get_default_dtype()), "source": numerics_hash()}
    threads = key_threads(config)
    if threads is not None:
        keyed["threads"] = threads
    return sha256(canonical(keyed))
