"""Smoke runs: a chapter's ``full`` profile executed end to end with the work capped.

A smoke run exercises the *code paths* of a paper-scale profile (the same
models, dataset loaders, sweeps, layer names, charts, tables, cache and resume)
in seconds on a CPU, so that a reader who opens a chapter in Colab with
``profile = "full"`` meets no crash after an hour. Its numbers mean nothing:
it is marked wherever it could be mistaken for a real run.

Switch it on with environment variables (read at call time, so a notebook
kernel, a process-pool worker and the test process all agree):

``NHTLAB_SMOKE``
    ``1``/``on``/``true``/``yes`` turns the cap on. Anything else (or unset):
    off, and nothing below has any effect.
``NHTLAB_SMOKE_STEPS`` (default 8)
    Training steps per run. ``eval_every`` is capped at ``max(1, steps // 2)``
    so a capped run still records three evaluation rows (0, 4, 8). At paper
    scale a smoke run's time goes mostly into evaluations (a transformer on all
    9,409 pairs of p = 97, a CNN on five test sets), hence so few.
``NHTLAB_SMOKE_SEEDS`` (default 1)
    Seeds per sweep point.
``NHTLAB_SMOKE_IMAGES`` (default 16)
    Images per split of an image dataset (CIFAR-10 and the offline digits).
``NHTLAB_SMOKE_BATCH`` (default 8)
    Largest training minibatch.

What is capped, and where:

* :func:`nhtlab.book.select_profile` returns ``cfg.smoke = True`` (and
  ``cfg.smoke = False`` when off) and rewrites the profile's settings by name,
  recursively through nested dicts (see :func:`cap_settings`):

  - ``steps``, ``*_steps``, ``budget``, ``budgets``: at most ``NHTLAB_SMOKE_STEPS`` (a dict
    keyed by values, such as ``budgets={0.1: 2000}``, has each of its values capped);
  - ``stop_after``: at most ``NHTLAB_SMOKE_STEPS`` (None stays None);
  - ``eval_every``, ``every``: at most ``max(1, NHTLAB_SMOKE_STEPS // 2)``;
  - ``seeds`` and ``*_seeds``: a list keeps its first ``NHTLAB_SMOKE_SEEDS`` entries, an int
    becomes ``min(seeds, NHTLAB_SMOKE_SEEDS)``;
  - ``batch_size``, ``batch``: at most ``NHTLAB_SMOKE_BATCH`` (None = full batch stays);
  - ``train_limit``, ``test_limit``, ``n_train``, ``n_test``: at most ``NHTLAB_SMOKE_IMAGES``.

  Every other setting (λ grids, widths, model names, image size, p…) is
  untouched: the sweep has the real shape, each run is just short.
* :func:`nhtlab.book.stamp` puts ``SMOKE RUN`` first in the stamp, in its summary
  line and in red.

The core never reads the cap: ``train`` and the data loaders take what they are given, and a
capped run, having a capped config, has its own result-cache key. A chapter builds every run from
its selected settings, so nothing escapes the cap; ``NHTLAB_CIFAR_ROOT`` points CIFAR-10 at a
local archive (:mod:`nhtlab.plumbing.flags`).

In a chapter, guard the closing scientific checks (and only them)::

    if nhtlab.book.science_checks(cfg):
        assert events.t_grok is not None, "..."
        ...

:func:`nhtlab.book.closing.science_checks` returns True on a real run, and on a smoke run prints
``smoke run (NHTLAB_SMOKE=1, capped at 8 steps): the scientific checks of
this chapter are skipped`` and returns False. Structural checks (shapes,
names, table sizes) belong outside the ``if``, so a smoke run still runs them.
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
