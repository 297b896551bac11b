# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Layerwise backward transitions
#
# The total norm $\|\theta\|^2$ is a sum over layers, and the layers need not move together.
# The NHT paper {cite}`khanh2026nht` follows every layer's own squared norm $\|\theta_\ell\|^2$,
# each divided by its own maximum over the run, on CIFAR-10 images whose class is also written
# in a coloured border. Under intermediate weight decay it reports a **backward** transition:
# the read-out layer (`fc`) peaks first (near epoch 60 of 200) and has contracted 45% by the
# end, while the first convolution peaks later and contracts less (31%). The head leaves the
# shortcut first; the input layers follow. The total norm can even still be rising while the
# head shrinks, so the paper suggests two early-warning signals read off the head:
# $\|\theta_L\|^2/\|\theta_L(0)\|^2$ and $\|\theta_L\|^2/\|\theta_1\|^2$.
#
# This chapter trains the same kind of network (six convolutions and a linear read-out, no
# normalisation) on coloured-border images at several weight decays λ and reads the order in
# which its layers peak. It runs on the handwritten digits that ship with scikit-learn, so it
# needs no download; the `full` profile switches to CIFAR-10 and the paper's 288k-parameter
# network for a GPU.

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.1.0"
    print('Launch note: profile = "full" takes one to two hours on a Colab T4 GPU (an estimate, not yet measured).\n'
          'To run it: Runtime > Change runtime type > T4 GPU, set profile = "full" in the next cell, run all.')

# %% tags=["parameters"]
profile = "book"  # "quick" (tests, < 1 min on CPU), "book" (rendered book), "full" (GPU, paper scale)
seed = 0

# %% [markdown]
# ```{note} Profiles and run time
# `profile` picks the scale: `"quick"` (under a minute on a CPU; the tests run it), `"book"`
# (what this page shows, a few minutes on a 2-core CPU) and `"full"`, CIFAR-10 with class-coloured borders and the paper's SimpleCNN, 200 epochs: expect one to two hours on a Colab T4.
# CIFAR-10 is downloaded only in `full` (through torchvision, opt-in); the other profiles use the digits that ship with scikit-learn.
# These GPU times are estimates, not yet measured. In Colab, choose *Runtime → Change runtime type → GPU*,
# set `profile = "full"` in the cell above and run all; nhtlab trains on the GPU when there is one.
# ```

# %%
import nhtlab
from nhtlab import charts

SMALL = dict(base="digits", size=10, width=1, pad=True, rho=0.95, otherwise="none", clean="none",
             channels=(8, 8, 16, 16, 32, 32), lr=3e-3, batch_size=64, schedule="cosine")
PROFILES = {
    # 8×8 digits upsampled to 10×10 with a 1-pixel border; a 19k-parameter SimpleCNN.
    # Two borders: faint (contrast 0.25) and bright (contrast 1); one λ each.
    "quick": dict(run=dict(SMALL, steps=800, eval_every=50), contrasts={"faint": 0.25, "bright": 1.0},
                  lams={"faint": [0.3], "bright": [0.3]}, lam_main=0.3, workers=2),
    "book": dict(run=dict(SMALL, steps=1500, eval_every=50), contrasts={"faint": 0.25, "bright": 1.0},
                 lams={"faint": [0.01, 0.3, 1.0], "bright": [0.3, 1.0]}, lam_main=0.3, workers=2),
    # The paper's setting (arXiv 2603.07323): coloured-border CIFAR-10, ρ = 0.95, SimpleCNN of
    # 288k parameters without normalisation, AdamW lr 1e-3, cosine schedule, 200 epochs of
    # batch 128 (78k steps). Needs CIFAR-10 (downloaded on first use).
    "full": dict(run=dict(base="cifar10", root="data", download=True, width=2, pad=False, rho=0.95, otherwise="none",
                          clean="none", channels=(32, 32, 64, 64, 128, 128), lr=1e-3, batch_size=128,
                          schedule="cosine", steps=78_000, eval_every=780),
                 contrasts={"faint": 0.25, "bright": 1.0},
                 lams={"faint": [0.001, 0.01, 0.1, 0.3, 1.0], "bright": [0.001, 0.01, 0.1, 0.3, 1.0]},
                 lam_main=0.1, workers=1),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## The data and the runs
#
# Every class gets its own border colour. A training image carries its own class's colour with
# probability ρ = 0.95 and no border otherwise; the `clean` test images have no border, the
# `shortcut` set shows a border on a plain grey image (reading the border alone), the
# `conflict` set a wrong class's border on every image (the worst group). {mod}`nhtlab.shortcuts`
# documents each choice.
#
# How strongly the network leans on the border depends on how loud it is, so we train with two
# borders: a **bright** one (the class colours at full saturation) and a **faint** one (each colour
# pulled 75% of the way to grey, `contrast=0.25`). A faint cue needs larger weights to be read:
# it is the more expensive shortcut in norm. One run per border and λ, with AdamW and a cosine
# learning-rate schedule, in parallel processes.

# %%
base_run = nhtlab.ShortcutRun(seed=seed, **cfg.run)
data = base_run.data()
print(f"{len(data.y_train)} training images of shape {tuple(data.x_train.shape[1:])}; "
      f"{data.cue_agreement:.1%} of them carry their class's border")
model = base_run.build_model()
print(f"SimpleCNN: {sum(p.numel() for p in model.parameters()):,} parameters, layers {list(nhtlab.layer_norms(model))}")

# %%
configs = {f"{border} border, λ = {lam:g}": base_run.replace(contrast=cfg.contrasts[border], weight_decay=lam)
           for border, lams in cfg.lams.items() for lam in lams}
runs = dict(zip(configs, nhtlab.run_shortcuts(list(configs.values()), workers=cfg.workers)))
{label: {k: round(h.rows[-1][k], 3) for k in ("train_acc", "clean_acc", "shortcut_acc", "conflict_acc")}
 for label, h in runs.items()}

# %% [markdown]
# ## Each layer against its own peak
#
# Pick a run (border and λ) in the dropdown; click a layer in the legend to isolate it; switch
# between the raw $\|\theta_\ell\|^2$ and the norm divided by its own peak. Triangles mark each
# layer's peak. A curve that ends below 1 has contracted by that much.

# %%
transitions = {label: nhtlab.layer_transitions(h) for label, h in runs.items()}
records = [row for label, h in runs.items() for row in nhtlab.layer_records(h, lam=label)]
peaks = [{**t.to_dict(), "lam": label} for label, ts in transitions.items() for t in ts]
charts.layerwise_norms(records, peaks, title="‖θ_ℓ‖² of each layer (pick a run and layers)")

# %% [markdown]
# The same peaks on one chart: one row per layer, input at the top and read-out at the bottom,
# one colour per run; a larger point means a larger contraction by the end.

# %%
charts.layer_peak_steps(peaks)

# %% [markdown]
# The order in which the layers peaked in each run (layers that lost less than 2% of their peak by
# the end count as never contracted):

# %%
orders = {label: nhtlab.peak_order(ts) for label, ts in transitions.items()}
for label, ts in transitions.items():
    by_layer = {t.layer: t for t in ts}
    print(f"{label}: peaked " + (" → ".join(f"{name} (step {by_layer[name].peak_step}, −{by_layer[name].contraction:.0%})"
                                             for name in orders[label] if by_layer[name].peaked) or "none")
          + "; never contracted: " + (", ".join(t.layer for t in ts if not t.peaked) or "none"))

# %% [markdown]
# ## The early-warning signal
#
# The ratio of the read-out's norm to the first convolution's is the paper's second
# early-warning signal. It turns down when the head starts to contract relative to the input
# layer; {func}`nhtlab.layers.early_warning` compares when it peaks with when the total norm does.

# %%
signals = {label: nhtlab.head_to_first_ratio(h) for label, h in runs.items()}
ratio_records = [{"step": int(s), "ratio": float(r), "lam": label} for label, sig in signals.items()
                 for s, r in zip(sig["step"], sig["head_over_first"])]
charts.head_ratio_curves(ratio_records, title="early warning: ‖θ_readout‖² / ‖θ_conv1‖²")

# %%
warnings_ = {label: nhtlab.early_warning(h) for label, h in runs.items()}
warnings_

# %% [markdown]
# ## What the network was reading
#
# Accuracy on the `shortcut` set (a border on a grey image) says how far the network answers
# from the border alone; 0.1 is chance. Accuracy on `clean` images (no border) says how far it
# reads the digit.

# %%
charts.norm_curves([(label, h) for label, h in runs.items()], column="shortcut_acc",
                   title="accuracy from the border alone (shortcut set)")

# %%
charts.norm_curves([(label, h) for label, h in runs.items()], column="clean_acc",
                   title="accuracy on clean images (no border)")

# %% [markdown]
# ## What this shows
#
# With the **faint** border the network learns the digits, and at intermediate λ the layers peak
# from the top down: in the `book` run at λ = 0.3 the read-out peaks first (step 300) and loses 20%
# of its peak by the end, then conv6, conv5 and conv4 peak in turn, while conv1–conv3 are still
# growing at the end — the paper's backward order, head first. At the weakest λ nothing contracts.
# With the **bright** border the network leans on the border, and conv1 behaves the other way
# round: it peaks within the first 150 steps (at λ = 1, at initialisation) and loses half or more of
# its norm (a colour detector needs only small first-layer weights), while the read-out keeps
# growing or barely contracts (2% at λ = 1) — the order reverses, as small-scale prototypes had found. On this data the layer
# hierarchy is not a property of weight decay alone: it depends on which solution the network
# settles into, and the faint border is the one where the shortcut costs more norm than the
# structure.
#
# The early-warning ratio ‖θ_readout‖²/‖θ_conv1‖² does not time the transition here: in the faint
# runs conv1 grows faster than the head from the first steps, so the ratio falls from step 0 and
# "warns" at once. The head's own signal, the read-out's norm against its peak, is the useful one:
# it turns down (step 300 at λ = 0.3) well before the total norm does (step 650).
#
# ## Checks
#
# Asserted on this run: with the faint border at the main λ the read-out's norm rises, peaks after
# initialisation and contracts (by at least 2% of its peak), strictly before conv1 peaks (conv1
# may keep growing); with the bright border at the same λ, conv1 peaks first and ends further
# below its peak than the read-out does — the reversed order, reported rather than hidden.

# %%
faint = {t.layer: t for t in transitions[f"faint border, λ = {cfg.lam_main:g}"]}
bright = {t.layer: t for t in transitions[f"bright border, λ = {cfg.lam_main:g}"]}
head, first = nhtlab.layers.default_head_and_first(runs[f"faint border, λ = {cfg.lam_main:g}"])
assert (head, first) == ("readout", "conv1"), (head, first)
assert faint["readout"].peaked, faint["readout"]  # lost at least 2% of its peak by the end
assert faint["readout"].peak_step > 0, "the read-out only shrank from its initial norm: no rise-and-fall"
assert nhtlab.is_backward(list(faint.values()), "readout", "conv1"), (faint["readout"], faint["conv1"])
assert not nhtlab.is_backward(list(bright.values()), "readout", "conv1"), (bright["readout"], bright["conv1"])
assert bright["conv1"].contraction > bright["readout"].contraction, (bright["conv1"], bright["readout"])
print(f"faint border, λ = {cfg.lam_main:g}: read-out peaks at step {faint['readout'].peak_step} and contracts "
      f"{faint['readout'].contraction:.0%}; conv1 contracts {faint['conv1'].contraction:.0%}. "
      f"Bright border: conv1 peaks at step {bright['conv1'].peak_step} and contracts {bright['conv1'].contraction:.0%}, "
      f"read-out peaks at {bright['readout'].peak_step} (−{bright['readout'].contraction:.0%}).")
