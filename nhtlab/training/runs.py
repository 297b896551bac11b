"""One modular-arithmetic run described by a single flat, hashable config.

:class:`ModularRun` gathers data, model and optimiser settings so that a run
can be named, swept over, cached and reproduced from its config alone.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..data.modular import OPERATIONS, modular_data
from ..history import History
from ..models import MODELS, make_model
from ..validation import check_choice, check_int, check_real, check_type
from .checkpoint import atomic_write_bytes
from .device import seed_everything
from .loop import TrainConfig, train

__all__ = ["ModularRun", "run_modular"]


@dataclass(frozen=True)
class ModularRun:
    """Everything that defines a modular-arithmetic training run.

    Data: ``p``, ``operation``, ``train_fraction``. Model: ``model`` ("mlp" or
    "transformer") and ``model_kwargs`` (passed to its constructor, e.g.
    ``{"width": 256}``). Training: the :class:`~nhtlab.training.loop.TrainConfig` fields.
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
        check_int(self.p, "p", low=2, owner="ModularRun")
        check_type(self.model_kwargs, "model_kwargs", dict, owner="ModularRun")
        allowed = [name for name in inspect.signature(MODELS[self.model]).parameters if name != "p"]
        unknown = [name for name in self.model_kwargs if name not in allowed]
        if unknown:
            raise ValueError(
                f"The 'model_kwargs' parameter of ModularRun has names that model={self.model!r} does not take: "
                f"{', '.join(map(repr, unknown))}. Allowed names are {', '.join(map(repr, allowed))}."
            )
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
        return hash(json.dumps(self.to_dict(), sort_keys=True))


def run_modular(
    run: ModularRun,
    callbacks=(),
    progress: str | None = None,
    desc: str | None = None,
    run_dir: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
) -> History:
    """Build the data and model of ``run``, train, and return the history.

    The history's ``config`` holds the full :class:`ModularRun` as a dict.
    Same config, same history on the CPU (seeded split, init and sampler).

    With ``run_dir``, the run writes ``run.json`` (its config) and checkpoints
    there (see :func:`nhtlab.training.loop.train`); calling ``run_modular`` again with
    the same ``run`` and ``run_dir`` resumes where the last checkpoint left off,
    and a finished run returns its history at once. A directory that holds a
    different run is refused.
    """
    check_type(run, "run", ModularRun, owner="run_modular")
    if run_dir is not None:
        check_type(run_dir, "run_dir", (str, os.PathLike), owner="run_modular")
        _claim_run_dir(Path(run_dir), run)
    data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    seed_everything(run.seed)
    model = make_model(run.model, run.p, **run.model_kwargs)
    label = desc or f"{run.model} p={run.p} λ={run.weight_decay:g}"
    history = train(model, data, run.train_config(), callbacks=callbacks, progress=progress, desc=label,
                    checkpoint_dir=run_dir, checkpoint_every=checkpoint_every)
    history.config = run.to_dict()
    history.model = model  # type: ignore[attr-defined]  # kept for analysis in notebooks; not serialised
    return history


def _claim_run_dir(run_dir: Path, run: ModularRun) -> None:
    """Write ``run.json`` into a new run directory, or check that an existing one belongs to ``run``."""
    config_file = run_dir / "run.json"
    if config_file.exists():
        theirs = json.loads(config_file.read_text())
        if theirs != run.to_dict():
            changed = sorted(k for k in set(theirs) | set(run.to_dict()) if theirs.get(k) != run.to_dict().get(k))
            raise ValueError(
                f"The 'run_dir' parameter of run_modular ({run_dir}) belongs to a different run "
                f"(fields that differ: {', '.join(changed)}). Use one directory per run."
            )
        return
    atomic_write_bytes(config_file, json.dumps(run.to_dict(), sort_keys=True, indent=1).encode())
