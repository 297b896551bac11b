"""One modular-arithmetic run described by a single flat, hashable config.

:class:`ModularRun` gathers data, model and optimiser settings so that a run
can be named, swept over, cached and reproduced from its config alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import torch

from .device import seed_everything
from .models import MODELS, make_model
from .modular import OPERATIONS, modular_data
from .train import History, TrainConfig, train
from .validation import check_choice, check_real, check_type

__all__ = ["ModularRun", "run_modular"]


@dataclass(frozen=True)
class ModularRun:
    """Everything that defines a modular-arithmetic training run.

    Data: ``p``, ``operation``, ``train_fraction``. Model: ``model`` ("mlp" or
    "transformer") and ``model_kwargs`` (passed to its constructor, e.g.
    ``{"width": 256}``). Training: the :class:`~nhtlab.train.TrainConfig` fields.
    ``seed`` seeds the data split, the model init and the minibatch sampler.
    """

    p: int = 59
    operation: str = "+"
    train_fraction: float = 0.5
    model: str = "mlp"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    steps: int = 3000
    lr: float = 3e-3
    weight_decay: float = 1.0
    betas: tuple[float, float] = (0.9, 0.98)
    batch_size: int | None = None
    eval_every: int = 25
    schedule: str = "constant"
    seed: int = 0
    device: str = "auto"
    stop_after: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.operation, "operation", OPERATIONS, owner="ModularRun")
        check_choice(self.model, "model", MODELS, owner="ModularRun")
        check_type(self.model_kwargs, "model_kwargs", dict, owner="ModularRun")
        check_real(self.train_fraction, "train_fraction", 0.0, 1.0, low_open=True, high_open=True, owner="ModularRun")
        self.train_config()  # validates the training fields with named errors

    def train_config(self) -> TrainConfig:
        names = {f.name for f in fields(TrainConfig)}
        return TrainConfig(**{k: v for k, v in asdict(self).items() if k in names})

    def replace(self, **changes: Any) -> "ModularRun":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["betas"] = list(d["betas"])
        return d

    def __hash__(self) -> int:  # dict field: hash the canonical JSON form
        import json
        return hash(json.dumps(self.to_dict(), sort_keys=True))


def run_modular(run: ModularRun, callbacks=(), progress: str | None = None, desc: str | None = None) -> History:
    """Build the data and model of ``run``, train, and return the history.

    The history's ``config`` holds the full :class:`ModularRun` as a dict.
    Same config, same history on the CPU (seeded split, init and sampler).
    """
    check_type(run, "run", ModularRun, owner="run_modular")
    data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    seed_everything(run.seed)
    model = make_model(run.model, run.p, **run.model_kwargs)
    label = desc or f"{run.model} p={run.p} λ={run.weight_decay:g}"
    history = train(model, data, run.train_config(), callbacks=callbacks, progress=progress, desc=label)
    history.config = run.to_dict()
    history.model = model  # type: ignore[attr-defined]  # kept for analysis in notebooks; not serialised
    return history
