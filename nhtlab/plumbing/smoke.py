"""Smoke runs: a chapter's ``full`` profile executed end to end with the work capped.

A smoke run exercises the *code paths* of a paper-scale profile (the same models, loaders, sweeps,
layer names, charts, tables, cache and resume) in seconds on a CPU, so that a reader who opens a
chapter in Colab with ``profile = "full"`` meets no crash after an hour. Its numbers mean nothing: it
is marked wherever it could be mistaken for a real run (:func:`nhtlab.book.stamp` shows ``SMOKE RUN``
first, in red). The environment variables are read at call time, so that a kernel, a pool worker and
the test process agree.

:func:`nhtlab.book.select_profile` applies the cap by setting name (:func:`cap_settings`): steps,
evaluation intervals, seeds (the first ones), batches and image counts; every other setting is
untouched, so the sweep has its real shape and each run is short. The core never reads the cap: a
capped run has a capped config, hence its own result-cache key. Only a chapter's closing scientific
checks go under ``if nhtlab.book.science_checks(cfg):``, which is False on a smoke run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .flags import positive_int, switched_on

__all__ = [
    "SMOKE_ENV", "smoke_enabled", "smoke_steps", "cap_settings", "smoke_banner",
]

SMOKE_ENV = "NHTLAB_SMOKE"
_DEFAULTS = {"NHTLAB_SMOKE_STEPS": 8, "NHTLAB_SMOKE_SEEDS": 1, "NHTLAB_SMOKE_IMAGES": 16, "NHTLAB_SMOKE_BATCH": 8}

STEP_KEYS = ("steps", "budget", "budgets", "stop_after")
EVAL_KEYS = ("eval_every", "every")
BATCH_KEYS = ("batch_size", "batch")
IMAGE_KEYS = ("train_limit", "test_limit", "n_train", "n_test")
# the variable that caps each setting besides steps, evaluations and seeds, read when a setting needs it
_LIMIT_OF = {**dict.fromkeys(BATCH_KEYS, "NHTLAB_SMOKE_BATCH"), **dict.fromkeys(IMAGE_KEYS, "NHTLAB_SMOKE_IMAGES")}


def smoke_enabled() -> bool:
    """True when ``NHTLAB_SMOKE`` is switched on (:func:`~nhtlab.plumbing.flags.switched_on`)."""
    return switched_on(SMOKE_ENV)


def _positive(name: str) -> int:
    return positive_int(name, _DEFAULTS[name])


def smoke_steps() -> int:
    """Training steps per run under the cap (``NHTLAB_SMOKE_STEPS``, default 8)."""
    return _positive("NHTLAB_SMOKE_STEPS")


def smoke_banner() -> str:
    """One line saying that this is a capped run (empty when the cap is off)."""
    if not smoke_enabled():
        return ""
    return (f"SMOKE RUN ({SMOKE_ENV}=1): capped at {smoke_steps()} steps, {_positive('NHTLAB_SMOKE_SEEDS')} seed(s), "
            f"{_positive('NHTLAB_SMOKE_IMAGES')} images per split, batch ≤ {_positive('NHTLAB_SMOKE_BATCH')}; its "
            "numbers are not results")


def _cap_value(key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        # A mapping keyed by settings is capped by its own keys; one keyed by values (λ → budget)
        # takes its name's rule: budgets={0.1: 2000} caps each budget.
        return {k: _cap_value(k if isinstance(k, str) else key, v) for k, v in value.items()}
    if isinstance(value, bool):
        return value
    if value is None and key in IMAGE_KEYS:  # no limit: every image, so the cap's count
        return _positive(_LIMIT_OF[key])
    if key == "seeds" or key.endswith("_seeds"):
        if isinstance(value, int):
            return min(value, _positive("NHTLAB_SMOKE_SEEDS"))
        if isinstance(value, (list, tuple)):
            return type(value)(value[:_positive("NHTLAB_SMOKE_SEEDS")])
        return value
    if not isinstance(value, int):
        return value
    if key in STEP_KEYS or key.endswith("_steps"):
        return min(value, smoke_steps())
    if key in EVAL_KEYS:  # at least two evaluations per capped run
        return min(value, max(1, smoke_steps() // 2))
    if key in _LIMIT_OF:
        return min(value, _positive(_LIMIT_OF[key]))
    return value


def cap_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with the smoke cap applied by key name (a no-op when the cap is off).

    Nested dicts are capped by the same rules (a chapter's ``run=dict(steps=...)``); a dict keyed by
    values (``budgets={0.1: 2000}``) has each value capped.

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
