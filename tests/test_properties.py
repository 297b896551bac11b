"""Property-based tests (Hypothesis) of inputs users feed: each drawn input gives the answer of a small
numpy reference within a stated tolerance, or an error naming the argument and what is allowed.

Bounded (``max_examples``, no deadline) so that the suite keeps its time on a 2-core CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import nhtlab
from nhtlab.analysis.eta import delay_law_forecast
from nhtlab.history import History
from nhtlab.measures.cka import linear_cka, linear_cka_gram
from nhtlab.measures.collapse import nc1
from nhtlab.measures.dlr import dlr
from nhtlab.measures.predictions import accuracy, loss_and_accuracy, readout_dlr
from nhtlab.measures.spectra import participation_ratio
from nhtlab.training.monitor import online_regime

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Scales a user's features come at: 1e-300 to 1e300, as powers of ten.
scales = st.integers(-300, 300).map(lambda e: 10.0 ** e)


def features(rows=(4, 24), cols=(1, 6)):
    """Well-conditioned float64 matrices (n, p): entries of order one, not constant across samples."""
    shape = st.tuples(st.integers(*rows), st.integers(*cols))
    return shape.flatmap(lambda s: arrays(np.float64, s, elements=st.floats(-10, 10, allow_subnormal=False)))


def spread(x: np.ndarray) -> bool:
    centred = x - x.mean(0)
    return np.abs(centred).max() > 1e-3 * max(np.abs(x).max(), 1.0)


def numpy_cka(x: np.ndarray, y: np.ndarray) -> float:
    xc, yc = x - x.mean(0), y - y.mean(0)
    k, l = xc @ xc.T, yc @ yc.T
    return float((k * l).sum() / (np.linalg.norm(k) * np.linalg.norm(l)))


# -- measures that promise scale invariance -------------------------------------------------------------
@PROPERTY
@given(features(), features(), scales, scales)
def test_cka_is_the_numpy_reference_at_any_scale(x, y, s, t):
    n = min(len(x), len(y))
    x, y = x[:n], y[:n]
    if not (spread(x) and spread(y)):
        return
    expected = numpy_cka(x, y)
    got = linear_cka(torch.from_numpy(x) * s, torch.from_numpy(y) * t)
    assert got == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert linear_cka_gram(torch.from_numpy(x) * s, torch.from_numpy(y) * t) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@PROPERTY
@given(features(), scales)
def test_participation_ratio_is_the_numpy_reference_at_any_scale(x, s):
    if not spread(x):
        return
    rho = np.linalg.eigvalsh(np.cov(x.T, bias=True).reshape(x.shape[1], x.shape[1]))
    expected = rho.sum() ** 2 / (rho ** 2).sum()
    assert participation_ratio(torch.from_numpy(x) * s) == pytest.approx(expected, rel=1e-7)


@PROPERTY
@given(features(rows=(6, 24)), scales, st.integers(2, 3))
def test_nc1_and_dlr_do_not_depend_on_the_scale(x, s, classes):
    if not all(spread(x[:, [j]]) for j in range(x.shape[1])):
        return  # a constant column: its class means differ by rounding alone, at one scale or another
    labels = torch.arange(len(x)) % classes
    x_t = torch.from_numpy(x)
    try:
        expected = nc1(x_t, labels)
    except ValueError as error:  # coinciding class means: the same named error at every scale
        with pytest.raises(ValueError, match="nc1"):
            nc1(x_t * s, labels)
        assert "nc1" in str(error)
        return
    assert nc1(x_t * s, labels) == pytest.approx(expected, rel=1e-6, abs=1e-12)
    outputs = x_t @ torch.ones(x.shape[1], 2, dtype=torch.float64) + x_t[:, :1] ** 2
    try:
        base = dlr(x_t, outputs)
    except ValueError:
        return
    assert dlr(x_t * s, outputs * s) == pytest.approx(base, abs=1e-9)


@pytest.mark.parametrize("name", ["linear_cka", "participation_ratio"])
@pytest.mark.parametrize("bad", [torch.full((5, 3), float("nan")), torch.ones(5, 3), torch.zeros(1, 3)])
def test_scale_free_measures_name_what_they_cannot_take(name, bad):
    fn = {"linear_cka": lambda x: linear_cka(x, torch.randn(len(x), 2)), "participation_ratio": participation_ratio}[name]
    with pytest.raises(ValueError, match=r"'(x|features)' parameter of (linear_cka|participation_ratio)"):
        fn(bad)


# -- model-facing measures: eval mode, no side effect, labels checked ---------------------------------------
def classifier(norm: str) -> torch.nn.Module:
    torch.manual_seed(0)
    middle = {"dropout": torch.nn.Dropout(0.5), "batch": torch.nn.BatchNorm1d(8)}[norm]
    return torch.nn.Sequential(torch.nn.Linear(4, 8), middle, torch.nn.ReLU(), torch.nn.Linear(8, 3))


@PROPERTY
@given(st.sampled_from(["dropout", "batch"]), st.integers(2, 40), st.integers(0, 2 ** 16))
def test_accuracy_is_the_eval_mode_reference_and_changes_nothing(norm, n, seed):
    model = classifier(norm).train()
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    first, second = accuracy(model, x, y), accuracy(model, x, y)
    model.eval()
    with torch.no_grad():
        reference = float(np.mean(model(x).argmax(1).numpy() == y.numpy()))
    assert first == second == pytest.approx(reference, abs=1e-12)
    model.train()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # BatchNorm's statistics too
    assert model.training and all(m.training for m in model.modules())
    assert loss_and_accuracy(model, x, y)[1] == pytest.approx(reference, abs=1e-12)
    try:
        d1 = readout_dlr(model, x)
    except ValueError:  # features or outputs constant on so few samples: a named error, every time
        return
    d2 = readout_dlr(model, x)
    assert d1 == d2 or (math.isnan(d1) and math.isnan(d2))


@pytest.mark.parametrize("labels, match", [
    (torch.tensor([[0], [1], [2]]), "1-D tensor of integer class labels"),   # broadcasts to n × n otherwise
    (torch.tensor([0.0, 1.0, 2.0]), "1-D tensor of integer class labels"),
    (torch.tensor([True, False, True]), "1-D tensor of integer class labels"),
    (torch.tensor([0, 1, 3]), r"labels in \[0, 2\]"),
    (torch.tensor([-1, 1, 2]), r"labels in \[0, 2\]"),
    (torch.tensor([0, 1]), "as many labels as inputs"),
])
@pytest.mark.parametrize("measure", [accuracy, loss_and_accuracy])
def test_accuracy_names_labels_it_cannot_read(measure, labels, match):
    with pytest.raises(ValueError, match=match):
        measure(classifier("dropout"), torch.randn(3, 4), labels)


def test_int32_labels_are_read_as_labels():
    model, x = classifier("batch"), torch.randn(6, 4)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    assert loss_and_accuracy(model, x, y.int()) == pytest.approx(loss_and_accuracy(model, x, y))


# -- histories users produce ---------------------------------------------------------------------------------
accuracies = st.floats(0.0, 1.0)


@st.composite
def histories(draw):
    n = draw(st.integers(2, 12))
    steps = sorted(draw(st.sets(st.integers(0, 5000), min_size=n, max_size=n)))
    norms = draw(st.lists(st.floats(0.0, 1e6), min_size=n, max_size=n))
    train = draw(st.lists(accuracies, min_size=n, max_size=n))
    test = draw(st.lists(accuracies, min_size=n, max_size=n))
    return History(rows=[{"step": s, "norm": v, "train_acc": a, "test_acc": b}
                         for s, v, a, b in zip(steps, norms, train, test)])


def first_at(history: History, column: str, threshold: float = 0.99):
    hits = [r["step"] for r in history.rows if r[column] >= threshold]
    return hits[0] if hits else None


@PROPERTY
@given(histories())
def test_events_are_the_reference_and_never_a_negative_delay(history):
    events = nhtlab.find_events(history)
    t_mem, t_grok = first_at(history, "train_acc"), first_at(history, "test_acc")
    assert (events.t_mem, events.t_grok) == (t_mem, t_grok)
    wrong_order = t_mem is not None and t_grok is not None and t_grok < t_mem
    assert events.test_before_train == wrong_order
    assert events.delay == (None if t_mem is None or t_grok is None or wrong_order else t_grok - t_mem)
    assert events.grokked == (events.delay is not None) and (events.delay is None or events.delay >= 0)


@PROPERTY
@given(histories(), st.sampled_from(["unsorted", "duplicated", "negative", "percent"]))
def test_a_history_that_cannot_be_read_is_named(history, damage):
    rows = [dict(r) for r in history.rows]
    if damage == "unsorted":
        rows = rows[::-1]
    elif damage == "duplicated":
        rows = rows + [dict(rows[-1])]
    elif damage == "negative":
        rows[-1]["norm"] = -1.0
    else:
        rows[-1]["train_acc"] = 99.0
    with pytest.raises(ValueError, match="'history' parameter of find_events"):
        nhtlab.find_events(History(rows=rows))


def test_border_times_refuses_percent_and_unsorted_histories():
    from nhtlab.analysis.events import border_times

    rows = [dict(step=s, cue_acc=c, conflict_acc=d) for s, c, d in [(0, 10, 10), (100, 60, 20)]]
    with pytest.raises(ValueError, match="fractions in \\[0, 1\\]"):
        border_times(History(rows=rows))
    rows = [dict(step=s, cue_acc=0.5, conflict_acc=0.1) for s in (100, 0)]
    with pytest.raises(ValueError, match="out of order"):
        border_times(History(rows=rows))


# -- the Monitor ---------------------------------------------------------------------------------------------
def monitor(**kwargs) -> nhtlab.Monitor:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    return nhtlab.Monitor(model, every=1, **kwargs)


@pytest.mark.parametrize("name", ["norm", "dlr", "head_ratio", "head_rel", "norm/0"])
def test_a_scalar_may_not_overwrite_a_measurement(name):
    m = monitor()
    with pytest.raises(ValueError, match=f"'{name}' scalar of Monitor is a column the Monitor measures"):
        m(1, **{name: -5.0})


def test_step_zero_is_the_natural_first_call_and_a_repeat_is_not_dropped():
    m = monitor()
    row = m(0, train_acc=0.5)
    assert row is m.rows[0] and row["train_acc"] == 0.5 and len(m.rows) == 1
    m(1, train_acc=0.6)
    assert m(1, test_acc=0.1)["test_acc"] == 0.1 and len(m.rows) == 2
    with pytest.raises(ValueError, match="out of order"):
        m.record(1)


@PROPERTY
@given(st.lists(st.tuples(st.floats(0.5, 1.5), accuracies, accuracies), min_size=4, max_size=30))
def test_the_online_regime_is_online_regime_and_never_weak_once_generalised(readings):
    """The Monitor's incremental regime() equals online_regime on its own records (a norm curve drawn by
    scaling the weights between records), except that a run whose test accuracy reached 0.99 is never "weak"."""
    m = monitor()
    for step, (factor, train, test) in enumerate(readings, 1):
        with torch.no_grad():
            for parameter in m.model.parameters():
                parameter.mul_(factor)
        m(step, train_acc=train, test_acc=test)
    reference = online_regime([r["norm"] for r in m.rows], [r.get("train_acc", math.nan) for r in m.rows])
    generalised = max(t for _, _, t in readings) >= 0.99
    assert m.regime() == ("undetermined" if generalised and reference == "weak" else reference)


@pytest.mark.parametrize("calibration, error", [
    ("runs", TypeError), ([], TypeError), ({(1e-3,): []}, ValueError), ({(1e-3, 0.0): []}, ValueError),
    ({(1e-3, 1.0): History(rows=[])}, TypeError), ({(1e-3, 1.0): [1, 2]}, TypeError),
])
def test_a_forecast_calibration_of_the_wrong_shape_is_named(calibration, error):
    with pytest.raises(error, match="'calibration' parameter of delay_law_forecast"):
        delay_law_forecast(calibration, 1e-3, 1.0, 100, 200)


# -- labels --------------------------------------------------------------------------------------------------
@PROPERTY
@given(st.lists(st.integers(-3, 12), min_size=1, max_size=30), st.integers(2, 10),
       st.sampled_from([torch.long, torch.int32, torch.uint8]))
def test_noisy_labels_keep_every_label_a_class_or_name_the_bad_one(values, classes, dtype):
    if dtype == torch.uint8 and min(values) < 0:
        return  # not representable in the dtype: not an input a user can build
    y = torch.tensor(values, dtype=dtype)
    if min(values) < 0 or max(values) >= classes:
        with pytest.raises(ValueError, match=r"'y' parameter of noisy_labels must hold labels in"):
            nhtlab.noisy_labels(y, 0.5, classes)
        return
    noisy, picked = nhtlab.noisy_labels(y, 0.5, classes)
    assert noisy.dtype == y.dtype and noisy.shape == y.shape
    assert bool(((noisy >= 0) & (noisy < classes)).all()) and bool((noisy[~picked] == y[~picked]).all())


@pytest.mark.parametrize("y", [torch.tensor([0.5, 1.0]), torch.tensor([True, False]), torch.tensor([1 + 1j, 0j]),
                               torch.empty(3, dtype=torch.long, device="meta")])
def test_noisy_labels_name_labels_that_are_not_integers(y):
    with pytest.raises(ValueError, match="'y' parameter of noisy_labels must be a 1-d integer tensor"):
        nhtlab.noisy_labels(y, 0.1, 10)


def test_noisy_labels_refuse_a_dtype_that_would_wrap():
    with pytest.raises(ValueError, match="cannot hold label 299"):
        nhtlab.noisy_labels(torch.tensor([0, 1], dtype=torch.uint8), 0.5, 300)


@pytest.mark.parametrize("lams", ["1.0", 1.0, [None], [True], b"1"])
def test_companion_sweep_names_lams_that_are_not_a_list_of_numbers(lams):
    with pytest.raises(TypeError, match=r"'lams' parameter of companion_sweep must be a list of weight decays"):
        nhtlab.companion_sweep("quick", lams=lams)


def test_eigenfunctions_and_key_frequencies_refuse_shapes_that_would_broadcast():
    from nhtlab.measures.fourier import key_frequencies
    from nhtlab.measures.spectra import eigenfunctions

    x = torch.randn(20, 10, generator=torch.Generator().manual_seed(0))
    assert eigenfunctions(x, at=x[:2])[1].shape[0] == 2
    with pytest.raises(ValueError, match=r"'at' parameter of eigenfunctions must be a matrix \(m, 10\)"):
        eigenfunctions(x, at=x[0])
    with pytest.raises(ValueError, match="'spectrum' parameter of key_frequencies must be one spectrum"):
        key_frequencies(torch.rand(3, 49))


def test_a_history_without_its_rates_is_named():
    from nhtlab.analysis.delay import contraction_fit, delay_point

    rows = [{"step": s, "norm": 100.0 - s / 10, "train_acc": 1.0 if s >= 100 else 0.1,
             "test_acc": 1.0 if s >= 500 else 0.1} for s in range(0, 1000, 50)]
    for fn in (delay_point, contraction_fit):
        with pytest.raises(ValueError, match=f"'history' parameter of {fn.__name__} needs the run's lr"):
            fn(History(rows=rows, config={"weight_decay": 1.0}))


@pytest.mark.parametrize("damage, match", [("nan colour", "RGB values in \\[0, 1\\] \\(no NaN\\)"),
                                           ("0-255 pixels", "pixels in \\[0, 1\\]"), ("nan pixel", "pixels in \\[0, 1\\]")])
def test_border_shortcut_names_colours_and_pixels_it_cannot_use(damage, match):
    from nhtlab.data.images import ImageData

    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(20, 3, 8, 8, generator=g), torch.arange(20) % 2
    colours = None
    if damage == "nan colour":
        colours = [[1.0, 0.0, 0.0], [float("nan"), 0.0, 1.0]]
    elif damage == "0-255 pixels":
        x = x * 255
    else:
        x[3, 0, 4, 4] = float("nan")
    with pytest.raises(ValueError, match=match):
        nhtlab.border_shortcut(ImageData(x, y, x.clone(), y.clone(), 2), colours=colours, width=1)


def test_the_monitor_finds_its_layers_from_the_modules_not_their_names():
    """A leading BatchNorm1d is not the first layer, and a hidden layer named fc beside a read-out named out
    is not the head: the Monitor reads DLR at the real read-out."""

    class Named(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm_in = torch.nn.BatchNorm1d(3)
            self.fc = torch.nn.Linear(3, 8)
            self.out = torch.nn.Linear(8, 2)

        def forward(self, x):
            return self.out(torch.relu(self.fc(self.norm_in(x))))

    torch.manual_seed(0)
    m = nhtlab.Monitor(Named(), probe=(torch.randn(16, 3),), every=1)
    assert (m.head, m.first) == ("out", "fc")
    sequential = torch.nn.Sequential(torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    assert (nhtlab.Monitor(sequential).head, nhtlab.Monitor(sequential).first) == ("3", "1")
