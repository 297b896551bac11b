# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Use it on your own model
#
# The earlier chapters trained nhtlab's own models with nhtlab's own loop.
# Your model is different, and so is your training loop. This chapter
# shows the readings of the book on a model nhtlab has never seen, trained
# by a plain PyTorch loop of the kind you already write, with one small
# object attached to it: {class}`nhtlab.training.monitor.Monitor`.
#
# After every optimiser step you call `monitor(step)`. Every `every` steps
# it records
#
# - the squared weight norm $\|\theta\|^2$ and the norm of every layer
#   {cite}`khanh2026nht`;
# - two *head signals*: the read-out layer against its own start,
#   $\|\theta_L\|^2/\|\theta_L(0)\|^2$, and against the first layer,
#   $\|\theta_L\|^2/\|\theta_1\|^2$. The NHT paper finds that the read-out
#   escapes the shortcut first, so its contraction is an earlier warning
#   than the total norm;
# - DLR, the label-free dynamical richness of the features on a fixed
#   probe batch {cite}`nam2026dlr` (no labels needed, so it works on
#   unlabelled production data too);
# - any scalar you pass it (loss, accuracies);
#
# and it diagnoses the regime online: *weak* (the norm keeps growing:
# nothing pulls the model off a high-norm shortcut), *intermediate* (the
# norm peaks, then weight decay contracts it: the setting in which the
# network trades its shortcut for structure), *strong* (the norm contracts
# but the model cannot even fit its training set).
#
# Then we use it for the most practical question of all: **which weight
# decay λ?**

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.2.4"
    print(
        'Launch note: profile = "full" takes tens of minutes on a Colab'
        " T4 GPU (an estimate, not yet measured).\n"
        "To run it: Runtime > Change runtime type > T4 GPU, "
        'set profile = "full" in the next cell, run all.'
    )

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see How to run
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`How to run <profiles>`.

# %%
import torch
import torch.nn as nn
import torch.nn.functional as F

import nhtlab
from nhtlab import charts
from nhtlab.data.images import digits

# %% tags=["hide-input"]
PROFILES = {
    # 8 × 8 digits, a small CNN, a λ grid of short minibatch runs.
    "quick": dict(
        size=8,
        noise=0.3,
        lambdas=[0.01, 0.3, 1.5, 10.0],
        steps=1000,
        batch=64,
        lr=3e-3,
        every=50,
        probe=256,
    ),
    "book": dict(
        size=8,
        noise=0.3,
        lambdas=[0.01, 0.1, 0.3, 1.0, 1.5, 2.0, 3.0, 10.0],
        steps=1500,
        batch=64,
        lr=3e-3,
        every=25,
        probe=256,
    ),
    # On a GPU: larger images, a finer grid and longer runs.
    "full": dict(
        size=16,
        noise=0.3,
        lambdas=[
            0.01,
            0.03,
            0.1,
            0.3,
            0.5,
            1.0,
            1.5,
            2.0,
            3.0,
            5.0,
            10.0,
        ],
        steps=5000,
        batch=128,
        lr=3e-3,
        every=50,
        probe=512,
    ),
}
cfg = nhtlab.select_profile(PROFILES, profile)
torch.set_num_threads(1)  # small models train fastest on one thread
# the GPU when there is one; model, data and probe all live there
device = nhtlab.pick_device()
nhtlab.stamp(profile, cfg)
print(f"training on {device}")

# %% [markdown]
# ## Your data, with a shortcut in it
#
# Handwritten digits (scikit-learn's offline set, here as small RGB
# images). To give the network something to memorise, a fraction `noise`
# of the *training* labels is replaced by random labels — a common
# real-world situation (annotation errors). A network can fit those labels
# only by memorising them one by one, which costs weight norm: that is the
# high-norm shortcut. The rule "read the digit" fits the clean majority
# with small weights: the structure. The test labels are clean.

# %%
data = digits(size=cfg.size, seed=seed).to(device)
noise_gen = torch.Generator().manual_seed(seed)
flip = (
    torch.rand(len(data.y_train), generator=noise_gen) < cfg.noise
).to(device)
y_train = torch.where(
    flip,
    torch.randint(0, 10, data.y_train.shape, generator=noise_gen).to(
        device
    ),
    data.y_train,
)
print(
    f"{len(y_train)} training images,"
    f" {int((y_train != data.y_train).sum())} with a wrong label;"
    f" {len(data.y_test)} test images"
)

# A fixed probe batch for DLR: held-out images, no labels used.
x_probe = data.x_test[: cfg.probe]

# %% [markdown]
# ## Your model and your loop
#
# A small CNN written as an `nn.Sequential` — nothing nhtlab knows about.
# The monitor finds its layers by name (`"0"`, `"3"`, `"7"`, `"9"`: the
# modules that own parameters); the read-out is the last one. The loop is
# plain PyTorch; the only additions are the `Monitor(...)` line and the
# `monitor(step, ...)` call after `optimizer.step()`. Accuracies are
# optional; we pass them so that the regime call can tell *strong* from
# *intermediate*.
#
# The λ-tuning recipe is to run exactly this loop, *short*, over a grid of
# λ.

# %%
monitors = {}
for lam in cfg.lambdas:
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * (cfg.size // 4) ** 2, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=lam
    )
    # nhtlab: attach a monitor to the model
    monitor = nhtlab.Monitor(model, probe=(x_probe,), every=cfg.every)
    batches = torch.Generator().manual_seed(seed)
    for step in range(1, cfg.steps + 1):
        idx = torch.randint(
            0, len(y_train), (cfg.batch,), generator=batches
        ).to(device)
        loss = F.cross_entropy(model(data.x_train[idx]), y_train[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % cfg.every == 0:
            with torch.no_grad():
                train_acc = (
                    (model(data.x_train).argmax(1) == y_train)
                    .float()
                    .mean()
                    .item()
                )
                test_acc = (
                    (model(data.x_test).argmax(1) == data.y_test)
                    .float()
                    .mean()
                    .item()
                )
            # nhtlab: record this step
            monitor(
                step,
                loss=loss.item(),
                train_acc=train_acc,
                test_acc=test_acc,
            )
    monitors[lam] = monitor

# %% [markdown]
# ## Reading the grid
#
# With noisy labels, "fitted" cannot mean 99% training accuracy: a perfect
# reader of digits scores only about
# $(1 - \text{noise}) + \text{noise}/10$ on the noisy labels (a random
# label is right one time in ten), and going beyond that means memorising
# wrong labels — the shortcut itself. We count a run as fitted when it
# comes within 10% of that ceiling. With that threshold, each run's
# regime, its norm peak, how much the norm contracted after it, when the
# read-out started contracting, its DLR and its accuracies:

# %%
fit = 0.9 * ((1 - cfg.noise) + cfg.noise / 10)
table = [
    {
        "λ": lam,
        **m.summary(fit=fit),
        "train acc": round(m.rows[-1]["train_acc"], 3),
        "test acc": round(m.rows[-1]["test_acc"], 3),
    }
    for lam, m in monitors.items()
]
table

# %% [markdown]
# The norm curves of the grid, coloured by the diagnosed regime (pick one
# λ in the menu to isolate it). Small λ: the norm climbs without end while
# the network memorises wrong labels. Large λ: the norm is crushed and the
# network cannot fit even the clean labels. In between, the norm rises,
# peaks and contracts.

# %%
charts.lambda_grid(
    [
        {
            "step": r["step"],
            "lambda": lam,
            "regime": row["regime"],
            "norm": r["norm"],
        }
        for (lam, m), row in zip(monitors.items(), table)
        for r in m.rows
    ]
)

# %% [markdown]
# ## The recipe: pick where the norm peaks then decays, then check
#
# 1. Run short trainings over a λ grid spaced by factors of about 3, with
#    the monitor attached.
# 2. Discard the weak runs (norm still rising) and the strong ones (not
#    fitted).
# 3. Among the intermediate runs — the norm peaked, then contracted — take
#    the smallest λ: it escapes the shortcut while disturbing the fit
#    least. If no run is intermediate, widen the grid or lengthen the
#    runs.
# 4. **Check** the choice on held-out data: here against the weakest λ,
#    which stands for "no regularisation to speak of".

# %%
intermediate = [
    lam
    for lam, row in zip(monitors, table)
    if row["regime"] == "intermediate"
]
chosen = min(intermediate) if intermediate else None
weakest = min(monitors)
print(f"intermediate λ: {intermediate}; chosen λ = {chosen}")
# none intermediate: the middle λ
shown = (
    chosen if chosen is not None else sorted(monitors)[len(monitors) // 2]
)
if chosen is not None:
    print(
        f"test accuracy: λ = {chosen}:"
        f" {monitors[chosen].rows[-1]['test_acc']:.3f}   λ = {weakest}:"
        f" {monitors[weakest].rows[-1]['test_acc']:.3f}   best over the"
        f" grid: {max(row['test acc'] for row in table):.3f}"
    )

# %% [markdown]
# Step 4 matters: the recipe chooses λ from the norm curve alone, without
# test labels; the check says how much it left on the table against the
# best test accuracy of the whole grid (printed above). Runs just below
# the chosen λ whose norm barely turned can score as well: the recipe
# finds a good λ, not the only one.
#
# ## One run in detail
#
# Everything the monitor recorded for the chosen λ. Drag to zoom. Read the
# head signals against the total norm: the paper reports that the read-out
# turns *before* the total norm, which would make it an early warning.
# Whether it does here is printed below — on this small CNN, with its
# quick initial norm bump, it need not. DLR on the probe batch tracks the
# features without looking at a single label.

# %%
chosen_monitor = monitors[shown]
chosen_summary = chosen_monitor.summary(fit=fit)
print(
    f"total norm peaked at step {chosen_summary['norm peak step']};"
    " read-out contracting from step"
    f" {chosen_summary['head contracting from step']}"
)
print(chosen_monitor.warnings)
charts.monitor_readings(
    chosen_monitor.history, title=f"your CNN, λ = {shown}"
)

# %% [markdown]
# The per-layer norms, each layer's own curve (the monitor's history is an
# nhtlab `History`, so the book's charts work on it):

# %%
charts.layer_norm_curves(
    chosen_monitor.history,
    title=f"squared norm of each layer, λ = {shown}",
)

# %% [markdown]
# ## A checklist of readings
#
# ```{list-table}
# :header-rows: 1
#
# * - reading
#   - what to look at
#   - what it means
#   - when the theory does not apply
# * - **norm shape**
#   - `monitor.regime()` (online, norm curve only), the ‖θ‖² curve; after
#     training, with test labels, `monitor.diagnose()`
#     ({func}`nhtlab.analysis.regimes.diagnose_regime`)
#   - rising without end: weak (shortcut kept); peak then decay:
#     intermediate (the escape is under way); decay and no fit: strong
#   - learning-rate schedules that go to zero freeze the norm;
#     normalisation layers (BatchNorm, LayerNorm) make the loss blind to
#     the scale of the weights before them, so their norm moves for
#     reasons unrelated to the shortcut
# * - **layer order**
#   - `head_rel`, `head_ratio`, `monitor.head_contracting_step`,
#     {func}`nhtlab.analysis.layers.layer_transitions`
#   - the read-out contracting first (a "backward" transition) is the
#     paper's early warning
#   - at CPU scale on images the book has never seen it: the first
#     convolution contracted first, or the read-out not at all, and which
#     of the two changed with the CPU's float rounding; read the order,
#     don't assume it
# * - **DLR**
#   - the `dlr` column (probe batch)
#   - low: features are what the outputs need (rich); high: features carry
#     much the read-out ignores (lazy)
#   - DLR depends on which layer counts as "penultimate" and on the rank
#     rule (see the DLR chapter); on the embedding MLP it *rises* at
#     grokking (its read-out ignores additive hidden energy), on the
#     companion transformer it falls between $T_\text{mem}$ and
#     $T_\text{grok}$
# * - **separation score**
#   - {func}`nhtlab.analysis.separation.clean_norm_separation`
#   - how sharply reliance on the shortcut tracks ‖θ‖²: near 1 means the
#     norm is a faithful clock of the escape
#   - needs a way to measure shortcut reliance (a shortcut test set); near
#     0 the delay law's numbers should not be trusted
# * - **delay**
#   - T_grok − T_mem against log(V_sc/V_st)/(ηλ)
#   - the law gives a time *scale*, γ_eff ≥ ηλ for AdamW
#   - on CIFAR the paper itself finds T ∝ 1/λ fails; on our MLP the law
#     underestimates the delay (see the emergence chapter)
# ```
#
# The theory is about a network that *has* a high-norm shortcut and a
# lower-norm structured solution that fit the same training data. If your
# model generalises from the start (no shortcut), every λ looks
# "intermediate" or "weak" and nothing needs tuning; if the "structure"
# does not fit the training set (label noise larger than the signal), no λ
# will find it.
#
# ## In Lightning, or any other trainer
#
# nhtlab does not depend on Lightning; the adapter is five lines:
#
# ```python
# class NHTCallback(lightning.pytorch.Callback):
#     def __init__(self, monitor):
#         self.monitor = monitor
#     def on_train_batch_end(self, trainer, *args):
#         self.monitor(trainer.global_step)
# ```
#
# What does it cost? A recorded step sums the squares of every parameter
# once (and, with a probe, runs one forward pass on it and a small SVD);
# the steps in between cost one integer test.
# `benchmarks/bench_monitor.py` measures the overhead against the bare
# loop side by side; on the development CPU (one thread, the embedding MLP
# of the first chapter, ~3 ms per step) a record cost 0.1 ms, i.e. +0.3%
# per step at `every=10`, and 3.3 ms with DLR on a 256-image probe, i.e.
# +11% at `every=10` and +1% at `every=100`. Record DLR less often than
# the norms if that matters to you.
#
# ## Checks
#
# Asserted on this chapter's own runs: the smallest λ is weak (its norm
# still rising at the end); the largest is strong (it never fits); at
# least one λ in between is intermediate; the recipe's λ generalises
# better than the weakest one; and the monitor's DLR is the DLR of the
# model's read-out input: recomputed here outside the monitor (features =
# everything before the last layer, outputs = the last layer) with
# {func}`nhtlab.measures.dlr.dlr` on the same probe, it must agree to
# 1e-9. That fails if the monitor hooked the wrong layer or read a stale
# model.

# %%
regimes = {lam: row["regime"] for lam, row in zip(monitors, table)}
# skipped, with a notice, in a capped smoke run
if nhtlab.science_checks(cfg):
    assert regimes[min(monitors)] == "weak", regimes
    assert regimes[max(monitors)] == "strong", regimes
    assert chosen is not None, f"no intermediate λ in the grid: {regimes}"
    assert min(monitors) < chosen < max(monitors), (chosen, regimes)
    chosen_test, weak_test = (
        monitors[chosen].rows[-1]["test_acc"],
        monitors[weakest].rows[-1]["test_acc"],
    )
    assert chosen_test > weak_test + 0.03, (
        f"the recipe's λ = {chosen} did not beat λ = {weakest}:"
        f" {chosen_test:.3f} vs {weak_test:.3f}"
    )
    print(
        f"regimes {regimes}; chosen λ = {chosen}: test {chosen_test:.3f}"
        f" vs"
        f" {weak_test:.3f} at λ = {weakest}"
    )
# The monitor's DLR is nhtlab.dlr of the read-out input: true of any run,
# capped or not.
with torch.no_grad():
    # the last λ's model, after its last recorded step
    probe_features = model[:-1](x_probe).flatten(1)
    probe_dlr = nhtlab.dlr(
        probe_features.cpu(), model[-1](probe_features).cpu()
    )
monitor_dlr = monitors[cfg.lambdas[-1]].rows[-1]["dlr"]
assert monitors[cfg.lambdas[-1]].rows[-1]["step"] == cfg.steps, (
    "the last record should be the last step"
)
assert abs(monitor_dlr - probe_dlr) < 1e-9, (
    f"monitor DLR {monitor_dlr} vs nhtlab.dlr {probe_dlr}"
)
print(
    f"DLR on the probe, λ = {cfg.lambdas[-1]}: monitor {monitor_dlr:.6f},"
    f" nhtlab.dlr {probe_dlr:.6f}"
)
