"""One modular-arithmetic run described by a single flat, hashable config.

:class:`ModularRun` gathers data, model and optimiser settings so that a run
can be named, swept over, cached and reproduced from its config alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..analysis.events import Events, find_events
from ..data.modular import OPERATIONS, is_prime, require_p, modular_data
from ..history import History
from ..models import MODELS, make_model, model_defaults
from ..validation import require_choice, require_real, require_type
from .cache_key import config_key
from .checkpoint import claim_run_dir
from .device import seed_everything
from .loop import TrainConfig, train

__all__ = ["ModularRun", "run_modular"]


@dataclass(frozen=True, kw_only=True)
class ModularRun(TrainConfig):
    """Everything that defines a modular-arithmetic training run (keyword arguments only).

    ``seed`` seeds the data split, the model init and the minibatch sampler.

    Parameters
    ----------
    p : int >= 2
        The modulus; inputs are pairs (a, b) with 0 <= a, b < p.
    operation : {"+", "-", "*", "/"}
        The operation learnt, modulo ``p`` (``"/"`` needs a prime ``p``).
    train_fraction : float in (0, 1)
        Share of the p² pairs used for training; the rest is the test set.
    model, model_kwargs : {"mlp", "transformer"}, dict
        The model and its settings; one equal to the default is dropped: one run, one config, one cache key.
    lr : float > 0
        AdamW learning rate (its own default, see the field's comment).
    **training fields
        Every other :class:`~nhtlab.training.loop.TrainConfig` field.

    Examples
    --------
    >>> run = ModularRun(p=7, weight_decay=0.5, steps=100)
    >>> run.to_dict()["p"], run.replace(seed=1).seed, ModularRun(**run.to_dict()) == run
    (7, 1, True)
    """

    p: int = 59
    operation: str = "+"
    train_fraction: float = 0.5
    model: str = "mlp"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    lr: float = 3e-3  # not TrainConfig's 1e-3: ModularRun's own default before it had a base, kept so default runs (and keys) stay

    # eval_batch_size came with the TrainConfig base, fused in 0.2.2: in the dict only when set (see TrainConfig)
    _key_omits_at_default = ("eval_batch_size", "fused", "compile", "loss", "optimizer")
    __hash__ = TrainConfig.__hash__  # @dataclass would write a field hash, which fails on the model_kwargs dict

    def __post_init__(self) -> None:
        super().__post_init__()  # the training fields, with named errors
        require_choice(self.operation, "operation", OPERATIONS, owner="ModularRun")
        require_choice(self.model, "model", MODELS, owner="ModularRun")
        require_p(self.p, "ModularRun")
        if self.operation == "/" and not is_prime(self.p):
            raise ValueError(f"The 'p' parameter of ModularRun must be a prime number when operation='/'. Got {self.p}.")
        require_type(self.model_kwargs, "model_kwargs", dict, owner="ModularRun")
        defaults = model_defaults(self.model)
        unknown = [name for name in self.model_kwargs if name not in defaults]
        if unknown:
            raise ValueError(
                f"The 'model_kwargs' parameter of ModularRun has names that model={self.model!r} does not take: "
                f"{', '.join(map(repr, unknown))}. Allowed names are {', '.join(map(repr, defaults))}."
            )
        # one spelling per value (NumPy scalars as Python's, 1 as 1.0 where the default is a float), and a
        # default spelled out is the same run: keep only what differs (same type, same value)
        kwargs = {k: v.item() if isinstance(v, np.generic) else v for k, v in self.model_kwargs.items()}
        kwargs = {k: float(v) if isinstance(defaults[k], float) and isinstance(v, int) and not isinstance(v, bool)
                  else v for k, v in kwargs.items()}
        object.__setattr__(self, "model_kwargs", {
            name: value for name, value in kwargs.items()
            if not (type(value) is type(defaults[name]) and value == defaults[name])})
        require_real(self.train_fraction, "train_fraction", 0.0, 1.0, low_open=True, high_open=True, owner="ModularRun")
        with torch.device("meta"):  # the model's settings checked here, where they are passed, at no memory
            make_model(self.model, self.p, **self.model_kwargs)

    def cache_config(self) -> dict[str, Any]:
        """The result-cache key: :meth:`to_dict` and the columns recorded beyond the base row, so that a run
        cached before it recorded the Fourier columns is trained again, never served without them."""
        return {**self.to_dict(), "records": ["fourier"]}

    def execute(self, **kwargs: Any) -> History:
        """:func:`run_modular` on this run (``kwargs`` passed on); what :func:`nhtlab.sweep` calls."""
        return run_modular(self, **kwargs)

    def events(self, history: History) -> Events | None:
        """T_mem, T_grok and the norm peak of ``history`` (:func:`~nhtlab.analysis.events.find_events`)."""
        return find_events(history) if len(history) else None


def run_modular(
    run: ModularRun,
    callbacks=(),
    progress: str | None = None,
    desc: str | None = None,
    run_dir: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
) -> History:
    """Build the data and model of ``run``, train, and return the history.

    Same config, same history on the CPU (seeded split, init and sampler).

    Parameters
    ----------
    run : ModularRun
    callbacks : iterable of callables, optional
        Each is called with a :class:`~nhtlab.training.loop.TrainState` after every evaluation.
    progress, desc : str, optional
        Progress mode (:mod:`nhtlab.training.progress`) and the bar's label.
    run_dir : str or path, optional
        For ``run.json`` and checkpoints: the same ``run`` again resumes from the last checkpoint (a finished
        run returns at once); a directory that holds a different run is refused.
    checkpoint_every : int, optional
        Default ``10 * run.eval_every``.

    Returns
    -------
    History
        One row per evaluation (accuracies, losses, ‖θ‖² in all and per layer, Fourier columns); the trained
        model is attached as ``history.model`` (not serialised).
    """
    require_type(run, "run", ModularRun, owner="run_modular")
    if run_dir is not None:  # entered only with a directory: the path of a run stays short
        claim_run_dir(run_dir, run, owner="run_modular")
    data = modular_data(run.p, run.operation, run.train_fraction, seed=run.seed)
    seed_everything(run.seed)
    model = make_model(run.model, run.p, **run.model_kwargs)
    label = desc or f"{run.model} p={run.p} λ={run.weight_decay:g}"
    history = train(model, data, run.train_config(), callbacks=callbacks, progress=progress, desc=label,
                    checkpoint_dir=run_dir, checkpoint_every=checkpoint_every,
                    run_key=None if run_dir is None else config_key(run.cache_config()),  # keys a checkpoint
                    record=run.to_dict())
    history.model = model  # type: ignore[attr-defined]  # kept for analysis in notebooks; not serialised
    return history
