"""Omnigrok's MNIST grokking (Liu, Michaud & Tegmark, ICLR 2023) as a run kind: real images, memorised, then
generalised while weight decay contracts a large initialisation.

An MLP whose every parameter is scaled by α (Omnigrok: 8) on 1,000 MNIST images, mean squared error on one-hot
targets, full batch, AdamW. A large α starts ‖θ‖² far above the norm of a generalising solution, so the run
generalises only as ηλ brings the norm down: the delay law's premise holds by construction. ``size=14`` keeps
the CPU cost down. ``arch="cnn"`` trains :class:`~nhtlab.models.cnn.ImageCNN` instead, at the same α, so that conv1
and the read-out can be compared as the NHT paper compares them on CIFAR-10.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from ..data.images import ImageData
from ..data.mnist import MNIST5K_IMAGES, mnist
from ..history import History
from ..models.cnn import ImageCNN
from ..models.mlp import ImageMLP
from ..validation import require_choice, require_int, require_real, require_type
from .cache_key import config_key
from .checkpoint import claim_run_dir
from .device import seed_everything
from .loop import TrainConfig, train

__all__ = ["ImageGrokRun", "run_image_grok", "OMNIGROK_INIT_SCALE"]

OMNIGROK_INIT_SCALE = 8.0  #: Omnigrok's α for MNIST, its large initialisation


@dataclass(frozen=True, kw_only=True)
class ImageGrokRun(TrainConfig):
    """One Omnigrok MNIST run; the training fields are :class:`~nhtlab.training.loop.TrainConfig`'s.

    ``n_test`` None takes the other MNIST-5k images; ``init_scale`` is α (1: PyTorch's default init); ``loss``
    ``"mse"`` is on one-hot targets. ``seed`` seeds the split, the init and the sampler. ``arch`` is ``"mlp"``
    (:class:`~nhtlab.models.mlp.ImageMLP`, ``width`` and ``depth``) or ``"cnn"`` (:class:`~nhtlab.models.cnn.ImageCNN`,
    ``width`` its hidden layer's; ``depth`` stays at its default).

    Examples
    --------
    >>> run = ImageGrokRun(size=14, weight_decay=0.1, steps=100)
    >>> run.cache_config()["runner"], run.init_scale, ImageGrokRun(**run.to_dict()) == run
    ('run_image_grok', 8.0, True)
    """

    size: int = 28
    n_train: int = 1000
    n_test: int | None = None
    width: int = 200
    depth: int = 3
    init_scale: float = OMNIGROK_INIT_SCALE
    loss: str = "mse"
    weight_decay: float = 0.1  # TrainConfig: 1.0
    betas: tuple[float, float] = (0.9, 0.999)  # PyTorch's, Omnigrok's (TrainConfig: 0.98)
    eval_every: int = 100  # TrainConfig: 25; one evaluation scores up to 4,000 test images
    arch: str = "mlp"

    # 'arch' came later: left out at its default, the MLP's keys stay; 'loss' stays in: its default is not the loop's
    _key_omits_at_default = ("fused", "compile", "optimizer", "arch")
    __hash__ = TrainConfig.__hash__  # the one hash of every run kind
    label_fields = ("size", "init_scale", "loss", "arch")  # the ledger's label, besides λ, lr, seed and steps

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = "ImageGrokRun"
        require_int(self.size, "size", low=4, high=56, owner=owner)
        require_int(self.n_train, "n_train", low=10, high=MNIST5K_IMAGES - 10, owner=owner)
        if self.n_test is not None:
            require_int(self.n_test, "n_test", low=10, high=MNIST5K_IMAGES - self.n_train, owner=owner)
        require_real(self.init_scale, "init_scale", 0.0, low_open=True, owner=owner)
        require_choice(self.arch, "arch", ("mlp", "cnn"), owner=owner)
        if self.arch == "cnn" and self.depth != ImageGrokRun.depth:
            raise ValueError(f"The 'depth' parameter of {owner} sizes the MLP; arch='cnn' has three weight layers. "
                             f"Got depth={self.depth!r} instead; leave it out.")
        with torch.device("meta"):  # width and depth checked where they are passed, at no memory
            self._network()

    def _network(self) -> ImageMLP | ImageCNN:
        if self.arch == "cnn":
            return ImageCNN(self.size, 10, self.width, self.init_scale)
        return ImageMLP(self.size ** 2, 10, self.width, self.depth, self.init_scale)

    def cache_config(self) -> dict[str, Any]:
        """The result-cache key, never equal to another run kind's."""
        return {"runner": "run_image_grok", **self.to_dict()}

    def execute(self, **kwargs: Any) -> History:
        """:func:`run_image_grok` on this run (``kwargs`` passed on); what :func:`nhtlab.sweep` calls."""
        return run_image_grok(self, **kwargs)

    def data(self) -> ImageData:
        """MNIST-5k at ``size``, one channel, split by ``seed``."""
        return mnist(self.size, self.n_train, self.n_test, seed=self.seed, channels=1)

    def build_model(self) -> ImageMLP | ImageCNN:
        """The MLP or the CNN (``arch``), initialised from ``seed`` and scaled by ``init_scale``."""
        seed_everything(self.seed)
        return self._network()


def run_image_grok(run: ImageGrokRun, callbacks=(), progress: str | None = None, desc: str | None = None,
                   run_dir: str | os.PathLike | None = None, checkpoint_every: int | None = None) -> History:
    """Train ``run`` (arguments as in :func:`nhtlab.run_modular`); ``history.model`` is the trained network.

    The ``*_loss`` columns are cross-entropy whatever ``loss`` the run trains with.
    """
    require_type(run, "run", ImageGrokRun, owner="run_image_grok")
    if run_dir is not None:
        claim_run_dir(run_dir, run, owner="run_image_grok")
    data, model = run.data(), run.build_model()
    label = desc or f"MNIST{run.size} {run.arch} α={run.init_scale:g} λ={run.weight_decay:g}"
    history = train(model, data, run.train_config(), callbacks=callbacks, progress=progress, desc=label,
                    checkpoint_dir=run_dir, checkpoint_every=checkpoint_every,
                    run_key=None if run_dir is None else config_key(run.cache_config()), record=run.to_dict())
    history.model = model  # type: ignore[attr-defined]
    return history
