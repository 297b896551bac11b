"""Layerwise norm transitions: which layer's ‖θ_ℓ‖² peaks and contracts first.

The NHT paper (arXiv 2603.07323) normalises each layer's ‖θ_ℓ‖² to its own peak. On
coloured-border CIFAR-10 the read-out peaks first and contracts most, the first
convolution later and less: a *backward* transition. Its two early-warning signals are
‖θ_L‖²/‖θ_L(0)‖² and ‖θ_L‖²/‖θ_1‖². Everything here reads a History's ``norm/<layer>`` columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..history import History, require_history
from ..validation import require_choice, require_real, require_type
from .events import find_events

__all__ = ["layer_label", "LayerTransition", "layer_transitions", "normalised_layer_norms", "head_to_first_ratio",
           "head_signals", "early_warning", "head_and_first", "warning_times", "CONTRACTION_SHARE", "CONTRACTION_VERDICTS",
           "LayerContraction", "ContractionOrder", "contraction_order"]


@dataclass
class LayerTransition:
    """How one layer's ‖θ_ℓ‖² moved during a run; ``contraction`` is 1 − final/peak (0 if none)."""

    layer: str
    initial_norm: float
    peak_norm: float
    peak_step: int
    final_norm: float
    contraction: float


# The models' layer names, as a reader says them (nhtlab.models: transformer, MLP, CNN).
_LAYER_WORDS = {"tok": "token embedding", "pos": "position embedding", "ln_f": "final LayerNorm",
                "readout": "read-out", "embed_a": "embedding of a", "embed_b": "embedding of b"}
_BLOCK_WORDS = {"attn.qkv": "attention (q, k, v)", "attn.proj": "attention output", "ln_1": "LayerNorm 1",
                "ln_2": "LayerNorm 2", "fc": "feed-forward in", "fc_out": "feed-forward out"}


def layer_label(name: str) -> str:
    """A layer's name in words, for a legend; a name it does not know is returned as it is.

    >>> [layer_label(n) for n in ("tok", "blocks.0.fc_out", "conv3", "readout", "mystery")]
    ['token embedding', 'block 1: feed-forward out', 'conv 3', 'read-out', 'mystery']
    """
    if name in _LAYER_WORDS:
        return _LAYER_WORDS[name]
    parts = name.split(".")
    if len(parts) >= 3 and parts[0] == "blocks" and parts[1].isdigit():
        inner = ".".join(parts[2:])
        return f"block {int(parts[1]) + 1}: {_BLOCK_WORDS.get(inner, inner)}"
    if len(parts) == 2 and parts[0] == "hidden" and parts[1].isdigit():
        return f"hidden layer {int(parts[1]) + 1}"
    for prefix, word in (("conv", "conv"), ("norm", "norm")):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return f"{word} {name[len(prefix):]}"
    return name


def _is_norm_layer(name: str) -> bool:
    last = name.split(".")[-1]
    return "norm" in last or "bn" in last or last.startswith("ln")


def _check_history(history: History, owner: str, head: Any = None, first: Any = None) -> tuple[str, str]:
    """Check ``history`` has layer norms to read; ``head`` and ``first`` when given (layers of it), else the defaults."""
    require_type(history, "history", History, owner=owner)
    if len(history) == 0 or not history.layers:
        raise ValueError(f"The 'history' parameter of {owner} must have evaluated rows with norm/<layer> columns. "
                         f"Got {len(history)} rows and layers {history.layers}.")
    # unsorted or repeated steps leave no order to read; a NaN norm (a diverged run) no peak or contraction
    require_history(history, owner, norms=["norm"], layers=True, finite=True)
    for name, layer in (("head", head), ("first", first)):
        if layer is not None:
            require_type(layer, name, str, owner=owner)
            require_choice(layer, name, history.layers, owner=owner)
    d_head, d_first = head_and_first(history.layers)
    return (d_head if head is None else head), (d_first if first is None else first)


def _peak_step(steps: np.ndarray, values: np.ndarray) -> int:
    return int(steps[int(np.nanargmax(values))])


def _select(history: History, layers: Sequence[str] | None, owner: str) -> list[str]:
    if layers is None:
        return history.layers
    unknown = [name for name in layers if name not in history.layers]
    if unknown:
        raise ValueError(f"The 'layers' parameter of {owner} must name layers of the history, "
                         f"one of {history.layers}. Got unknown {unknown} instead.")
    return list(layers)


def head_and_first(names: Sequence[str]) -> tuple[str, str]:
    """The read-out and the first layer among names in model order: the one rule the analysis and the Monitor use.

    The read-out is the last layer named ``readout`` or ending in ``fc`` or ``readout`` (else
    the last layer). Normalisation layers (last part containing ``norm`` or ``bn``, or
    starting with ``ln``) are skipped: the paper compares weight layers.

    >>> head_and_first(["tok", "pos", "blocks.0.ln1", "blocks.0.attn.qkv", "ln_f", "readout"])
    ('readout', 'tok')
    >>> head_and_first(["0", "3", "7", "9"])
    ('9', '0')
    """
    weights = [n for n in names if not _is_norm_layer(n)] or list(names)
    heads = [n for n in weights if n == "readout" or n.endswith("fc") or n.endswith("readout")]
    return (heads[-1] if heads else weights[-1]), weights[0]


def head_signals(head: ArrayLike, first: ArrayLike, head_init: ArrayLike) -> tuple[np.ndarray | float, np.ndarray | float]:
    """The paper's two early-warning signals from squared norms: (‖θ_L‖²/‖θ_1‖², ‖θ_L‖²/‖θ_L(0)‖²).

    One definition for the offline curves and the online Monitor. A zero denominator gives
    ``inf`` (also 0/0: a reference layer without weight cannot bound the head); NaN gives NaN.
    Python numbers in give floats out (the Monitor's per-record path, free of NumPy overhead).

    >>> ratio, rel = head_signals(18.0, 14.0, 72.0)
    >>> float(ratio) == 18 / 14, float(rel)
    (True, 0.25)
    >>> [float(v) for v in head_signals(1.0, 0.0, 0.0)]
    [inf, inf]
    """
    if isinstance(head, (int, float)) and isinstance(first, (int, float)) and isinstance(head_init, (int, float)):
        return (math.inf if first == 0 else head / first), (math.inf if head_init == 0 else head / head_init)

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den == 0, np.inf, num / den)

    h = np.asarray(head, dtype=float)
    return ratio(h, np.asarray(first, dtype=float)), ratio(h, np.asarray(head_init, dtype=float))


def normalised_layer_norms(history: History, layers: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """‖θ_ℓ‖² divided by its own maximum over the run, one array (n_evals,) per layer.

    Each curve ends at 1 if the layer never contracted; its distance below 1 at
    the end is the layer's contraction.
    """
    _check_history(history, "normalised_layer_norms")
    columns = {name: history.column(f"norm/{name}") for name in _select(history, layers, "normalised_layer_norms")}
    return {name: values / np.nanmax(values) if np.nanmax(values) > 0 else np.zeros_like(values)
            for name, values in columns.items()}


def layer_transitions(history: History, layers: Sequence[str] | None = None) -> list[LayerTransition]:
    """Peak step, peak and final norm, and contraction of every layer (default: all, in model order)."""
    _check_history(history, "layer_transitions")
    steps = history.column("step").astype(int)
    out = []
    for name in _select(history, layers, "layer_transitions"):
        values = history.column(f"norm/{name}")
        k = int(np.nanargmax(values))
        peak, final = float(values[k]), float(values[-1])
        contraction = max(0.0, 1.0 - final / peak) if peak > 0 else 0.0
        out.append(LayerTransition(name, float(values[0]), peak, int(steps[k]), final, contraction))
    return out


def warning_times(history: History, drop_step: int | None, head: str | None = None,
                  first: str | None = None) -> dict[str, Any]:
    """When the two early-warning signals turn down (peak), against the step the shortcut is dropped.

    Leads are drop_step − peak step (> 0: the signal turned down first; None without ``drop_step``).
    """
    head, first = _check_history(history, "warning_times", head, first)  # a bad input names what was called
    signals = head_to_first_ratio(history, head, first)
    steps = signals["step"].astype(int)
    out: dict[str, Any] = {"drop_step": drop_step}
    for key, values in (("head_over_init", signals["head_over_init"]), ("head_over_first", signals["head_over_first"]),
                        ("total", history.column("norm"))):
        peak = _peak_step(steps, values)
        out[f"{key}_peak"] = peak
        out[f"{key}_lead"] = None if drop_step is None else int(drop_step) - peak
    return out


def head_to_first_ratio(history: History, head: str | None = None, first: str | None = None) -> dict[str, np.ndarray]:
    """The paper's two early-warning signals along the run (:func:`head_signals` on the history's columns)."""
    head, first = _check_history(history, "head_to_first_ratio", head, first)
    h, f = history.column(f"norm/{head}"), history.column(f"norm/{first}")
    head_over_first, head_over_init = head_signals(h, f, h[0])
    return {"step": history.column("step"), "head_over_first": head_over_first, "head_over_init": head_over_init}


def early_warning(history: History, head: str | None = None, first: str | None = None) -> dict[str, Any]:
    """When the head-to-first-layer ratio peaks, next to when the total norm and each layer peak.

    A ratio that turns down before the total norm is an early warning: the head has started
    to contract while the network as a whole still grows.

    Parameters
    ----------
    history : History
        Needs ``step``, ``norm`` and ``norm/<layer>`` columns.
    head, first : str, optional
        The layers compared; by default :func:`head_and_first` of the history's layers.

    Returns
    -------
    dict
        The step of each peak, ``lead`` = total − ratio peak step (> 0: the ratio warned first),
        and the ``head`` and ``first`` names.
    """
    head, first = _check_history(history, "early_warning", head, first)
    signals = head_to_first_ratio(history, head, first)
    steps = signals["step"].astype(int)
    ratio_peak = _peak_step(steps, signals["head_over_first"])
    total_peak = _peak_step(steps, history.column("norm"))
    by_name = {t.layer: t for t in layer_transitions(history, [head, first])}
    return {"head": head, "first": first, "ratio_peak_step": ratio_peak, "total_peak_step": total_peak,
            "head_peak_step": by_name[head].peak_step, "first_peak_step": by_name[first].peak_step,
            "lead": total_peak - ratio_peak}


# --- The order after the shortcut is fitted: which layer loses a share of its T_mem value first ---------------------

#: The share of its value at T_mem a layer must lose to count as contracted (fixed before any run was read).
CONTRACTION_SHARE = 0.1
#: The readings :func:`contraction_order` can give.
CONTRACTION_VERDICTS = ("backward", "forward", "simultaneous", "undetermined")


@dataclass
class LayerContraction:
    """How one layer's ‖θ_ℓ‖² moved between T_mem and the window's end.

    ``share_lost`` is 1 − at_end/at_mem (negative when the layer grew); ``step`` is the first
    step at which ‖θ_ℓ‖² ≤ (1 − share)·at_mem, None if it never was.
    """

    layer: str
    at_mem: float
    at_end: float
    share_lost: float
    step: int | None


@dataclass
class ContractionOrder:
    """The order in which the layers contract after the shortcut is fitted, and its verdict.

    ``t_mem`` is None when the shortcut was never fitted; ``layers`` holds every weight layer in model order.
    """

    t_mem: int | None
    t_end: int | None
    share: float
    head: str
    first: str
    layers: list[LayerContraction]
    verdict: str

    @property
    def order(self) -> list[str]:
        """The layers that contracted, by the step they did (ties in model order)."""
        done = [c for c in self.layers if c.step is not None]
        return [c.layer for c in sorted(done, key=lambda c: c.step)]

    def layer(self, name: str) -> LayerContraction:
        """The contraction of layer ``name``."""
        return {c.layer: c for c in self.layers}[name]

    def to_dict(self) -> dict[str, Any]:
        """One flat record: the window, the two layers' steps and shares lost, the order and the verdict."""
        h, f = self.layer(self.head), self.layer(self.first)
        return {"t_mem": self.t_mem, "t_end": self.t_end, "head_step": h.step, "first_step": f.step,
                "head_lost": h.share_lost, "first_lost": f.share_lost,
                "order": " → ".join(self.order) or "none", "verdict": self.verdict}


def contraction_order(history: History, window: tuple[int | None, int | None] | None = None,
                      share: float = CONTRACTION_SHARE, head: str | None = None,
                      first: str | None = None) -> ContractionOrder:
    """Which layer contracts first once the shortcut is fitted: the NHT paper's P4, as a reading that can fail.

    Peak steps cannot order layers that fall from their initialisation (the transformer's
    embeddings peak at step 0), so each weight layer's ‖θ_ℓ‖² at T_mem is its reference; it
    *contracts* at the first step of [T_mem, T_end] at which it has lost ``share`` of it.
    T_end is T_grok, or the run's last step. The rule, fixed before any run was read:
    ``"backward"`` (P4 holds): the read-out contracts first, or only it contracts;
    ``"forward"``: the reverse; ``"simultaneous"``: the same step; ``"undetermined"``:
    neither contracts, or there is no window. Over seeds, P4 holds when a strict majority is backward.

    Parameters
    ----------
    history : History
    window : (t_mem, t_grok), optional
        Default: T_mem and T_grok of :func:`~nhtlab.analysis.events.find_events`; ``t_grok`` None: the run's end.
    share : float in (0, 1)
    head, first : str, optional
        Default: :func:`head_and_first` of the history's layers.

    Returns
    -------
    ContractionOrder

    Examples
    --------
    >>> rows = [{"step": s, "norm/tok": a, "norm/readout": b} for s, a, b in
    ...         [(0, 9.0, 1.0), (100, 8.0, 4.0), (200, 7.5, 3.0), (300, 6.0, 2.0)]]
    >>> r = contraction_order(History(rows), window=(100, 300))
    >>> r.verdict, r.order
    ('backward', ['readout', 'tok'])
    """
    head, first = _check_history(history, "contraction_order", head, first)
    require_real(share, "share", 0.0, 1.0, low_open=True, high_open=True, owner="contraction_order")
    names = [n for n in history.layers if not _is_norm_layer(n)] or list(history.layers)
    names = list(dict.fromkeys(_select(history, [*names, head, first], "contraction_order")))
    if window is None:
        ev = find_events(history)
        if ev.test_before_train:  # an impossible order, reported as such rather than as an empty window
            raise ValueError(f"The 'history' parameter of contraction_order reaches its test accuracy threshold (step "
                             f"{ev.t_grok}) before its train accuracy (step {ev.t_mem}): there is no window "
                             f"[T_mem, T_grok] to read. Pass window=(t_mem, t_grok) to choose one.")
        window = (ev.t_mem, ev.t_grok)
    require_type(window, "window", (tuple, list), owner="contraction_order")
    if len(window) != 2 or not all(t is None or (isinstance(t, (int, np.integer)) and not isinstance(t, bool)) for t in window):
        raise ValueError(f"The 'window' parameter of contraction_order must be (t_mem, t_grok), two steps (int or None). "
                         f"Got {window!r} instead.")
    steps = history.column("step").astype(int)
    t_mem, t_grok = window
    if t_mem is None:
        empty = [LayerContraction(n, math.nan, math.nan, math.nan, None) for n in names]
        return ContractionOrder(None, None, share, head, first, empty, "undetermined")
    t_end = int(steps[-1]) if t_grok is None else int(t_grok)
    inside = (steps >= int(t_mem)) & (steps <= t_end)
    if not inside.any():
        raise ValueError(f"The 'window' parameter of contraction_order must contain an evaluated step. "
                         f"Got {window} for steps {int(steps[0])}–{int(steps[-1])}.")
    i0, i1 = int(np.argmax(inside)), int(np.nonzero(inside)[0][-1])
    layers = []
    for name in names:
        values = history.column(f"norm/{name}")
        ref, end = float(values[i0]), float(values[i1])
        below = np.nonzero(values[i0:i1 + 1] <= (1.0 - share) * ref)[0] if ref > 0 else []
        layers.append(LayerContraction(name, ref, end, 1.0 - end / ref if ref > 0 else math.nan,
                                       int(steps[i0 + below[0]]) if len(below) else None))
    by = {c.layer: c.step for c in layers}
    h, f = by[head], by[first]
    if h is None and f is None:
        verdict = "undetermined"
    elif h is not None and f is not None and h == f:
        verdict = "simultaneous"
    else:
        verdict = "backward" if f is None or (h is not None and h < f) else "forward"
    return ContractionOrder(int(t_mem), t_end, share, head, first, layers, verdict)
