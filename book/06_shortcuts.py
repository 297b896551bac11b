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
# **larger norm** than the {term}`structured solution`, so the data must
# make the border such a shortcut first. This chapter measures which
# border design does that at CPU scale (scikit-learn's digits, 8 × 8
# upsampled to 10 × 10, a one-pixel border), chooses one, runs the
# paper's experiments in it, and ends with a scorecard of the six
# {term}`predictions <P1–P6>`, each cell showing the number it rests on.

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
# What makes a border an expensive shortcut? In the earlier design the
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
# them): one seed per row, 3,000 steps, made by
# `benchmarks/probe_shortcuts.py` and kept with nhtlab (`read_probe`)
# with its machine and version. The table below is that file, and the
# sentence heading it is read from it. The chosen design (bright border,
# ρ = 0.95, λ = 0.1) was picked from those rows; a probe is one seed on
# one machine, so the chapter re-reads the escape over seeds.

# %% tags=["remove-input"]
nb.probe_summary(*nb.read_probe())

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
# The book re-runs a small part of that grid: the wrong-border design
# against the border-less one (`otherwise="none"`), and the main setting
# at every seed of the profile, all in one sweep:

# %%
study = nb.ShortcutStudy.from_profile(cfg, seed=seed)
runs = study.runs()
result = nhtlab.sweep(
    runs,
    workers=cfg.workers,
    cache=nhtlab.default_cache(),
)
trained = dict(zip(runs, result.histories))
nb.md(
    f"{len(runs)} runs ({sum(row.cached for row in result)} from the"
    " result cache)."
)

# %% [markdown]
# The small grid (seed 0) and the two designs at the main λ over the
# profile's seeds: the chosen design rests on the border being dropped
# with a wrong border on the 5% and kept without one.

# %% tags=["remove-input"]
COLUMNS, FORMATS = list(nb.RECORD_COLUMNS), nb.RECORD_FORMATS
small_grid = study.small_grid(trained)
nb.md(
    (
        nb.table(
            small_grid,
            columns=["otherwise", "λ", *COLUMNS],
            formats={**FORMATS, "λ": "{:g}"},
        )
        if small_grid
        else f"The `{profile}` profile trains no small grid (the"
        " `book` profile does); the designs over seeds:"
    )
    + "\n\n"
    + nb.table(nb.reading_rows(study.design_readings(trained)))
)

# %%
nb.check_prediction(your_escape, *study.escape_answer(trained))

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
# The paper's three {term}`regimes <regime>`: **weak** decay lets the
# norm grow and the shortcut stay; **intermediate** decay makes the norm
# peak and fall while the network keeps fitting; **strong** decay stops
# it from fitting. Image runs are read by
# {func}`nhtlab.training.monitor.online_regime` off the norm and the
# training accuracy (a contraction of at least 5% below the peak;
# "fitted" means training accuracy ≥ 0.97, above the border's ceiling
# ρ = 0.95: the exceptions are fitted too): chapter 08's online rule,
# not chapter 02's {ref}`diagnose_regime <regime-rule>`, which needs test
# accuracy to reach 99% (the modular rows keep it). Seed 0 at each λ; the
# regimes feed P2 of the scorecard, displayed, not asserted.

# %% tags=["remove-input"]
lam_rows = study.lam_records(trained)
nb.table(
    lam_rows,
    columns=["domain", "λ", "regime", *COLUMNS, "contraction"],
    formats={**FORMATS, "λ": "{:g}", "contraction": "{:.1%}"},
)

# %%
nhtlab.charts.norm_curves(
    [
        (
            f"λ = {r['λ']:g} ({r['regime']})",
            trained[study.sweep[r["λ"]][0]],
        )
        for r in lam_rows
        if r["domain"] == "border"
    ],
    title="‖θ‖² across λ (hover a legend entry)",
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
nhtlab.charts.sweep_lines(
    nb.final_accuracy_records(
        {rho: trained[run] for rho, run in study.rho_runs.items()},
        nb.SET_LABELS,
    ),
    x="rho",
    x_title="ρ (share of images with their class's border)",
    title=f"final accuracies across ρ, λ = {cfg.lam_main:g}",
)

# %% tags=["remove-input"]
nb.table(
    nb.sweep_records(study.rho_runs, trained, key="ρ"),
    columns=["ρ", *COLUMNS],
    formats=FORMATS,
)

# %%
nb.check_prediction(your_rho, *study.rho_answer(trained, cfg.rho_margin))

# %% [markdown]
# ## BatchNorm, GroupNorm, no normalisation
#
# Main λ, the chosen design, three normalisations (SimpleCNN here;
# ResNet18 in `full`). After a BatchNorm or GroupNorm layer a
# convolution's output no longer depends on the scale of its weights, so
# weight decay cannot trade accuracy for norm there: it only shrinks those
# weights, which raises their effective learning rate. The paper ranks the
# final clean accuracy BatchNorm > none > GroupNorm; the reading below
# compares BatchNorm with none over seeds (GroupNorm: seed 0 only).

# %% tags=["remove-input"]
bn = study.norm_reading(trained)
nb.md(
    nb.table(
        nb.sweep_records(study.norm_runs, trained, key="norm"),
        columns=["norm", *COLUMNS, "norm peak step", "contraction"],
        formats={**FORMATS, "contraction": "{:.1%}"},
    )
    + "\n\nPaper (ResNet18, CIFAR-10, clean): "
    + ", ".join(
        f"{n} {v:.1%}"
        for n, v in nhtlab.papers.NHT_PAPER["clean_by_norm"].items()
    )
    + (f". Ours: {nb.reading_sentence(bn)}." if bn else ".")
)

# %%
nb.check_prediction(your_batchnorm, *study.norm_answer(trained))

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
# served here from the {term}`result cache`. Its shortcut is the memorised
# table: fitted at {term}`T_mem` (training accuracy ≥ 99%), dropped at
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
sep_rows = nb.separation_records(study.separations(trained))
nb.md(
    nb.table(
        sep_rows,
        columns=[
            "domain",
            "score text",
            "start_step",
            "n_points",
            "phi_drop",
        ],
        headers={
            "score text": "score",
            "start_step": "from step",
            "n_points": "points",
            "phi_drop": "φ drop",
        },
        formats={"phi_drop": "{:.2f}"},
    )
    + "\n\nPaper: "
    + ", ".join(
        f"{d} {v}"
        for d, v in nhtlab.papers.NHT_PAPER["separation"].items()
    )
    + "."
)

# %%
nhtlab.charts.score_bars(sep_rows)

# %% [markdown]
# ## Scorecard: the paper's six predictions on this chapter's runs
#
# Each rule is a function of {mod}`nhtlab.book.scorecard`, whose
# docstring says what makes it fail; each cell prints the number the rule
# compared. The paper predicts every rule passes; a ✗ is the paper's
# claim failing on these runs, displayed, never asserted.
#
# * **P1 norm ordering**
#   ({func}`~nhtlab.book.scorecard.norm_ordering`): ‖θ‖² when the
#   shortcut is fitted (border fitted; T_mem) is larger than ‖θ‖² at the
#   end of the run, once the structure is reached (border dropped;
#   T_grok). Not measured (✗) if either never happened.
# * **P2 three regimes**
#   ({func}`~nhtlab.book.scorecard.three_regimes`): weak →
#   intermediate → strong in λ.
# * **P3 worst group**
#   ({func}`~nhtlab.book.scorecard.worst_group_rise`): the worst-group
#   accuracy (`conflict`; modular: test) is below 0.5 when the shortcut is
#   fitted and above 0.5 at the end.
# * **P4 layer hierarchy**
#   ({func}`~nhtlab.book.scorecard.contraction_rule`): chapter 05's
#   reading, once the shortcut is fitted the read-out loses its share of
#   ‖θ_ℓ‖² before the first layer does.
# * **P5 clean separation**
#   ({func}`~nhtlab.book.scorecard.separation_rule`): the score above
#   is defined and ≥ 0.5.
# * **P6 delay scaling**
#   ({func}`~nhtlab.book.scorecard.delay_scaling`): at least three λ
#   with a measured delay (dropped − fitted; T_grok − T_mem), and the 95%
#   interval of the fitted exponent α in T ∝ λ^(−α) contains 1 and
#   excludes 0.
#
# The table scores each domain's sweep (main run: seed 0); the second
# reads P1, P3, P4 and P5, which need only the main run, on the border's
# main run at every seed. P2 and P6 rest on one sweep, so the chapter
# states no reading of them.

# %% tags=["remove-input"]
scorecard = study.scorecard(trained)
per_seed = study.prediction_readings(trained)
paper_total = nhtlab.papers.NHT_PAPER["scorecard"]
nb.md(
    nb.table(nb.scorecard_rows(scorecard))
    + "\n\nPaper: "
    + ", ".join(f"{d} {k}/6" for d, k in paper_total.items())
    + ".\n\n"
    + nb.table(nb.reading_rows(per_seed))
)

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
WORST = {"border": "{:.2f}", "background": "{:.2f}"}  # worst-group acc
HEAD = {"separation": "background separation"}
learnt, bg_readings = study.background_readings(trained)
bg_runs = [r for rs in study.background.values() for r in rs]
nb.md(
    nb.table(study.worst_group_rows(trained), formats=WORST, headers=HEAD)
    + f"\n\n{learnt}.\n\n"
    + nb.table(nb.reading_rows(bg_readings))
    + "\n\nPaper: Waterbirds"
    f" {paper_total['Waterbirds']}/6, separation"
    f" {nhtlab.papers.NHT_PAPER['separation']['Waterbirds']}. The"
    f" background runs: {nb.ledger_cost(bg_runs)}."
)

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
# What the premise of the law needs, on these digits, is the shortcut
# being the *larger*-norm solution: P1 reads that directly (‖θ‖² when the
# border is fitted against ‖θ‖² at the end), and P5 whether reliance on
# the border falls *with* the norm. Where they fail, the network leaves
# the border while its norm is still growing: what removes the border is
# then the pressure of the 5% exceptions, not weight decay.

# %% tags=["remove-input"]
main_rows = nb.sweep_records({cfg.lam_main: study.main[seed]}, trained)
card = scorecard["border"]
nb.md(
    f"Main run (seed {seed}, λ = {cfg.lam_main:g}):\n\n"
    + nb.table(main_rows, columns=COLUMNS, formats=FORMATS)
    + f"\n\nP1 on it: {card['P1 norm ordering']}; P5:"
    f" {card['P5 clean separation']}. Over seeds: "
    + "; ".join(
        nb.reading_sentence(r)
        for r in per_seed
        if r.name[:2] in ("P1", "P5")
    )
    + "."
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
# asserted on a real run; the paper's predictions shown over seeds
nb.closing_checks(checks, cfg, shown=per_seed + bg_readings)
