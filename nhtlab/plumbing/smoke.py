"""Smoke runs: a chapter's ``full`` profile executed end to end with the work capped.

A smoke run exercises the *code paths* of a paper-scale profile (the same
models, dataset loaders, sweeps, layer names, charts, tables, cache and resume)
in seconds on a CPU, so that a reader who opens a chapter in Colab with
``profile = "full"`` meets no crash after an hour. Its numbers mean nothing:
it is marked wherever it could be mistaken for a real run.

Environment variables, read at call time (a kernel, a pool worker and the test process agree):
``NHTLAB_SMOKE`` (``1``/``on``/``true``/``yes``: on), ``NHTLAB_SMOKE_STEPS`` (8: steps per run; evaluations every
``max(1, steps // 2)``, so three rows), ``NHTLAB_SMOKE_SEEDS`` (1: seeds per sweep point),
``NHTLAB_SMOKE_IMAGES`` (16: images per split) and ``NHTLAB_SMOKE_BATCH`` (8: largest minibatch).

:func:`nhtlab.book.select_profile` applies the cap to a chapter's settings by name, recursively through
nested dicts (:func:`cap_settings`; a dict keyed by values, ``budgets={0.1: 2000}``, has each value capped):
steps (``steps``, ``*_steps``, ``budget(s)``, ``stop_after``), evaluation intervals (``eval_every``,
``every``), seeds (``seeds``, ``*_seeds``: the first ones), batches (``batch_size``, ``batch``) and image
counts (``train_limit``, ``test_limit``, ``n_train``, ``n_test``). Every other setting is untouched: the sweep
has its real shape, each run is short. :func:`nhtlab.book.stamp` shows ``SMOKE RUN`` first, in red. The
core never reads the cap: a capped run has a capped config, hence its own result-cache key.

In a chapter, only the closing scientific checks go under ``if nhtlab.book.science_checks(cfg):``, which is
False on a smoke run (and says so); structural checks (shapes, names, table sizes) stay outside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = [
    "SMOKE_ENV", "smoke_enabled", "smoke_steps", "smoke_seeds", "smoke_images", "smoke_batch",
    "cap_settings", "smoke_banner",
]

SMOKE_ENV = "NHTLAB_SMOKE"
_ON = ("1", "on", "true", "yes")
_DEFAULTS = {"NHTLAB_SMOKE_STEPS": 8, "NHTLAB_SMOKE_SEEDS": 1, "NHTLAB_SMOKE_IMAGES": 16, "NHTLAB_SMOKE_BATCH": 8}

STEP_KEYS = ("steps", "budget", "budgets", "stop_after")
EVAL_KEYS = ("eval_every", "every")
BATCH_KEYS = ("batch_size", "batch")
IMAGE_KEYS = ("train_limit", "test_limit", "n_train", "n_test")


def smoke_enabled() -> bool:
    """True when ``NHTLAB_SMOKE`` is ``1``, ``on``, ``true`` or ``yes`` (case-insensitive).

    Returns
    -------
    bool
    """
    return os.environ.get(SMOKE_ENV, "").strip().lower() in _ON


def _positive(name: str) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return _DEFAULTS[name]
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"The environment variable {name} must be a positive integer. Got {raw!r} instead.")
    return value


def smoke_steps() -> int:
    """Training steps per run under the cap (``NHTLAB_SMOKE_STEPS``, default 8)."""
    return _positive("NHTLAB_SMOKE_STEPS")


def smoke_seeds() -> int:
    """Seeds per sweep point under the cap (``NHTLAB_SMOKE_SEEDS``, default 1)."""
    return _positive("NHTLAB_SMOKE_SEEDS")


def smoke_images() -> int:
    """Images per split of a downloaded dataset under the cap (``NHTLAB_SMOKE_IMAGES``, default 16)."""
    return _positive("NHTLAB_SMOKE_IMAGES")


def smoke_batch() -> int:
    """Largest training minibatch under the cap (``NHTLAB_SMOKE_BATCH``, default 8)."""
    return _positive("NHTLAB_SMOKE_BATCH")


def smoke_eval_every() -> int:
    """Largest evaluation interval under the cap: ``max(1, smoke_steps() // 2)``."""
    return max(1, smoke_steps() // 2)


def smoke_banner() -> str:
    """One line saying that this is a capped run (empty when the cap is off)."""
    if not smoke_enabled():
        return ""
    return (f"SMOKE RUN ({SMOKE_ENV}=1): capped at {smoke_steps()} steps, {smoke_seeds()} seed(s), "
            f"{smoke_images()} images per split, batch ≤ {smoke_batch()}; its numbers are not results")


def _cap_value(key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        # A mapping keyed by settings is capped by its own keys; one keyed by values (λ → budget)
        # takes its name's rule: budgets={0.1: 2000} caps each budget.
        return {k: _cap_value(k if isinstance(k, str) else key, v) for k, v in value.items()}
    if isinstance(value, bool):
        return value
    if key == "seeds" or key.endswith("_seeds"):
        if isinstance(value, int):
            return min(value, smoke_seeds())
        if isinstance(value, (list, tuple)):
            return type(value)(value[:smoke_seeds()])
        return value
    if not isinstance(value, int):
        return value
    if key in STEP_KEYS or key.endswith("_steps"):
        return min(value, smoke_steps())
    if key in EVAL_KEYS:
        return min(value, smoke_eval_every())
    if key in BATCH_KEYS:
        return min(value, smoke_batch())
    if key in IMAGE_KEYS:
        return min(value, smoke_images())
    return value


def cap_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with the smoke cap applied by key name (a no-op when the cap is off).

    Nested dicts are capped by the same rules (a chapter's ``run=dict(steps=...)``).

    Examples
    --------
    >>> import os
    >>> os.environ["NHTLAB_SMOKE"] = "1"
    >>> cap_settings({"steps": 50_000, "seeds": [0, 1, 2], "lams": [0.1, 1.0], "run": {"eval_every": 780}})
    {'steps': 8, 'seeds': [0], 'lams': [0.1, 1.0], 'run': {'eval_every': 4}}
    >>> del os.environ["NHTLAB_SMOKE"]
    """
    if not smoke_enabled():
        return dict(settings)
    return {k: _cap_value(k, v) for k, v in settings.items()}
