"""Watch your own model: norms, the head/first-layer ratio, DLR and the regime, online.

:class:`Monitor` attaches to any ``nn.Module`` trained by *your* loop. Every ``every`` steps it records ‖θ‖²
per layer, ``head_ratio`` = ‖θ_L‖² / ‖θ_1‖² and ``head_rel`` = ‖θ_L‖² / ‖θ_L(0)‖² (the early-warning signals
of the NHT paper, arXiv 2603.07323), DLR on a fixed probe batch, and the scalars you pass.

It reads the regime online (:meth:`Monitor.regime`) and raises one early warning by the rule the book's
pre-registered evaluation supports (:func:`nhtlab.analysis.early_warnings.supported_signal`): **the training
loss at least twice its minimum since memorisation**, memorisation being the first record whose ``train_acc``
is at least :data:`~nhtlab.thresholds.FITTED_ACCURACY`. Pass ``train_loss=`` on the whole training set, not a
minibatch loss, whose noise alone can double it.

On the companion's Table 3 runs (``nhtlab/results/eta_full.json``, chapter 08) the rule fired before T_grok in
most grokking runs and on none that never grok, where ‖θ‖² 10% below its value at memorisation (nhtlab 0.3.0's
rule) fired on those too; the read-out's signals did worse and are only recorded. On the MLP on Z_47
(``eta_offgrid_mlp_*.json``) the warning fired before T_grok in none of the grokking runs and :meth:`regime`
never matched :func:`~nhtlab.analysis.regimes.diagnose_regime`: on that model neither rule is supported.
:meth:`Monitor.forecast` gives the delay law's baseline; the ETA did not ship.

Plain loop::

    monitor = nhtlab.Monitor(model, probe=(x_probe,), every=10)
    for step in range(1, steps + 1):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(); loss.backward(); optimizer.step()
        monitor(step, loss=loss.item())
    monitor.regime(), monitor.history          # a nhtlab History: charts work on it

A recorded step costs one sum of squares (with DLR, a probe forward and a small SVD); the steps in between
cost one integer test (``benchmarks/bench_monitor.py``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ..analysis.layers import head_signals
from ..analysis.regimes import DIVERGED, TOO_EARLY, UNDETERMINED, diagnose_regime
from ..analysis.early_warnings import TRAIN_LOSS_RATIO
from ..analysis.eta import DELAY_LAW_BASIS, GrokEstimate, delay_law_forecast
from ..history import History
from ..measures.dlr import dlr as default_dlr
from ..measures.norms import layer_names, layer_norms
from ..measures.predictions import forward
from ..models import require_fits
from ..thresholds import CONTRACTION_DROP, ETA_COVERAGE, FITTED_ACCURACY, ONLINE_MIN_POINTS
from ..validation import (require_callable, require_fractions, require_numbers, require_int, require_model, require_real, require_tensor,
                          require_type)

__all__ = ["Monitor", "module_head_and_first", "online_regime"]

#: The signal the evaluation supports (``supported_signal`` of ``nhtlab/results/eta_full.json``) and its
#: rule: the train loss at least this many times its minimum since memorisation.
GROK_WARNING_SIGNAL = "train_loss"
GROK_WARNING_LOSS_RATIO = TRAIN_LOSS_RATIO


#: Normalisation layers, by type: never the read-out or the first layer the paper compares.
_NORM_LAYERS = (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm)


def module_head_and_first(model: nn.Module, probe: torch.Tensor | None = None,
                          owner: str = "module_head_and_first") -> tuple[str, str]:
    """The read-out and the first layer of ``model``, from its modules rather than their names.

    Layers are ordered as one forward pass on ``probe`` calls them (definition order without a probe).
    Normalisation layers are skipped by type, so a leading ``BatchNorm1d`` is not "the first layer", and the
    read-out is the last weight layer whatever its name.

    Examples
    --------
    >>> model = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> module_head_and_first(model, torch.randn(5, 3))
    ('3', '1')
    """
    names = layer_names(model)
    modules = dict(model.named_modules())
    order = list(names)
    if probe is not None:
        called: list[str] = []
        hooks = [modules[name].register_forward_pre_hook(
            lambda module, args, name=name: None if name in called else called.append(name)) for name in names]
        try:
            with torch.no_grad():
                forward(model, probe.to(next(model.parameters()).device), owner, name="probe")
        finally:
            for hook in hooks:
                hook.remove()
        order = called + [name for name in names if name not in called]
    weights = [name for name in order if not isinstance(modules[name], _NORM_LAYERS)] or order
    return weights[-1], weights[0]


def online_regime(
    norm: Sequence[float],
    train_acc: Sequence[float] | None = None,
    drop: float = CONTRACTION_DROP,
    fit: float = FITTED_ACCURACY,
    min_points: int = ONLINE_MIN_POINTS,
) -> str:
    """The NHT regime (arXiv 2603.07323) read from a norm curve seen so far.

    ``"weak"`` until ‖θ‖² falls ``drop`` below its running peak; then ``"intermediate"`` if the training
    accuracy reached ``fit`` (or none was given), else ``"strong"`` (decay suppresses learning). Fewer than
    ``min_points`` records are ``"too early"``; a non-finite norm is ``"diverged"``; all-NaN accuracies are
    ``"undetermined"``.
    """
    require_real(drop, "drop", 0.0, 1.0, low_open=True, high_open=True, owner="online_regime")
    require_real(fit, "fit", 0.0, 1.0, low_open=True, owner="online_regime")
    require_int(min_points, "min_points", low=2, owner="online_regime")
    values = require_numbers(norm, "norm", owner="online_regime")
    if train_acc is not None:
        acc = require_fractions(train_acc, "train_acc", owner="online_regime")
    if values.ndim != 1:
        raise ValueError(f"The 'norm' parameter of online_regime must be one-dimensional. Got shape {values.shape} instead.")
    if train_acc is not None and len(train_acc) != len(values):
        raise ValueError(
            f"The 'train_acc' parameter of online_regime must have one value per norm value ({len(values)}). "
            f"Got {len(train_acc)} instead."
        )
    if not np.all(np.isfinite(values)):
        return DIVERGED
    if len(values) < min_points:
        return TOO_EARLY
    if train_acc is not None and np.isnan(acc).all():  # accuracies recorded, none known: no regime
        return UNDETERMINED
    peak = float(np.max(values))
    contracted = peak > 0 and values[-1] <= (1.0 - drop) * peak
    if not contracted:
        return "weak"
    if train_acc is not None and not np.nanmax(acc) >= fit:
        return "strong"
    return "intermediate"


class Monitor:
    """Record norms, the head/first-layer ratio and DLR of a model you train yourself.

    Parameters
    ----------
    model : nn.Module
        Only read, never changed.
    probe : tensor or tuple of tensors, optional
        ``(x_probe,)`` or ``(x_probe, y_probe)``: a fixed batch for DLR (label-free; NaN where undefined).
    every : int
        Record every this many steps (and at construction, as step 0).
    head, first : str, optional
        The read-out and first layer; default :func:`module_head_and_first`. The read-out must be an
        ``nn.Linear`` for DLR: its input is the features, its output the learned functions.
    dlr : callable, optional
        ``dlr(features, logits) -> float``; default :func:`nhtlab.measures.dlr.dlr`.
    warn_drop : float in (0, 1)
        The read-out is "contracting" once ‖θ_L‖² is this fraction below its running peak.
    on_warning : callable, optional
        Called as ``on_warning(step, message)`` when a warning fires.

    Attributes
    ----------
    rows : list of dict
        One row per record: ``step``, ``norm``, ``norm/<layer>``, ``head_ratio``, ``head_rel``, ``dlr``, scalars.
    warnings : list of (int, str)
        The early warning and, once, the divergence warning (also a :class:`RuntimeWarning`).
    diverged_step, head_contracting_step, grok_warning_step, memorised_step : int or None
        First recorded step with a non-finite ‖θ‖², a contracting read-out, the early warning, and
        ``train_acc`` ≥ :data:`~nhtlab.thresholds.FITTED_ACCURACY` (T_mem, as :func:`nhtlab.find_events`).
    """

    def __init__(
        self,
        model: nn.Module,
        probe: Sequence[torch.Tensor] | torch.Tensor | None = None,
        every: int = 10,
        head: str | None = None,
        first: str | None = None,
        dlr: Callable[[torch.Tensor, torch.Tensor], float] | None = None,
        warn_drop: float = 0.02,
        on_warning: Callable[[int, str], Any] | None = None,
    ) -> None:
        owner = "Monitor"
        require_model(model, owner=owner)
        self.every = require_int(every, "every", low=1, owner=owner)
        self.warn_drop = require_real(warn_drop, "warn_drop", 0.0, 1.0, low_open=True, high_open=True, owner=owner)
        names = layer_names(model)
        if not names:
            raise ValueError("The 'model' parameter of Monitor has no parameters to monitor.")
        self.model = model
        if probe is not None:
            if isinstance(probe, torch.Tensor):
                probe = (probe,)
            require_type(probe, "probe", (tuple, list), owner=owner)
            if not probe or not isinstance(probe[0], torch.Tensor):
                raise TypeError(f"The 'probe' parameter of Monitor must be (x_probe,) or (x_probe, y_probe) with tensors. Got {probe!r} instead.")
            if require_tensor(probe[0], "probe", owner).ndim == 0 or len(probe[0]) < 2:
                raise ValueError(f"The 'probe' parameter of Monitor must hold at least 2 samples (DLR compares them). "
                                 f"Got shape {tuple(probe[0].shape)} instead.")
            require_fits(model, probe[0], None, "probe", owner)
            if probe[0].is_floating_point() and not torch.isfinite(probe[0]).all():
                raise ValueError("The 'probe' parameter of Monitor must hold finite inputs; it holds NaN or inf.")
        # one forward pass on the probe orders the layers and refuses a probe the model cannot read
        default_head, default_first = module_head_and_first(model, None if probe is None else probe[0], owner)
        self.head = default_head if head is None else head
        self.first = default_first if first is None else first
        for name, value in (("head", self.head), ("first", self.first)):
            if value not in names:
                raise ValueError(f"The {name!r} parameter of Monitor must be one of the model's layers {names}. Got {value!r} instead.")
        if probe is not None and not isinstance(model.get_submodule(self.head), nn.Linear):
            raise ValueError(f"DLR needs the read-out {self.head!r} to be an nn.Linear; pass head= or probe=None.")
        self.probe = None if probe is None else probe[0]
        self._dlr = default_dlr if dlr is None else require_callable(dlr, "dlr", owner)
        self.on_warning = None if on_warning is None else require_callable(on_warning, "on_warning", owner)
        self.dlr_failure: str | None = None
        self.rows: list[dict[str, float]] = []
        self.warnings: list[tuple[int, str]] = []
        self.head_contracting_step: int | None = None
        self.grok_warning_step: int | None = None
        self.memorised_step: int | None = None
        self._loss_min = math.inf
        self.diverged_step: int | None = None
        self._head_peak = 0.0
        self._calls = 0
        # what regime() reads, kept as the rows come (O(1) a call, not a History rebuilt each time)
        self._broken = False  # a non-finite ‖θ‖² or training loss was recorded (is_diverged's rule)
        self._norm_peak = -math.inf
        self._best = {"train_acc": math.nan, "test_acc": math.nan}  # best finite value so far; NaN: none
        self._seen: set[str] = set()  # the scalars' names recorded so far
        self._head0 = layer_norms(model)[self.head]
        self.record(0)

    # -- recording --------------------------------------------------------------------
    def step(self, step: int | None = None, **scalars: float) -> dict[str, float] | None:
        """Call after ``optimizer.step()``; records (and returns the row) when ``step`` is a multiple of ``every``.

        ``step`` defaults to the number of calls so far (1, 2, …).
        """
        self._calls += 1
        step = self._calls if step is None else require_int(step, "step", low=0, owner="Monitor")
        if self.rows and step == self.rows[-1]["step"]:
            # the step just recorded (the constructor's step 0, the first call of a range(0, …) loop): its
            # scalars join that row instead of being dropped
            return self._add_scalars(self.rows[-1], scalars) if scalars else self.rows[-1]
        if step % self.every:
            if self.rows and step < self.rows[-1]["step"]:
                self.record(step)  # names the step out of order
            return None
        return self.record(step, **scalars)

    __call__ = step

    @torch.no_grad()
    def record(self, step: int, **scalars: float) -> dict[str, float]:
        """Record and return a row now under ``step``, which must follow the last recorded one."""
        require_int(step, "step", low=0, owner="Monitor.record")
        if self.rows and step <= self.rows[-1]["step"]:
            raise ValueError(f"The 'step' parameter of Monitor is out of order: step {step} comes after step "
                             f"{self.rows[-1]['step']}; steps must increase.")
        self._check_scalars(scalars)
        per_layer = layer_norms(self.model)
        head, first = per_layer[self.head], per_layer[self.first]
        row: dict[str, float] = {"step": step, "norm": sum(per_layer.values())}
        row.update({f"norm/{k}": v for k, v in per_layer.items()})
        head_ratio, head_rel = head_signals(head, first, self._head0)
        row["head_ratio"], row["head_rel"] = float(head_ratio), float(head_rel)
        if self.probe is not None:
            row["dlr"] = self._probe_dlr()
        self.rows.append(row)
        self._add_scalars(row, scalars, checked=True)
        self._norm_peak = max(self._norm_peak, row["norm"]) if math.isfinite(row["norm"]) else self._norm_peak
        if not math.isfinite(row["norm"]):
            self._broken = True
            self._diverged(step, row["norm"])
        else:
            self._head_peak = max(self._head_peak, head)
            if self.head_contracting_step is None and head <= (1.0 - self.warn_drop) * self._head_peak:
                self.head_contracting_step = step
            self._check_loss(step, row)
        return row

    #: Columns the Monitor measures itself: a scalar of one of these names would overwrite a measurement.
    MEASURED = ("step", "norm", "head_ratio", "head_rel", "dlr")

    def _check_scalars(self, scalars: Mapping[str, Any]) -> None:
        """Refuse a non-real scalar, an accuracy outside [0, 1], a negative loss or a measured column's name."""
        for name, value in scalars.items():
            if name in self.MEASURED or name.startswith("norm/"):
                raise ValueError(f"The {name!r} scalar of Monitor is a column the Monitor measures itself "
                                 f"({', '.join(self.MEASURED)}, norm/<layer>); pass your reading under another name.")
            if isinstance(value, (str, bytes, bool)) or not isinstance(value, (float, int, np.number, torch.Tensor)) \
                    or (isinstance(value, torch.Tensor) and value.numel() != 1):
                raise TypeError(f"The {name!r} scalar of Monitor must be a real number (a float, int or one-element "
                                f"tensor). Got {value!r} of type {type(value).__name__} instead.")
            if name.endswith("_acc"):
                require_fractions(float(value), name, owner="Monitor")
        if float(scalars.get("train_loss", 0.0)) < 0:
            raise ValueError(f"The 'train_loss' scalar of Monitor must be ≥ 0 (a cross-entropy, whose minimum the "
                             f"early warning compares against). Got {float(scalars['train_loss'])!r} instead.")

    def _add_scalars(self, row: dict[str, float], scalars: Mapping[str, Any], checked: bool = False) -> dict[str, float]:
        """Put ``scalars`` into ``row`` (checked first unless ``checked``) and keep regime()'s running readings."""
        if not checked:
            self._check_scalars(scalars)
        row.update({k: float(v) for k, v in scalars.items()})
        self._seen.update(scalars)
        if "train_loss" in scalars and not math.isfinite(row["train_loss"]):
            self._broken = True
        for key in self._best:
            if key in scalars and math.isfinite(row[key]):
                self._best[key] = row[key] if math.isnan(self._best[key]) else max(self._best[key], row[key])
        return row

    def _check_loss(self, step: int, row: dict[str, float]) -> None:
        if self.memorised_step is None:
            if not row.get("train_acc", math.nan) >= FITTED_ACCURACY:  # NaN (not known) never memorises
                return
            self.memorised_step = step
        loss = row.get("train_loss")
        if loss is None or not math.isfinite(loss):
            return
        self._loss_min = min(self._loss_min, loss)  # since memorisation, this record included
        if self.grok_warning_step is None and loss >= GROK_WARNING_LOSS_RATIO * self._loss_min:
            self.grok_warning_step = step
            self._warn(step, f"step {step}: the train loss {loss:.3g} is {loss / self._loss_min:.1f}× its minimum "
                             f"{self._loss_min:.3g} since memorisation (step {self.memorised_step}): in the book's "
                             f"evaluation this preceded grokking")

    def _diverged(self, step: int, norm: float) -> None:
        if self.diverged_step is None:
            self.diverged_step = step
            self._warn(step, f"step {step}: ‖θ‖² is {norm} — the run diverged; the monitor reports regime 'diverged' "
                             f"from here (a smaller learning rate usually helps)", loud=True)

    def _warn(self, step: int, message: str, loud: bool = False) -> None:
        """Keep ``message`` in :attr:`warnings`, hand it to ``on_warning``; ``loud``: a RuntimeWarning too."""
        self.warnings.append((step, message))
        if loud:
            warnings.warn(message, RuntimeWarning, stacklevel=5)
        if self.on_warning is not None:
            self.on_warning(step, message)

    def _probe_dlr(self) -> float:
        captured: dict[str, torch.Tensor] = {}
        module = self.model.get_submodule(self.head)
        handle = module.register_forward_hook(lambda m, inp, out: captured.update(features=inp[0], logits=out))
        was_training = self.model.training
        try:
            self.model.eval()
            device = next(self.model.parameters()).device
            self.model(self.probe.to(device))
        finally:
            handle.remove()
            self.model.train(was_training)
        features = captured["features"].reshape(len(captured["features"]), -1).detach().cpu()
        logits = captured["logits"].reshape(len(captured["logits"]), -1).detach().cpu()
        try:
            value = self._dlr(features, logits)
            if isinstance(value, (str, bytes, bool)) or not isinstance(value, (float, int, np.number, torch.Tensor)):
                raise TypeError(f"dlr returned {value!r} of type {type(value).__name__}, not a number")
            if not math.isfinite(float(value)):  # said like any other failure, never recorded silently
                raise ValueError(f"dlr returned {float(value)} (the probe's features or outputs are not finite)")
            return float(value)
        except Exception as error:  # noqa: BLE001 — e.g. constant features of dead ReLUs: no DLR at this step
            if self.dlr_failure is None:  # said once: the reason, and that DLR is NaN where it fails
                self.dlr_failure = f"{type(error).__name__}: {error}"
                warnings.warn(f"nhtlab.Monitor: DLR could not be measured on the probe ({self.dlr_failure}); it is NaN at "
                              f"the records where this happens.", RuntimeWarning, stacklevel=5)
            return math.nan

    # -- reading ------------------------------------------------------------------------
    @property
    def history(self) -> History:
        """The records as a :class:`nhtlab.history.History` (so nhtlab's charts and events apply)."""
        return History(rows=list(self.rows), status="running",
                       config={"monitor_every": self.every, "head": self.head, "first": self.first})

    def regime(self, drop: float = CONTRACTION_DROP, fit: float = FITTED_ACCURACY, acc_key: str = "train_acc") -> str:
        """The regime so far (:func:`online_regime`), using ``acc_key`` if it was recorded; O(1) a call.

        A run whose ``test_acc`` reached :data:`~nhtlab.thresholds.FITTED_ACCURACY` before ‖θ‖² contracted is
        ``"undetermined"``, never "weak": the norm rule cannot tell (:meth:`diagnose` reads the whole run).
        """
        require_real(drop, "drop", 0.0, 1.0, low_open=True, high_open=True, owner="Monitor.regime")
        require_real(fit, "fit", 0.0, 1.0, low_open=True, owner="Monitor.regime")
        require_type(acc_key, "acc_key", str, owner="Monitor.regime")
        if self._broken:  # as is_diverged, hence diagnose() (a NaN loss too)
            return DIVERGED
        if len(self.rows) < ONLINE_MIN_POINTS:  # as online_regime
            return TOO_EARLY
        recorded = acc_key in self._seen
        best = self._best.get(acc_key)
        if best is None:  # a column the Monitor does not follow: read once over the rows
            finite = [r[acc_key] for r in self.rows if math.isfinite(r.get(acc_key, math.nan))]
            best = max(finite, default=math.nan)
        if recorded and math.isnan(best):
            return UNDETERMINED
        contracted = self._norm_peak > 0 and self.rows[-1]["norm"] <= (1.0 - drop) * self._norm_peak
        if not contracted:
            generalised = self._best["test_acc"] >= FITTED_ACCURACY  # False while NaN
            return UNDETERMINED if generalised else "weak"
        if recorded and not best >= fit:
            return "strong"
        return "intermediate"

    def forecast(self, calibration: Mapping[tuple[float, float], Sequence[History]], lr: float, weight_decay: float,
                 coverage: float = ETA_COVERAGE) -> GrokEstimate:
        """When will this run grok? The delay law's baseline (:func:`~nhtlab.analysis.eta.delay_law_forecast`).

        Named ``forecast``, not ``eta``: ``eta()`` is kept for an ETA that passes the book's off-grid evaluation
        (chapter 08); none has yet. ``calibration`` maps ``(lr, weight_decay)`` to finished runs of the same
        model. Before memorisation, after divergence or with no calibration run that grokked, there is no
        estimate and ``reason`` says why.
        """
        now = int(self.rows[-1]["step"])
        if self.diverged_step is not None:
            return GrokEstimate(now, None, None, None, "the run diverged", DELAY_LAW_BASIS)
        if self.memorised_step is None:
            best = max((r["train_acc"] for r in self.rows if math.isfinite(r.get("train_acc", math.nan))), default=None)
            why = "the run has not memorised yet" + ("" if best is None else f": best training accuracy {best:.3f}, "
                                                                             f"below {FITTED_ACCURACY}")
            return GrokEstimate(now, None, None, None, why, DELAY_LAW_BASIS)
        return delay_law_forecast(calibration, lr, weight_decay, self.memorised_step, now, coverage)

    def diagnose(self, **thresholds: Any):
        """The offline verdict of :func:`nhtlab.analysis.regimes.diagnose_regime` on the records so far.

        Needs ``train_acc`` and ``test_acc`` recorded; ``thresholds`` go to ``diagnose_regime``.
        """
        missing = [c for c in ("train_acc", "test_acc") if c not in self.history.columns]
        if missing:
            raise ValueError(f"Monitor.diagnose needs {missing} recorded: pass them to monitor(step, train_acc=..., test_acc=...).")
        return diagnose_regime(self.history, **thresholds)

    def summary(self, drop: float = CONTRACTION_DROP, fit: float = FITTED_ACCURACY, acc_key: str = "train_acc") -> dict[str, Any]:
        """Headline readings: regime (as :meth:`regime`), norm peak, contraction, head warning, last ratio, DLR."""
        norm = np.array([r["norm"] for r in self.rows])
        peak = int(np.argmax(norm))
        out: dict[str, Any] = {
            "regime": self.regime(drop=drop, fit=fit, acc_key=acc_key),
            "records": len(self.rows),
            "norm peak": round(float(norm[peak]), 3),
            "norm peak step": int(self.rows[peak]["step"]),
            "norm contraction": round(float(max(0.0, 1.0 - norm[-1] / norm[peak])), 4),
            "head contracting from step": self.head_contracting_step,
            "grok warning at step": self.grok_warning_step,
            "head/first ratio (last)": round(self.rows[-1]["head_ratio"], 4),
        }
        if "dlr" in self.rows[-1]:
            out["DLR first → last"] = (round(self.rows[0]["dlr"], 4), round(self.rows[-1]["dlr"], 4))
        return out
