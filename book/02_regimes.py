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
# # Three regimes
#
# The first chapter trained one network at one weight decay, λ = 1, and
# watched it grok. The NHT paper {cite}`khanh2026nht` predicts that
# {term}`λ` decides *whether* that happens at all, and names three
# {term}`regimes <regime>`:
#
# * **{term}`weak`** decay: nothing pulls hard enough on the weights. The
#   network memorises, its {term}`squared norm <‖θ‖²>` $\|\theta\|^2$
#   keeps growing (or stays put), and it stays on the memorising
#   {term}`shortcut`;
# * **{term}`intermediate`** decay: the network memorises,
#   $\|\theta\|^2$ then contracts, and the network generalises late:
#   {term}`grokking`;
# * **{term}`strong`** decay: the decay suppresses learning: the network
#   never fits its training set.
#
# This chapter sweeps λ over three orders of magnitude on the companion
# paper's setting {cite}`khanh2026delay` (the transformer of the first
# chapter, $(a+b) \bmod 97$, minibatches of 512), diagnoses each run with
# explicit rules, and lets you walk through the sweep one λ at a time.
#
# ```{admonition} Predict before the runs
# Two questions, answered by this chapter's runs. (1) Which is the
# smallest λ of the sweep at which most seeds are intermediate (the λ
# values are in the profile below, or `"none"`)? (2) Do most seeds at
# the largest λ memorise their table within its budget (`"yes"` or
# `"no"`)? Set `your_prediction` and `your_strong_prediction` in the cell
# below the parameters; the cells after the regime table check them.
# ```

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

    nb.colab_launch("02_regimes", keep=KEEP_ON_DRIVE)

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see Run a chapter
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`Run a chapter <profiles>`.

# %%
import nhtlab
from nhtlab import book as nb

your_prediction = None  # a λ of the sweep, as text ("0.1"), or "none"
your_strong_prediction = None  # "yes" or "no"

# %% tags=["hide-input"]
# The companion grid that chapters 1-3, 6 and 7 share
# (nhtlab.training.presets.COMPANION_SWEEPS): a step budget per λ, long
# where grokking is expected, short where a few thousand steps show what
# the norm does after memorising; the same λ is the same run in every
# chapter, so the result cache trains it once. quick: η = 2e-3 (a point
# of the companion's η sweep), three λ, one seed. book: the companion's
# η = 1e-3, seven λ (0.3 and 0.5 are chapter 03's runs, shared through the
# result cache), three seeds. full: the companion's λ grid at its own
# budget.
PROFILES = {
    "quick": nhtlab.companion_sweep("quick"),
    "book": nhtlab.companion_sweep(
        "book", lams=[0.01, 0.1, 0.3, 0.5, 1.0, 2.0, 5.0]
    ),
    "full": nhtlab.companion_sweep("full"),
}
cfg = nb.select_profile(PROFILES, profile)
nb.stamp(profile, cfg)

# %% [markdown]
# ## The sweep
#
# One call trains the whole grid of λ × seeds. `nhtlab.sweep` hands
# independent runs to a pool of processes (one per core, one torch thread
# each: small models train fastest that way). Runs at λ where grokking is
# expected within the budget get the long budget and stop a fixed number
# of steps after {term}`T_grok`; the others get a short budget, which is
# enough to see what their norm does after memorising. Every λ gets the
# budget it has in the other chapters, so the {term}`result cache` shares
# the runs. Every run starts from PyTorch's default initialisation; the
# seed changes the split, the initial weights and the minibatches.

# %%
runs = [
    nhtlab.companion(
        lam,
        seed + s,
        lr=cfg.lr,
        steps=steps,
        stop_after=cfg.stop_after,
        compile=cfg.compile,
    )
    for lam, steps in cfg.budgets.items()
    for s in cfg.seeds
]
result = nhtlab.sweep(runs, workers=2, cache=nhtlab.default_cache())
result

# %% [markdown]
# (regime-rule)=
# ## Diagnosing a run, after memorisation
#
# In this network $\|\theta\|^2$ starts large: the token embeddings,
# initialised with unit variance, hold most of it. Under strong enough
# decay the norm is largest at initialisation and falls from step 0;
# under weak decay it can rise above its start while the network learns
# (the table after the diagnosis says which runs do). Either way, "the
# norm peaks then decays" does not separate the regimes: a peak at step 0
# says nothing. What separates them is what the norm does **after
# {term}`T_mem`**. `nhtlab.diagnose_regime` reads a history with four
# rules; the thresholds are parameters, with these defaults:
#
# 1. training accuracy never reaches 99% within the budget → **strong**;
# 2. memorised, generalised (test accuracy ≥ 99%) at least `min_delay`
#    steps later (default `200`), and $\|\theta\|^2$ fell by at least
#    `min_contraction` (default `0.2`, a fifth) between $T_\text{mem}$ and
#    $T_\text{grok}$ → **intermediate**;
# 3. memorised, not generalised, and $\|\theta\|^2$ never fell more than
#    `min_contraction` below its value at $T_\text{mem}$ → **weak**;
# 4. anything else → **{term}`undetermined`**, with the reason (for
#    instance a norm still contracting when the budget ends, with no
#    generalisation yet). Such a run is shown, never forced into a
#    regime, and the order check skips it.
#
# Every diagnosis is "within this budget": the companion's λ = 2 runs
# memorise only after about 21,000 steps (7 seeds of 10) and grok after
# about 44,000 (3 of 10).
#
# This is the book's rule for judging a finished run that has a test set:
# chapters 01 and 03 and the modular runs of chapter 06 apply it too. A
# run still training, or one whose test accuracy has no 99% to reach,
# needs a rule that reads only the norm and the training accuracy seen so
# far: `online_regime`, which chapter 06 applies to its image runs and
# chapter 08's Monitor to your model. It counts a fall of the norm from
# its peak, which on this network is often step 0, so it cannot make the
# distinction this rule makes; the {term}`glossary <regime>` sets the two
# rules side by side.

# %%
table = nhtlab.regime_table(result)
records = nb.regime_records(table, nhtlab.papers.COMPANION_GROK_COUNTS)
nb.table(
    records,
    columns=[
        "λ",
        "seed",
        "regime",
        "T_mem",
        "T_grok",
        "V_mem",
        "end",
        "contraction",
        "best test",
        "paper grokked",
    ],
    formats={
        "λ": "{:g}",
        "V_mem": "{:,.0f}",
        "end": "{:,}",
        "contraction": "{:.0%}",
        "best test": "{:.2f}",
    },
    headers={
        "V_mem": "‖θ‖² at T_mem",
        "paper grokked": "companion grokked",
    },
)

# %%
nb.check_prediction(your_prediction, *nb.intermediate_answer(table))

# %%
nb.check_prediction(
    your_strong_prediction, *nb.memorise_answer(table, max(cfg.budgets))
)

# %% [markdown]
# Why each run got its label:

# %% tags=["remove-input"]
nb.table(records, columns=["λ", "seed", "reason"], formats={"λ": "{:g}"})

# %% [markdown]
# Where the norm is largest at initialisation, and where it rises first:

# %% tags=["remove-input"]
nb.table(nb.norm_start_records(table), formats={"λ": "{:g}"})

# %% [markdown]
# ## The norm curves, coloured by regime
#
# Each line is one run's $\|\theta\|^2$ on a log scale. Click a regime in
# the legend to pick it out. Runs of one seed start from the same
# weights, whatever their λ (another seed starts at a slightly different
# norm). Compare what each does after its network has memorised: a weak
# run levels off, an intermediate run keeps contracting until it
# generalises, and a strong run is pulled down so hard that its network
# never fits its table.

# %%
curves = nb.regime_curves(result, table)
nhtlab.charts.regime_norm_curves(curves)

# %% [markdown]
# ## Walk through the sweep
#
# Pick a λ with the buttons under the chart, labelled with the sweep's
# λ values in increasing order. The top panel shows train and test
# accuracy of each seed, the bottom panel $\|\theta\|^2$, coloured by
# diagnosed regime.

# %%
nhtlab.charts.lambda_slider(curves, sorted(cfg.budgets))

# %% [markdown]
# ## What to read in the sweep
#
# * The paper predicts the regimes **in the order** weak, intermediate,
#   strong as λ grows; the checks below test it on every run.
# * On the weak side the defining property is no contraction after
#   memorising, not a growing norm: read the smallest λ's contraction in
#   the table above, and whether its norm rose first.
# * A run that memorised and whose norm is still contracting when its
#   budget ends, without having generalised, is **undetermined**: the
#   rules refuse to call it intermediate on evidence the budget did not
#   reach. The companion's 50,000-step runs at λ = 0.1 show what comes
#   next there: all ten seeds grok, after about 12,700 steps.
# * A run called strong never reached 99% training accuracy within its
#   budget. Read its best test accuracy beside it: when the test accuracy
#   climbs *with* the training accuracy, the network is not memorising
#   first but learning the rule slowly, without a shortcut phase. (The
#   companion's λ = 2 runs memorise after about 21,000 steps in 7 seeds
#   of 10.)
# * The boundaries depend on the budget. Every diagnosis reads "within
#   this budget".
#
# The regime at each λ, counted over the seeds:

# %% tags=["remove-input"]
nb.table(nb.regime_seed_records(table), formats={"λ": "{:g}"})

# %% [markdown]
# ## Checks
#
# Asserted on this notebook's runs, each of which fails on a sweep without
# the regimes: at the smallest λ every seed is weak (a run that
# contracted or generalised fails), at λ = 1 every seed is intermediate,
# at the largest λ every seed is strong (a run that fits its table
# fails); sorted by λ the diagnosed regimes never step backwards in weak
# → intermediate → strong; no run diverged.

# %%
lams = sorted(cfg.budgets)
expected = {lams[0]: "weak", 1.0: "intermediate", lams[-1]: "strong"}
readings = nb.regime_readings(table, expected, rule="all")
checks = [
    nb.Check(f"{r.name} is {r.expected}", r.holds, r.text())
    for r in readings
]
checks += [
    nb.check_regime_order(table),
    nb.Check(
        "no run diverged",
        not result.diverged,
        str(result.diverged or "none"),
    ),
]
# asserted on a real run; a capped smoke run only shows them
nb.closing_checks(checks, cfg)
