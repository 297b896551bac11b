"""Training runs on shortcut images: :class:`ShortcutRun` is one run's flat, hashable config;
:func:`run_shortcut` trains it with every test set of :mod:`nhtlab.data.cues` evaluated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import torch

from ..data.cues import ShortcutData, border_shortcut, harder, tint_shortcut
from ..data.images import celeba, cifar10, digits
from ..data.mnist import MNIST5K_IMAGES, mnist
from ..history import History
from .cache_key import config_key
from .checkpoint import claim_run_dir
from ..models.cnn import ResNet18, SimpleCNN
from ..validation import MAX_WIDTH, require_choice, require_int, require_real, require_type
from .device import pick_device, seed_everything, suggest_eval_batch_size
from .loop import TrainConfig, train

__all__ = ["ShortcutRun", "run_shortcut"]


BASES, KINDS, MODELS = ("digits", "cifar10", "mnist"), ("border", "tint", "background", "celeba"), ("simple", "resnet18")


@dataclass(frozen=True, kw_only=True)
class ShortcutRun(TrainConfig):
    """Everything that defines one training run on shortcut images (keyword arguments only).

    ``seed`` seeds the digits split, the cues, the init and the sampler.

    Parameters
    ----------
    base : {"digits", "cifar10", "mnist"}
        scikit-learn's digits, CIFAR-10 (from ``root``, ``download``) or MNIST-5k (the ``mnist`` extra).
    kind : {"border", "tint", "background", "celeba"}
        The cue (:mod:`nhtlab.data.cues`); ``"celeba"`` is Blond_Hair as the cue of Smiling (``base`` unused).
    size, train_size, noise : int, int >= 10 or None, float >= 0
        Image side; the first this many training images (CelebA's sample: 8,000 if None); pixel noise's std.
    rho, width, pad, otherwise, clean, contrast, strength
        The cue, as :func:`~nhtlab.data.cues.border_shortcut` and :func:`~nhtlab.data.cues.tint_shortcut` take it.
    model, norm, channels : {"simple", "resnet18"}, str, tuple of int
        The CNN, its normalisation layers and SimpleCNN's six channels.
    root, download : str, bool
    stop_after : None
        Must stay None: shortcut runs have no ``test`` set whose accuracy could stop them.
    **training fields
        Every other :class:`~nhtlab.training.loop.TrainConfig` field (seven defaults differ, commented below).

    Examples
    --------
    >>> run = ShortcutRun(weight_decay=0.1, steps=300)
    >>> run.cache_config()["runner"], run.batch_size, ShortcutRun(**run.to_dict()) == run
    ('run_shortcut', 64, True)
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
    # Training defaults that differ from TrainConfig's: a small CNN on images trained with minibatches, the
    # recipe these runs had before they shared the TrainConfig base (kept so default runs and cache keys stay).
    steps: int = 2000  # TrainConfig: 3000
    lr: float = 3e-3  # TrainConfig: 1e-3
    weight_decay: float = 0.3  # TrainConfig: 1.0
    betas: tuple[float, float] = (0.9, 0.999)  # PyTorch's defaults (TrainConfig: 0.98, the grokking papers')
    batch_size: int | None = 64  # minibatches (TrainConfig: None = full batch)
    eval_every: int = 100  # TrainConfig: 25 (each evaluation here scores six image sets)
    schedule: str = "cosine"  # TrainConfig: constant

    # stop_after and eval_batch_size came with the TrainConfig base, fused in 0.2.2: in the dict only when set
    _key_omits_at_default = ("stop_after", "eval_batch_size", "fused", "compile", "loss", "optimizer")
    __hash__ = TrainConfig.__hash__  # the one hash of every run kind (@dataclass would write a field hash)

    # Settings the ledger's short label names besides λ, lr, seed and steps: the book's shortcut runs
    # differ in these, and without them eight different runs read "simple λ=0.1 seed=0".
    # A plain class attribute (no annotation), not a field.
    label_fields = ("kind", "rho", "norm", "base")

    def __post_init__(self) -> None:
        owner = "ShortcutRun"
        object.__setattr__(self, "channels", tuple(require_type(self.channels, "channels", (tuple, list), owner=owner)))
        super().__post_init__()  # the training fields, with named errors
        require_choice(self.base, "base", BASES, owner=owner)
        require_choice(self.kind, "kind", KINDS, owner=owner)
        require_choice(self.model, "model", MODELS, owner=owner)
        require_real(self.rho, "rho", 0.0, 1.0, owner=owner)
        if self.train_size is not None:
            require_int(self.train_size, "train_size", low=10, owner=owner)
        require_real(self.noise, "noise", 0.0, owner=owner)
        require_int(self.size, "size", low=1, high=MAX_WIDTH, owner=owner)  # the base's own range is checked when it loads
        require_int(self.width, "width", low=1, high=MAX_WIDTH, owner=owner)
        require_real(self.contrast, "contrast", 0.0, 1.0, low_open=True, owner=owner)  # as border_shortcut and tint_shortcut
        require_real(self.strength, "strength", 0.0, 1.0, low_open=True, owner=owner)
        with torch.device("meta"):  # the model's settings checked where they are passed, at no memory
            SimpleCNN(10, norm=self.norm, channels=self.channels) if self.model == "simple" else ResNet18(10, norm=self.norm)
        if self.stop_after is not None:
            raise ValueError(f"The 'stop_after' parameter of ShortcutRun must be None: shortcut runs have no 'test' set "
                             f"whose accuracy could stop them. Got {self.stop_after!r} instead.")

    def cache_config(self) -> dict[str, Any]:
        """The result-cache key, never equal to a ModularRun's."""
        return {"runner": "run_shortcut", **self.to_dict()}

    def execute(self, **kwargs: Any) -> History:
        """:func:`run_shortcut` on this run (``kwargs`` passed on); what :func:`nhtlab.sweep` calls."""
        return run_shortcut(self, **kwargs)

    def data(self) -> ShortcutData:
        """Build this run's shortcut data (deterministic given the config)."""
        if self.kind == "celeba":
            return celeba(self.root, self.download, self.size, self.train_size or 8000, rho=self.rho, seed=self.seed)
        if self.base == "digits":
            base = digits(self.size, seed=self.seed)
        elif self.base == "mnist":
            base = mnist(self.size, MNIST5K_IMAGES - 1000, 1000, seed=self.seed)
        else:
            base = cifar10(self.root, download=self.download)
        base = harder(base, self.train_size, self.noise, self.seed)
        if self.kind == "border":
            return border_shortcut(base, self.rho, self.width, self.otherwise, self.clean, self.pad,
                                   contrast=self.contrast, seed=self.seed)
        return tint_shortcut(base, self.rho, self.strength, self.otherwise, self.clean, contrast=self.contrast,
                             seed=self.seed, region="background" if self.kind == "background" else "all")

    def build_model(self, num_classes: int = 10):
        """This run's freshly initialised model (seeded by ``seed``) for ``num_classes`` classes."""
        seed_everything(self.seed)
        if self.model == "simple":
            return SimpleCNN(num_classes, norm=self.norm, channels=self.channels)
        return ResNet18(num_classes, norm=self.norm)


def run_shortcut(run: ShortcutRun, callbacks=(), progress: str | None = None, desc: str | None = None,
                 run_dir: str | os.PathLike | None = None, checkpoint_every: int | None = None) -> History:
    """Build data and model of ``run``, train with every test set evaluated, return the History.

    The arguments are as in :func:`nhtlab.run_modular`. The evaluation batch is the largest that fits a
    quarter of a 16 GB T4 (:func:`nhtlab.training.device.suggest_eval_batch_size`). The history has one row
    per evaluation with every test set's accuracy and loss; the trained model is ``history.model``.
    """
    require_type(run, "run", ShortcutRun, owner="run_shortcut")
    if run_dir is not None:
        claim_run_dir(run_dir, run, owner="run_shortcut")
    data = run.data()
    device = pick_device(run.device)
    model = run.build_model(data.num_classes).to(device)
    config = run.train_config()
    config = replace(config, eval_batch_size=min(config.eval_batch_size,
                                                 suggest_eval_batch_size(model, data.x_test[:2].to(device))))
    label = desc or f"{run.kind} ρ={run.rho:g} λ={run.weight_decay:g} {run.norm}"
    history = train(model, data, config, callbacks=callbacks, eval_sets=data.test_sets,
                    progress=progress, desc=label, checkpoint_dir=run_dir, checkpoint_every=checkpoint_every,
                    run_key=config_key(run.cache_config()), record=run.to_dict())
    history.model = model  # type: ignore[attr-defined]
    return history
