"""Training runs on shortcut images: :class:`ShortcutRun` describes one run as a flat,
hashable config; :func:`run_shortcut` builds its data and model and trains it with
every test set of :mod:`nhtlab.data.cues` evaluated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from ..data.cues import ShortcutData, border_shortcut, harder, tint_shortcut
from ..data.images import cifar10, digits
from ..models.cnn import ResNet18, SimpleCNN
from ..validation import check_choice, check_int, check_real, check_type
from .device import pick_device, seed_everything, suggest_eval_batch_size
from .loop import TrainConfig, train
from .runs import ModularRun, run_modular
from .sweeps import (
    default_executor,  # the same pool as sweeps: one torch thread per process
)

__all__ = ["ShortcutRun", "run_shortcut", "run_shortcuts", "cache_config"]


BASES = ("digits", "cifar10")


KINDS = ("border", "tint")


MODELS = ("simple", "resnet18")


@dataclass(frozen=True)
class ShortcutRun:
    """Everything that defines one training run on shortcut images.

    Data: ``base`` ("digits", offline; or "cifar10", opt-in through ``root`` and
    ``download``), ``size`` (digits only), ``train_size`` (keep only the first
    this many training images: a harder digit task), ``noise`` (standard
    deviation of Gaussian pixel noise added to every image before the cue is
    painted, clipped to [0, 1]: another way to make the digits harder), ``kind`` ("border" or the entangled
    "tint"), ``rho``, ``width``, ``pad``, ``otherwise``, ``clean``, ``contrast``,
    ``strength``. Model: ``model`` ("simple" = :class:`~nhtlab.models.cnn.SimpleCNN`,
    "resnet18" = :class:`~nhtlab.models.cnn.ResNet18`), ``norm`` and ``channels``
    (SimpleCNN). Training: the :class:`~nhtlab.training.loop.TrainConfig` fields.
    ``seed`` seeds the digits split, the cues, the init and the sampler.
    """

    base: str = "digits"
    size: int = 10
    train_size: int | None = None
    noise: float = 0.0
    root: str = "data"
    download: bool = False
    kind: str = "border"
    rho: float = 0.95
    width: int = 1
    pad: bool = True
    otherwise: str = "none"
    clean: str = "none"
    contrast: float = 1.0
    strength: float = 0.3
    model: str = "simple"
    norm: str = "none"
    channels: tuple[int, ...] = (8, 8, 16, 16, 32, 32)
    steps: int = 2000
    lr: float = 3e-3
    weight_decay: float = 0.3
    betas: tuple[float, float] = (0.9, 0.999)
    batch_size: int | None = 64
    eval_every: int = 100
    schedule: str = "cosine"
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        owner = "ShortcutRun"
        check_choice(self.base, "base", BASES, owner=owner)
        check_choice(self.kind, "kind", KINDS, owner=owner)
        check_choice(self.model, "model", MODELS, owner=owner)
        check_real(self.rho, "rho", 0.0, 1.0, owner=owner)
        if self.train_size is not None:
            check_int(self.train_size, "train_size", low=10, owner=owner)
        check_real(self.noise, "noise", 0.0, owner=owner)
        object.__setattr__(self, "channels", tuple(self.channels))
        object.__setattr__(self, "betas", tuple(self.betas))
        self.train_config()

    def train_config(self):


        names = {f.name for f in fields(TrainConfig)}
        return TrainConfig(**{k: v for k, v in asdict(self).items() if k in names})

    def replace(self, **changes) -> "ShortcutRun":
        """A copy with some fields changed (validated again)."""

        return replace(self, **changes)

    def to_dict(self) -> dict:

        d = asdict(self)
        d["channels"], d["betas"] = list(d["channels"]), list(d["betas"])
        return d

    def data(self) -> ShortcutData:
        """Build this run's shortcut data (deterministic given the config)."""

        if self.base == "digits":
            base = digits(self.size, seed=self.seed)
        else:
            base = cifar10(self.root, download=self.download)
        base = harder(base, self.train_size, self.noise, self.seed)
        if self.kind == "border":
            return border_shortcut(base, self.rho, self.width, self.otherwise, self.clean, self.pad,
                                   contrast=self.contrast, seed=self.seed)
        return tint_shortcut(base, self.rho, self.strength, self.otherwise, self.clean,
                             contrast=self.contrast, seed=self.seed)

    def build_model(self, num_classes: int = 10):

        seed_everything(self.seed)
        if self.model == "simple":
            return SimpleCNN(num_classes, norm=self.norm, channels=self.channels)
        return ResNet18(num_classes, norm=self.norm)


def run_shortcut(run: ShortcutRun, callbacks=(), progress: str | None = None, desc: str | None = None):
    """Build data and model of ``run``, train with every test set evaluated, return the History.

    Rows hold ``train_acc`` and ``coloured_acc``, ``clean_acc``, ``shortcut_acc``,
    ``conflict_acc``, ``cue_acc`` (and losses), ``norm`` and ``norm/<layer>``; the history's
    ``config`` is ``run.to_dict()``. The trained model is attached as
    ``history.model`` (not serialised, dropped by :func:`run_shortcuts`).

    The evaluation batch is the largest that fits a quarter of a 16 GB T4 for this
    model and image size (:func:`nhtlab.training.device.suggest_eval_batch_size`): 8,192 for
    SimpleCNN and small images, 4,096 for ResNet18 at 32 px.
    """


    check_type(run, "run", ShortcutRun, owner="run_shortcut")
    data = run.data()
    device = pick_device(run.device)
    model = run.build_model(data.num_classes).to(device)
    config = run.train_config()
    config = replace(config, eval_batch_size=min(config.eval_batch_size,
                                                 suggest_eval_batch_size(model, data.x_test[:2].to(device))))
    label = desc or f"{run.kind} ρ={run.rho:g} λ={run.weight_decay:g} {run.norm}"
    history = train(model, data, config, callbacks=callbacks, eval_sets=data.eval_sets(),
                    progress=progress, desc=label)
    history.config = run.to_dict()
    history.model = model  # type: ignore[attr-defined]
    return history


def _call(item):
    fn, arg = item
    if fn is None:

        fn = run_modular if isinstance(arg, ModularRun) else run_shortcut
    history = fn(arg, progress="none")
    if hasattr(history, "model"):
        del history.model
    return history


def cache_config(run) -> dict:
    """The result-cache key of a run: ``ModularRun.to_dict()`` as :func:`nhtlab.cached_run` uses it, or
    ``{"runner": "run_shortcut", **ShortcutRun.to_dict()}`` for shortcut images."""
    if isinstance(run, ShortcutRun):
        return {"runner": "run_shortcut", **run.to_dict()}
    return run.to_dict()


def run_shortcuts(runs, workers: int = 2, fn=None, cache=None) -> list:
    """Run several configs in a pool of ``workers`` processes (one torch thread each).

    Parameters
    ----------
    runs : sequence of ShortcutRun or ModularRun (or of any config ``fn`` accepts)
    workers : int >= 1
        1 runs in this process, in order.
    fn : callable, optional
        ``fn(run, progress=...) -> History``; by default :func:`run_shortcut` for a
        ShortcutRun and :func:`nhtlab.run_modular` for a ModularRun, so one pool
        can train both. Must be importable for the pool.
    cache : ResultCache, optional
        Asked first for every run (:func:`cache_config` is the key, the same as
        :func:`nhtlab.cached_run`'s for a ModularRun); every newly trained history is
        put there. Not allowed together with ``fn`` (the cache could not tell
        two functions' results apart).

    Returns
    -------
    list of History, in the order of ``runs`` (models dropped). A history served
    from the cache has ``cached = True``.
    """
    check_int(workers, "workers", low=1, owner="run_shortcuts")
    runs = list(runs)
    if cache is not None and fn is not None:
        raise ValueError("The 'cache' parameter of run_shortcuts cannot be used with 'fn': pass one of them.")
    found = [cache.get(cache_config(r)) if cache is not None else None for r in runs]
    todo = [i for i, h in enumerate(found) if h is None]
    items = [(fn, runs[i]) for i in todo]
    if workers == 1 or len(items) <= 1:
        trained = [_call(item) for item in items]
    else:
        with default_executor(min(workers, len(items))) as pool:
            trained = list(pool.map(_call, items))
    for i, history in zip(todo, trained):
        if cache is not None:
            cache.put(cache_config(runs[i]), history)
        history.cached = False
        found[i] = history
    for h in found:
        if not hasattr(h, "cached"):
            h.cached = True
    return found

