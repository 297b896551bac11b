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
# # Layerwise backward transitions
#
# The total norm $\|\theta\|^2$ is a sum over layers, and the layers need
# not move together. The NHT paper {cite}`khanh2026nht` follows every
# layer's own squared norm $\|\theta_\ell\|^2$, each divided by its own
# maximum over the run, on CIFAR-10 images whose class is also written in
# a coloured border. Under intermediate weight decay it reports a
# **backward** transition: the read-out layer (`fc`) peaks first (near
# epoch 60 of 200) and has contracted 45% by the end, while the first
# convolution peaks later and contracts less (31%). The head leaves the
# shortcut first; the input layers follow. The total norm can even still
# be rising while the head shrinks, so the paper suggests two
# early-warning signals read off the head:
# $\|\theta_L\|^2/\|\theta_L(0)\|^2$ and $\|\theta_L\|^2/\|\theta_1\|^2$.
#
# A layer order only means something in a run where there is a shortcut to
# leave. So this chapter first builds one: handwritten digits whose border
# names the class on 95% of the training images and names a **wrong**
# class on the other 5% (the design is measured and chosen in the next
# chapter, from a probe grid). Reading the border then fits at most 95% of
# the training set; fitting the rest means memorising the exceptions
# (large weights) or reading the digit (the structure). The learning rate
# is constant, so weight decay keeps acting until the end. In this setting
# the network first follows the border and later drops it, and *then* we
# ask which layer peaks and contracts first. A control run leaves the 5%
# without a border (`otherwise="none"`, the previous design): the border
# is never dropped there, so its layer order tests nothing.
#
# Everything runs on the handwritten digits that ship with scikit-learn,
# so it needs no download; the `full` profile switches to CIFAR-10 and the
# paper's 288k-parameter network for a GPU.

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.2.4"
    print(
        'Launch note: profile = "full" takes one to two hours on a Colab'
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
import nhtlab
from nhtlab import charts
from nhtlab.analysis.events import border_times

# %% tags=["hide-input"]
# The setting chapter 06 chooses from its probe grid: a bright one-pixel
# border on 10×10 digits, its class's colour on ρ = 0.95 of the training
# images and a wrong class's colour on the rest, a constant learning rate.
DESIGN = nhtlab.BORDER_DESIGN  # nhtlab.training.presets
PROFILES = {
    # the main run (λ = 0.1) and the control without a border on the
    # remaining 5%
    "quick": dict(
        run=dict(DESIGN, steps=3000),
        main=dict(weight_decay=0.1),
        others={
            "control: no border on the 5%": dict(
                weight_decay=0.1, otherwise="none"
            )
        },
        workers=2,
    ),
    # plus a second seed of the main run and a stronger λ
    "book": dict(
        run=dict(DESIGN, steps=3000),
        main=dict(weight_decay=0.1),
        others={
            "main, seed + 1": dict(weight_decay=0.1, seed_offset=1),
            "λ = 0.3": dict(weight_decay=0.3),
            "control: no border on the 5%": dict(
                weight_decay=0.1, otherwise="none"
            ),
        },
        workers=2,
    ),
    # The paper's network on coloured-border CIFAR-10 (arXiv 2603.07323):
    # SimpleCNN of 288k parameters without normalisation, AdamW lr 1e-3,
    # batch 128, 200 epochs (78k steps), here with the chapter's border
    # design and a constant learning rate. Needs CIFAR-10 (downloaded on
    # first use).
    "full": dict(
        run=dict(nhtlab.BORDER_DESIGN_CIFAR10),
        main=dict(weight_decay=0.1),
        others={
            "main, seed + 1": dict(weight_decay=0.1, seed_offset=1),
            "λ = 0.3": dict(weight_decay=0.3),
            "control: no border on the 5%": dict(
                weight_decay=0.1, otherwise="none"
            ),
        },
        workers=1,
    ),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## The data and the runs
#
# Every class gets its own border colour. The test sets (all built from
# held-out digits, {mod}`nhtlab.data.cues`): `clean` carries the mean of
# the class colours as its border (a border is present, as on every
# training image, but says nothing), `conflict` a wrong class's border on
# every digit (the worst group: following the border is always wrong
# there; `cue` is the same images scored by the border's class) and
# `shortcut` a class border on a plain grey image (reading the border
# alone). The border counts as **fitted** from the first step at which the
# network follows it on at least 30% of the conflict images and more often
# than it reads the digit, and as **dropped** from the first later step at
# which it reads the digit on at least half of them
# ({func}`nhtlab.analysis.events.border_times`).


# %%
def make_run(change: dict) -> nhtlab.ShortcutRun:
    change = dict(change)
    return nhtlab.ShortcutRun(
        seed=seed + change.pop("seed_offset", 0), **{**cfg.run, **change}
    )


configs = {
    "main": make_run(cfg.main),
    **{label: make_run(change) for label, change in cfg.others.items()},
}
data = configs["main"].data()
print(
    f"{len(data.y_train)} training images of shape"
    f" {tuple(data.x_train.shape[1:])}; {data.cue_agreement:.1%} of them"
    " carry their class's border, the rest a wrong class's"
)
model = configs["main"].build_model()
print(
    f"SimpleCNN: {sum(p.numel() for p in model.parameters()):,}"
    f" parameters,"
    f" layers {list(nhtlab.layer_norms(model))}"
)
# One sweep through the result cache, as in chapters 01-03:
# a re-run reuses every finished run.
result = nhtlab.sweep(
    list(configs.values()),
    strategy="parallel" if cfg.workers > 1 else "sequential",
    workers=cfg.workers,
    cache=nhtlab.default_cache(),
)
runs = dict(zip(configs, result.histories))
times = {label: border_times(h) for label, h in runs.items()}
[
    {
        "run": label,
        "border fitted at": fitted,
        "dropped at": dropped,
        **{
            k: round(h.rows[-1][k], 3)
            for k in ("train_acc", "clean_acc", "conflict_acc", "cue_acc")
        },
    }
    for (label, h), (fitted, dropped) in zip(runs.items(), times.values())
]

# %% [markdown]
# What the network reads, step by step: the share of conflict images on
# which it answers the digit (rising through 0.5 is the drop) and the
# share on which it answers the border.

# %%
charts.norm_curves(
    [(label, h) for label, h in runs.items()],
    column="conflict_acc",
    title="conflict accuracy: reads the digit against a wrong border",
)

# %%
charts.norm_curves(
    [(label, h) for label, h in runs.items()],
    column="cue_acc",
    title="follows the border against the digit (cue accuracy)",
)

# %% [markdown]
# ## Each layer against its own peak
#
# Pick a run in the dropdown; click a layer in the legend to isolate it;
# switch between the raw $\|\theta_\ell\|^2$ and the norm divided by its
# own peak. Triangles mark each layer's peak. A curve that ends below 1
# has contracted by that much.

# %%
transitions = {
    label: nhtlab.layer_transitions(h) for label, h in runs.items()
}
records = [
    row
    for label, h in runs.items()
    for row in nhtlab.layer_records(h, lam=label)
]
peaks = [
    {**t.to_dict(), "lam": label}
    for label, ts in transitions.items()
    for t in ts
]
charts.layerwise_norms(
    records, peaks, title="‖θ_ℓ‖² of each layer (pick a run and layers)"
)

# %% [markdown]
# The same peaks on one chart: one row per layer, one colour per run; a
# larger point means a larger contraction by the end.

# %%
charts.layer_peak_steps(peaks)

# %% [markdown]
# The order in which the layers peaked and contracted (a layer that lost
# less than 2% of its peak by the end counts as never contracted), and the
# order between the read-out and conv1
# ({func}`nhtlab.analysis.layers.layer_order`: "backward" only when both
# contracted and the read-out peaked first; "first only" or "head only"
# when one of them never contracted, so no order between them was seen):

# %%
orders = {
    label: nhtlab.peak_order(ts) for label, ts in transitions.items()
}
head_first = {
    label: nhtlab.analysis.layers.layer_order(ts, "readout", "conv1")
    for label, ts in transitions.items()
}
for label, ts in transitions.items():
    by_layer = {t.layer: t for t in ts}
    print(
        f"{label} (border fitted {times[label][0]}, dropped"
        f" {times[label][1]}): read-out vs conv1 = {head_first[label]}"
        f"\n   "
        " peaked "
        + (
            " → ".join(
                f"{name} ({by_layer[name].peak_step},"
                f" −{by_layer[name].contraction:.0%})"
                for name in orders[label]
                if by_layer[name].peaked
            )
            or "none"
        )
        + "; never contracted: "
        + (", ".join(t.layer for t in ts if not t.peaked) or "none")
    )

# %% [markdown]
# ## The early-warning signals against the drop
#
# The paper's two signals, the read-out's norm against its start
# $\|\theta_L\|^2/\|\theta_L(0)\|^2$ and against the first layer's
# $\|\theta_L\|^2/\|\theta_1\|^2$, next to the total norm, with the steps
# at which the border was fitted and dropped as dashed lines. A signal
# *warns* if it turns down (reaches its maximum) before the border is
# dropped ({func}`nhtlab.analysis.layers.warning_times`).

# %%
signal_records, events = [], []
for label, h in runs.items():
    sig = nhtlab.head_to_first_ratio(h)
    norm0 = h.column("norm")[0]
    for name, values in (
        ("‖θ_L‖²/‖θ_L(0)‖²", sig["head_over_init"]),
        ("‖θ_L‖²/‖θ_1‖²", sig["head_over_first"]),
        ("‖θ‖²/‖θ(0)‖²", h.column("norm") / norm0),
    ):
        signal_records += [
            {
                "step": int(s),
                "run": label,
                "signal": name,
                "value": float(v),
            }
            for s, v in zip(sig["step"], values)
        ]
    events += [
        {"run": label, "event": event, "step": step}
        for event, step in zip(
            ("border fitted", "border dropped"), times[label]
        )
        if step is not None
    ]
charts.warning_signals(signal_records, events)

# %%
warnings_ = {
    label: nhtlab.analysis.layers.warning_times(h, times[label][1])
    for label, h in runs.items()
}
[{"run": label, **w} for label, w in warnings_.items()]

# %% [markdown]
# ## What this shows
#
# Numbers from the `book` profile (seed 0 unless said), executed on a
# 2-core Intel Xeon (AVX-512) with torch 2.14.1; another CPU rounds
# differently and moves them (see the last point, and
# {ref}`How to run <numbers-in-the-text>`).
#
# * **The design works as a test bed.** With a wrong border on the
#   remaining 5%, the network follows the border from step 200 (seed 0;
#   step 100 for seed 1) and drops it later: conflict accuracy passes 0.5
#   at step 1,400 (seed 1: 1,100). At λ = 0.3 the border is followed for
#   longer and dropped at step 2,800. In the control (no border on the
#   5%) it is followed from step 100 and never dropped (conflict accuracy
#   0.18 at the end).
# * **No run shows the paper's backward order** (read-out at epoch ≈ 60
#   of 200, −45%; conv1 later, −31%). In the main run conv1 peaks at step
#   1,300 and contracts 6%, and the read-out never loses 2% of its peak:
#   "first only", which says nothing about which layer contracts first.
#   In seed 1 neither contracts. At λ = 0.3 the order is forward (conv1
#   at step 200, −58%; read-out at 1,300, −17%), and in the control too
#   (conv1 at 300, −51%; read-out at 2,300, −4%).
# * **The early-warning signals do not warn in the main runs.**
#   ‖θ_L‖²/‖θ_L(0)‖² turns down 1,400 (seed 0) and 500 (seed 1) steps
#   *after* the border is dropped, ‖θ_L‖²/‖θ_1‖² 1,600 and 200 steps
#   after, and the total norm 1,400 and 1,900 steps after: these escapes
#   happen while the norms are still growing, so the border is not left
#   because weight decay shrinks a high-norm solution, which is also what
#   chapter 06's scorecard finds (P1 and P5). At λ = 0.3, where the drop
#   comes late, all three signals turn down before it (by 1,500, 1,100
#   and 700 steps): there they do warn.
# * **How firm these readings are.** On the machine this chapter was
#   first written on (another 2-core x86-64 CPU, another float rounding
#   of the same code) the same four runs gave a drop at step 1,900 (seed
#   1: 1,000), no drop by step 3,000 at λ = 0.3, a forward read-out/conv1
#   order in both main seeds (conv1 peaking at steps 1,200 and 1,900, the
#   read-out at 2,300 and 2,100 and contracting 5–6%), "first only" in
#   the control, and no signal that warned in any run. So at this scale
#   when a layer peaks, whether the read-out contracts at all and whether
#   a signal leads the drop are within float-rounding noise. What held on
#   both machines is the test bed (the border fitted, then dropped; the
#   control keeps it) and the absence of the backward order.
#
# ## Checks
#
# Decided before the run: the main run is a setting built to test a layer
# order (the border is fitted, then dropped), and the control is not (its
# border is never dropped). The read-out/conv1 order is then *reported*
# for the main run against the paper's backward order, and asserted only
# as what the chapter claims below.

# %%
# skipped, with a notice, in a capped smoke run
if nhtlab.science_checks(cfg):
    main_fit, main_drop = times["main"]
    assert main_fit is not None and main_drop is not None, (
        "the main run must fit and then drop the border",
        times["main"],
    )
    control = "control: no border on the 5%"
    assert times[control][0] is not None and times[control][1] is None, (
        "the control keeps its border",
        times[control],
    )
    by_main = {t.layer: t for t in transitions["main"]}
    print(
        "paper: read-out peaks first (epoch ≈ 60/200) and contracts 45%,"
        " conv1 later and 31% (backward). ours (main run, border fitted"
        f" at {main_fit}, dropped at {main_drop}): {head_first['main']};"
        f" read-out peaks at {by_main['readout'].peak_step}"
        f" (−{by_main['readout'].contraction:.0%}), conv1 at"
        f" {by_main['conv1'].peak_step}"
        f" (−{by_main['conv1'].contraction:.0%})."
    )
    print(
        "early warnings (steps before the drop; > 0 warns):",
        {
            k: warnings_["main"][k]
            for k in (
                "head_over_init_lead",
                "head_over_first_lead",
                "total_lead",
            )
        },
    )
