"""Requirements on user-supplied parameters, with one error template.

Every public entry point validates its arguments here, so that a wrong value fails early
with a message naming the parameter, the allowed values and what was given (the
scikit-learn convention), not a shape error deep inside PyTorch. ``assert`` is never used
for user input: it vanishes under ``python -O``. The ``require_*`` functions raise; the
book layer's ``check_*`` return a claim's verdict (:class:`~nhtlab.book.claims.Check`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch

__all__ = ["require_choice", "require_int", "require_real", "require_rates", "require_bool", "require_type", "require_callable",
           "require_tensor", "require_model", "require_fractions", "require_increasing", "require_size",
           "require_numbers", "require_seed", "MAX_WIDTH", "MAX_SEED",
           "MAX_PARAMETERS"]

#: The largest width (hidden units, channels, image side) a model or dataset is built with: beyond it
#: one layer's weights alone take gigabytes, and the allocation, not the argument, would fail.
MAX_WIDTH = 2**14
#: The most parameters a model is built with (1 GiB in float32).
MAX_PARAMETERS = 2**28
#: The largest seed: torch's generators take an unsigned 64-bit seed; 2⁶³ − 1 also fits a signed one.
MAX_SEED = 2**63 - 1


def _where(owner: str | None) -> str:
    return f" of {owner}" if owner else ""


def require_type(value: Any, name: str, types: type | tuple[type, ...], owner: str | None = None) -> Any:
    """Raise TypeError unless ``value`` is an instance of ``types``."""
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        raise TypeError(f"The {name!r} parameter{_where(owner)} must be of type {names}. "
                        f"Got {value!r} of type {type(value).__name__} instead.")
    return value


def require_choice(value: Any, name: str, allowed: Iterable[Any], owner: str | None = None) -> Any:
    """Raise ValueError unless ``value`` is one of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"The {name!r} parameter{_where(owner)} must be one of {shown}. Got {value!r} instead.")
    return value


def require_bool(value: Any, name: str, owner: str | None = None) -> bool:
    """Raise TypeError unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"The {name!r} parameter{_where(owner)} must be a bool. Got {value!r} instead.")
    return value


def _require_number(value: Any, name: str, owner: str | None, integral: bool, low: float | None, high: float | None,
                    low_open: bool = False, high_open: bool = False, why: str = "") -> Any:
    """``value`` as an int (``integral``) or a finite float within the bounds, else the error that names ``name``."""
    kinds = ("an int", "an int") if integral else ("a float", "a finite float")
    if low is None or high is None:
        bounds = "" if low is high else (f" {'>' if low_open else '>='} {low}" if high is None
                                         else f" {'<' if high_open else '<='} {high}")
    else:
        bounds = f" in the range {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if isinstance(value, bool) or not isinstance(value, Integral if integral else Real):
        raise TypeError(f"The {name!r} parameter{_where(owner)} must be {kinds[0]}{bounds}. "
                        f"Got {value!r} of type {type(value).__name__} instead.")
    number = int(value) if integral else float(value)
    outside = ((low is not None and (number <= low if low_open else number < low))
               or (high is not None and (number >= high if high_open else number > high)))
    if not (integral or math.isfinite(number)) or outside:
        raise ValueError(f"The {name!r} parameter{_where(owner)} must be {kinds[1]}{bounds}{f' ({why})' if why else ''}. "
                         f"Got {(value if integral else number)!r} instead.")
    return number


def require_int(value: Any, name: str, low: int | None = None, high: int | None = None, owner: str | None = None,
                why: str = "") -> int:
    """Raise unless ``value`` is an integer in ``[low, high]`` (bounds optional); ``why`` says why the bound.

    Booleans are refused: ``True`` is an ``int`` in Python but never a count.
    """
    return _require_number(value, name, owner, True, low, high, why=why)


def require_real(value: Any, name: str, low: float | None = None, high: float | None = None, low_open: bool = False,
                 high_open: bool = False, owner: str | None = None) -> float:
    """Raise unless ``value`` is a finite real number in the given range."""
    return _require_number(value, name, owner, False, low, high, low_open, high_open)


def require_seed(seed: Any, owner: str) -> int:
    """``seed`` as an int in [0, :data:`MAX_SEED`], else an error naming ``owner``."""
    return require_int(seed, "seed", low=0, high=MAX_SEED, owner=owner, why="torch's generators take 64-bit seeds")


def require_callable(value: Any, name: str, owner: str | None = None) -> Any:
    """Raise TypeError unless ``value`` is callable."""
    if not callable(value):
        raise TypeError(f"The {name!r} parameter{_where(owner)} must be callable. "
                        f"Got {value!r} of type {type(value).__name__} instead.")
    return value


def require_tensor(value: Any, name: str, owner: str | None = None, half: bool = True) -> torch.Tensor:
    """Raise TypeError unless ``value`` is a real tensor holding data: never complex or on the meta device,
    nor float16/bfloat16 where ``half`` is False (their rounding would decide the answer)."""
    require_type(value, name, torch.Tensor, owner)
    if value.is_complex() or value.is_meta or (not half and value.dtype in (torch.float16, torch.bfloat16)):
        raise TypeError(f"The {name!r} parameter{_where(owner)} must hold real numbers with data (not complex, not on "
                        f"the meta device{'' if half else ', not float16 or bfloat16: cast it with .double()'}). "
                        f"Got a {value.dtype} tensor on {value.device} instead.")
    return value


def require_model(model: Any, name: str = "model", owner: str | None = None) -> Any:
    """Raise unless ``model`` is an ``nn.Module`` whose parameters are real tensors with data (:func:`require_tensor`)."""
    require_type(model, name, torch.nn.Module, owner)
    for parameter in model.parameters():
        require_tensor(parameter, name, owner)
    return model


def require_numbers(values: Any, name: str, owner: str | None = None) -> np.ndarray:
    """``values`` as a float array; TypeError when they are not numbers (a string, None, objects)."""
    try:
        if isinstance(values, (str, bytes)) or values is None:
            raise TypeError(f"a {type(values).__name__}")
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"The {name!r} parameter{_where(owner)} must hold numbers. Got {values!r} ({error}).") from None


def require_fractions(values: Any, name: str, owner: str | None = None) -> np.ndarray:
    """Raise ValueError unless every value that is not NaN (a missing one) lies in [0, 1], as accuracies do."""
    values = require_numbers(values, name, owner)
    bad = values[~np.isnan(values) & ((values < 0) | (values > 1))]
    if bad.size:
        raise ValueError(f"The {name!r} parameter{_where(owner)} must hold fractions in [0, 1] (accuracies, not "
                         f"percentages). Got {float(bad[0])!r} instead.")
    return values


def require_rates(config: Any, name: str, owner: str | None = None) -> tuple[float, float]:
    """A run's learning rate η and weight decay λ from its ``config`` mapping, or a ValueError naming ``name``
    and what is missing (a History from :func:`nhtlab.train` or a run kind has both: η and λ set the law's
    time scale)."""
    missing = [key for key in ("lr", "weight_decay") if not isinstance(getattr(config, "get", lambda k: None)(key), Real)
               or isinstance(config.get(key), bool)]
    if missing:
        keys = sorted(config) if hasattr(config, "keys") else type(config).__name__
        raise ValueError(f"The {name!r} parameter{_where(owner)} needs the run's {' and '.join(missing)} as numbers in "
                         f"its config (η and λ set the law's time scale). Got config keys {keys}.")
    return float(config["lr"]), float(config["weight_decay"])


def require_increasing(steps: Any, name: str, owner: str | None = None) -> np.ndarray:
    """Raise ValueError unless ``steps`` increase strictly (a history's evaluated steps)."""
    steps = require_numbers(steps, name, owner)
    back = np.flatnonzero(~(np.diff(steps) > 0))
    if back.size:
        raise ValueError(f"The {name!r} parameter{_where(owner)} has its steps out of order: step "
                         f"{steps[back[0] + 1]:g} comes after step {steps[back[0]]:g}; steps must increase.")
    return steps


def require_size(count: int, names: str, owner: str | None = None) -> None:
    """Raise ValueError when a model's sizes ``names`` give more than :data:`MAX_PARAMETERS`, before allocating."""
    if count > MAX_PARAMETERS:
        raise ValueError(f"The {names} parameters{_where(owner)} give {count:,} parameters, more than "
                         f"{MAX_PARAMETERS:,} (1 GiB in float32): refused before allocating.")

