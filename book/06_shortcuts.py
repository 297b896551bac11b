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
# # Shortcuts, BatchNorm, and when the law fails
#
# On images the NHT paper {cite}`khanh2026nht` makes its boldest claims.
# On CIFAR-10 with a class-coloured border shown with probability ρ, a
# small CNN first reads the border (a *shortcut*
# {cite}`geirhos2020shortcut`) and, under intermediate weight decay,
# partly abandons it: at λ = 0.1 the accuracy on clean images falls from
# 78% at ρ = 0.5 to 10% at ρ = 1.0. ResNet18 with BatchNorm
# {cite}`ioffe2015batchnorm` transitions faster and ends higher (78.1%
# clean) than without normalisation (69.8%) or with GroupNorm
# {cite}`wu2018groupnorm` (50.5%). And a *clean norm separation* score
# says where the delay law applies at all: ≈ 1 on modular arithmetic,
# 0.5–0.7 on CIFAR-10, ≈ 0 on Waterbirds, −0.11 on CelebA, where the
# spurious cue is entangled with the object at every scale.
#
# The law is about escaping a shortcut that fits the training set with a
# **larger norm** than the structured solution. So the data must make the
# border such a shortcut before any prediction can be tested. This chapter
# first measures which border design does that at CPU scale (on the
# handwritten digits that ship with scikit-learn, 8 × 8 upsampled to 10 ×
# 10, a one-pixel border), chooses one from the measurements, and then
# runs the paper's experiments in it, ending with a scorecard of the six
# predictions whose every cell shows the number it was decided on.

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.2.4"
    print(
        'Launch note: profile = "full" takes many hours on a Colab T4'
        " GPU, more than a free session allows (an estimate, "
        "not yet measured).\n"
        "To run it: Runtime > Change runtime type > T4 GPU, "
        'set profile = "full" in the next cell, run all.'
    )

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see How to run
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`How to run <profiles>`.

# %%
import math

import nhtlab
from nhtlab import charts
from nhtlab.training.monitor import online_regime
from nhtlab.analysis.events import border_times

# %% tags=["hide-input"]
# The chosen design (see "Choosing the border" below): a bright border
# naming the class on ρ = 0.95 of the training images and a wrong class on
# the rest; constant learning rate.
DESIGN = nhtlab.BORDER_DESIGN  # nhtlab.training.presets
PROFILES = {
    # One λ, ρ ∈ {0.95, 1}, BatchNorm against none; no modular runs (they
    # are in `book`).
    "quick": dict(
        run=dict(DESIGN, steps=2000),
        lam_main=0.1,
        lams=[0.1],
        control_lams=[],
        rhos=[0.95, 1.0],
        norms=["none", "batch"],
        tint_lams=[],
        fit=0.97,
        modular_lams=[],
        modular_seeds=[],
        modular=dict(steps=8000, stop_after=500),
        modular_budgets={},
        modular_main=1.0,
        workers=2,
    ),
    # The λ and ρ sweeps, both normalisations, the entangled tint, and the
    # companion paper's transformer runs that chapter 03 trains (served
    # from the book build's result cache).
    "book": dict(
        run=dict(DESIGN, steps=3000),
        lam_main=0.1,
        lams=[0.01, 0.1, 0.3, 1.0],
        control_lams=[0.1, 0.3],
        rhos=[0.8, 0.9, 0.95, 1.0],
        norms=["none", "batch", "group"],
        tint_lams=[0.01, 0.1, 1.0],
        fit=0.97,
        modular_lams=[0.3, 0.5, 1.0, 2.0],
        modular_seeds=[0, 1],
        modular=dict(steps=8000, stop_after=500),
        modular_budgets={1.0: 4000, 2.0: 2000},
        modular_main=1.0,
        workers=2,
    ),
    # The paper's scale (arXiv 2603.07323) with this chapter's border
    # design: CIFAR-10, SimpleCNN of 288k parameters (ResNet18 for the
    # normalisation comparison), AdamW lr 1e-3, constant schedule, 200
    # epochs of batch 128; λ from 0.001 to 1 at ρ = 0.95; ρ from 0.5 to 1
    # at λ = 0.1. The modular domain uses the companion paper's
    # transformer (arXiv 2603.13331) at its own budget.
    "full": dict(
        run=dict(nhtlab.BORDER_DESIGN_CIFAR10),
        lam_main=0.1,
        lams=[0.001, 0.01, 0.1, 0.3, 1.0],
        control_lams=[0.1, 0.3],
        rhos=[0.5, 0.8, 0.9, 0.95, 1.0],
        norms=["none", "batch", "group"],
        tint_lams=[0.01, 0.1, 1.0],
        fit=0.97,
        modular_lams=[0.1, 0.3, 0.5, 1.0],
        modular_seeds=[0, 1, 2],
        modular=dict(steps=50_000),
        modular_budgets={},
        modular_main=1.0,
        workers=1,
    ),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## Choosing the border
#
# What makes a border an expensive shortcut? In the previous design the
# training images without their class's border carried **no** border
# (`otherwise="none"`): those 5% taught the digits from the first step,
# while a bright border was read by a tiny first layer (a colour detector)
# — the *cheap* solution, nothing to escape. Here the remaining 5% carry a
# **wrong** class's border (`otherwise="other"`): the border alone then
# caps training accuracy at ρ, and fitting the rest means memorising the
# exceptions (large weights) or reading the digit. The learning rate is
# constant, so the decay ηλ is still acting when an escape could happen (a
# cosine schedule drives ηλ to zero at the end of the budget).
#
# A probe grid measured, for each design, when the border is **fitted**
# (the network follows it on ≥ 30% of the `conflict` images, and more
# often than the digit) and **dropped** (it reads the digit on ≥ 50% of
# them). One seed per row, 3,000 steps, one CPU thread each (≈ 25 s of CPU
# per run); produced by
# `PYTHONPATH=. python benchmarks/probe_shortcuts.py` and the commands
# listed under it. The book does not re-run this grid: the table is a
# measurement made once, on the machine the text was written on, and is
# kept as measured.
#
# ```{list-table}
# :header-rows: 1
#
# * - otherwise
#   - task
#   - contrast
#   - ρ
#   - λ
#   - fitted at
#   - dropped at
#   - conflict end
#   - clean end
#   - train end
#   - ‖θ‖² peak → end
# * - other
#   - 1,258 images
#   - 0.25
#   - 0.9
#   - 0.1
#   - —
#   - —
#   - 0.96
#   - 0.98
#   - 1.0
#   - 355 → 319
# * - other
#   - 1,258 images
#   - 0.25
#   - 0.9
#   - 0.3
#   - —
#   - —
#   - 0.94
#   - 0.94
#   - 0.98
#   - 224 → 166
# * - other
#   - 1,258 images
#   - 0.25
#   - 0.95
#   - 0.1
#   - —
#   - —
#   - 0.96
#   - 0.97
#   - 1.0
#   - 319 → 293
# * - other
#   - 1,258 images
#   - 0.25
#   - 0.95
#   - 0.3
#   - —
#   - —
#   - 0.92
#   - 0.96
#   - 1.0
#   - 192 → 151
# * - other
#   - 1,258 images
#   - 1.0
#   - 0.9
#   - 0.1
#   - —
#   - —
#   - 0.79
#   - 0.87
#   - 1.0
#   - 321 → 273
# * - other
#   - 1,258 images
#   - 1.0
#   - 0.9
#   - 0.3
#   - —
#   - —
#   - 0.77
#   - 0.88
#   - 0.99
#   - 189 → 188
# * - other
#   - 1,258 images
#   - 1.0
#   - 0.95
#   - 0.1
#   - 200
#   - 1900
#   - 0.45
#   - 0.6
#   - 0.98
#   - 278 → 257
# * - other
#   - 1,258 images
#   - 1.0
#   - 0.95
#   - 0.3
#   - 200
#   - —
#   - 0.43
#   - 0.56
#   - 0.99
#   - 159 → 154
# * - other
#   - 400 images
#   - 0.25
#   - 0.9
#   - 0.1
#   - —
#   - —
#   - 0.91
#   - 0.91
#   - 1.0
#   - 333 → 272
# * - other
#   - 400 images
#   - 0.25
#   - 0.9
#   - 0.3
#   - —
#   - —
#   - 0.93
#   - 0.93
#   - 1.0
#   - 185 → 144
# * - other
#   - 400 images
#   - 0.25
#   - 0.95
#   - 0.1
#   - —
#   - —
#   - 0.92
#   - 0.92
#   - 1.0
#   - 208 → 158
# * - other
#   - 400 images
#   - 0.25
#   - 0.95
#   - 0.3
#   - —
#   - —
#   - 0.95
#   - 0.96
#   - 1.0
#   - 169 → 115
# * - other
#   - 400 images
#   - 1.0
#   - 0.9
#   - 0.1
#   - —
#   - —
#   - 0.66
#   - 0.75
#   - 1.0
#   - 305 → 265
# * - other
#   - 400 images
#   - 1.0
#   - 0.9
#   - 0.3
#   - —
#   - —
#   - 0.85
#   - 0.93
#   - 1.0
#   - 137 → 102
# * - other
#   - 400 images
#   - 1.0
#   - 0.95
#   - 0.1
#   - —
#   - —
#   - 0.52
#   - 0.65
#   - 1.0
#   - 342 → 311
# * - other
#   - 400 images
#   - 1.0
#   - 0.95
#   - 0.3
#   - —
#   - —
#   - 0.39
#   - 0.54
#   - 1.0
#   - 201 → 139
# ```
#
# In the probe only one of these sixteen settings fitted the border first
# and dropped it later within 3,000 steps: the **bright** border
# (contrast 1) at **ρ = 0.95** and **λ = 0.1**, on all 1,258 training
# images (fitted at step 200, conflict accuracy past 0.5 at step 1,900;
# it then hovered around 0.5). That is the book's setting, and the
# reasons are in the table: a faint border (contrast 0.25) is never
# followed — with a wrong border on 5–10% of the images the digit is the
# cheaper cue from the start, so there is nothing to escape; at ρ = 0.9
# the border is too unreliable to be followed either; λ = 0.3 followed
# the border but had not dropped it by step 3,000 (conflict accuracy
# 0.43); and fewer training images (400) did not delay the digit reader
# as hoped — the border never won over the digit on the conflict images.
# Pixel noise (`noise=`) and more seeds were not probed for lack of time;
# chapter 05 checks a second seed of the chosen setting. The border-less
# remainder (`otherwise="none"`) is in the small grid below: there the
# border is fitted and never dropped, as in the first probe of
# `measured.md`. Commands: `python benchmarks/probe_shortcuts.py` (the
# table), and `--otherwise none` for the border-less design.
#
# The book re-runs a small part of that grid itself, the wrong-border
# design against the border-less one at two λ. Its two wrong-border rows
# have the settings of two rows of the table, yet on this build's machine
# they come out differently: the border is dropped at step 1,400 at λ =
# 0.1, and at λ = 0.3 it is dropped too, at step 2,800 (see "What held
# and what failed"):

# %%
base = nhtlab.ShortcutRun(seed=seed, **cfg.run)
main = base.replace(weight_decay=cfg.lam_main)
sweep = {lam: base.replace(weight_decay=lam) for lam in cfg.lams}
control = {
    lam: base.replace(weight_decay=lam, otherwise="none")
    for lam in cfg.control_lams
}
rho_runs = {rho: main.replace(rho=rho) for rho in cfg.rhos}
norm_runs = {
    norm: main.replace(
        norm=norm, model="resnet18" if profile == "full" else "simple"
    )
    for norm in cfg.norms
}
tint = {
    lam: base.replace(kind="tint", weight_decay=lam)
    for lam in cfg.tint_lams
}
image_runs = list(
    dict.fromkeys(
        [
            main,
            *sweep.values(),
            *control.values(),
            *rho_runs.values(),
            *norm_runs.values(),
            *tint.values(),
        ]
    )
)
image_result = nhtlab.sweep(
    image_runs,
    strategy="parallel" if cfg.workers > 1 else "sequential",
    workers=cfg.workers,
    cache=nhtlab.default_cache(),
)
trained = dict(zip(image_runs, image_result.histories))
print(
    f"{len(image_runs)} image runs"
    f" ({sum(row.cached for row in image_result)} from the result cache)"
)


def summary(h) -> dict:
    fitted, dropped = border_times(h)
    last = h.rows[-1]
    return {
        "fitted at": fitted,
        "dropped at": dropped,
        "conflict min": round(float(h.column("conflict_acc").min()), 3),
        **{
            name: round(last[f"{name}_acc"], 3)
            for name in ("train", "clean", "conflict", "shortcut")
        },
    }


small_grid = [
    {"otherwise": otherwise, "λ": lam, **summary(trained[run])}
    for otherwise, runs in (
        ("other", {lam: sweep[lam] for lam in cfg.control_lams}),
        ("none", control),
    )
    for lam, run in runs.items()
]
small_grid

# %% [markdown]
# ## The test sets
#
# All are built from held-out digits ({mod}`nhtlab.data.cues`):
#
# * **clean**: the border in the mean of the class colours — a border is
#   present, as on every training image of this design, but it names no
#   class. It measures the digit reader on in-distribution images. (The
#   earlier `clean="none"`, no border at all, was the same distribution as
#   the border-less training images of the old design, so "clean accuracy
#   falls as ρ rises" held there by construction.)
# * **conflict**: a wrong class's border on every digit, labelled by the
#   digit — the worst group, where following the border is always wrong.
#   Its accuracy measures reliance on the border *independently* of how
#   many training images lacked one: every test image has a border and it
#   always lies. The ρ claim below uses it. (`cue` scores the same images
#   by the border's class.)
# * **shortcut**: a class's border on a plain grey image, labelled by the
#   border — how far the network reads the border at all.

# %%
SETS = {
    "train_acc": "train",
    "clean_acc": "clean",
    "conflict_acc": "conflict (worst group)",
    "cue_acc": "follows the border",
    "shortcut_acc": "border alone",
}
charts.norm_curves(
    [(f"λ = {lam:g}", trained[run]) for lam, run in sweep.items()],
    column="conflict_acc",
    title=(
        "conflict accuracy across λ (the border is dropped when it passes"
        " 0.5)"
    ),
)

# %% [markdown]
# ## The λ sweep: three regimes on images?
#
# The paper's three regimes: **weak** decay lets the norm grow and the
# shortcut stay; **intermediate** decay makes the norm peak and fall while
# the network keeps fitting; **strong** decay stops it from fitting. Image
# runs are read by {func}`nhtlab.training.monitor.online_regime` off the
# norm and the training accuracy (a contraction of at least 5% below the
# peak; "fitted" means training accuracy ≥ 0.97, above the border's
# ceiling ρ = 0.95: the exceptions are fitted too).

# %%
histories = {
    "border": {lam: trained[run] for lam, run in sweep.items()},
    "entangled tint": {lam: trained[run] for lam, run in tint.items()},
}
regimes = {
    domain: {
        lam: online_regime(
            h.column("norm"),
            h.column("train_acc"),
            drop=0.05,
            fit=cfg.fit,
        )
        for lam, h in hs.items()
    }
    for domain, hs in histories.items()
    if hs
}
lam_table = [
    {
        "domain": domain,
        "λ": lam,
        "regime": regimes[domain][lam],
        **summary(h),
    }
    for domain, hs in histories.items()
    for lam, h in hs.items()
]
lam_table

# %%
charts.norm_curves(
    [
        (f"λ = {lam:g} ({regimes['border'][lam]})", h)
        for lam, h in histories["border"].items()
    ],
    title="‖θ‖² across λ (hover a legend entry)",
)

# %% [markdown]
# ## The ρ sweep: worst-group accuracy against the border's reliability
#
# Main λ; the border names the class on a fraction ρ of the training
# images and a wrong class on the rest. The paper's claim (clean accuracy
# 78% at ρ = 0.5 → 10% at ρ = 1 on CIFAR-10) is about reliance on the
# border; here it is read on the `conflict` set.

# %%
rho_hist = {rho: trained[run] for rho, run in rho_runs.items()}
rho_table = [{"ρ": rho, **summary(h)} for rho, h in rho_hist.items()]
charts.sweep_lines(
    [
        {"rho": rho, "series": label, "value": h.rows[-1][col]}
        for rho, h in rho_hist.items()
        for col, label in SETS.items()
    ],
    x="rho",
    x_title="ρ (share of images with their class's border)",
    title=f"final accuracies across ρ, λ = {cfg.lam_main:g}",
)

# %%
rho_table

# %% [markdown]
# ## BatchNorm, GroupNorm, no normalisation
#
# Main λ, the chosen design, three normalisations (SimpleCNN here;
# ResNet18 in `full`). After a BatchNorm or GroupNorm layer a
# convolution's output no longer depends on the scale of its weights, so
# weight decay cannot trade accuracy for norm there: it only shrinks those
# weights, which raises their effective learning rate.

# %%
norm_hist = {norm: trained[run] for norm, run in norm_runs.items()}
norm_table = [
    {
        "norm": name,
        **summary(h),
        "norm peak step": int(
            h.column("step")[h.column("norm").argmax()]
        ),
        "contraction": round(
            float(1 - h.rows[-1]["norm"] / h.column("norm").max()), 3
        ),
    }
    for name, h in norm_hist.items()
]
norm_table

# %%
charts.norm_curves(
    [(name, h) for name, h in norm_hist.items()],
    column="conflict_acc",
    title="conflict accuracy by normalisation",
)

# %% [markdown]
# ## The modular-arithmetic domain
#
# The companion paper's transformer ({func}`nhtlab.companion`: p = 97,
# AdamW lr 1e-3, batch 512, 8,000 steps at most (4,000 at λ = 1, 2,000 at
# λ = 2), stopped 500 steps after generalising), four λ and two seeds: the
# runs of chapter 03, served here from the result cache. Its shortcut is
# the memorised table: fitted at T_mem (training accuracy ≥ 99%), dropped
# at T_grok (test accuracy ≥ 99%).

# %%
# The same runs as the delay-law chapter (λ = 2 with its 2,000-step
# budget), so the result cache serves them.
modular_runs = [
    nhtlab.companion(
        lam,
        seed + s,
        **{
            **cfg.modular,
            "steps": cfg.modular_budgets.get(lam, cfg.modular["steps"]),
        },
    )
    for lam in cfg.modular_lams
    for s in cfg.modular_seeds
]
if modular_runs:
    modular = nhtlab.sweep(
        modular_runs,
        strategy="parallel",
        workers=cfg.workers,
        cache=nhtlab.default_cache(),
    )
    modular_by = {
        (row.run.weight_decay, row.run.seed): row.history
        for row in modular
    }
    histories["modular arithmetic"] = {
        lam: modular_by[(lam, seed)] for lam in cfg.modular_lams
    }
    regimes["modular arithmetic"] = {
        lam: nhtlab.diagnose_regime(h).regime
        for lam, h in histories["modular arithmetic"].items()
    }
    print(modular)
else:
    print(
        "quick profile: no modular runs; the modular column of the"
        " scorecard is in the `book` profile."
    )

# %% [markdown]
# ## Clean norm separation across domains
#
# The paper defines clean norm separation only in words. nhtlab's
# estimator ({func}`nhtlab.analysis.separation.clean_norm_separation`)
# measures a shortcut reliance φ at every checkpoint — how often the
# network follows the border against the digit (images), or 1 − test
# accuracy (modular arithmetic), both rescaled so chance is 0 — and
# scores the Spearman rank correlation between $\|\theta\|^2$ and φ
# **from the step the shortcut is fitted** (the border fitted; T_mem) to
# the end: +1 when the norm and reliance fall together, negative when
# reliance falls while the norm still grows. When the shortcut was never
# fitted or nothing moves, the score is undefined — NaN, shown as
# "undefined", never 0.

# %%
mains = {
    domain: hs[
        cfg.modular_main
        if domain == "modular arithmetic"
        else cfg.lam_main
    ]
    for domain, hs in histories.items()
    if hs
}
separations = {
    domain: (
        nhtlab.separation_from_history(h, 97, kind="generalisation")
        if domain == "modular arithmetic"
        else nhtlab.separation_from_history(h, 10)
    )
    for domain, h in mains.items()
}
[
    {
        "domain": d,
        "score": nhtlab.analysis.separation.format_score(s),
        "window from step": s.start_step,
        "points": s.n_points,
        "φ drop": round(s.phi_drop, 3) if s.defined else None,
    }
    for d, s in separations.items()
]

# %%
charts.score_bars(
    [{"domain": d, **s.to_dict()} for d, s in separations.items()]
)

# %% [markdown]
# ## Scorecard: the paper's six predictions on this chapter's runs
#
# Each rule is a function of {mod}`nhtlab.analysis.scorecard`, whose
# docstring says what makes it fail; each cell prints the number the rule
# compared.
#
# * **P1 norm ordering**
#   ({func}`~nhtlab.analysis.scorecard.norm_ordering`): ‖θ‖² when the
#   shortcut is fitted (border fitted; T_mem) is larger than ‖θ‖² at the
#   end of the run, once the structure is reached (border dropped;
#   T_grok). Not measured (✗) if either never happened.
# * **P2 three regimes**
#   ({func}`~nhtlab.analysis.scorecard.three_regimes`): weak →
#   intermediate → strong in λ.
# * **P3 worst group**
#   ({func}`~nhtlab.analysis.scorecard.worst_group_rise`): the worst-group
#   accuracy (`conflict`; modular: test) is below 0.5 when the shortcut is
#   fitted and above 0.5 at the end.
# * **P4 layer hierarchy**
#   ({func}`~nhtlab.analysis.scorecard.backward_order`): the read-out and
#   the first layer both contract, the read-out first.
# * **P5 clean separation**
#   ({func}`~nhtlab.analysis.scorecard.separation_rule`): the score above
#   is defined and ≥ 0.5.
# * **P6 delay scaling**
#   ({func}`~nhtlab.analysis.scorecard.delay_scaling`): at least three λ
#   with a measured delay (dropped − fitted; T_grok − T_mem), and the 95%
#   interval of the fitted exponent α in T ∝ λ^(−α) contains 1 and
#   excludes 0.


# %%
def events_of(domain, h):
    if domain == "modular arithmetic":
        ev = nhtlab.find_events(h)
        return ev.t_mem, ev.t_grok
    return border_times(h)


scorecard = {}
for domain, main_h in mains.items():
    fitted, dropped = events_of(domain, main_h)
    runs_of = histories[domain] if domain != "modular arithmetic" else {}
    if domain == "modular arithmetic":
        delays = {
            lam: [
                nhtlab.find_events(modular_by[(lam, seed + s)]).delay
                for s in cfg.modular_seeds
            ]
            for lam in cfg.modular_lams
        }
    else:
        delays = {
            lam: [
                d - f if f is not None and d is not None else None
                for f, d in [border_times(h)]
            ]
            for lam, h in runs_of.items()
        }
    head, first = nhtlab.analysis.layers.default_head_and_first(main_h)
    scorecard[domain] = nhtlab.score_predictions(
        main=main_h,
        regimes=regimes[domain],
        shortcut_step=fitted,
        structured_step=(
            int(main_h.rows[-1]["step"]) if dropped is not None else None
        ),
        worst_column=(
            "test_acc"
            if domain == "modular arithmetic"
            else "conflict_acc"
        ),
        transitions=nhtlab.layer_transitions(main_h),
        head=head,
        first=first,
        separation=separations[domain],
        delays=delays,
    )
nhtlab.analysis.scorecard.scorecard_rows(scorecard)

# %%
print(nhtlab.scorecard_text(scorecard))
if not modular_runs:
    print("(the modular-arithmetic column is in the `book` profile)")

# %% [markdown]
# ## What held and what failed
#
# (Numbers in the text: the `book` build on a 2-core Intel Xeon, AVX-512,
# torch 2.14.1; another CPU rounds differently and moves them:
# {ref}`How to run <numbers-in-the-text>`.)
#
# Numbers from the `book` profile (seed 0; 3,000 steps per image run). The
# `quick` profile trains only the main run (2,000 steps), ρ = 1 and
# BatchNorm; its main run is the same trajectory, cut short.
#
# * **The small grid.** With a wrong border on the 5% the border is
#   followed from step 200 and dropped at step 1,400 at λ = 0.1 (conflict
#   accuracy ends at 0.63); at λ = 0.3 it is followed from step 200 and
#   dropped at step 2,800 (0.57 at the end). With no border on the 5% it
#   is followed from step 100 and never dropped (conflict accuracy 0.18
#   at λ = 0.1, 0.03 at λ = 0.3).
# * **ρ** (λ = 0.1): conflict accuracy at the end falls from 0.95 (ρ =
#   0.8) to 0.82 (0.9), 0.63 (0.95) and 0.04 (ρ = 1); clean accuracy from
#   0.97 to 0.89, 0.73 and 0.21. At ρ ≤ 0.9 the border is never followed
#   on 30% of the conflict images: the digit is learnt first. The paper's
#   trend (clean accuracy 78% at ρ = 0.5 → 10% at ρ = 1 on CIFAR-10)
#   holds, now on a test set whose meaning does not depend on the share of
#   border-less training images.
# * **Regimes.** λ = 0.01 weak (‖θ‖² 362 → 355, −2%), λ = 0.1 weak too
#   (282 → 273, −3%, short of the 5% the rule asks), λ = 0.3
#   intermediate (195 → 178, −9%, training accuracy 0.98), λ = 1 strong
#   (training accuracy 0.96, just above the border's ceiling and below
#   the 0.97 that counts as fitted). The order is weak → intermediate →
#   strong in λ: P2 passes, but the main λ = 0.1 is not the intermediate
#   one.
# * **The escape is not the NHT mechanism here (P1, P5).** When the border
#   is fitted (step 200) ‖θ‖² is about half its end value (133 against
#   273): the border is the *cheaper* solution in norm, and the network
#   leaves it while the norm is still growing. So V_sc < V_st (P1 fails)
#   and reliance on the border falls while the norm rises: the separation
#   score is negative (−0.74 at λ = 0.1), not the paper's 0.5–0.7. Even a
#   border that caps training accuracy at ρ is, on these digits, learnt
#   by small weights; what removes it is the pressure of the 5%
#   exceptions, not weight decay.
# * **P3 passes**: conflict accuracy is 0.14 when the border is fitted,
#   first passes 0.5 at step 1,400, dips below it at steps 1,500 and
#   1,800, and stays above it from step 1,900, ending at 0.63 (✓). The
#   rule reads only the last evaluation, but here it is not a close call.
# * **P4 fails**: only the first layer contracts (conv1 peaks at step
#   1,300 and ends 6% below its peak; the read-out peaks at step 2,800
#   and loses 1%), so no order between them is seen — "first only", as in
#   chapter 05's main run.
# * **P6 fails on images**: the border is dropped at three λ (0.01: 1,300
#   steps after it was fitted; 0.1: 1,200; 0.3: 2,600), enough for the
#   rule, but the delay does not fall with λ: α = −0.17, with a 95%
#   interval [−2.44, 2.11] that contains 0.
# * **Normalisation** (λ = 0.1): with BatchNorm or GroupNorm the border is
#   never followed — the network reads the digit from the first
#   evaluations (conflict accuracy 0.63 at step 100 and 0.76–0.87 from
#   step 300 with BatchNorm, ending at 0.85; 0.74 at step 300 with
#   GroupNorm, ending at 0.68; against 0.63 at the end without
#   normalisation), and the weight norm peaks early (step 700 with
#   BatchNorm, 300 with GroupNorm) and contracts by 47% and 49.5%. Both
#   runs end at training accuracy 1.0: the loss spike that ended the
#   BatchNorm run at its last evaluation on the machine the text was
#   written on (training accuracy 0.19 at step 3,000; the known
#   instability of scale-invariant weights whose effective learning rate
#   grows as decay shrinks them) does not occur here. The paper's ranking
#   (BatchNorm 78.1% > none 69.8% > GroupNorm 50.5% clean) holds only in
#   part: both normalisations beat none on clean accuracy (0.89 BatchNorm,
#   0.87 GroupNorm, 0.73 none), so GroupNorm is above none here, not
#   below.
# * **Entangled tint**: followed from step 100 at every λ; at λ = 0.1 the
#   network ends reading the digit on 52% of the conflict images (passing
#   0.5 at step 2,600), at λ = 0.01 on 45%, and λ = 1 never fits the
#   training set (0.90). Its separation score (λ = 0.1) is negative,
#   −0.92.
# * **Modular arithmetic** (the companion transformer, λ = 0.3, 0.5, 1, 2,
#   seeds 0 and 1) scores 4/6. T_mem is 600–800 at every λ that fits;
#   T_grok − T_mem is 4,400 and 4,800 steps at λ = 0.3, 2,600 and 2,500 at
#   0.5, 1,400 and 800 at 1 (chapter 03's table of these runs; companion
#   Table 3: T_grok 4,900, 3,150, 2,100), and λ = 2 never fits the
#   training set in 2,000 steps (strong). P1: ‖θ‖² is 3,966 at T_mem and
#   546 at the end (λ = 1, ratio 7.27). P5: the separation score from
#   T_mem is 0.97 (paper ≈ 1). P6: over six runs at three λ the fitted
#   exponent is α = 1.22, and its 95% interval [0.76, 1.69] contains 1 and
#   excludes 0. P2 fails because no λ of these four is weak (the sweep has
#   no small λ); P4 fails: the token embedding shrinks from its large
#   initial norm from step 0 (−99%), the read-out peaks at step 1,700 —
#   forward, unlike the border's "first only".
# * **Separation**: 0.97 on modular arithmetic, −0.74 on the border, −0.92
#   on the entangled tint. "Modular > images" is now measured on three
#   defined scores, not on an undefined image score written as 0.
#
# ## Checks
#
# Decided before the run: in the chosen design the main run fits the
# border and then drops it; the worst-group accuracy at the end falls by
# at least 0.2 from the smallest ρ to ρ = 1; the main run's separation
# score is defined (the border was fitted, so there is a window).
# Everything else is reported in the scorecard, passes and failures alike.

# %%
assert all(len(row) == 6 for row in scorecard.values())
# skipped, with a notice, in a capped smoke run
if nhtlab.science_checks(cfg):
    fitted, dropped = border_times(mains["border"])
    assert fitted is not None and dropped is not None, (
        "the border must be fitted, then dropped",
        fitted,
        dropped,
    )
    low, high = min(cfg.rhos), max(cfg.rhos)
    assert (
        rho_hist[low].rows[-1]["conflict_acc"]
        > rho_hist[high].rows[-1]["conflict_acc"] + 0.2
    ), rho_table
    assert separations["border"].defined, separations["border"]
    print(
        f"border fitted at {fitted}, dropped at {dropped}; conflict"
        f" accuracy ρ = {low:g}:"
        f" {rho_hist[low].rows[-1]['conflict_acc']:.2f}, ρ = {high:g}:"
        f" {rho_hist[high].rows[-1]['conflict_acc']:.2f} (paper, clean"
        " accuracy on CIFAR-10: 0.78 at ρ = 0.5, 0.10 at ρ = 1)"
    )
    print(
        "separation:",
        {
            d: nhtlab.analysis.separation.format_score(s)
            for d, s in separations.items()
        },
        "(paper: ≈ 1 modular, 0.5–0.7 CIFAR-10 border, ≈ 0 Waterbirds,"
        " −0.11 CelebA)",
    )
    print(
        "scorecard:",
        {
            d: f"{sum(v.passed for v in row.values())}/6"
            for d, row in scorecard.items()
        },
    )
