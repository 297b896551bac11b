"""accuracy and readout_dlr (nhtlab.measures.predictions) against the Monitor and by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nhtlab


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_accuracy_closed_form():
    model = nn.Sequential(nn.Identity())
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    assert nhtlab.accuracy(model, x, torch.tensor([0, 1, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        nhtlab.accuracy(model, x, torch.tensor([0]))


def test_loss_and_accuracy_closed_form_and_the_monitors_warning_reads_it():
    model = nn.Sequential(nn.Identity())
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    y = torch.tensor([0, 1, 1])
    loss, acc = nhtlab.loss_and_accuracy(model, x, y)
    by_hand = -sum(torch.log_softmax(x[i], 0)[y[i]].item() for i in range(3)) / 3
    assert loss == pytest.approx(by_hand, rel=1e-6) and acc == nhtlab.accuracy(model, x, y) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="'x' and 'y' parameters of loss_and_accuracy must hold as many labels"):
        nhtlab.loss_and_accuracy(model, x, y[:1])
    # the Monitor warns when the whole-set train loss doubles after memorisation
    net = small_model()
    monitor = nhtlab.Monitor(net, every=1)
    for step, (train_loss, train_acc) in enumerate([(0.5, 1.0), (0.2, 1.0), (0.45, 1.0)], start=1):
        monitor(step, train_loss=train_loss, train_acc=train_acc)
    assert monitor.grok_warning_step == 3


def test_readout_dlr_equals_the_monitor_and_detects_a_stale_record():
    model, x = small_model(), torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    monitor = nhtlab.Monitor(model, probe=(x,), every=1)
    assert monitor.rows[-1]["dlr"] == pytest.approx(nhtlab.readout_dlr(model, x), abs=1e-9)
    features = model[:-1](x).flatten(1)
    assert nhtlab.readout_dlr(model, x) == pytest.approx(nhtlab.dlr(features.detach(), model[-1](features).detach()))
    # train after the last record: the monitor's row is stale, and the chapter's check fails
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(x).pow(2).sum().backward()
    optimizer.step()
    check = nhtlab.book.monitor_dlr_check(monitor.rows[-1], nhtlab.readout_dlr(model, x), last_step=0)
    assert not check, check.detail


def test_readout_dlr_needs_a_sequential_with_a_readout():
    with pytest.raises(TypeError):
        nhtlab.readout_dlr(nn.Linear(2, 2), torch.zeros(3, 2))
    with pytest.raises(ValueError):
        nhtlab.readout_dlr(nn.Sequential(nn.Linear(2, 2)), torch.zeros(3, 2))
