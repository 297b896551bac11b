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
# This chapter shows the book's readings on a model nhtlab has never seen,
# trained by a plain PyTorch loop of the kind you already write, with one
# small object attached: {class}`nhtlab.training.monitor.Monitor`. After
# every optimiser step you call `monitor(step)`; every `every` steps it
# records
#
# - the {term}`squared weight norm <‖θ‖²>` $\|\theta\|^2$ and the norm
#   of every layer {cite}`khanh2026nht`;
# - two *head signals*: the {term}`read-out` layer against its own start,
#   $\|\theta_L\|^2/\|\theta_L(0)\|^2$, and against the first layer,
#   $\|\theta_L\|^2/\|\theta_1\|^2$. The NHT paper reports that the
#   read-out escapes the shortcut first, which would make its contraction
#   an {term}`early warning` ahead of the total norm's; this chapter
#   counts over seeds whether it does here;
# - {term}`DLR`, the label-free dynamical richness of the features on a
#   fixed probe batch {cite}`nam2026dlr` (it works on unlabelled data);
# - any scalar you pass it (loss, accuracies);
#
# and it diagnoses the {term}`regime` online
# ({func}`~nhtlab.training.monitor.online_regime`, from the norm and the
# training accuracy so far): *weak* while the norm is within 5% of its
# running peak, *intermediate* once further below it with the training
# set fitted, *strong* once fallen without a fit. Chapter 02's
# {ref}`diagnose_regime <regime-rule>` reads the whole run with test
# accuracy (`monitor.diagnose()` applies it once the run is over); a
# monitor cannot wait, so its *intermediate* means "contracting while
# fitted", not yet "escaped".
#
# Then we use it for the most practical question of all: **which weight
# decay λ?**

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

# Colab: True keeps results and checkpoints on Google Drive
KEEP_ON_DRIVE = False

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@main"
    import nhtlab
    from nhtlab import book as nb

    nb.colab_launch("08_own_model", keep=KEEP_ON_DRIVE)

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see Run a chapter
seed = 0  # the first seed; a profile runs `seeds` seeds from it

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`Run a chapter <profiles>`.

# %%
import torch
import torch.nn as nn
import torch.nn.functional as F

import nhtlab
from nhtlab import book as nb

# %% tags=["hide-input"]
PROFILES = {
    # 8 × 8 digits, a small CNN, a λ grid of short minibatch runs; `beat`:
    # the test-accuracy gain over the weakest λ that counts as beating it.
    "quick": dict(
        size=8,
        noise=0.3,
        lambdas=[0.01, 0.3, 1.5, 10.0],
        seeds=1,
        steps=1000,
        batch=64,
        lr=3e-3,
        every=50,
        probe=256,
        beat=0.03,
    ),
    # three seeds: every reading the text states is counted over them
    "book": dict(
        size=8,
        noise=0.3,
        lambdas=[0.01, 0.1, 0.3, 1.0, 1.5, 2.0, 3.0, 10.0],
        seeds=3,
        steps=1500,
        batch=64,
        lr=3e-3,
        every=25,
        probe=256,
        beat=0.03,
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
        seeds=3,
        steps=5000,
        batch=128,
        lr=3e-3,
        every=50,
        probe=512,
        beat=0.03,
    ),
}
cfg = nb.select_profile(PROFILES, profile)
seeds = list(range(seed, seed + cfg.seeds))
torch.set_num_threads(1)  # small models train fastest on one thread
# the GPU when there is one; model, data and probe all live there
device = nhtlab.pick_device()
nb.stamp(profile, cfg)
print(f"training on {device}")

# %% [markdown]
# ## Your data, with a shortcut in it
#
# Handwritten digits (scikit-learn's offline set, as small RGB images).
# To give the network something to memorise, a fraction `noise` of the
# *training* labels is replaced by random labels
# ({func}`nhtlab.data.noise.noisy_labels`), as annotation errors do. A
# network fits those only by memorising them one by one, which costs
# weight norm: the high-norm shortcut. "Read the digit" fits the clean
# majority with small weights: the structure. The test labels are clean;
# each seed draws its own split and noise.

# %%
datasets = {}
for s in seeds:
    data = nhtlab.digits(size=cfg.size, seed=s).to(device)
    y_noisy, _ = nhtlab.noisy_labels(
        data.y_train, cfg.noise, classes=10, seed=s
    )
    datasets[s] = (data, y_noisy)

# %% tags=["remove-input"]
data, y_noisy = datasets[seed]
nb.md(
    f"Seed {seed}: {len(y_noisy):,} training images,"
    f" {int((y_noisy != data.y_train).sum()):,} with a wrong label;"
    f" {len(data.y_test):,} test images."
)

# %% [markdown]
# ## Your model and your loop
#
# A small CNN, an `nn.Sequential` nhtlab knows nothing about; the monitor
# finds its layers by name (`"0"`, `"3"`, `"7"`, `"9"`), the read-out
# last. The loop is plain PyTorch plus `Monitor(...)` and
# `monitor(step, ...)` after `optimizer.step()`. Accuracies (optional)
# let the regime call tell *strong* from *intermediate*; the whole
# training set's loss (not the minibatch's) lets the early warning fire.
# A fixed probe batch of held-out images (labels unused) feeds DLR. The
# λ-tuning recipe runs this loop, *short*, over a grid of λ, per seed.
#
# ```{admonition} Predict before the runs
# The recipe (below) takes the smallest λ whose run is *intermediate*.
# (1) In the first seed, is that the grid's `"the smallest"`,
# `"one in between"`, `"the largest"` or `"none"`? (2) On the run shown in
# detail (that λ, else the grid's middle), which contracts first:
# `"the read-out"`, `"the total norm"`, both at one record (`"together"`)
# or `"neither"`?
# ```

# %%
your_recipe_prediction = None  # "the smallest", "one in between", …
your_first_turn_prediction = None  # "the read-out", "the total norm", …

# %%
monitors = {}
for s in seeds:
    data, y_train = datasets[s]
    x_probe = data.x_test[: cfg.probe]
    for lam in cfg.lambdas:
        torch.manual_seed(s)
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
        batches = torch.Generator().manual_seed(s)
        for step in range(1, cfg.steps + 1):
            idx = torch.randint(
                0, len(y_train), (cfg.batch,), generator=batches
            ).to(device)
            loss = F.cross_entropy(model(data.x_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % cfg.every == 0:
                # nhtlab: record this step
                train_loss, train_acc = nhtlab.loss_and_accuracy(
                    model, data.x_train, y_train
                )
                monitor(
                    step,
                    train_loss=train_loss,
                    train_acc=train_acc,
                    test_acc=nhtlab.accuracy(
                        model, data.x_test, data.y_test
                    ),
                )
        monitors[s, lam] = monitor

# %% [markdown]
# ## Reading the grid
#
# With noisy labels, "fitted" cannot mean 99% training accuracy: a perfect
# digit reader scores only about $(1 - \text{noise}) + \text{noise}/10$
# on the noisy labels (a random label is right one time in ten); beyond
# that it memorises wrong labels, the shortcut itself. A run counts as
# fitted within 10% of that *ceiling*
# ({func}`nhtlab.book.tuning_report.fit_threshold`). Each run's regime:

# %%
fit = nb.fit_threshold(cfg.noise, classes=10)
records = nb.lambda_grid_records(monitors, fit=fit)
recipe = nb.lambda_recipe(records, margin=cfg.beat)
readings = nb.lambda_readings(records, margin=cfg.beat)

# %% tags=["remove-input"]
nb.table(nb.regimes_by_seed(records))

# %% [markdown]
# and, for every run, its norm peak, the norm's contraction after it, when
# the read-out started contracting, its final DLR and accuracies:

# %% tags=["remove-input"]
nb.table(
    records,
    columns=[
        "seed",
        "λ",
        "regime",
        "norm peak",
        "norm peak step",
        "norm contraction",
        "head contracting from step",
        "dlr",
        "train acc",
        "test acc",
    ],
    formats={
        "norm peak": "{:,.1f}",
        "norm peak step": "{:,}",
        "norm contraction": "{:.1%}",
        "head contracting from step": "{:,}",
        "dlr": "{:.3f}",
        "train acc": "{:.3f}",
        "test acc": "{:.3f}",
    },
)

# %% [markdown]
# The norm curves of the first seed's grid, coloured by the online rule's
# regime (pick one λ in the menu to isolate it); a peak at step 0 counts,
# so read on each curve whether the norm rose before it fell. The checks
# assert that the smallest λ is weak and the largest strong in most seeds.

# %%
nhtlab.charts.lambda_grid(
    nb.norm_curve_records(monitors, records, seed=seed),
    title=f"‖θ‖² over the λ grid, seed {seed}",
)

# %% [markdown]
# ## The recipe: pick the smallest intermediate λ, then check
#
# 1. Run short trainings over a λ grid spaced by factors of about 3, with
#    the monitor attached.
# 2. Discard the weak runs (norm not yet 5% below its peak) and the
#    strong ones (not fitted).
# 3. Among the intermediate runs — fitted, the norm at least 5% below its
#    peak — take the smallest λ: the least decay that contracts the norm
#    of a network that fits, so the one that disturbs the fit least. If
#    no run is intermediate, widen the grid or lengthen the runs.
# 4. **Check** the choice on held-out data, here against the weakest λ
#    ("no regularisation to speak of"): it "beats" it when its test
#    accuracy is higher by more than `beat` (0.03). The recipe reads λ off
#    the norm curve alone, without test labels: it finds a good λ, not
#    necessarily the best (the "best λ" column says whether another did).
#
# The recipe in each seed, with the best test accuracy of the whole grid
# beside it:

# %% tags=["remove-input"]
acc = ("test acc", "weakest test acc", "best test acc")
display(
    nb.table(
        recipe,
        columns=[
            "seed",
            "chosen λ",
            "test acc",
            "weakest λ",
            "weakest test acc",
            "best λ",
            "best test acc",
            "verdict",
        ],
        formats={c: "{:.3f}" for c in acc},
    )
)
nb.md(f"The recipe's λ: {readings['recipe'].text()}.")

# %%
nb.check_prediction(
    your_recipe_prediction, *nb.recipe_answer(records, seed)
)

# %% [markdown]
# ## One run in detail
#
# Everything the monitor recorded for one run of the first seed: the
# recipe's λ, or the grid's middle when no run is intermediate (drag to
# zoom). The paper reports that the read-out turns (falls 2% below its
# running peak, the monitor's rule) *before* the total norm: counted
# below over the seeds, displayed, not asserted. DLR on the probe batch
# tracks the features without looking at a single label.

# %% tags=["remove-input"]
display(
    nb.table(
        recipe,
        columns=[
            "seed",
            "shown λ",
            "norm contracting from step",
            "head contracting from step",
            "head",
        ],
        formats={
            "norm contracting from step": "{:,}",
            "head contracting from step": "{:,}",
        },
    )
)
nb.md(
    "The paper's early warning, the read-out contracting before the total"
    f" norm: {readings['read-out first'].text()}."
)

# %%
nb.check_prediction(
    your_first_turn_prediction, *nb.first_turn_answer(recipe, seed)
)

# %%
shown = recipe[0]["shown λ"]
nhtlab.charts.monitor_readings(
    monitors[seed, shown].history, title=f"your CNN, λ = {shown}"
)

# %% [markdown]
# Each layer's own norm curve (the monitor's history is a book `History`):

# %%
nhtlab.charts.layer_norm_curves(
    monitors[seed, shown].history,
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
#   - `monitor.regime()` (online), the ‖θ‖² curve; after training, with
#     test labels, `monitor.diagnose()`
#     ({func}`nhtlab.analysis.regimes.diagnose_regime`)
#   - online: weak if no 5% fall from the peak; intermediate if a fall
#     and a fit (contracting, not yet escaped: chapter 02's rule says if
#     it escaped); strong if a fall and no fit
#   - learning-rate schedules that go to zero freeze the norm;
#     normalisation layers (BatchNorm, LayerNorm) make the loss blind to
#     the scale of the weights before them, so their norm moves for
#     reasons unrelated to the shortcut
# * - **layer order**
#   - `head_rel`, `head_ratio`, `monitor.head_contracting_step`,
#     {func}`nhtlab.analysis.layers.layer_transitions`
#   - the read-out contracting first (a "backward" transition) is the
#     paper's early warning
#   - an order read on one seed can differ in another seed: the
#     layerwise chapter and this one count it over seeds, and the
#     {doc}`findings` page sets their counts side by side; read it on
#     several seeds of your model, don't assume it
# * - **DLR**
#   - the `dlr` column (probe batch)
#   - low: features are what the outputs need (rich); high: features carry
#     much the read-out ignores (lazy)
#   - DLR depends on which layer counts as "penultimate" and on the rank
#     rule; the DLR chapter reads which way it moves at grokking on the
#     embedding MLP and on the companion transformer, and the direction
#     depends on the model: read it on yours
# * - **{term}`separation score`**
#   - {func}`nhtlab.analysis.separation.clean_norm_separation`
#   - how sharply reliance on the shortcut tracks ‖θ‖²: near 1 means the
#     norm is a faithful clock of the escape
#   - needs a way to measure shortcut reliance (a shortcut test set); near
#     0 the delay law's numbers should not be trusted
# * - **delay**
#   - T_grok − T_mem against the law's time scale, the `grok` definition
#     of {ref}`the delay-law chapter <delay-definitions>`
#   - the paper's law gives a time *scale*, γ_eff ≥ ηλ for AdamW
#   - on CIFAR the paper itself reports that T ∝ 1/λ fails; the delay-law
#     and emergence chapters test the law on the book's runs
# ```
#
# The theory is about a network that *has* a high-norm shortcut and a
# lower-norm structured solution fitting the same training data. If your
# model generalises from the start (no shortcut), every λ looks
# "intermediate" or "weak" and nothing needs tuning; if the "structure"
# does not fit the training set (label noise above the signal), no λ will.
#
# ## When will it grok? A forecast, tested before it ships
#
# {func}`nhtlab.predict_grok` forecasts T_grok of a memorised run from
# how fast ‖θ‖² has contracted since. It ships only if it beats the free
# forecasts and its interval covers as often as it claims. The first test
# (`scripts/evaluate_eta_seeds.py`, Table 3's seeds 0–4 to fit, 5–9 to
# forecast, λ = 0.01 as runs that never grok) also scored the early
# warnings; the Monitor warns by the best.

# %% tags=["remove-input"]
nb.eta_report("full")

# %% [markdown]
# A user never has runs at their own setting, though. So the second test
# (`scripts/evaluate_eta.py`, designed before its runs) forecasts each of
# Table 3's λ from the other three and settings in no calibration (λ
# between the grid's, another η), at a quarter, half and three quarters of
# each plateau, against (a) T_mem plus the nearest calibrated setting's
# mean delay, (b) the same scaled by (ηλ)_near/(ηλ), the delay law's own
# forecast, and (c) the companion's 1/λ fit. The ETA is the geometric mean
# of the contraction-rate forecast and the pooled law. The *loss rise*,
# fixed after these runs existed and the other methods' results were
# read, before its own were, is the step at which the Monitor's warning
# fired plus the calibration runs' median lead, scaled by 1/(ηλ); (b)
# until it fires. Intervals are conformal per cut, on calibration runs.
# A method ships if it beats every baseline at half the plateau with
# coverage within ten points at every cut. The same design runs on the
# MLP on Z_47 (full batch, minibatches), calibrated on its own runs, with
# the Monitor's warning and regime.

# %% tags=["remove-input"]
models = ("book", "mlp_full_batch", "mlp_minibatch")
nb.md("\n\n".join(nb.eta_report(m, off_grid=True) for m in models))

# %% [markdown]
# `monitor.forecast` gives the best tested forecast and its basis, or why
# not, calibrated on your other runs (the grid's other λ). It forecasts a
# memorised run (training accuracy 0.99, the calibration's T_mem), which
# here means fitting the wrong labels too: a run near the ceiling has not.

# %%
others = {(cfg.lr, l): [monitors[seed, l].history] for l in cfg.lambdas}
del others[cfg.lr, shown]  # its own run is not calibration
run = monitors[seed, shown]
forecast = run.forecast(others, lr=cfg.lr, weight_decay=shown)
nb.md(f"{forecast.text()}.\n\nBasis: {forecast.basis}")

# %% [markdown]
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
# Cost: a recorded step sums the squares of every parameter once (with a
# probe, one forward pass and a small SVD too: record DLR less often if
# that matters); steps in between cost one integer test
# (`benchmarks/bench_monitor.py` measures it on your machine).
#
# ## Checks
#
# Asserted on this chapter's runs, each in a majority of the seeds: the
# smallest λ is weak (norm still rising at the end); the largest is strong
# (never fits); the recipe's intermediate λ beats the weakest λ's test
# accuracy by more than 0.03. And the monitor's DLR, recomputed without
# hooks ({func}`nhtlab.measures.predictions.readout_dlr`) on the same
# probe, agrees to 1e-9: it fails if the monitor hooked the wrong layer
# or read a stale model. The read-out-first reading is not asserted.

# %%
# asserted on a real run; the read-out-first reading shown
checks = nb.lambda_checks(readings)
# the last model trained (last seed, last λ), after its last step; it
# does not depend on scale, so it is asserted under the smoke cap too
dlr_check = nb.monitor_dlr_check(
    monitors[seeds[-1], cfg.lambdas[-1]].rows[-1],
    nhtlab.readout_dlr(model, x_probe),
    last_step=cfg.steps,
)
assert dlr_check, dlr_check.detail
checks.append(dlr_check)
shown = [readings["read-out first"]]
nb.closing_checks(checks, cfg, shown=shown)
