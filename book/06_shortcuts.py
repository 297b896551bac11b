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
# # Shortcuts, BatchNorm, and when the law fails
#
# On images the NHT paper {cite}`khanh2026nht` makes its boldest claims.
# On CIFAR-10 with a class-coloured border shown with probability
# {term}`ρ`, a small CNN first reads the border (a *{term}`shortcut`*
# {cite}`geirhos2020shortcut`) and, under {term}`intermediate` weight
# decay, partly abandons it: at λ = 0.1 the accuracy on clean images falls
# from 78.2% at ρ = 0.5 to 10.2% at ρ = 1.0. ResNet18 with BatchNorm
# {cite}`ioffe2015batchnorm` transitions faster and ends higher (78.1%
# clean) than without normalisation (69.8%) or with GroupNorm
# {cite}`wu2018groupnorm` (50.5%). And a *{term}`clean norm separation`*
# score says where the {term}`delay law` applies at all: ≈ 1 on modular
# arithmetic, 0.5–0.7 on CIFAR-10, ≈ 0 on Waterbirds, −0.11 on CelebA,
# where the spurious cue is entangled with the object at every scale.
#
# The law is about escaping a shortcut that fits the training set with a
# **larger norm** than the {term}`structured solution`. This chapter's
# question: when a small CNN first reads a coloured border and later
# drops it, is weight decay what pulls it off? It picks a border design
# at CPU scale (scikit-learn's digits, 8 × 8 upsampled to 10 × 10, a
# one-pixel border) in which the border is first read and then dropped,
# runs the paper's experiments in it, and scores the six
# {term}`predictions <P1–P6>`, each with the number it rests on.

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

    nb.colab_launch("06_shortcuts", keep=KEEP_ON_DRIVE)

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see Run a chapter
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`Run a chapter <profiles>`.

# %%
import nhtlab
from nhtlab import book as nb

# %% tags=["hide-input"]
# The chosen design (see "Choosing the border" below): a bright border
# naming the class on ρ = 0.95 of the training images and a wrong class on
# the rest; constant learning rate.
DESIGN = nhtlab.presets.BORDER_DESIGN  # nhtlab.training.presets
PROFILES = {
    # One λ, ρ ∈ {0.95, 1}, BatchNorm against none, the background cue,
    # one seed (readings are k of 1); no modular runs (see `book`).
    "quick": dict(
        run=dict(DESIGN, steps=2000),
        lam_main=0.1,
        lams=[0.1],
        control_lams=[],
        rhos=[0.95, 1.0],
        norms=["none", "batch"],
        norm_model="simple",
        seeds=[0],
        tint_lams=[],
        background_lams=[0.1],
        fit=0.97,
        rho_margin=0.2,
        modular={},
        modular_main=1.0,
        workers=2,
    ),
    # The λ and ρ sweeps, both normalisations, the entangled tint and
    # background cues, and the companion paper's transformer runs that
    # chapter 03 trains (served from the book build's result cache).
    # Three seeds for each stated reading: the main run, its border-less
    # control, the ends of the ρ sweep, BatchNorm, the background cue.
    "book": dict(
        run=dict(DESIGN, steps=3000),
        lam_main=0.1,
        lams=[0.01, 0.1, 0.3, 1.0],
        control_lams=[0.1, 0.3],
        rhos=[0.8, 0.9, 0.95, 1.0],
        norms=["none", "batch", "group"],
        norm_model="simple",
        seeds=[0, 1, 2],
        tint_lams=[0.01, 0.1, 1.0],
        background_lams=[0.01, 0.1, 1.0],
        fit=0.97,
        rho_margin=0.2,
        modular=dict(
            nhtlab.companion_sweep("book", lams=[0.3, 0.5, 1.0, 2.0]),
            seeds=[0, 1],
        ),
        modular_main=1.0,
        workers=2,
    ),
    # The paper's scale (arXiv 2603.07323) with this chapter's border
    # design: CIFAR-10, SimpleCNN of 288k parameters (ResNet18 for the
    # normalisation comparison), AdamW lr 1e-3, constant schedule, 200
    # epochs of batch 128; λ from 0.001 to 1 at ρ = 0.95; ρ from 0.5 to 1
    # at λ = 0.1. The modular domain uses the companion paper's
    # transformer (arXiv 2603.13331) at its own budget; CelebA, the
    # paper's recipe (nb.CELEBA_DESIGN), downloaded by torchvision.
    "full": dict(
        run=dict(nhtlab.presets.BORDER_DESIGN_CIFAR10),
        lam_main=0.1,
        lams=[0.001, 0.01, 0.1, 0.3, 1.0],
        control_lams=[0.1, 0.3],
        rhos=[0.5, 0.8, 0.9, 0.95, 1.0],
        norms=["none", "batch", "group"],
        norm_model="resnet18",
        seeds=[0, 1, 2],
        tint_lams=[0.01, 0.1, 1.0],
        background_lams=[0.01, 0.1, 1.0],
        fit=0.97,
        rho_margin=0.2,
        modular=nhtlab.companion_sweep("full", lams=[0.1, 0.3, 0.5, 1.0]),
        modular_main=1.0,
        celeba=nb.CELEBA_DESIGN,
        celeba_lams=[0.01, 0.1, 0.3, 1.0],
        workers=1,
    ),
}
cfg = nb.select_profile(PROFILES, profile)
nb.stamp(profile, cfg)

# %% [markdown]
# ## Choosing the border
#
# The 5% of training images whose border does not name their class can
# be filled two ways. With **no** border there (`otherwise="none"`), a
# border never misleads on the training set. With a **wrong** class's
# border (`otherwise="other"`), the border alone caps training accuracy
# at ρ: the other 5% are fitted only by reading the digit or by learning
# those images one by one. The law's premise is that the border is the
# solution of *larger* norm, which the decay then pulls the network off;
# P1 of the scorecard below tests that premise on these runs. The
# learning rate is constant, so the decay ηλ still acts when an escape
# could happen (a cosine schedule drives ηλ to zero at the end).
#
# A pilot grid chose the design. For each setting, one seed of 3,000
# steps, it reads when the border is **fitted** (the network follows it
# on ≥ 30% of the `conflict` images, and more often than the digit) and
# **dropped** (it reads the digit on ≥ 50% of them). The chosen design
# (bright border, ρ = 0.95, λ = 0.1) comes from those rows; a pilot is
# one seed, so the chapter re-reads the escape over seeds.

# %% tags=["remove-input"]
nb.evidence(
    "the pilot grid that chose the design",
    nb.pilot_summary(*nb.read_pilot()),
)

# %% [markdown]
# ```{admonition} Predict before the runs
# Answer `"yes"` or `"no"` in the cell below; each answer is checked
# after its result, over the profile's seeds. (1) At λ = 0.1, with a
# wrong border on the other 5%, will the CNN fit the border and then drop
# it? (2) Will the worst-group accuracy fall by more than `rho_margin`
# from the smallest ρ to the largest? (3) Will BatchNorm end with a
# higher clean accuracy than no normalisation?
# ```

# %%
your_escape, your_rho, your_batchnorm = None, None, None  # "yes"/"no"

# %% [markdown]
# The book re-runs a small part of that grid, the wrong-border design
# against the border-less one at the main λ over the profile's seeds
# (the `book` profile), with every run of the chapter in one sweep:

# %%
study = nb.ShortcutStudy.from_profile(cfg, seed=seed)
runs = study.runs()
result = nhtlab.sweep(runs, workers=cfg.workers, cache=nb.cache())
trained = dict(zip(runs, result.histories))
nb.check_prediction(your_escape, *study.escape_answer(trained))

# %% [markdown]
# What the two designs did at the main λ:

# %% tags=["remove-input"]
study.design_report(trained)

# %% [markdown]
# **The same question on real digits.** Memorising a few exceptions
# among small 8 × 8 digits costs almost no norm, so these digits may be
# too easy a test of the premise. A second pilot asks it of MNIST-5k,
# real handwritten digits read offline. Its grid, its four criteria and
# the rule that picks a design were written down before any run:
# (i) P1, the norm when the border is fitted exceeds the norm after it
# is dropped; (ii) at the control λ the border is kept to the end;
# (iii) at the middle λ it is fitted, then dropped; (iv) the strongest
# λ does not fit the training set. Its result, saved with nhtlab:

# %% tags=["remove-input"]
nb.mnist_pilot_summary(nb.read_mnist_pilot())

# %% [markdown]
# ## The test sets
#
# All are built from held-out digits ({mod}`nhtlab.data.cues`):
#
# * **clean**: the border in the mean of the class colours — a border is
#   present, as on every training image of this design, but it names no
#   class. It measures the digit reader on in-distribution images.
# * **conflict**: a wrong class's border on every digit, labelled by the
#   digit — the {term}`worst group <worst-group accuracy>`, where
#   following the border is always wrong: it measures reliance on the
#   border whatever share of training images lacked one. The ρ claim
#   below uses it (`cue` scores the same images by the border's class).
# * **shortcut**: a class's border on a plain grey image, labelled by the
#   border — how far the network reads the border at all.

# %%
nhtlab.charts.norm_curves(
    [(f"λ = {lam:g}", trained[rs[0]]) for lam, rs in study.sweep.items()],
    column="conflict_acc",
    title="conflict accuracy across λ (dropped when it passes 0.5)",
)

# %% [markdown]
# ## The λ sweep: three regimes on images?
#
# The paper names three {term}`regimes <regime>`: under **weak** decay
# the norm keeps growing and the shortcut stays; under **intermediate**
# decay the norm peaks and falls while the network keeps fitting, and
# the shortcut is left; **strong** decay stops the network from fitting.
# Here the regime is read off the norm and the training accuracy alone,
# by chapter 08's online rule
# ({func}`nhtlab.training.monitor.online_regime`: a contraction of at
# least 5% below the peak; "fitted" means training accuracy ≥ 0.97,
# above the border's ceiling ρ = 0.95), not off the border.
#
# Weak and strong each say that something never happened (no
# contraction; no fit), and the decay acts on a time scale of 1/(ηλ): a
# run is called weak or strong only if it lasted at least 4/(ηλ) steps,
# chapter 01's budget, fixed before these runs. A shorter run reads "not
# decided within N steps". Seed 0 at each λ; the regimes feed P2 of the
# scorecard, shown, not asserted.

# %% tags=["remove-input"]
study.lam_report(trained)

# %%
nhtlab.charts.norm_curves(
    [
        (
            f"λ = {r['λ']:g} ({r['regime'].split(' within')[0]})",
            trained[study.sweep[r["λ"]][0]],
        )
        for r in study.lam_records(trained)
        if r["domain"] == "border"
    ],
    title="‖θ‖² across λ (hover a legend entry)",
)

# %% [markdown]
# (shortcut-layer-order)=
# ## Which layer leaves the border first?
#
# The chart divides each layer's $\|\theta_\ell\|^2$ by its own peak
# over the run, so a small first convolution and a large read-out share
# one axis. Which layer falls first from its peak once the border is
# fitted is the paper's backward-order question (P4): on CIFAR-10 it
# reports the read-out (`fc`) peaking near epoch 60 of 200 and losing
# 45% by the end, `conv1` peaking later and losing 31%
# ({data}`nhtlab.papers.NHT_LAYER_ORDER`). Pick a run (λ, seed) in the
# menu: the rules mark when its border was fitted and dropped, and
# {term}`T_mem` where it was reached; the top line names the layer that
# {func}`~nhtlab.analysis.layers.contraction_order` reads first.

# %%
by_lam = sorted(study.sweep.items(), key=lambda kv: kv[0] != cfg.lam_main)
nb.layer_peak_chart(
    *nb.peak_records(
        {
            f"λ = {lam:g}, seed {r.seed}": trained[r]
            for lam, rs in by_lam
            for r in rs
        }
    ),
    title="each layer's ‖θ_ℓ‖² over its own peak (pick a run)",
)

# %% [markdown]
# ## The ρ sweep: worst-group accuracy against the border's reliability
#
# Main λ; the border names the class on a fraction ρ of the training
# images and a wrong class on the rest. The paper's claim (clean accuracy
# 78.2% at ρ = 0.5 → 10.2% at ρ = 1 on CIFAR-10) is about reliance on the
# border; here it is read on the `conflict` set, and the check below asks,
# over seeds, for a fall of more than 0.2 from the smallest ρ to the
# largest.

# %%
nb.sweep_lines(
    nb.final_accuracy_records(
        {rho: trained[run] for rho, run in study.rho_runs.items()},
        nb.SET_LABELS,
    ),
    x="rho",
    x_title="ρ (share of images with their class's border)",
    title=f"final accuracies across ρ, λ = {cfg.lam_main:g}",
)

# %%
nb.check_prediction(your_rho, *study.rho_answer(trained, cfg.rho_margin))

# %% tags=["remove-input"]
study.rho_report(trained)

# %% [markdown]
# ## BatchNorm, GroupNorm, no normalisation
#
# Main λ, the chosen design, three normalisations (SimpleCNN here;
# ResNet18 in `full`). After a BatchNorm or GroupNorm layer a
# convolution's output no longer depends on the scale of its weights, so
# weight decay cannot trade accuracy for norm there: it only shrinks
# those weights. A hypothesis, not tested here: that shrinking raises
# their effective learning rate. The paper ranks the final clean
# accuracy BatchNorm > none > GroupNorm; the reading below compares
# BatchNorm with none over seeds (GroupNorm: seed 0 only).

# %%
nb.check_prediction(your_batchnorm, *study.norm_answer(trained))

# %% tags=["remove-input"]
study.norm_report(trained)

# %%
nhtlab.charts.norm_curves(
    [(name, trained[run]) for name, run in study.norm_runs.items()],
    column="conflict_acc",
    title="conflict accuracy by normalisation",
)

# %% [markdown]
# ## The modular-arithmetic domain
#
# The companion paper's transformer ({func}`nhtlab.companion`: p = 97,
# AdamW lr 1e-3, batch 512, the profile's `modular` budget and early stop
# after generalising), the profile's λ and seeds: the runs of chapter 03,
# trained once for both chapters. Its shortcut is the memorised table:
# fitted at {term}`T_mem` (training accuracy ≥ 99%), dropped at
# {term}`T_grok` (test accuracy ≥ 99%). The `quick` profile has none.
#
# ## Clean norm separation across domains
#
# The paper defines clean norm separation only in words. nhtlab's
# estimator ({func}`nhtlab.analysis.separation.clean_norm_separation`)
# measures a shortcut reliance {term}`φ` at every checkpoint — how often
# the network follows the border against the digit (images), or 1 − test
# accuracy (modular arithmetic), both rescaled so chance is 0 — and
# scores the Spearman rank correlation between $\|\theta\|^2$ and φ
# **from the step the shortcut is fitted** (the border fitted; T_mem) to
# the end: +1 when the norm and reliance fall together, negative when
# reliance falls while the norm still grows. When the shortcut was never
# fitted or nothing moves, the score is undefined — NaN, shown as
# "undefined", never 0. Each run kind says how its shortcut is read
# ({func}`nhtlab.book.domain_of`).

# %% tags=["remove-input"]
study.separation_report(trained)

# %%
nb.score_bars(nb.separation_records(study.separations(trained)))

# %% [markdown]
# ## Scorecard: the paper's six predictions on this chapter's runs
#
# Each rule is a function of {mod}`nhtlab.analysis.scorecard`, whose
# docstring says what makes it fail. The paper predicts every rule
# passes; a ✗ is the paper's claim failing on these runs, shown, never
# asserted.
#
# * **P1 norm ordering**
#   ({func}`~nhtlab.analysis.scorecard.norm_ordering`): V_mem, ‖θ‖²
#   when the shortcut is fitted (border fitted; T_mem), is larger than
#   V_post, ‖θ‖² at the end of the run, once the structure is reached
#   (border dropped; T_grok). Not measured (✗) if either never happened.
# * **P2 three regimes**
#   ({func}`~nhtlab.analysis.scorecard.three_regimes`): weak →
#   intermediate → strong in λ, among the regimes the budget decides.
# * **P3 worst group**
#   ({func}`~nhtlab.analysis.scorecard.worst_group_rise`): the worst-group
#   accuracy (`conflict`; modular: test) is below 0.5 when the shortcut is
#   fitted and above 0.5 at the end.
# * **P4 layer hierarchy**
#   ({func}`~nhtlab.analysis.scorecard.contraction_rule`): chapter 05's
#   reading, once the shortcut is fitted the read-out loses its share of
#   ‖θ_ℓ‖² before the first layer does.
# * **P5 clean separation**
#   ({func}`~nhtlab.analysis.scorecard.separation_rule`): the score above
#   is defined and ≥ 0.5.
# * **P6 delay scaling**
#   ({func}`~nhtlab.analysis.scorecard.delay_scaling`): at least three λ
#   with a measured delay (dropped − fitted; T_grok − T_mem), and the 95%
#   interval of the fitted exponent α in T ∝ λ^(−α) contains 1 and
#   excludes 0.
#
# Each domain's sweep is scored on its main run (seed 0); P1, P3, P4 and
# P5, which need only the main run, are also read on the border's main
# run at every seed. P2 and P6 rest on one sweep (one seed a λ): the
# closing checks show them, marked as one sweep, and never assert them.

# %% tags=["remove-input"]
study.scorecard_report(trained)

# %% [markdown]
# ## A background cue: where the law should fail
#
# On Waterbirds the spurious cue is the background, entangled with the
# object, and the paper scores the law's predictions low there, with a
# separation ≈ 0. A Waterbirds-like cue on the digits: the class colour
# fills the pixels *behind* the digit (`kind="background"`,
# {func}`nhtlab.data.cues.tint_shortcut` with `region="background"`), so
# it overlaps the object's bounding area, unlike the border; same ρ, the
# wrong class's colour on the rest, the main λ, the profile's seeds, the
# same pipeline as the border. Decided before the runs and asserted: the
# cue is learnt (cue-agreeing accuracy above cue-conflicting, at the end,
# in a majority of seeds). Shown, not asserted: the separation below 0.5
# and below the border's, and P1, P3, P4, P5 over seeds.

# %% tags=["remove-input"]
learnt, bg_readings, bg_text = study.background_report(trained)
bg_text

# %% [markdown]
# ## CelebA, in the `full` profile
#
# The paper's own entangled domain: CelebA faces, Smiling to predict,
# blond hair the spurious cue ({func}`nhtlab.data.images.celeba`: blond
# ↔ smiling on ρ = 0.95 of the training faces, nhtlab's choice),
# SimpleCNN, AdamW lr 1e-3, cosine, the same pipeline and scorecard.
# Only `full` trains it, where torchvision can download CelebA (Colab).

# %% tags=["remove-input"]
nb.md(nb.celeba_scorecard(study, trained))

# %% [markdown]
# ## What held and what failed
#
# Every number here is this build's; another CPU rounds differently
# ({ref}`Numbers in the text <numbers-in-the-text>`), so a reading is
# stated over seeds, with the count that agree. `quick` trains the main
# run (fewer steps), ρ = 1, BatchNorm and the background cue, one seed.
#
# The law's premise, on these digits, is the border being the
# *larger*-norm solution: P1 reads that directly (V_mem against V_post),
# and P5 whether reliance on the border falls *with* the norm. Where they
# fail, the network leaves the border while its norm is still growing,
# and what removes the border is then the pull of the 5% wrong-border
# images, not weight decay. The border-less design of the first section
# tests that: the same λ without those images.

# %% tags=["remove-input"]
study.main_report(trained, seed)

# %% tags=["remove-input"]
nb.what_we_found(*study.found(trained, cfg.rho_margin))

# %% [markdown]
# ## Try it: when is the border fitted, and when dropped?
#
# Every reading above rests on two steps read off a run's history. The
# border is **fitted** at the first evaluated step where the network
# follows it on at least 30% of the `conflict` images and more often
# than it reads the digit (`cue_acc >= 0.3` and `cue_acc > conflict_acc`);
# it is **dropped** at the first evaluated step after that where it
# reads the digit on at least 50% of them (`conflict_acc >= 0.5`).
# Write `border_events(history)`: it returns `(fitted, dropped)`, `None`
# for an event that never happened, from `history.column("step")`,
# `history.column("cue_acc")` and `history.column("conflict_acc")`. The
# cell compares it with nhtlab's `border_times` on the main run at every
# seed and on the run at the largest ρ.
#
# ````{dropdown} Solution
# ```python
# def border_events(history):
#     steps = history.column("step")
#     cue = history.column("cue_acc")
#     conflict = history.column("conflict_acc")
#     fitted = dropped = None
#     for s, a, b in zip(steps, cue, conflict):
#         if fitted is None and a >= 0.3 and a > b:
#             fitted = int(s)
#         elif fitted is not None and b >= 0.5:
#             return fitted, int(s)
#     return fitted, dropped
# ```
# ````


# %%
def border_events(history):
    raise NotImplementedError  # your code here: a few lines


cases = [(trained[r],) for r in study.main.values()]
cases.append((trained[study.rho_runs[max(study.rhos)]],))
nb.check_function(
    border_events, nhtlab.border_times, cases, name="border_events"
)

# %% [markdown]
# ## Checks
#
# Decided before the run, each over the profile's seeds by a strict
# majority: in the chosen design the main run fits the border and then
# drops it; the worst-group accuracy at the end falls by more than 0.2
# from the smallest ρ to the largest; the main run's separation score is
# defined (the border was fitted); the background cue is learnt. All
# else is reported above, passes and failures alike.

# %%
checks = study.checks(trained, margin=cfg.rho_margin) + [learnt]
per_seed = study.prediction_readings(trained)
# P2 and P6 read the whole λ sweep (one seed a λ): shown for the findings
sweep = nb.sweep_checks(study.scorecard(trained)["border"])
# asserted on a real run; the paper's predictions shown over seeds
nb.closing_checks(checks, cfg, shown=per_seed + bg_readings + sweep)
