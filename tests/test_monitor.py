import importlib
import math
from collections import OrderedDict

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import nhtlab
from nhtlab.models import EmbeddingMLP
from nhtlab.training.monitor import Monitor, online_regime


def hand_built() -> nn.Sequential:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 4))
    with torch.no_grad():
        model[0].weight.fill_(1.0)   # 6 → 6
        model[0].bias.fill_(2.0)     # 2 × 4 → 8
        model[2].weight.fill_(3.0)   # 8 × 9 → 72
        model[2].bias.fill_(0.0)
    return model


def test_norm_values_and_ratios_on_a_hand_built_model():
    model = hand_built()
    monitor = Monitor(model, every=5)
    row = monitor.rows[0]
    assert row["step"] == 0
    assert row["norm/0"] == 14.0 and row["norm/2"] == 72.0 and row["norm"] == 86.0
    assert row["head_ratio"] == pytest.approx(72.0 / 14.0)
    assert row["head_rel"] == 1.0
    with torch.no_grad():
        model[2].weight.mul_(0.5)    # head norm / 4
    assert monitor(3) is None        # not a multiple of every: nothing recorded
    row = monitor(5, loss=0.25)
    assert row["norm/2"] == 18.0 and row["head_rel"] == pytest.approx(0.25)
    assert row["head_ratio"] == pytest.approx(18.0 / 14.0)
    assert row["loss"] == 0.25
    assert [r["step"] for r in monitor.rows] == [0, 5]


def test_default_head_is_the_readout_of_nhtlab_models_and_last_layer_otherwise():
    torch.manual_seed(0)
    assert Monitor(EmbeddingMLP(7, width=8)).head == "readout"
    assert Monitor(EmbeddingMLP(7, width=8)).first == "embed_a"
    assert Monitor(hand_built()).head == "2"
    # normalisation layers are skipped, as the offline analysis (head_and_first) skips them
    ends_in_norm = nn.Sequential(OrderedDict(hidden=nn.Linear(3, 4), act=nn.ReLU(), out=nn.Linear(4, 2), ln=nn.LayerNorm(2)))
    assert (Monitor(ends_in_norm).head, Monitor(ends_in_norm).first) == ("out", "hidden")


def test_head_ratio_is_inf_when_the_first_layer_has_no_weight():
    model = hand_built()
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.zero_()
    row = Monitor(model).rows[0]
    assert row["head_ratio"] == math.inf and row["head_rel"] == 1.0


def test_step_counter_defaults_to_number_of_calls_and_records_every_k():
    monitor = Monitor(hand_built(), every=3)
    for _ in range(10):
        monitor()
    assert [r["step"] for r in monitor.rows] == [0, 3, 6, 9]
    assert len(monitor.history) == 4
    assert list(monitor.history.column("norm")) == [86.0] * 4


def test_head_contraction_is_recorded_without_a_warning():
    model = hand_built()
    messages = []
    monitor = Monitor(model, every=1, warn_drop=0.1, on_warning=lambda s, m: messages.append((s, m)))
    with torch.no_grad():
        model[2].weight.mul_(1.1)    # grows
        monitor(1)
        model[2].weight.mul_(0.97)   # 6% below peak: under the threshold
        monitor(2)
        model[2].weight.mul_(0.9)    # now > 10% below the peak
        monitor(3)
    assert monitor.head_contracting_step == 3
    assert messages == [] and monitor.warnings == []


def test_grok_warning_fires_once_when_the_train_loss_doubles_from_its_minimum_since_memorisation():
    model = hand_built()
    messages = []
    monitor = Monitor(model, every=1, on_warning=lambda s, m: messages.append((s, m)))
    monitor(1, train_acc=0.5, train_loss=0.001)    # not memorised: a low loss here sets no minimum
    monitor(2, train_acc=0.995, train_loss=0.02)   # memorised here: the minimum starts at 0.02
    monitor(3, train_acc=1.0, train_loss=0.01)     # new minimum
    monitor(4, train_acc=1.0, train_loss=0.019)    # 1.9×: not yet
    monitor(5, train_acc=1.0, train_loss=0.02)     # 2×: fires
    monitor(6, train_acc=1.0, train_loss=0.5)      # once only
    assert monitor.memorised_step == 2 and monitor.grok_warning_step == 5
    assert len(messages) == 1 and messages[0][0] == 5 and "memorisation (step 2)" in messages[0][1]
    assert "2.0× its minimum 0.01" in messages[0][1]
    assert monitor.warnings == messages


def test_the_monitor_warns_by_the_signal_the_saved_full_evaluation_supports():
    from nhtlab.book.held_out_eta import saved_evaluation
    from nhtlab.analysis.early_warnings import SIGNALS, supported_signal
    from nhtlab.training import monitor as monitor_module

    saved = saved_evaluation("full")
    assert saved is not None, "nhtlab/results/eta_full.json is the evaluation the Monitor's rule rests on"
    assert supported_signal(saved["warnings"]) == monitor_module.GROK_WARNING_SIGNAL == "train_loss"
    assert f"{monitor_module.GROK_WARNING_LOSS_RATIO:g}" == "2" and "twice" in SIGNALS["train_loss"][0]


def test_supported_signal_puts_false_alarms_first_then_warned_runs_then_lead():
    from nhtlab.analysis.early_warnings import supported_signal

    rows = [{"signal": "early_but_wrong", "fired": "20 of 20", "late": 0, "median_lead": 3000.0, "false_alarms": "5 of 5"},
            {"signal": "right", "fired": "18 of 20", "late": 2, "median_lead": 2600.0, "false_alarms": "0 of 5"},
            {"signal": "right_less_often", "fired": "17 of 20", "late": 3, "median_lead": 4000.0, "false_alarms": "0 of 5"},
            {"signal": "never", "fired": "0 of 20", "late": 0, "median_lead": None, "false_alarms": "0 of 5"}]
    assert supported_signal(rows) == "right"
    assert supported_signal([rows[3], rows[0]]) == "early_but_wrong"  # one that never warns is no signal
    with pytest.raises(ValueError, match="'records' parameter of supported_signal"):
        supported_signal([])


def test_no_grok_warning_without_train_accuracy_or_train_loss():
    model = hand_built()
    monitor = Monitor(model, every=1)
    for step in range(1, 4):
        monitor(step, train_loss=0.01 * 3 ** step)   # the loss grows, but the run never memorised
    assert monitor.grok_warning_step is None and monitor.memorised_step is None
    quiet = Monitor(model, every=1)
    for step in range(1, 4):
        quiet(step, train_acc=1.0, loss=0.01 * 3 ** step)  # a minibatch `loss` is not the rule's train loss
    assert quiet.memorised_step == 1 and quiet.grok_warning_step is None


@pytest.mark.parametrize("norm, acc, expected", [
    ([1, 2, 3, 4, 5, 6, 7], None, "weak"),
    ([1, 2, 3, 4, 5, 6, 7], [0.2, 0.5, 1, 1, 1, 1, 1], "weak"),
    ([1, 5, 9, 10, 9, 8, 7], [0.2, 0.9, 1, 1, 1, 1, 1], "intermediate"),
    ([1, 5, 9, 10, 9, 8, 7], None, "intermediate"),
    ([10, 8, 6, 5, 4, 3, 3], [0.1] * 7, "strong"),
    ([1, 2, 3], None, "too early"),
    ([1, 2, float("nan")], None, "diverged"),
    ([1, 5, 9, 10, 9.9, 9.8, 9.7], [1] * 7, "weak"),   # 3% below the peak: not a contraction at 5%
])
def test_online_regime_on_synthetic_curves(norm, acc, expected):
    assert online_regime(norm, acc) == expected


def test_online_regime_on_smooth_synthetic_norm_shapes():
    t = torch.linspace(0, 1, 50)
    rising = (1 - torch.exp(-3 * t)).tolist()
    peaked = (t * torch.exp(-4 * t)).tolist()                  # peaks at t = 0.25, then decays
    assert online_regime(rising) == "weak"
    assert online_regime(peaked, [1.0] * 50) == "intermediate"
    assert online_regime(peaked[:10], [1.0] * 10) == "weak"     # seen online before the peak


def test_monitor_regime_reads_recorded_accuracy():
    model = hand_built()
    monitor = Monitor(model, every=1)
    with torch.no_grad():
        for step in range(1, 8):
            model[2].weight.mul_(0.8)
            monitor(step, train_acc=0.1)
    assert monitor.regime() == "strong"
    assert monitor.summary()["regime"] == "strong"
    assert monitor.summary()["norm peak step"] == 0


def test_validation_errors_name_the_parameter():
    with pytest.raises(TypeError, match="'model' parameter of Monitor"):
        Monitor("not a model")
    with pytest.raises(ValueError, match="'every' parameter of Monitor"):
        Monitor(hand_built(), every=0)
    with pytest.raises(ValueError, match="'head' parameter of Monitor must be one of"):
        Monitor(hand_built(), head="fc")
    with pytest.raises(TypeError, match="'probe' parameter of Monitor"):
        Monitor(hand_built(), probe=([1, 2],), dlr=lambda f, y: 0.0)
    with pytest.raises(ValueError, match="'train_acc' parameter of online_regime"):
        online_regime([1, 2, 3], [1, 1])


def test_probe_hands_readout_input_and_output_to_dlr():
    torch.manual_seed(0)
    model = EmbeddingMLP(11, width=16)
    x_probe = torch.randint(0, 11, (30, 2))
    seen = {}

    def fake_dlr(features, logits):
        seen["features"], seen["logits"] = features, logits
        return 0.5

    model.train()
    monitor = Monitor(model, probe=(x_probe,), every=2, dlr=fake_dlr)
    logits, features = model(x_probe, return_features=True)
    assert torch.allclose(seen["features"], features.detach()) and torch.allclose(seen["logits"], logits.detach())
    assert monitor.rows[0]["dlr"] == 0.5
    assert model.training, "the monitor must restore the training mode"
    assert not model.readout._forward_hooks, "the probe hook must be removed"


def test_dlr_on_a_probe_batch_with_nhtlab_dlr():
    dlr_module = importlib.import_module("nhtlab.measures.dlr")  # the attribute nhtlab.measures.dlr is the function
    torch.manual_seed(0)
    model = EmbeddingMLP(11, width=16)
    x_probe = torch.randint(0, 11, (64, 2))
    monitor = Monitor(model, probe=(x_probe,), every=1)
    logits, features = model(x_probe, return_features=True)
    expected = float(dlr_module.dlr(features.detach(), logits.detach()))
    assert monitor.rows[0]["dlr"] == pytest.approx(expected)
    assert 0.0 <= monitor.rows[0]["dlr"] <= 1.0


def test_monitor_follows_a_real_training_loop():
    torch.manual_seed(0)
    data = nhtlab.modular_data(11, train_fraction=0.6, seed=0)
    model = EmbeddingMLP(11, width=32, embed_std=0.1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1.0)
    monitor = Monitor(model, every=10)
    for step in range(1, 101):
        loss = F.cross_entropy(model(data.x_train), data.y_train)
        opt.zero_grad()
        loss.backward()
        opt.step()
        monitor(step, loss=loss.item())
    assert len(monitor.rows) == 11
    assert monitor.rows[-1]["norm"] == pytest.approx(nhtlab.total_norm(model))
    assert monitor.rows[-1]["norm"] > monitor.rows[0]["norm"], "a small init grows while fitting"
    assert not math.isnan(monitor.rows[-1]["loss"])


def test_steps_between_records_compute_nothing(monkeypatch):
    # The cost claim without a clock: only every k-th step reads the parameters (a timing assertion
    # depends on the machine's load; benchmarks/bench_monitor.py measures the overhead instead).
    import nhtlab.training.monitor as monitor_module

    model = EmbeddingMLP(23, width=16)
    monitor = Monitor(model, every=20)
    calls = []
    real = monitor_module.layer_norms
    monkeypatch.setattr(monitor_module, "layer_norms", lambda m: calls.append(1) or real(m))
    for step in range(1, 201):
        monitor(step)
    assert len(calls) == 10 and len(monitor.rows) == 11, "one parameter read per recorded step, none in between"


def test_diagnose_delegates_to_regimes_with_recorded_accuracies():
    import nhtlab.analysis.regimes as regimes
    model = hand_built()
    monitor = Monitor(model, every=1)
    with pytest.raises(ValueError, match="needs \\['train_acc', 'test_acc'\\]"):
        monitor.diagnose()
    with torch.no_grad():
        for step in range(1, 8):
            model[2].weight.mul_(1.2)          # the norm keeps growing, test accuracy stays low
            monitor(step, train_acc=1.0, test_acc=0.1)
    verdict = monitor.diagnose()
    assert verdict.regime == "weak" == monitor.regime()
    assert verdict.regime == regimes.diagnose_regime(monitor.history).regime


def test_monitor_readings_chart_has_a_panel_per_reading():
    from nhtlab import book as charts  # chapter 08's charts are the book's

    monitor = Monitor(hand_built(), every=1, probe=(torch.randn(8, 3),), dlr=lambda f, y: 0.3)
    for step in range(1, 4):
        monitor(step, train_acc=0.5, test_acc=0.4)
    spec = charts.monitor_chart(monitor.history).to_dict()
    assert len(spec["vconcat"]) == 4  # accuracy, norm, head signals, DLR
    bare = charts.monitor_chart(Monitor(hand_built()).history).to_dict()
    assert len(bare["vconcat"]) == 2  # norm and head signals only


def test_dlr_is_nan_when_the_probe_features_are_constant():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.fill_(-1.0)   # every hidden unit dead: constant features
    monitor = Monitor(model, probe=(torch.randn(16, 3),))
    assert math.isnan(monitor.rows[0]["dlr"])


def test_a_monitor_whose_first_row_has_no_loss_is_not_diverged():
    """The Monitor's step-0 row holds no training loss: absent is not NaN, only a recorded NaN diverges."""
    from nhtlab.analysis.regimes import is_diverged

    torch.manual_seed(0)
    monitor = nhtlab.Monitor(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)),
                             probe=(torch.randn(32, 4),), every=10)
    for step in (10, 20, 30):
        monitor(step, train_loss=0.5, train_acc=0.9, test_acc=0.8)
    assert is_diverged(monitor.history) is None and monitor.regime() != "diverged"
    monitor(40, train_loss=float("nan"), train_acc=0.9, test_acc=0.8)
    assert is_diverged(monitor.history) == "the training loss is not finite from step 40"
    assert monitor.regime() == "diverged"


def _memorised_monitor(steps=(1, 2, 3), accs=(0.5, 1.0, 1.0)):
    monitor = Monitor(hand_built(), every=1)
    for step, acc in zip(steps, accs):
        monitor(step, train_acc=acc)
    return monitor


def test_forecast_is_t_mem_plus_the_nearest_settings_mean_delay_scaled_by_eta_lambda():
    from nhtlab.analysis.eta import synthetic_contraction

    def runs(lam, delays):
        return [synthetic_contraction(t_mem=500, t_grok=500 + d, rate=1e-3, lr=1e-3, weight_decay=lam) for d in delays]

    calibration = {(1e-3, 0.3): runs(0.3, (2000, 2400)), (1e-3, 1.0): runs(1.0, (600, 800))}
    monitor = _memorised_monitor()  # memorised at step 2, now step 3
    est = monitor.forecast(calibration, lr=1e-3, weight_decay=0.5)  # nearest in log ηλ: λ = 0.3
    assert math.isclose(est.t_grok, 2 + 2200 * 0.3 / 0.5) and est.step == 3
    assert est.low <= est.t_grok <= est.high and est.low >= 3
    assert "not the ETA" in est.basis and "did not ship" in est.basis and "MLP" in est.basis
    one = monitor.forecast({(1e-3, 0.3): calibration[(1e-3, 0.3)]}, lr=1e-3, weight_decay=0.5)
    assert one.t_grok == est.t_grok and one.high == math.inf  # one setting: nothing to score the law on


def test_forecast_says_why_before_memorisation_and_names_bad_calibration():
    from nhtlab.analysis.eta import synthetic_contraction

    grokked = {(1e-3, 1.0): [synthetic_contraction(t_mem=500, t_grok=1500, rate=1e-3)]}
    early = _memorised_monitor(accs=(0.2, 0.5, 0.9)).forecast(grokked, lr=1e-3, weight_decay=1.0)
    assert early.reason == "the run has not memorised yet: best training accuracy 0.900, below 0.99"
    assert early.t_grok is None and "not memorised" in early.text()
    assert "not the ETA" in early.basis  # what it will rest on, said before it can forecast
    never = {(1e-3, 1.0): [synthetic_contraction(t_mem=500, t_grok=None, rate=1e-3)]}
    none = _memorised_monitor().forecast(never, lr=1e-3, weight_decay=1.0)
    assert none.t_grok is None and "no calibration run memorised and grokked" in none.reason
    with pytest.raises(ValueError, match="'calibration' parameter of delay_law_forecast is empty"):
        _memorised_monitor().forecast({}, lr=1e-3, weight_decay=1.0)
    with pytest.raises(ValueError, match="'weight_decay'"):
        _memorised_monitor().forecast(grokked, lr=1e-3, weight_decay=0.0)
