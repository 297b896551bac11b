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
# # Grokking and the weight norm
#
# **The question.** A network can fit its training data perfectly and
# still be wrong on almost every example it has not seen. Train it on,
# long after the training loss is essentially zero, and it suddenly gets
# the unseen examples right. Why does it wait, and what ends the wait?
#
# On modular arithmetic this is *{term}`grokking`*
# {cite}`power2022grokking`: the network first
# **{term}`memorises <memorisation>`** its training table, then
# **generalises**. The Norm-Hierarchy Transition (NHT) view
# {cite}`khanh2026nht` explains the wait with one quantity, the
# {term}`squared weight norm <‖θ‖²>` $V = \|\theta\|^2$. Memorising is a
# *{term}`shortcut`*: it fits the table quickly, with large weights. The
# {term}`structured solution` (the modular rule itself) fits it with
# smaller weights. {term}`Weight decay <λ>` shrinks the weights by a
# factor $(1-\eta\lambda)$ each step, so $V$ drifts from the shortcut's
# norm towards the structure's at a {term}`rate <γ_eff>`
# $\gamma_{\text{eff}} \propto \eta\lambda$, and the {term}`delay` is set
# by how far apart the two norms are:
#
# $$T_\text{grok} - T_\text{mem} \approx
# \frac{\log(V_\text{mem}/V_\text{post})}{\gamma_\text{eff}}.$$
#
# This is the {term}`delay law`; chapter 03 derives it. Every symbol in it
# is in the {doc}`glossary`.
#
# ## What we train, and why
#
# To compare our numbers with a paper's, this chapter trains the
# companion paper's own network {cite}`khanh2026delay`: a one-layer
# transformer (d_model 128, 4 heads, feed-forward 512) on
# $(a + b) \bmod 97$ with half of the table for training, AdamW with
# {term}`η` = 10⁻³, weight decay λ = 1 and PyTorch's default betas, and
# minibatches of 512 pairs drawn with replacement at every step. We watch
# accuracy and $\|\theta\|^2$ on the same time axis. As a control, the
# same network also trains *without* weight decay (λ = 0): if the
# shrinking norm is what ends the wait, taking the decay away should
# show it.
#
# ```{admonition} Predict before the runs
# Without weight decay (λ = 0), with a budget of its own
# (`no_decay_steps` below), will the network generalise (test accuracy
# ≥ 99%): `"yes"` or `"no"`? Reason from the delay law above. Set
# `your_prediction` in the cell below the parameters; the λ = 0 section
# checks it against the runs.
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
from collections import Counter

import nhtlab
from nhtlab import book as nb

your_prediction = None  # "yes" or "no"
# "during the delay" or "not during the delay" (see "What it learned")
your_fourier_prediction = None

# %% tags=["hide-input"]
# The λ = 1 runs come from the companion grid that chapters 1-3, 6 and 7
# share (nhtlab.training.presets.COMPANION_SWEEPS): same λ, same run, one
# result. quick: η = 2e-3, a point of the companion's own η sweep,
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
# We evaluate every 100 steps: train and test accuracy on the whole of
# each set, the total squared norm $\|\theta\|^2$ and the squared norm of
# every layer. The network without decay (λ = 0) trains alongside on the
# second core. Each {term}`profile` trains both on its seeds (three in
# `book`); the charts show the first seed, and every claim is counted
# over all of them.

# %%
no_decay = [
    r.replace(weight_decay=0.0, steps=cfg.no_decay_steps, stop_after=None)
    for r in runs
]
result = nhtlab.sweep(
    runs + no_decay,
    workers=2,
    cache=nb.cache(),
)
histories = dict(zip(seeds, result.histories[: len(seeds)]))
histories_no_decay = dict(zip(seeds, result.histories[len(seeds) :]))
history, history_no_decay = histories[seed], histories_no_decay[seed]
events = nhtlab.find_events(history)

# %% [markdown]
# ## Two phases
#
# The top panel shows accuracy, the bottom one what weight decay does to
# the norm meanwhile. {term}`T_mem` (red) is the first evaluation with
# training accuracy ≥ 99%, {term}`T_grok` (green) the first with test
# accuracy ≥ 99%. Drag on a chart to zoom along the step axis and hover a
# line to read its values.

# %%
nhtlab.charts.training_curves(
    history, events, title=f"(a + b) mod {run.p}, λ = 1, seed {seed}"
)

# %% tags=["remove-input"]
nb.events_evidence(histories, cfg.lr)

# %% [markdown]
# Read the norm curve against the accuracy curve. In this network
# $\|\theta\|^2$ is largest at initialisation (PyTorch initialises the
# token embeddings with unit variance, and they hold most of the norm,
# as the per-layer chart below shows; the checks assert that the norm is
# largest at step 0), so the norm does not "rise then fall" here: it
# falls from step 0. What the NHT story needs is what happens
# **after** memorisation. At $T_\text{mem}$ the network fits its table
# with a norm {term}`V_mem`. Does the norm go on falling until
# $T_\text{grok}$, and does the network keep its fit of the training
# table meanwhile? Every seed answers:

# %% tags=["remove-input"]
nb.delay_window_report(histories)

# %% [markdown]
# The NHT reading of these curves: generalisation is not the first fit
# of the training data (that came at $T_\text{mem}$) but a move towards a
# smaller-norm way of fitting it. Nanda et al.
# {cite}`nanda2023progress`, reading the inside of a one-layer
# transformer trained with weight decay on modular addition, divide such
# a run into three phases: memorisation, circuit formation and cleanup.
#
# Which weights shrink? The per-layer norms tell, on a log scale because
# the token embedding holds far more of the norm than any other layer.
# Click a layer in the legend to pick it out.

# %%
nhtlab.charts.layer_norm_curves(
    history,
    events,
    title=f"squared norm of each layer, λ = 1, seed {seed}",
)

# %% tags=["remove-input"]
nb.layer_falls_report(history, seed)

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
# The reading: the share is *halfway risen* at the first evaluation at
# which it reaches halfway from its value at initialisation to its value
# at the run's end. Is that step at or before $T_\text{mem}$
# (`by T_mem`), strictly after $T_\text{mem}$ and before $T_\text{grok}$
# while the norm contracts (`between T_mem and T_grok`, the stated
# reading: circuit formation during the delay, before test accuracy
# jumps), at the very evaluation where test accuracy reaches 99%
# (`at T_grok`), or later? Counted over the seeds as "k of n", a strict
# majority deciding; shown, not asserted.
#
# ```{admonition} Predict before reading on
# Will the embedding's Fourier structure form `"during the delay"`
# (halfway risen strictly between $T_\text{mem}$ and $T_\text{grok}$) or
# `"not during the delay"`? Set `your_fourier_prediction` near the top.
# ```
#
# The spectrum of each seed at initialisation, $T_\text{mem}$,
# $T_\text{grok}$ and the end of the run (each frequency's share of the
# non-constant power), then the share on the step axis of test accuracy
# and $\|\theta\|^2$, each seed's $T_\text{mem}$ (dashed) and
# $T_\text{grok}$ (dotted) in its colour:

# %%
nb.fourier_spectrum_chart(nb.fourier_spectrum_records(histories))

# %%
nb.fourier_curves(histories)

# %% [markdown]
# "End" is the run's last evaluation, which the profile's `stop_after`
# window places after $T_\text{grok}$: a share that keeps rising after
# $T_\text{grok}$ (Nanda et al.'s *cleanup* phase, where weight decay
# removes what memorisation left) moves the halfway step later.

# %%
timings = {s: nb.fourier_timing(h) for s, h in histories.items()}
fourier_reading = nb.fourier_readings(timings)
nb.check_prediction(
    your_fourier_prediction,
    *nb.reading_answer(
        fourier_reading, "during the delay", "not during the delay"
    ),
)

# %% tags=["remove-input"]
nb.evidence(
    "where each seed's Fourier share is halfway risen",
    f"Where the share is halfway risen: {fourier_reading.text()}."
    ' "Contraction done" is the share of the T_mem → T_grok fall of'
    " ‖θ‖² already done when the share is halfway risen.",
    nb.fourier_table(timings),
)

# %% [markdown]
# ## The same network without weight decay
#
# Now the control: the same network, data and optimiser with λ = 0, so
# that nothing in the update shrinks the weights. Before you look, recall
# your prediction from the top of the chapter. The chart marks the λ = 1
# run's $T_\text{mem}$ and $T_\text{grok}$.

# %%
nhtlab.charts.compare_runs(
    [("λ = 1", history), ("λ = 0", history_no_decay)], events
)

# %%
nb.check_prediction(
    your_prediction, *nb.generalise_answer(histories_no_decay)
)

# %% tags=["remove-input"]
weak = nhtlab.diagnose_regime(history_no_decay)
nb.md(f"λ = 0, seed {seed}: **{weak.regime}**: {weak.reason}.")

# %% [markdown]
# The NHT paper calls this the *{term}`weak`* regime (here at its
# extreme): the network memorises, and too little decay leaves the
# shortcut in place. Omnigrok {cite}`liu2023omnigrok` goes further: with
# the weight norm held fixed, it finds no grokking at all.

# %% [markdown]
# ## What the delay law says about this run
#
# The companion paper turns the law into numbers with definitions its code
# makes precise, and `nhtlab.analysis.delay` computes them the same way.
# The [delay-law chapter](03_delay_law.ipynb) states the two definitions
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
# the law fixes a time scale, not an exact value.

# %% tags=["remove-input"]
nb.delay_law_text(nhtlab.delay_summary(history), seed)

# %% [markdown]
# Whether the law has the right size depends on the training setup. A
# hypothesis, not tested here: with minibatches drawn with replacement,
# as in the paper, a weight that no gradient pushes consistently gets
# only noisy updates, and the decay shrinks it; with full batches,
# Adam's normalised steps might push back against the decay instead.

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
    why=nb.time_scale_why(4.0, lr=1e-3, weight_decay=0.5),
)

# %% tags=["hide-input"]
checks = nb.chapter_checks(
    histories, histories_no_decay, min_delay=3 * run.eval_every
)
readings = [nb.checks_over_seeds(n, c) for n, c in checks.items()]
groks, contracts, _, _, stays_weak = readings
train_acc = nb.train_acc_reading(histories)
elsewhere = Counter(
    w
    for w in fourier_reading.by_seed.values()
    if w != "between T_mem and T_grok"
)
nb.what_we_found(
    f"The network memorised, then generalised at least three evaluations"
    f" later, in {groks.k} of {groks.n} seeds"
    + (
        f"; seed {seed} reached T_mem at step {events.t_mem:,} and T_grok"
        f" at {events.t_grok:,}."
        if events.grokked
        else "."
    ),
    f"From T_mem to T_grok ‖θ‖² fell by at least a third in"
    f" {contracts.k} of {contracts.n} seeds, while training accuracy"
    f" stayed ≥ 99% throughout in {train_acc.k} of {train_acc.n}.",
    f"Without weight decay the network memorised, then neither"
    f" generalised nor shed its norm within {cfg.no_decay_steps:,}"
    f" steps (the weak regime) in {stays_weak.k} of {stays_weak.n}"
    " seeds.",
    f"The embedding's top-5 Fourier share was halfway risen strictly"
    f" between T_mem and T_grok (Nanda et al.'s circuit formation during"
    f" the delay) in {fourier_reading.k} of"
    f" {fourier_reading.n} seeds"
    + "".join(f"; {w} in {c}" for w, c in elsewhere.items())
    + ".",
)

# %% [markdown]
# ## Try it
#
# **Exercise: the norm of each layer.** The per-layer chart above comes
# from `nhtlab.layer_norms(model)`: for each layer, the sum of the squares
# of every entry of its weights and biases. Write it yourself. Loop over
# `model.named_parameters()`; a parameter named
# `"blocks.0.attn.qkv.weight"` belongs to the layer
# `"blocks.0.attn.qkv"`. Return a dict `{layer name: ‖θ_ℓ‖²}` of floats.
# The cell builds this chapter's network as its seed-0 run starts (same
# seed, same initialisation), and the checker compares your function
# with nhtlab's on it.
#
# ````{dropdown} Solution
# ```python
# def my_layer_norms(model):
#     norms = {}
#     for name, weights in model.named_parameters():
#         layer = name.rsplit(".", 1)[0]  # drop ".weight" / ".bias"
#         square = float(weights.detach().double().pow(2).sum())
#         norms[layer] = norms.get(layer, 0.0) + square
#     return norms
# ```
# ````

# %%
nhtlab.seed_everything(run.seed)
model = nhtlab.make_model(run.model, run.p, **run.model_kwargs)


def my_layer_norms(model):
    raise NotImplementedError  # your code here: a few lines


nb.check_function(
    my_layer_norms, nhtlab.layer_norms, [(model,)], name="my_layer_norms"
)

# %% tags=["remove-input"]
at_init = nhtlab.layer_norms(model)
nb.md(
    f"On this model nhtlab gives ‖θ‖² = {sum(at_init.values()):,.0f}, of"
    f" which the token embedding holds {at_init['tok']:,.0f}: the run's"
    f" recorded step-0 value is {history.column('norm')[0]:,.0f}."
)

# %% [markdown]
# **Train it live.** In Jupyter or Colab the cell below gives a λ slider
# and a *Train* button: retrain this model with another weight decay,
# watch the norm and the accuracy move, and read the run's regime
# (chapter 02's rule). The law's time scale goes as 1/(ηλ), so the budget
# does too: λ = 0.1 trains ten times as long as λ = 1, and no run more
# than ten times (`nb.panel_budget`). In the static book the cell only
# says so; the interactive charts above work without a kernel.

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
# * between $T_\text{mem}$ and $T_\text{grok}$, $\|\theta\|^2$ falls by
#   at least a third (a run whose norm only fell before memorisation, or
#   not at all, fails);
# * with decay, $\|\theta\|^2$ is largest at initialisation (a run whose
#   norm rises above its start fails);
# * with decay, the top-5 Fourier share of the token embedding is
#   recorded, finite and higher at the end than at initialisation (an
#   embedding that stays as spread as at initialisation fails);
# * without weight decay the network memorises but does not generalise
#   within its budget, and its norm does not contract after memorising
#   (the weak regime).
#
# Shown, not asserted: how close $T_\text{grok}$ comes to the paper's (a
# few seeds are not the paper's mean over ten), whether training accuracy
# stays ≥ 99% between $T_\text{mem}$ and $T_\text{grok}$, and where the
# Fourier share is halfway risen.

# %% tags=["remove-input"]
nb.evidence(
    "every claim on every seed",
    nb.table(nb.reading_rows(readings)),
    nb.table(
        [by_seed[seed].to_dict() for by_seed in checks.values()],
        headers={"measured": f"measured (seed {seed})"},
    ),
)

# %%
# asserted on a real run; a capped smoke run only shows them
nb.closing_checks(readings, cfg, shown=[train_acc, fourier_reading])
