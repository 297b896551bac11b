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
# # Grokking and the weight norm
#
# A network trained on modular arithmetic first
# **{term}`memorises <memorisation>`** its training table, then, long
# after the training loss is essentially zero, suddenly **generalises** to
# the pairs it never saw: *{term}`grokking`* {cite}`power2022grokking`.
# The Norm-Hierarchy Transition (NHT) view {cite}`khanh2026nht` explains
# the wait with one quantity, the {term}`squared weight norm <‖θ‖²>`
# $V = \|\theta\|^2$. Memorising is a *{term}`shortcut`*: it fits the
# table quickly, with large weights. The {term}`structured solution` (the
# modular rule itself) fits it with smaller weights.
# {term}`Weight decay <λ>` shrinks the weights by a factor
# $(1-\eta\lambda)$ each step, so $V$ drifts from the shortcut's norm
# towards the structure's at a {term}`rate <γ_eff>`
# $\gamma_{\text{eff}} \propto \eta\lambda$, and the {term}`delay` is set
# by how far apart the two norms are:
#
# $$T_\text{grok} - T_\text{mem} \approx
# \frac{\log(V_\text{mem}/V_\text{post})}{\gamma_\text{eff}}.$$
#
# This is the {term}`delay law`; chapter 03 derives it. Every symbol in it
# is in the {doc}`glossary`.
#
# This chapter trains the companion paper's own network
# {cite}`khanh2026delay` and watches accuracy and $\|\theta\|^2$ on the
# same time axis: a one-layer transformer (d_model 128, 4 heads,
# feed-forward 512) on $(a + b) \bmod 97$ with half of the table for
# training, AdamW with {term}`η` = 10⁻³ and PyTorch's default betas, and
# minibatches of 512 pairs drawn with replacement at every step. It also
# trains the same network *without* weight decay.
#
# ```{admonition} Predict before the runs
# The same network also trains *without* weight decay (λ = 0), with a
# budget of its own (`no_decay_steps` below). Will it generalise (test
# accuracy ≥ 99%) within that budget: `"yes"` or `"no"`? Set
# `your_prediction` in the cell below the parameters; the cell after the
# λ = 0 chart checks it against the runs.
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

    nb.colab_launch("01_grokking", keep=KEEP_ON_DRIVE)

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see Run a chapter
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`Run a chapter <profiles>`.

# %%
import nhtlab
from nhtlab import book as nb

your_prediction = None  # "yes" or "no"
# "during the delay" or "not during the delay" (see "What it learned")
your_fourier_prediction = None

# %% tags=["hide-input"]
# The λ = 1 runs come from the companion grid that chapters 1-3, 6 and 7
# share (nhtlab.training.presets.COMPANION_SWEEPS): same λ, same run, one
# cache entry. quick: η = 2e-3, a point of the companion's own η sweep,
# one seed. book: the companion's η = 1e-3, runs stopped `stop_after`
# steps after T_grok (theirs: 2,000). The runs without decay are this
# chapter's own.
PROFILES = {
    "quick": dict(
        nhtlab.companion_sweep("quick", lams=[1.0]), no_decay_steps=1500
    ),
    "book": dict(
        nhtlab.companion_sweep("book", lams=[1.0]), no_decay_steps=3000
    ),
    "full": dict(
        nhtlab.companion_sweep("full", lams=[1.0]), no_decay_steps=10_000
    ),
}
cfg = nb.select_profile(PROFILES, profile)
nb.stamp(profile, cfg)

# %% [markdown]
# ## The task
#
# Every pair $(a, b)$ with $0 \le a, b < 97$ is labelled
# $(a + b) \bmod 97$. Half of the $97^2 = 9{,}409$ pairs, chosen at
# random, form the training set; the other half is never trained on.

# %%
seeds = [seed + s for s in cfg.seeds]
runs = [
    nhtlab.companion(
        weight_decay=1.0,
        seed=s,
        lr=cfg.lr,
        steps=cfg.budgets[1.0],
        stop_after=cfg.stop_after,
        compile=cfg.compile,
    )
    for s in seeds
]
run = runs[0]  # the run the charts show
data = nhtlab.modular_data(
    p=run.p,
    operation=run.operation,
    train_fraction=run.train_fraction,
    seed=seed,
)
nb.md(
    f"p = {run.p}: {len(data.y_train):,} training pairs,"
    f" {len(data.y_test):,} test pairs, {run.p} classes."
)

# %% [markdown]
# ## Runs with weight decay λ = 1, and without
#
# We train with AdamW (decoupled weight decay λ = 1) and evaluate every
# 100 steps: train and test accuracy on the whole of each set, the total
# squared norm $\|\theta\|^2$ and the squared norm of every layer. The
# same network without decay (λ = 0) trains alongside on the second core.
# Each {term}`profile` trains both on its seeds (three in `book`); the
# charts show the first seed, and the closing checks count every claim
# over all of them. Finished runs are kept in a {term}`result cache`, so
# re-running the chapter is instant.

# %%
no_decay = [
    r.replace(weight_decay=0.0, steps=cfg.no_decay_steps, stop_after=None)
    for r in runs
]
result = nhtlab.sweep(
    runs + no_decay,
    workers=2,
    cache=nhtlab.default_cache(),
)
histories = dict(zip(seeds, result.histories[: len(seeds)]))
histories_no_decay = dict(zip(seeds, result.histories[len(seeds) :]))
history, history_no_decay = histories[seed], histories_no_decay[seed]
events = nhtlab.find_events(history)
# the companion's λ sweep (η = 1e-3); at another η its η sweep at λ = 1
# (T_grok only)
paper = nhtlab.papers.COMPANION_LAMBDA_SWEEP[1.0]
if cfg.lr != 1e-3:
    paper = {"t_grok": nhtlab.papers.COMPANION_ETA_SWEEP[cfg.lr]}
nb.table(
    nb.events_vs_paper(
        {s: nhtlab.find_events(h) for s, h in histories.items()}, paper
    ),
    headers={"paper": "companion (10 seeds)"},
)

# %% [markdown]
# The top panel shows the two phases: training accuracy reaches 99% first
# ({term}`T_mem`), and test accuracy reaches it only evaluations later
# ({term}`T_grok`; the checks below ask for at least three). The bottom
# panel shows what weight decay is doing meanwhile. Drag on a chart to
# zoom along the step axis and hover a line to read its values.

# %%
nhtlab.charts.training_curves(
    history, events, title=f"(a + b) mod {run.p}, λ = 1, seed {seed}"
)

# %% [markdown]
# Read the norm curve against the accuracy curve. In this network
# $\|\theta\|^2$ is largest at initialisation (PyTorch initialises the
# token embeddings with unit variance, and they hold most of the norm;
# the checks below assert it), so the norm does not "rise then fall"
# here: it falls from step 0. What the NHT story needs is what happens
# **after** memorisation. At $T_\text{mem}$ the network fits its table
# with a norm {term}`V_mem`; between $T_\text{mem}$ and $T_\text{grok}$
# the norm keeps contracting, at constant training accuracy, and test
# accuracy rises *during* that contraction. Generalisation is not a new
# fit of the training data (that was done at $T_\text{mem}$) but a move
# towards a smaller-norm way of fitting it. Nanda et al.
# {cite}`nanda2023progress`, reading the inside of a one-layer
# transformer trained with weight decay on modular addition, divide
# such a run into three phases: memorisation, circuit formation and
# cleanup.

# %% tags=["remove-input"]
v_mem, v_grok = events.norm_at_mem, events.norm_at_grok
nb.md(
    f"Seed {seed}: ‖θ‖² is {history.column('norm')[0]:,.0f} at"
    f" initialisation, {v_mem:,.0f} at T_mem and {v_grok:,.0f} at"
    f" T_grok, {1 - v_grok / v_mem:.0%} smaller than at T_mem."
    if v_grok is not None and v_mem is not None
    else f"Seed {seed} did not memorise and generalise within"
    f" {history.column('step')[-1]:,.0f} steps."
)

# %% [markdown]
# Which weights shrink? The per-layer norms tell. Click a layer in the
# legend to pick it out.

# %%
nhtlab.charts.layer_norm_curves(
    history, title="squared norm of each layer, λ = 1"
)

# %% [markdown]
# (fourier-view)=
# ## What it learned: a Fourier view of the embedding
#
# Nanda et al. {cite}`nanda2023progress` found that a transformer that
# has grokked modular addition embeds each token $a$ through
# $\cos(2\pi k a/p)$ and $\sin(2\pi k a/p)$ at a few *key frequencies*
# $k$ (five in their network), and computes $a + b$ with trigonometric
# identities. Every run here records, at every evaluation, the
# **spectrum** of its token embedding: the power of the table
# $E$ ($p \times d$) at each frequency $0 \le k \le p/2$ of $\mathbb{Z}_p$
# (the DFT along the token axis, summed over the $d$ dimensions;
# {mod}`nhtlab.measures.fourier`), and one number that tracks structure,
# the **top-5 Fourier share**: the share of the non-constant power held
# by the five strongest frequencies. Five was fixed before any run, from
# Nanda et al.'s five; a random embedding spreads its power about
# evenly, so its top five hold little of it, a pure cosine all of it.
#
# The reading, fixed before the runs: the share is *halfway risen* at
# the first evaluation at which it reaches halfway from its value at
# initialisation to its value at the run's end. Is that step at or
# before $T_\text{mem}$ (`by T_mem`), in $(T_\text{mem}, T_\text{grok}]$,
# while the norm contracts (`between T_mem and T_grok`, the stated
# reading: circuit formation during the delay), or later? Counted over
# the seeds as "k of n", a strict majority deciding; shown, not
# asserted. The "contracted" column is the share of the
# $T_\text{mem} \to T_\text{grok}$ fall of $\|\theta\|^2$ already done
# when the share is halfway risen.
#
# ```{admonition} Predict before reading on
# Will the embedding's Fourier structure form `"during the delay"`
# (halfway risen between $T_\text{mem}$ and $T_\text{grok}$) or
# `"not during the delay"`? Set `your_fourier_prediction` near the top.
# ```

# %%
timings = {s: nb.fourier_timing(h) for s, h in histories.items()}
fourier_reading = nb.fourier_readings(timings)
nb.fourier_table(timings)

# %% tags=["remove-input"]
nb.md(f"Where the share is halfway risen: {fourier_reading.text()}.")

# %% [markdown]
# The spectrum of each seed at initialisation, $T_\text{mem}$,
# $T_\text{grok}$ and the end of the run (each frequency's share of the
# non-constant power), then the share on the step axis of test accuracy
# and $\|\theta\|^2$:

# %%
nb.fourier_spectrum_chart(nb.fourier_spectrum_records(histories))

# %%
nb.fourier_curves(histories)

# %% [markdown]
# "End" is the run's last evaluation, which the profile's `stop_after`
# window places after $T_\text{grok}$: a share that keeps rising after
# $T_\text{grok}$ (Nanda et al.'s *cleanup* phase, where weight decay
# removes what memorisation left) moves the halfway step later, and the
# table shows how far the share had come at each moment.

# %%
nb.check_prediction(
    your_fourier_prediction,
    *nb.reading_answer(
        fourier_reading, "during the delay", "not during the delay"
    ),
)

# %% [markdown]
# ## The same network without weight decay
#
# Set λ = 0 and nothing pulls the norm down. The network memorises as
# well, but the shortcut is never abandoned within the budget: after
# $T_\text{mem}$ the norm does not contract (Adam's steps of size about η
# keep every weight moving, and nothing shrinks it) and test accuracy
# never reaches 99%. This is the *{term}`weak`* regime of the NHT paper,
# at its extreme. Omnigrok {cite}`liu2023omnigrok` goes further: with the
# weight norm held fixed, it finds no grokking at all.

# %%
nhtlab.charts.compare_runs(
    [("λ = 1", history), ("λ = 0", history_no_decay)]
)

# %%
nb.check_prediction(
    your_prediction, *nb.generalise_answer(histories_no_decay)
)

# %% tags=["remove-input"]
weak = nhtlab.diagnose_regime(history_no_decay)
nb.md(f"λ = 0, seed {seed}: **{weak.regime}**: {weak.reason}.")

# %% [markdown]
# ## What the delay law says about this run
#
# The companion paper turns the law into numbers with definitions its code
# makes precise, and `nhtlab.analysis.delay` computes them the same way.
# The table below reads the run both ways; the
# [delay-law chapter](03_delay_law.ipynb) states the two definitions
# ({ref}`delay-definitions`) and explains why one divides by 2ηλ and the
# other by ηλ ({ref}`delay-factor-of-two`):
#
# * **companion**: the escape time {term}`T_escape` against the companion
#   code's prediction from $V_\text{mem}$ and {term}`V_final`, the norm at
#   the end of the run. The companion ends each run 2,000 steps after
#   $T_\text{grok}$; the `book` profile ends it sooner (its
#   `stop_after`), so its $V_\text{final}$ is larger and its prediction
#   shorter.
# * **grok**: the delay $T_\text{grok} - T_\text{mem}$ itself, against
#   the law's time scale from $V_\text{mem}$ and {term}`V_grok`, the norm
#   at $T_\text{grok}$; it needs no window after $T_\text{grok}$.
#
# For AdamW the paper only bounds $\gamma_\text{eff} \ge \eta\lambda$, so
# the law fixes a time scale, not an exact value; in the companion's own
# data the prediction falls short of $T_\text{escape}$:

# %% tags=["remove-input"]
low, high = nhtlab.papers.COMPANION_THEORY_RATIO
nb.md(
    "In the companion's λ-sweep runs, predicted / measured"
    f" T_escape lies between {low:.2f} and {high:.2f}."
)

# %%
summary = nhtlab.delay_summary(history)
law = nb.delay_law_records(
    summary, nhtlab.papers.COMPANION_LAMBDA_SWEEP[1.0]
)
nb.table(
    law,
    formats={
        "measured": "{:,}",
        "predicted": "{:,.0f}",
        "predicted/measured": "{:.2f}",
    },
    headers={"paper": "companion (10 seeds, λ = 1)"},
)

# %% tags=["remove-input"]
nb.md(
    f"Seed {seed}: the run ends"
    f" {summary['t_end'] - summary['t_grok']:,} steps after T_grok"
    f" (V_final = {summary['v_final']:,.0f}). Between memorisation and"
    " generalisation the norm contracts by a factor"
    f" {summary['v_mem'] / summary['v_grok']:.1f}, and the law's time"
    " scale at rate ηλ is"
    f" {summary['grok']['predicted/measured']:.2f} of the measured delay."
    if law
    else "No delay to compare: the run did not generalise."
)

# %% [markdown]
# Whether the law has the right size depends on the training setup. On a
# small MLP trained full batch, an earlier version of this book found the
# norm hardly contracting and the law far off: with every weight seeing a
# consistent gradient at every step, Adam's normalised updates keep
# pushing back against the decay. Minibatches sampled with replacement,
# as in the paper, let noise-dominated weights decay.

# %% [markdown]
# ```{admonition} Exercise: the time scale of a contraction
# Suppose a shortcut sits at $V_\text{mem} = 4\,V_\text{post}$ and you
# train with η = 10⁻³ and λ = 0.5. How many steps does the law's time
# scale $\log(V_\text{mem}/V_\text{post})/(\eta\lambda)$ give (the
# `grok` form; chapter 03 says why the companion's code divides by 2ηλ)?
# Put your number in place of `None` and run the cell.
# ```
#
# ```{dropdown} Hint
# $\log 4$ is `math.log(4)`, and $\eta\lambda = 5\times10^{-4}$.
# ```

# %%
your_answer = None
nb.check_answer(
    your_answer,
    expected=nhtlab.predicted_delay(4.0, 1.0, lr=1e-3, weight_decay=0.5),
)

# %% [markdown]
# ## Try it live
#
# In Jupyter or Colab the cell below gives a λ slider and a *Train*
# button: retrain this model with another weight decay, watch the norm
# and the accuracy move, and read the run's regime (chapter 02's rule).
# The law's time scale goes as 1/(ηλ), so the budget does too: λ = 0.1
# trains ten times as long as λ = 1, and no run more than ten times
# (`nb.panel_budget`). In the static book the cell only says so; the
# interactive charts above work without a kernel.

# %%
nb.train_panel(run)

# %% [markdown]
# ## Checks
#
# The chapter's claims, checked on every seed's runs so that executing the
# notebook fails if the science breaks, each counted over the seeds and
# asserted when it holds in a majority of them (a rule fixed before the
# runs). Each would fail on a run without the phenomenon:
#
# * the network memorises, then generalises (test accuracy ≥ 99%) at least
#   three evaluations later (a run that learns both at once fails);
# * between $T_\text{mem}$ and $T_\text{grok}$, at constant training
#   accuracy, $\|\theta\|^2$ falls by at least a third (a run whose norm
#   only fell before memorisation, or not at all, fails);
# * with decay, $\|\theta\|^2$ is largest at initialisation (a run whose
#   norm rises above its start fails);
# * with decay, the top-5 Fourier share of the token embedding is
#   recorded, finite and higher at the end than at initialisation (an
#   embedding that stays as spread as at initialisation fails);
# * without weight decay the network memorises but does not generalise
#   within its budget, and its norm does not contract after memorising
#   (the weak regime).
#
# How close $T_\text{grok}$ comes to the paper's is shown, not asserted:
# a few seeds are not the paper's mean over ten; so is where the Fourier
# share is halfway risen (the reading above).

# %%
checks = {
    "memorises, then generalises later": {
        s: nb.check_grokking(h, min_delay=3 * run.eval_every)
        for s, h in histories.items()
    },
    "‖θ‖² falls by a third between T_mem and T_grok": {
        s: nb.check_contraction(h, at_least=1 / 3)
        for s, h in histories.items()
    },
    "‖θ‖² is largest at initialisation": {
        s: nb.check_norm_largest_at_init(h) for s, h in histories.items()
    },
    "the top-5 Fourier share rises": {
        s: nb.check_fourier_rises(h) for s, h in histories.items()
    },
    "without decay: memorises and stays weak": {
        s: nb.check_weak(h) for s, h in histories_no_decay.items()
    },
}
readings = [
    nb.checks_over_seeds(name, by_seed, rule="majority")
    for name, by_seed in checks.items()
]
nb.table(nb.reading_rows(readings))

# %% tags=["remove-input"]
nb.table(
    [by_seed[seed].to_dict() for by_seed in checks.values()],
    headers={"measured": f"measured (seed {seed})"},
)

# %% tags=["remove-input"]
mean, std = paper["t_grok"]
t_groks = {s: nhtlab.find_events(h).t_grok for s, h in histories.items()}
inside = [
    s
    for s, t in t_groks.items()
    if t is not None and abs(t - mean) <= std
]
nb.md(
    f"T_grok within one standard deviation of the companion's"
    f" {nhtlab.papers.paper_cell(paper['t_grok'])} (η = {cfg.lr:g}):"
    f" {len(inside)} of {len(t_groks)} seeds."
)

# %%
# asserted on a real run; a capped smoke run only shows them
nb.closing_checks(readings, cfg, shown=[fourier_reading])
