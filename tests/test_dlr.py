"""DLR, its rank rules, spectra, NC1 and feature capture: closed forms, invariances, errors."""

import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn as nn

import nhtlab
from nhtlab.measures.cka import linear_cka_gram
from nhtlab.measures.collapse import nc1
from nhtlab.training.dlr_tracker import DLRTracker
from nhtlab.measures.dlr import dlr, dlr_terms, output_rank
from nhtlab.measures.spectra import eigenfunctions, feature_spectrum, participation_ratio
from nhtlab.measures.features import capture, hooked

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def centred_orthonormal(n: int, r: int, g: torch.Generator) -> torch.Tensor:
    """(n, r) orthonormal columns, each orthogonal to the constant vector."""
    a = torch.randn(n, r, generator=g, dtype=F64)
    q, _ = torch.linalg.qr(a - a.mean(0))
    return q


def random_orthogonal(d: int, g: torch.Generator) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))
    return q


def realistic(g: torch.Generator, n: int = 400, p: int = 32, c: int = 6):
    """Features of a random tanh layer and logits read out from them, plus noise-free structure."""
    x = torch.randn(n, 10, generator=g, dtype=F64)
    phi = torch.tanh(x @ torch.randn(10, p, generator=g, dtype=F64))
    out = phi @ torch.randn(p, c, generator=g, dtype=F64) + torch.randn(c, generator=g, dtype=F64)
    return phi, out


# --- closed forms -----------------------------------------------------------------------------


@pytest.mark.parametrize("rank", ["energy", "relative", "full"])
def test_zero_when_features_are_an_orthonormal_basis_of_the_output_span(rank):
    g = gen(0)
    q = centred_orthonormal(500, 4, g)
    mixing = random_orthogonal(6, g)[:4]  # (4, 6) orthonormal rows: outputs span exactly span(q)
    outputs = 3.0 * q @ mixing + 1.5
    assert dlr(q, outputs, rank=rank) == pytest.approx(0.0, abs=1e-6)
    # rank-deficient features (extra zero columns, a rotation) and any full-row-rank read-out: still 0
    features = torch.cat([q, torch.zeros(500, 3, dtype=F64)], 1) @ random_orthogonal(7, g)
    skewed = q @ torch.randn(4, 6, generator=g, dtype=F64)
    assert dlr(features, skewed, rank="full") == pytest.approx(0.0, abs=1e-6)


def test_zero_for_neural_collapse_features():
    g = gen(1)
    c, p, per_class = 5, 16, 40
    etf = torch.eye(c, dtype=F64) - 1.0 / c  # simplex ETF: equal norms, equal angles (NC2)
    means = etf @ torch.linalg.qr(torch.randn(p, c, generator=g, dtype=F64))[0].T  # (C, p) embedded in R^p
    labels = torch.arange(c).repeat(per_class)
    features = 2.0 * means[labels] + 0.7  # NC1: every sample sits on its class mean
    self_dual = features @ means.T  # NC3: read-out rows = class means
    assert nc1(features, labels) == pytest.approx(0.0, abs=1e-12)
    assert dlr(features, self_dual) == pytest.approx(0.0, abs=1e-6)  # default rule
    generic = features @ torch.randn(p, c, generator=g, dtype=F64)
    assert dlr(features, generic, rank="full") == pytest.approx(0.0, abs=1e-6)


def test_value_matches_gram_matrix_cka_and_the_decomposition():
    phi, out = realistic(gen(2))
    for rank, tol in [("energy", 0.9), ("relative", 0.05), ("full", None), (3, None)]:
        terms = dlr_terms(phi, out, rank, tol)
        fc = (out - out.mean(0)).numpy()
        u = np.linalg.svd(fc, full_matrices=False)[0][:, :terms.rank]
        assert terms.dlr == pytest.approx(1 - linear_cka_gram(phi, torch.from_numpy(u)), abs=1e-8)
        assert terms.dlr == pytest.approx(1 - terms.f_in * math.sqrt(terms.participation_ratio / terms.rank), abs=1e-12)
    assert dlr_terms(phi, out, 3).rank == 3


# --- invariances ------------------------------------------------------------------------------


@pytest.mark.parametrize("rank", ["energy", "relative", "full"])
def test_invariant_to_feature_scaling_and_rotation_and_output_bias_and_rotation(rank):
    g = gen(3)
    phi, out = realistic(g)
    base = dlr(phi, out, rank=rank)
    assert 0.05 < base < 0.95
    assert dlr(7.3 * phi, out, rank=rank) == pytest.approx(base, abs=1e-10)
    assert dlr(phi @ random_orthogonal(phi.shape[1], g), out, rank=rank) == pytest.approx(base, abs=1e-10)
    assert dlr(phi, out + torch.randn(out.shape[1], generator=g, dtype=F64) * 50, rank=rank) == pytest.approx(base, abs=1e-10)
    assert dlr(phi, 0.2 * out @ random_orthogonal(out.shape[1], g), rank=rank) == pytest.approx(base, abs=1e-10)


def test_invariant_to_an_invertible_linear_map_on_the_outputs():
    g = gen(4)
    phi, out = realistic(g)
    mix = torch.randn(out.shape[1], out.shape[1], generator=g, dtype=F64) + 3 * torch.eye(out.shape[1], dtype=F64)
    assert dlr(phi, out @ mix, rank="full") == pytest.approx(dlr(phi, out, rank="full"), abs=1e-10)
    # Truncating rules see the same span when the outputs have exact rank r (here 3 of 6 columns):
    low = phi @ torch.randn(phi.shape[1], 3, generator=g, dtype=F64) @ torch.randn(3, 6, generator=g, dtype=F64)
    for rank in ["energy", "relative"]:
        assert dlr(phi, low @ mix, rank=rank) == pytest.approx(dlr(phi, low, rank=rank), abs=1e-10)


# --- finite-n behaviour, labels, degenerate inputs --------------------------------------------------


def test_random_high_dimensional_features_unrelated_to_outputs_are_lazy():
    n, p, c = 3000, 512, 10
    g = gen(5)
    phi = torch.randn(n, p, generator=g)
    out = torch.randn(n, c, generator=g)
    terms = dlr_terms(phi, out, rank="full")
    # E‖QᵀΦ‖² = r p, ‖ΦᵀΦ‖_F ≈ √(n p (n + p)): 1 − DLR ≈ √(r p / (n (n + p))) ≈ 0.035 here.
    bound = math.sqrt(terms.rank * p / (n * (n + p)))
    assert terms.dlr == pytest.approx(1 - bound, abs=0.2 * bound)
    assert terms.dlr > 0.95


def test_no_labels_anywhere_in_the_dlr_call():
    params = set(inspect.signature(dlr).parameters)
    assert params == {"features", "outputs", "rank", "tol"}
    model = nhtlab.models.EmbeddingMLP(7, width=16)
    x = torch.cartesian_prod(torch.arange(7), torch.arange(7))
    row, _ = DLRTracker(x).measure(model)  # no labels given
    assert 0.0 <= row["dlr"] <= 1.0 and "nc1" not in row


def test_degenerate_inputs_raise_clear_errors_never_nan():
    g = gen(6)
    phi, out = realistic(g)
    with pytest.raises(ValueError, match="'features' parameter of dlr is constant"):
        dlr(torch.full_like(phi, 3.0), out)
    with pytest.raises(ValueError, match="'outputs' parameter of dlr is constant"):
        dlr(phi, torch.full_like(out, -1.0))
    # rank-deficient features: duplicated-free zero columns change nothing, result finite
    padded = torch.cat([phi, torch.zeros(phi.shape[0], 20, dtype=F64)], 1)
    assert dlr(padded, out) == pytest.approx(dlr(phi, out), abs=1e-12)
    rank_one = phi[:, :1] * torch.ones(1, 8, dtype=F64)
    value = dlr(rank_one, out)
    assert math.isfinite(value) and 0.0 <= value <= 1.0
    assert participation_ratio(rank_one) == pytest.approx(1.0)


def test_rank_rules_pick_the_documented_dimension():
    g = gen(7)
    u = centred_orthonormal(200, 4, g)
    s = torch.tensor([10.0, 3.0, 0.5, 1e-14], dtype=F64)  # energies 100, 9, 0.25, ~0
    out = u * s @ random_orthogonal(4, g)
    assert output_rank(out, "full") == 3  # the 1e-14 direction is below float64 resolution
    assert output_rank(out, "relative", 0.04) == 3
    assert output_rank(out, "relative") == 3  # default 1e-2: 0.5 > 0.1
    assert output_rank(out, "relative", 0.2) == 2
    assert output_rank(out, "energy", 0.9) == 1  # 100 / 109.25 = 0.915
    assert output_rank(out, "energy", 0.99) == 2  # 109 / 109.25 = 0.9977
    assert output_rank(out, "energy", 0.999) == 3
    assert output_rank(out, 2) == 2


def test_rank_rule_errors_name_the_parameter():
    phi, out = realistic(gen(8))
    with pytest.raises(ValueError, match="'rank' parameter of dlr must be one of 'energy', 'relative', 'full' or a positive int. Got 'all'"):
        dlr(phi, out, rank="all")
    with pytest.raises(TypeError, match="'rank' parameter of dlr"):
        dlr(phi, out, rank=2.5)
    with pytest.raises(ValueError, match="'tol' parameter of dlr must be None when rank='full'"):
        dlr(phi, out, rank="full", tol=0.9)
    with pytest.raises(ValueError, match="'tol' parameter of dlr must be a finite float in the range \\(0.0, 1.0\\]"):
        dlr(phi, out, rank="energy", tol=1.5)
    with pytest.raises(ValueError, match="asks for 9 output directions, but the centred outputs have numerical rank 6"):
        dlr(phi, out, rank=9)
    with pytest.raises(ValueError, match="'outputs' parameter of dlr must have as many rows"):
        dlr(phi, out[:-1])


# --- spectra -----------------------------------------------------------------------------------


def test_eigenfunctions_are_orthonormal_and_extend_by_nystrom():
    phi, _ = realistic(gen(9))
    rho, e = eigenfunctions(phi)
    n = phi.shape[0]
    assert torch.allclose(e.T @ e / n, torch.eye(len(rho), dtype=F64), atol=1e-8)
    cov_trace = float(((phi - phi.mean(0)) ** 2).sum() / n)
    assert float(rho.sum()) == pytest.approx(cov_trace, rel=1e-10)
    _, e_at = eigenfunctions(phi, top=5, at=phi[:10])
    assert torch.allclose(e_at, e[:10, :5], atol=1e-10)


def test_utilisation_reaches_one_and_quality_is_a_monotone_share():
    g = gen(10)
    phi, out = realistic(g)
    labels = torch.randint(0, 4, (phi.shape[0],), generator=g)
    spectrum = feature_spectrum(phi, outputs=out, target=labels)
    assert spectrum.relative[0] == 1.0 and np.all(np.diff(spectrum.eigenvalues) <= 0)
    assert spectrum.utilisation[-1] == pytest.approx(1.0, abs=1e-10)  # outputs are linear in the features
    assert np.all(np.diff(spectrum.quality) >= -1e-15) and 0.0 <= spectrum.quality[-1] < 1.0
    records = spectrum.to_records(step=5)
    assert records[0]["k"] == 1 and records[0]["step"] == 5 and set(records[0]) >= {"relative", "quality", "utilisation"}
    # a target inside the top-2 eigenfunctions is fully expressed by k = 2
    _, e = eigenfunctions(phi)
    target = e[:, :2] @ torch.tensor([[1.0], [2.0]], dtype=F64)
    assert feature_spectrum(phi, target=target).quality[1] == pytest.approx(1.0, abs=1e-10)


# --- NC1 -------------------------------------------------------------------------------------


def test_nc1_grows_with_within_class_noise_and_ignores_scale():
    g = gen(11)
    means = torch.randn(4, 12, generator=g, dtype=F64)
    labels = torch.arange(4).repeat(50)
    noise = torch.randn(200, 12, generator=g, dtype=F64)
    small, large = nc1(means[labels] + 0.1 * noise, labels), nc1(means[labels] + 1.0 * noise, labels)
    assert 0 < small < large
    assert nc1(5 * (means[labels] + 0.1 * noise), labels) == pytest.approx(small, rel=1e-10)
    with pytest.raises(ValueError, match="at least 2 classes"):
        nc1(means[labels], torch.zeros(200, dtype=torch.long))
    with pytest.raises(ValueError, match="class means given to nc1 all coincide"):
        nc1(torch.ones(200, 12), labels)


# --- capture ----------------------------------------------------------------------------------


def test_capture_matches_model_features_in_any_batch_size_and_restores_mode():
    torch.manual_seed(0)
    model = nhtlab.models.EmbeddingMLP(11, width=24, depth=2)
    x = torch.cartesian_prod(torch.arange(11), torch.arange(11))
    model.train()
    whole = capture(model, x, batch_size=1000)
    pieces = capture(model, x, batch_size=7)
    assert model.training
    assert torch.allclose(whole.features, model.features(x).detach()) and torch.allclose(whole.outputs, model(x).detach())
    assert torch.equal(whole.features, pieces.features) or torch.allclose(whole.features, pieces.features, atol=1e-6)
    hooked_cap = capture(model, x, layer="readout", which="input")  # same layer reached through a hook
    assert hooked_cap.layer == "readout:input" and torch.allclose(hooked_cap.features, whole.features)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.zeros(len(x))), batch_size=16)
    assert torch.allclose(capture(model, loader).features, whole.features, atol=1e-6)


def test_hooks_are_removed_even_when_the_forward_pass_fails():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(5, 2))  # wrong shape: the last layer raises
    with pytest.raises(ValueError, match="'x' parameter of capture cannot be read by the 'model' parameter"):
        capture(net, torch.randn(6, 3), layer="1")
    assert all(len(m._forward_hooks) == 0 for m in net.modules())
    with pytest.raises(ValueError, match="'layer' parameter of hooked must name a submodule"):
        with hooked(net, "nope"):
            pass
    with pytest.raises(TypeError, match="must have features\\(\\) and a readout"):
        capture(net, torch.randn(6, 3))


def test_a_users_own_module_through_a_hook():
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 3))
    x = torch.randn(300, 5)
    cap = capture(net, x, layer="1")
    assert cap.features.shape == (300, 32) and cap.outputs.shape == (300, 3)
    assert 0.0 < dlr(cap.features, cap.outputs) < 1.0


def test_tracker_records_dlr_during_training():
    run = nhtlab.ModularRun(p=7, model="mlp", model_kwargs=dict(width=16), steps=20, eval_every=10, device="cpu")
    x = torch.cartesian_prod(torch.arange(7), torch.arange(7))
    y = (x[:, 0] + x[:, 1]) % 7
    tracker = DLRTracker(x, labels=y, compare={"full": ("full", None)}, spectra=True, top=5)
    history = nhtlab.run_modular(run, callbacks=[tracker], progress="none")
    assert len(tracker.spectra_list) == len(history) == 3
    for column in ["dlr", "dlr[full]", "dlr_rank", "nc1", "param_norm"]:
        values = history.column(column)
        assert np.all(np.isfinite(values)), column
    assert np.all((history.column("dlr") >= 0) & (history.column("dlr") <= 1))
    assert history.column("param_norm") == pytest.approx(history.column("norm"))
    assert 1 - history.column("dlr_f_in") * history.column("dlr_balance") == pytest.approx(history.column("dlr"), abs=1e-12)
    assert len(tracker.spectrum_records()) == 3 * 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    phi, out = realistic(gen(12))
    assert dlr(phi.cuda(), out.cuda()) == pytest.approx(dlr(phi, out), abs=1e-10)
    assert feature_spectrum(phi.cuda(), out.cuda()).utilisation[-1] == pytest.approx(1.0, abs=1e-10)


def test_monitor_dlr_is_nhtlab_dlr_of_the_readout_input_and_a_wrong_layer_differs():
    """Chapter 08's check: the monitor's DLR equals nhtlab.measures.dlr recomputed outside it; it can fail."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 5))
    probe = torch.randn(64, 6, generator=gen(9))
    monitor = nhtlab.Monitor(model, probe=(probe,), every=1)
    with torch.no_grad():
        features = model[:-1](probe)
        expected = dlr(features, model[-1](features))
    assert monitor.rows[-1]["dlr"] == pytest.approx(expected, abs=1e-12)
    wrong = nhtlab.Monitor(model, probe=(probe,), every=1, head="2")  # a hidden Linear, not the read-out
    assert abs(wrong.rows[-1]["dlr"] - expected) > 1e-3
