"""Named run settings shared by the chapters, so that no chapter pastes another's config.

:func:`companion` is the NHT companion paper's setting (arXiv 2603.13331, code
ClevixLab/grokking-norm-separation): a 1-layer transformer on (a + b) mod 97 with half the pairs for
training, AdamW at lr 1e-3 with PyTorch's betas, minibatches of 512 drawn *with replacement*. Three choices
are ours, recorded in every run's config: ``fused=True`` (one kernel per step, faster on a CPU:
``benchmarks/bench_grok.py``; other runs keep the default AdamW's rounding); ``eval_every=100`` (the companion
evaluates every 200 steps, timing T_mem and T_grok half as precisely); and the ``book`` profile's ``stop_after``
of 500 steps after T_grok, not the companion's 2,000, to fit a CPU build (see :mod:`nhtlab.analysis.delay`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from types import MappingProxyType
from typing import Any

from ..validation import require_choice, require_type
from .modular_run import ModularRun

__all__ = ["companion", "companion_sweep", "companion_grid_run", "COMPANION_SWEEPS", "BORDER_DESIGN",
           "BORDER_DESIGN_CIFAR10"]

#: Steps the companion paper trains past T_grok before it reads V_final.
COMPANION_STOP_AFTER = 2000

#: The companion runs the chapters share, per profile (read with :func:`companion_sweep`), so that the same λ
#: gives the same run in every chapter and the cache trains it once. ``compile`` only in ``full`` (the GPU
#: profile): ``quick`` and ``book`` train eagerly, the rounding the book's pages were measured in. In ``book``
#: a λ expected to grok gets a long budget (λ → steps) and stops ``stop_after`` steps after T_grok; λ that only
#: show the norm after memorising (0.01, 2, 5) get short ones. ``quick`` uses η = 2e-3, a point of the
#: companion's η sweep, so that λ = 1 groks within its budget; ``full`` is the companion's own budget and
#: window. Three seeds in ``book``: the least a reading counted over seeds needs.
COMPANION_SWEEPS: MappingProxyType = MappingProxyType({
    "quick": MappingProxyType(dict(
        lr=2e-3, stop_after=200, compile=False, seeds=(0,),
        budgets=MappingProxyType({0.01: 1000, 1.0: 3000, 5.0: 1000}))),
    "book": MappingProxyType(dict(
        lr=1e-3, stop_after=500, compile=False, seeds=(0, 1, 2),
        budgets=MappingProxyType({0.01: 1500, 0.1: 2000, 0.3: 8000, 0.5: 8000, 1.0: 4000, 2.0: 2000,
                                  5.0: 1000}))),
    "full": MappingProxyType(dict(
        lr=1e-3, stop_after=COMPANION_STOP_AFTER, compile=True, seeds=(0, 1, 2),
        budgets=MappingProxyType({lam: 50_000 for lam in (0.001, 0.01, 0.1, 0.3, 0.5, 1.0, 2.0, 5.0)}))),
})


def companion_sweep(profile: str, lams: Sequence[float] | None = None) -> dict[str, Any]:
    """The shared companion grid of ``profile``, as settings a chapter's ``PROFILES`` entry starts from.

    Parameters
    ----------
    profile : {"quick", "book", "full"}
    lams : sequence of float, optional
        The weight decays the chapter trains, each one of the grid's; all of them by default.

    Returns
    -------
    dict
        ``lr``, ``stop_after``, ``compile``, ``seeds`` and ``budgets`` (λ → steps): a fresh plain dict, so that
        the smoke cap can cap it by name and a chapter can override settings with ``dict(..., key=value)``.

    Examples
    --------
    >>> companion_sweep("book", lams=[1.0, 2.0])
    {'lr': 0.001, 'stop_after': 500, 'compile': False, 'seeds': [0, 1, 2], 'budgets': {1.0: 4000, 2.0: 2000}}
    """
    require_choice(profile, "profile", tuple(COMPANION_SWEEPS), owner="companion_sweep")
    grid = COMPANION_SWEEPS[profile]
    budgets = grid["budgets"]
    if lams is not None and (isinstance(lams, (str, bytes)) or not isinstance(lams, Sequence)
                             or not all(isinstance(lam, Real) and not isinstance(lam, bool) for lam in lams)):
        raise TypeError(f"The 'lams' parameter of companion_sweep must be a list of weight decays (numbers), such as "
                        f"[1.0]. Got {lams!r}.")
    chosen = list(budgets) if lams is None else [float(lam) for lam in lams]
    missing = [lam for lam in chosen if lam not in budgets]
    if missing:
        raise ValueError(f"The 'lams' parameter of companion_sweep names weight decays that the {profile!r} grid "
                         f"does not train: {missing}; it trains {list(budgets)}.")
    return {"lr": grid["lr"], "stop_after": grid["stop_after"], "compile": grid["compile"], "seeds": list(grid["seeds"]),
            "budgets": {lam: budgets[lam] for lam in chosen}}


def companion_grid_run(grid: Mapping[str, Any], lam: float, seed: int, **changes: Any) -> ModularRun:
    """The run of a companion grid (a :func:`companion_sweep` dict) at weight decay ``lam`` and ``seed``.

    ``changes`` override any other :func:`companion` setting.
    """
    require_type(grid, "grid", Mapping, owner="companion_grid_run")
    missing = [name for name in ("lr", "stop_after", "compile", "budgets") if name not in grid]
    if missing:
        raise ValueError(f"The 'grid' parameter of companion_grid_run lacks {missing}: pass companion_sweep's dict.")
    if float(lam) not in grid["budgets"]:
        raise ValueError(f"The 'lam' parameter of companion_grid_run must be one of the grid's weight decays "
                         f"{list(grid['budgets'])}. Got {lam!r} instead.")
    settings = dict(lr=grid["lr"], steps=grid["budgets"][float(lam)], stop_after=grid["stop_after"],
                    compile=grid["compile"])
    return companion(float(lam), seed=seed, **{**settings, **changes})


#: The border shortcut chapter 06 chooses from its pilot grid and chapter 05 reads layer by layer
#: (:class:`~nhtlab.training.shortcut_run.ShortcutRun` fields). Read-only; use ``dict(BORDER_DESIGN, steps=...)``.
BORDER_DESIGN = MappingProxyType(dict(
    base="digits", size=10, width=1, pad=True, rho=0.95, otherwise="other", clean="mean", contrast=1.0,
    channels=(8, 8, 16, 16, 32, 32), lr=3e-3, batch_size=64, schedule="constant", eval_every=100,
))

#: The same border design at the NHT paper's scale (arXiv 2603.07323), the ``full`` profile of chapters 05
#: and 06: CIFAR-10 (downloaded on first use), 200 epochs evaluated every epoch. Read-only.
BORDER_DESIGN_CIFAR10 = MappingProxyType(dict(
    BORDER_DESIGN, base="cifar10", root="data", download=True, width=2, pad=False,
    channels=(32, 32, 64, 64, 128, 128), lr=1e-3, batch_size=128, steps=78_000, eval_every=780,
))


def companion(weight_decay: float = 1.0, seed: int = 0, **changes: Any) -> ModularRun:
    """The companion paper's run at weight decay ``weight_decay`` (λ) and ``seed``.

    Parameters
    ----------
    weight_decay : float
        AdamW's decoupled weight decay λ.
    seed : int
        Seeds the split, the init and the minibatch sampler.
    **changes
        Any other :class:`~nhtlab.training.modular_run.ModularRun` field (``steps``, ``lr``, ``p``…).

    Returns
    -------
    ModularRun
        The module's setting, at most 50,000 steps, with ``changes`` applied.

    Examples
    --------
    >>> run = companion(0.5, seed=1, steps=4000)
    >>> (run.model, run.p, run.lr, run.betas, run.batch_size, run.weight_decay, run.steps)
    ('transformer', 97, 0.001, (0.9, 0.999), 512, 0.5, 4000)
    """
    settings: dict[str, Any] = dict(
        p=97, operation="+", train_fraction=0.5, model="transformer", model_kwargs={},
        lr=1e-3, betas=(0.9, 0.999), batch_size=512, eval_every=100,
        steps=50_000, stop_after=COMPANION_STOP_AFTER, schedule="constant", fused=True,
    )
    settings.update(changes)
    return ModularRun(weight_decay=weight_decay, seed=seed, **settings)
