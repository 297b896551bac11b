"""Early-warning rules on synthetic histories with known answers (nhtlab/analysis/early_warnings.py)."""

from __future__ import annotations

import pytest

import nhtlab
from nhtlab.analysis.eta import synthetic_contraction
from nhtlab.analysis.early_warnings import SIGNALS, evaluate_warnings, warning_step


def _with_layers(h, head_peak_step):
    # a read-out that grows until head_peak_step then shrinks, an embedding that shrinks from step 0
    for row in h.rows:
        s = row["step"]
        row["norm/tok"] = 100.0 * (0.9995 ** s)
        row["norm/readout"] = 10.0 + s / 100 if s <= head_peak_step else 10.0 + head_peak_step / 100 - (s - head_peak_step) / 20
        row["train_loss"] = 0.01
    return h


def test_total_norm_fires_once_the_norm_has_fallen_ten_percent_after_t_mem():
    h = synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3)
    # exp(-1e-3·t) ≤ 0.9 from t = 105.4, evaluated every 100 steps: the first row at or past it is 700
    assert warning_step(h, "total_norm") == 700


def test_no_warning_before_memorisation_or_on_a_plateau():
    plateau = synthetic_contraction(t_mem=500, t_grok=None, rate=0.0, end=3000)
    assert warning_step(plateau, "total_norm") is None
    never = synthetic_contraction(t_mem=10**6, t_grok=None, rate=1e-3, end=2000)
    assert warning_step(never, "total_norm") is None


def test_readout_peak_reads_the_peak_after_t_mem():
    h = _with_layers(synthetic_contraction(t_mem=500, t_grok=3000, rate=1e-4), head_peak_step=1500)
    step = warning_step(h, "readout_peak")
    assert step is not None and 1500 < step < 3000
    assert warning_step(h, "embedding_norm") is not None  # the embedding shrinks throughout


def test_unrecorded_signal_and_unknown_signal():
    h = synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3)
    assert warning_step(h, "dlr") is None and warning_step(h, "readout_peak") is None
    with pytest.raises(ValueError, match="'signal'"):
        warning_step(h, "norm")


def test_evaluation_counts_leads_and_false_alarms():
    grok = [synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3, weight_decay=1.0)]
    quiet = [synthetic_contraction(t_mem=500, t_grok=None, rate=0.0, end=3000, weight_decay=0.01),
             synthetic_contraction(t_mem=500, t_grok=None, rate=1e-3, end=3000, weight_decay=0.01)]
    rows = {r["signal"]: r for r in evaluate_warnings(grok, quiet)}
    assert set(rows) == set(SIGNALS)
    total = rows["total_norm"]
    assert total["fired"] == "1 of 1" and total["median_lead"] == 1800
    assert total["median_lead_eta_lambda"] == pytest.approx(1.8)
    assert total["false_alarms"] == "1 of 2"  # the contracting run that never groks is a false alarm
    assert rows["dlr"]["recorded"] == 0


def test_exported():
    assert nhtlab.analysis.early_warnings.evaluate_warnings is evaluate_warnings and nhtlab.analysis.early_warnings.warning_step is warning_step


def _set(h, name, value_at):
    for row in h.rows:
        row[name] = value_at(row["step"])
    return h


def test_train_loss_fires_when_the_loss_doubles_from_its_minimum_since_t_mem():
    # the Monitor's rule: low losses before T_mem (500) set no minimum; 0.01 from 800 is the minimum since
    loss = {**{s: 0.001 for s in range(0, 500, 100)}, 500: 0.02, 600: 0.02, 700: 0.015, 800: 0.01,
            900: 0.01, 1000: 0.012, 1100: 0.019, 1200: 0.02}
    h = _set(synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3), "train_loss", lambda s: loss.get(s, 0.5))
    assert warning_step(h, "train_loss") == 1200


def test_readout_against_its_start_fires_once_it_is_below_its_initial_norm():
    # read-out 10 + s/100 up to its peak at 1500 (25), then 25 − (s − 1500)/20: below 10 after 1800
    h = _with_layers(synthetic_contraction(t_mem=500, t_grok=3000, rate=1e-4), head_peak_step=1500)
    assert warning_step(h, "readout_vs_init") == 1900


def test_readout_against_the_first_layer_fires_five_percent_below_its_peak_ratio():
    h = _with_layers(synthetic_contraction(t_mem=500, t_grok=3000, rate=1e-4), head_peak_step=1500)
    _set(h, "norm/tok", lambda s: 100.0)  # a constant first layer: the ratio is the read-out over 100
    # 5% below the peak 25: ≤ 23.75, i.e. (s − 1500)/20 ≥ 1.25, first evaluated at 1600
    assert warning_step(h, "readout_vs_first") == 1600
    assert warning_step(h, "embedding_norm") is None


def test_dlr_fires_below_one_half_after_t_mem_only():
    h = _set(synthetic_contraction(t_mem=500, t_grok=2500, rate=1e-3), "dlr",
             lambda s: 0.3 if s == 100 else (0.9 if s < 1100 else 0.4))
    assert warning_step(h, "dlr") == 1100
