"""Named run settings shared by the chapters, so that no chapter pastes another's config.

:func:`companion` is the NHT companion paper's own setting (arXiv 2603.13331,
code ClevixLab/grokking-norm-separation): a 1-layer transformer (d_model 128,
4 heads, FFN 512) on (a + b) mod 97 with 50% of the pairs for training,
AdamW with lr 1e-3 and PyTorch's default betas (0.9, 0.999), and minibatches
of 512 drawn *with replacement* at every step.

Three choices are ours and are recorded in every run's config:

* ``fused=True``: PyTorch's fused AdamW, the same update in one kernel per
  step, 1.03–1.13× the steps per CPU second on this model (another float
  rounding than the default multi-tensor AdamW, so other runs keep that);
* ``eval_every=100`` (the companion evaluates every 200 steps; finer steps
  time T_mem and T_grok twice as precisely for about 14% of extra compute);
* ``stop_after``: the companion stops 2,000 steps after T_grok and takes
  V_final there. The ``book`` profile stops 500 steps after T_grok to fit a
  2-core CPU; chapters say which window a number uses (see :mod:`nhtlab.analysis.delay`).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from .runs import ModularRun

__all__ = ["companion", "COMPANION_STOP_AFTER", "BORDER_DESIGN", "BORDER_DESIGN_CIFAR10"]

#: Steps the companion paper trains past T_grok before it reads V_final.
COMPANION_STOP_AFTER = 2000

#: The border shortcut chapter 06 chooses from its probe grid, and chapter 05 reads
#: layer by layer (:class:`~nhtlab.training.image_runs.ShortcutRun` fields): a bright
#: one-pixel border on 10×10 digits, its class's colour on ρ = 0.95 of the training
#: images and a wrong class's colour on the rest, SimpleCNN, AdamW 3·10⁻³ at a
#: constant rate, batch 64. Read-only; use ``dict(BORDER_DESIGN, steps=...)``.
BORDER_DESIGN = MappingProxyType(dict(
    base="digits", size=10, width=1, pad=True, rho=0.95, otherwise="other", clean="mean", contrast=1.0,
    channels=(8, 8, 16, 16, 32, 32), lr=3e-3, batch_size=64, schedule="constant", eval_every=100,
))

#: The same border design at the NHT paper's scale (arXiv 2603.07323), the ``full`` profile of
#: chapters 05 and 06: coloured-border CIFAR-10 (downloaded on first use) with a 2-pixel border
#: painted over the edge, SimpleCNN of 288k parameters, AdamW lr 1e-3, batch 128, 200 epochs
#: (78k steps), evaluated every epoch, constant rate. Read-only, like :data:`BORDER_DESIGN`.
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
        Any other :class:`~nhtlab.training.runs.ModularRun` field, its own or
        inherited from :class:`~nhtlab.training.loop.TrainConfig` (``steps``,
        ``stop_after``, ``lr``, ``p``, ``model_kwargs``…).

    Returns
    -------
    ModularRun
        p = 97, (a + b) mod p, 50% of the pairs for training, the 1-layer transformer,
        AdamW lr 1e-3 with betas (0.9, 0.999) (fused), batch 512 drawn with replacement,
        ``eval_every=100``, at most 50,000 steps, stopped ``COMPANION_STOP_AFTER``
        steps after T_grok; any field overridden by ``changes``.

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
