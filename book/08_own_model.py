# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Use it on your own model
#
# **The question:** the earlier chapters read norms, regimes and DLR off
# nhtlab's own models and loops. How do you read them off *your* model,
# trained by *your* loop? This chapter is a recipe: a small CNN that
# nhtlab has never seen, a plain PyTorch loop, and one object attached to
# it, {class}`nhtlab.training.monitor.Monitor`. After every optimiser
# step you call `monitor(step)`; every `every` steps it records
#
# - the {term}`squared weight norm <‖θ‖²>` $\|\theta\|^2$ and the norm
#   of every layer {cite}`khanh2026nht`;
# - two *head signals*: the {term}`read-out` against its own start,
#   $\|\theta_L\|^2/\|\theta_L(0)\|^2$, and against the first layer,
#   $\|\theta_L\|^2/\|\theta_1\|^2$. The NHT paper reports that the
#   read-out escapes the shortcut first, an {term}`early warning`;
# - {term}`DLR`, the label-free richness of the features on a fixed
#   probe batch {cite}`nam2026dlr`;
# - any scalar you pass it (loss, accuracies).
#
# From these it reads the {term}`regime` online
# ({func}`~nhtlab.training.monitor.online_regime`): *weak* while the norm
# is within 5% of its running peak, *intermediate* once further below it
# with the training set fitted, *strong* once fallen without a fit.
#
# One caution comes before any label. Decoupled weight decay shrinks the
# weights by a factor $(1 - \eta\lambda)$ per step, so its time scale is
# $1/(\eta\lambda)$ steps, as in the delay law. A run shorter than that
# time scale has not had the time to show where it goes: *weak* or
# *strong* stands only when the budget times $\eta\lambda$ is at least
# `DECIDED_AFTER` (one time scale, fixed before the runs); otherwise the
# run is "not decided within N steps". *Intermediate* is something the
# run did, and stands at any budget.
#
# The practical question we then answer: **which weight decay λ?**

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
# finds its layers by themselves, the read-out last. The loop is plain
# PyTorch plus the two lines marked `nhtlab:`. Accuracies (optional) let
# the regime call tell *strong* from *intermediate*; the whole training
# set's loss (not the minibatch's) lets the early warning fire. A fixed
# probe batch of held-out images (labels unused) feeds DLR. The recipe
# runs this loop, *short*, over a grid of λ, per seed.

# %%
monitors, models = {}, {}
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
        monitors[s, lam], models[s, lam] = monitor, model

# %% [markdown]
# ## Step 1: read each run's regime
#
# With noisy labels, "fitted" cannot mean 99% training accuracy: a
# perfect digit reader scores only about
# $(1 - \text{noise}) + \text{noise}/10$ on the noisy labels (a random
# label is right one time in ten); beyond that it memorises wrong
# labels, the shortcut itself. A run counts as fitted within 10% of that
# *ceiling* ({func}`nhtlab.fit_threshold`).
#
# ```{admonition} Predict before you look
# At the grid's largest λ the decay takes the largest share of the
# weights away at every step. From what the regimes mean: does that run
# reach the fit threshold within its budget, `"fits"` or
# `"does not fit"`?
# ```

# %%
your_fit_prediction = None  # "fits" or "does not fit"

# %%
fit = nhtlab.fit_threshold(cfg.noise, classes=10)
records = nb.lambda_grid_records(monitors, fit=fit, lr=cfg.lr)
recipe = nb.lambda_recipe(records, margin=cfg.beat)
readings = nb.lambda_readings(records, margin=cfg.beat)
nb.check_prediction(
    your_fit_prediction, *nb.largest_fit_answer(records, seed, fit)
)

# %% [markdown]
# Each run's regime, seed by seed ("not decided within N steps": the
# budget was shorter than one time scale $1/(\eta\lambda)$ and the run
# was weak or strong so far):

# %% tags=["remove-input"]
display(nb.table(nb.regimes_by_seed(records)))
nb.grid_evidence(records, recipe)

# %% [markdown]
# The norm curves of the first seed's grid, coloured by regime (grey,
# "too early": not decided within the budget; pick one λ in the menu to
# isolate it). The log axis shows every λ's curve; read on each whether
# the norm rose before it fell.

# %%
nb.lambda_grid(
    nb.norm_curve_records(monitors, records, seed=seed),
    title=f"‖θ‖² over the λ grid, seed {seed}",
)

# %% [markdown]
# ## Step 2: pick the smallest intermediate λ, then check it
#
# 1. Run short trainings over a λ grid spaced by factors of about 3, with
#    the monitor attached.
# 2. Discard the weak runs (norm not yet 5% below its peak), the strong
#    ones (not fitted) and those not decided within the budget.
# 3. Among the intermediate runs (fitted, the norm at least 5% below its
#    peak) take the smallest λ: the least decay that contracts the norm
#    of a network that fits, so the one that disturbs the fit least. If
#    no run is intermediate, widen the grid or lengthen the runs.
# 4. **Check** the choice on held-out data against the weakest λ ("no
#    regularisation to speak of"): it "beats" it when its test accuracy
#    is higher by more than `beat` (0.03). The recipe reads λ off the
#    norm curve alone, without test labels: it finds a good λ, not
#    necessarily the best (the table above says whether another did).

# %% tags=["remove-input"]
nb.md(
    "Checked on held-out test labels, the recipe's λ"
    f" {readings['recipe'].text()}."
)

# %% [markdown]
# ## Step 3: one run in detail
#
# Everything the monitor recorded for one run of the first seed: the
# recipe's λ, or the grid's middle when no run is intermediate (drag to
# zoom). DLR on the probe batch tracks the features without looking at a
# single label.
#
# ```{admonition} Predict before you look
# The NHT paper's early warning: the read-out turns (falls 2% below its
# running peak, the monitor's rule) *before* the total norm. The turn is
# read from the step the run fitted on (a fall before any fit is the
# initialisation settling, not an escape). On this run, which turns
# first: `"the read-out"`, `"the total norm"`, both at one record
# (`"together"`), `"neither"`, or `"not read"` (the run never fitted)?
# ```

# %%
your_first_turn_prediction = None  # "the read-out", "the total norm", …

# %%
nb.check_prediction(
    your_first_turn_prediction, *nb.first_turn_answer(recipe, seed)
)

# %%
lam_shown = recipe[0]["shown λ"]
run = monitors[seed, lam_shown]
nb.monitor_chart(run.history, title=f"your CNN, λ = {lam_shown}")

# %% tags=["remove-input"]
row = next(r for r in records if (r["seed"], r["λ"]) == (seed, lam_shown))
nb.md(
    f"{nb.contraction_sentence(row)} Over the seeds, the read-out"
    " turning before the total norm (counted, displayed, not asserted):"
    f" {readings['read-out first'].text()}."
)

# %% [markdown]
# Each layer's own norm (the monitor's history is a book `History`),
# named from the model's modules on a log axis:

# %%
nhtlab.charts.layer_norm_curves(
    run.history,
    title=f"squared norm of each layer, λ = {lam_shown}",
    names=nb.layer_words(models[seed, lam_shown]),
)

# %% [markdown]
# ## Step 4: when will it grok?
#
# `monitor.forecast` gives the best *tested* forecast of $T_\text{grok}$
# and its basis, or says why it has none, calibrated on your other runs
# (the grid's other λ). It forecasts a memorised run (training accuracy
# 0.99), which under label noise means fitting the wrong labels too.
# Whether nhtlab's own contraction-rate forecast (the ETA) could be
# trusted was tested first, on held-out seeds and on settings left out
# of calibration; the evaluation is on its own page,
# {doc}`08_evidence`.

# %%
others = {(cfg.lr, l): [monitors[seed, l].history] for l in cfg.lambdas}
del others[cfg.lr, lam_shown]  # its own run is not calibration
forecast = run.forecast(others, lr=cfg.lr, weight_decay=lam_shown)
nb.md(f"{forecast.text()}.\n\nBasis: {forecast.basis}")

# %% tags=["remove-input"]
verdicts = nb.forecast_verdicts()
nb.md(
    f"The ETA shipped in {verdicts['shipped']} of"
    f" {verdicts['evaluations']} evaluations. On settings left out of"
    " calibration the least error at half the plateau was: "
    + "; ".join(f"{m}, {o}" for m, o in verdicts["offers"].items())
    + ". `monitor.forecast` gives (b), the delay law's baseline, and its"
    " basis says where it was tested ({doc}`the evidence <08_evidence>`)."
)

# %% [markdown]
# ## A checklist of readings
#
# - **Norm shape.** Read `monitor.regime()` online and the ‖θ‖² curve;
#   after training, with test labels, `monitor.diagnose()`
#   ({func}`nhtlab.analysis.regimes.diagnose_regime`). Weak: no 5% fall
#   from the peak; intermediate: a fall and a fit (contracting, not yet
#   escaped); strong: a fall and no fit; and no label before one time
#   scale $1/(\eta\lambda)$. *Does not apply* when a learning-rate
#   schedule goes to zero (it freezes the norm), or before normalisation
#   layers (BatchNorm, LayerNorm), which make the loss blind to the
#   scale of the weights before them.
# - **Layer order.** `head_rel`, `head_ratio`,
#   `monitor.head_contracting_step`,
#   {func}`nhtlab.analysis.layers.layer_transitions`: the read-out
#   contracting first is the paper's early warning. *Does not apply* to
#   a run that never fitted, and an order read on one seed can differ on
#   another: read it on several seeds of your model.
# - **DLR.** The `dlr` column (probe batch): low, the features are what
#   the outputs need (rich); high, they carry much the read-out ignores
#   (lazy). *Depends on* which layer counts as penultimate and on the
#   rank rule; the direction it moves at grokking depends on the model.
# - **Separation score.**
#   {func}`nhtlab.analysis.separation.clean_norm_separation`: near 1 the
#   norm is a faithful clock of the escape. *Needs* a shortcut test set;
#   near 0, do not trust the delay law's numbers.
# - **Delay.** T_grok − T_mem against the law's time scale
#   ({ref}`the delay-law chapter <delay-definitions>`). *Does not apply*
#   everywhere: on CIFAR the paper itself reports that T ∝ 1/λ fails.
#
# The theory is about a network that *has* a high-norm shortcut and a
# lower-norm structured solution fitting the same training data. If your
# model generalises from the start, nothing needs tuning; if the
# structure does not fit the training set, no λ will.
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
# Cost: a recorded step sums the squares of every parameter once (with a
# probe, one forward pass and a small SVD too); steps in between cost one
# integer test (`benchmarks/bench_monitor.py` measures it).

# %% tags=["remove-input"]
# the last model trained (last seed, last λ), after its last step; it
# does not depend on scale, so it is asserted under the smoke cap too
dlr_check = nb.monitor_dlr_check(
    monitors[seeds[-1], cfg.lambdas[-1]].rows[-1],
    nhtlab.readout_dlr(model, x_probe),
    last_step=cfg.steps,
)
small, large = readings["smallest λ"], readings["largest λ"]
nb.what_we_found(
    f"At the smallest λ the norm was not 5% below its peak after the"
    f" budget in {small.k} of {small.n} seeds, a budget too short to"
    " call that weak; the largest λ was strong (never fitted) in"
    f" {large.k} of {large.n}.",
    f"The recipe's λ beat the weakest λ on held-out data in"
    f" {readings['recipe'].k} of {readings['recipe'].n} seeds.",
    "The read-out turned before the total norm on the shown run in"
    f" {readings['read-out first'].k} of {readings['read-out first'].n}"
    " seeds: read the order on your own seeds, don't assume it.",
    f"No forecast of T_grok shipped ({verdicts['shipped']} of"
    f" {verdicts['evaluations']} evaluations): `monitor.forecast` gives"
    " the delay law's baseline, with its basis.",
    "The monitor's DLR equals DLR recomputed without it on the last"
    f" model, to 1e-9: {'yes' if dlr_check else 'no'}.",
)

# %% [markdown]
# ## Try it: ‖θ‖² per layer from `named_parameters`
#
# The monitor's first reading is the squared norm of each layer: the sum
# of the squares of the parameters a module owns (its weight and bias).
# Write it for any model: a dict from the layer's name (the parameter's
# name without its last part, `"0.weight"` → `"0"`) to
# $\|\theta_\ell\|^2$.
# The checker compares yours with {func}`nhtlab.layer_norms` on the
# chapter's shown model.
#
# ````{dropdown} Solution
# ```python
# def layer_sq_norms(model):
#     out = {}
#     for name, p in model.named_parameters():
#         layer = name.rpartition(".")[0]
#         sq = p.detach().double().pow(2).sum().item()
#         out[layer] = out.get(layer, 0.0) + sq
#     return out
# ```
# ````


# %%
def layer_sq_norms(model):
    raise NotImplementedError  # your code here: a few lines


nb.check_function(
    layer_sq_norms,
    nhtlab.layer_norms,
    cases=[(models[seed, lam_shown],)],
    name="layer_sq_norms",
)

# %% [markdown]
# ## Checks
#
# Asserted on this chapter's runs, each in a majority of the seeds: the
# smallest λ's norm has not contracted 5% within its budget; the largest
# λ is strong (never fits, with a budget of at least one time scale); the
# recipe's intermediate λ beats the weakest λ's test accuracy by more
# than 0.03. And the monitor's DLR, recomputed without hooks
# ({func}`nhtlab.measures.predictions.readout_dlr`) on the same probe,
# agrees to 1e-9: it fails if the monitor hooked the wrong layer or read
# a stale model. The read-out-first reading is shown, not asserted.

# %%
checks = nb.lambda_checks(readings)
assert dlr_check, dlr_check.detail
checks.append(dlr_check)
shown = [readings["read-out first"]]
nb.closing_checks(checks, cfg, shown=shown)
