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
# # Grokking and the weight norm
#
# A network trained on modular arithmetic first **memorises** its training table, then,
# long after the training loss is essentially zero, suddenly **generalises** to the pairs it
# never saw: *grokking* {cite}`power2022grokking`. The Norm-Hierarchy Transition (NHT) view
# {cite}`khanh2026nht` explains the wait with one quantity, the squared weight norm
# $V = \|\theta\|^2$. Memorising is a *shortcut*: it fits the table quickly with large weights.
# The structured solution (the modular rule itself) fits it with smaller weights. Weight decay
# pulls $V$ down by a factor of about $(1-\eta\lambda)$ each step, so the network drifts from the
# high-norm shortcut to the low-norm structure at a rate $\gamma_{\text{eff}} \propto \eta\lambda$, and
# the delay is set by how far apart the two norms are:
#
# $$T_\text{grok} - T_\text{mem} \approx \frac{\log(V_\text{sc}/V_\text{st})}{\gamma_\text{eff}}.$$
#
# This chapter trains one such network and watches accuracy and $\|\theta\|^2$ on the same
# time axis. It also trains the same network *without* weight decay, to see what happens when
# nothing pulls the norm down.

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.1.0"
    print('Launch note: profile = "full" takes roughly 5-10 minutes on a Colab T4 GPU (an estimate, not yet measured).\n'
          'To run it: Runtime > Change runtime type > T4 GPU, set profile = "full" in the next cell, run all.')

# %% tags=["parameters"]
profile = "book"  # "quick" (tests, < 1 min on CPU), "book" (rendered book), "full" (GPU, paper scale)
seed = 0

# %% [markdown]
# ```{note} Profiles and run time
# `profile` picks the scale: `"quick"` (under a minute on a CPU; the tests run it), `"book"`
# (what this page shows, a few minutes on a 2-core CPU) and `"full"`, the companion paper's 1-layer transformer on (a + b) mod 97 with minibatches of 512, plus the same run without weight decay: expect roughly 5–10 minutes on a Colab T4.
# These GPU times are estimates, not yet measured. In Colab, choose *Runtime → Change runtime type → GPU*,
# set `profile = "full"` in the cell above and run all; nhtlab trains on the GPU when there is one.
# ```

# %%
import nhtlab
from nhtlab import charts

PROFILES = {
    # A small embedding MLP groks (a + b) mod 47 in a few thousand full-batch steps on a CPU.
    "quick": dict(model="mlp", p=47, model_kwargs=dict(width=256, embed_std=0.5), lr=3e-3, betas=(0.9, 0.98),
                  batch_size=None, steps=3500, eval_every=25, stop_after=None),
    "book": dict(model="mlp", p=59, model_kwargs=dict(width=256, embed_std=0.5), lr=3e-3, betas=(0.9, 0.98),
                 batch_size=None, steps=5000, eval_every=20, stop_after=None),
    # The NHT companion paper's setting (arXiv 2603.13331): 1-layer transformer, p = 97,
    # AdamW lr 1e-3 with default betas, batch 512 sampled with replacement; grokking at λ = 1
    # is reported at about 2,100 ± 374 steps.
    "full": dict(model="transformer", p=97, model_kwargs={}, lr=1e-3, betas=(0.9, 0.999),
                 batch_size=512, steps=20_000, eval_every=50, stop_after=3000),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## The task
#
# Every pair $(a, b)$ with $0 \le a, b < p$ is labelled $(a + b) \bmod p$. Half of the $p^2$
# pairs, chosen at random, form the training set; the other half is never trained on.

# %%
data = nhtlab.modular_data(p=cfg.p, operation="+", train_fraction=0.5, seed=seed)
print(f"p = {cfg.p}: {len(data.y_train)} training pairs, {len(data.y_test)} test pairs, {cfg.p} classes")

# %% [markdown]
# ## One run with weight decay λ = 1
#
# We train with AdamW (decoupled weight decay, λ = 1) and evaluate every few steps: train and test
# accuracy, the total squared norm $\|\theta\|^2$ and the squared norm of every layer.

# %%
run = nhtlab.ModularRun(p=cfg.p, train_fraction=0.5, model=cfg.model, model_kwargs=cfg.model_kwargs,
                        steps=cfg.steps, lr=cfg.lr, betas=cfg.betas, weight_decay=1.0,
                        batch_size=cfg.batch_size, eval_every=cfg.eval_every, seed=seed, stop_after=cfg.stop_after)
history = nhtlab.cached_run(run, desc="λ = 1")  # reuses a finished run from the result cache
events = nhtlab.find_events(history)
events.to_dict()

# %% [markdown]
# The top panel shows the two phases: training accuracy reaches 99% almost at once
# ($T_\text{mem}$), while test accuracy stays near chance for a long time before it climbs to
# 99% ($T_\text{grok}$). The bottom panel shows what weight decay is doing meanwhile. Drag on a
# chart to zoom along the step axis and hover a line to read its values.

# %%
charts.training_curves(history, events, title=f"(a + b) mod {cfg.p}, λ = 1")

# %% [markdown]
# Read the norm curve against the accuracy curve. The norm climbs while the network memorises
# and keeps climbing while memorisation is being sharpened (larger logits lower the
# cross-entropy). It peaks, and from then on weight decay wins: $\|\theta\|^2$ contracts, and test
# accuracy rises *during* that contraction. Generalisation is not a new fit of the training
# data (that was done at $T_\text{mem}$) but a move, at constant training accuracy, towards a
# smaller-norm way of fitting it.
#
# Which weights shrink? The per-layer norms tell. The input embeddings, which carry the
# memorised lookup table, contract; the read-out does not. A later chapter follows this
# layer-by-layer picture on image data.

# %%
charts.layer_norm_curves(history, title="squared norm of each layer, λ = 1")

# %% [markdown]
# ## The same run without weight decay
#
# Set λ = 0 and nothing pulls the norm down. The network memorises just as fast, but the
# high-norm shortcut is never abandoned within the budget: the norm keeps growing and test
# accuracy stays low. This is the *weak* regime of the NHT paper, seen at its extreme.

# %%
history_no_decay = nhtlab.cached_run(run.replace(weight_decay=0.0, stop_after=None), desc="λ = 0")
events_no_decay = nhtlab.find_events(history_no_decay)
charts.compare_runs([("λ = 1", history), ("λ = 0", history_no_decay)])

# %% [markdown]
# ## What the delay law says about this run
#
# Take $V_\text{sc}$ as the norm at its peak (the shortcut at its largest) and $V_\text{st}$
# as the norm at the end of the run (the structured solution). With $\gamma_\text{eff} = \eta\lambda$
# the law gives a time scale for the escape. For AdamW the paper only bounds
# $\gamma_\text{eff} \ge \eta\lambda$, so the law predicts how the delay *scales* with η, λ and the
# norm gap, not its exact value; the chapters on regimes and on the delay law test the scaling
# over sweeps.

# %%
summary = nhtlab.delay_summary(history, events)
summary

# %% [markdown]
# Be honest about the size of the two numbers. On this small MLP the norm gap is modest
# ($V_\text{sc}/V_\text{st}$ is close to 1), so $\log(V_\text{sc}/V_\text{st})/(\eta\lambda)$ is a few
# dozen to a few hundred steps, while the measured delay is thousands: the law's time scale
# underestimates this delay by more than an order of magnitude. AdamW normalises its updates,
# so $\gamma_\text{eff}$ is not simply $\eta\lambda$ here, and the norm at the peak is not the norm
# of a pure shortcut. What the law does claim, and what the next chapters test on sweeps, is how
# the delay *scales* with $\eta\lambda$ and with the norm gap.

# %%
law_scale = summary["law's time scale log(V_sc/V_st)/(ηλ)"]
print(f"measured delay / law's time scale = {summary['measured delay'] / law_scale:.0f}")

# %% [markdown]
# ```{admonition} Exercise: the time scale of a contraction
# Suppose a shortcut sits at $V_\text{sc} = 4\,V_\text{st}$ and you train with η = 10⁻³ and
# λ = 0.5. How many steps does the law's time scale $\log(V_\text{sc}/V_\text{st})/(\eta\lambda)$ give?
# Put your number in place of `None` and run the cell.
# ```
#
# ```{dropdown} Hint
# $\log 4 \approx 1.386$ and $\eta\lambda = 5\times10^{-4}$.
# ```

# %%
your_answer = None
nhtlab.exercises.check_answer(your_answer, expected=nhtlab.predicted_delay(4.0, 1.0, lr=1e-3, weight_decay=0.5))

# %% [markdown]
# ## Try it live
#
# In Jupyter or Colab the cell below gives a λ slider and a *Train* button: retrain this model
# with another weight decay and watch the norm and the accuracy move. (In the static book it
# only says so; the interactive charts above work without a kernel.)

# %%
nhtlab.widgets.train_panel(run)

# %% [markdown]
# ## Checks
#
# The chapter's claims, asserted on this run so that executing the notebook fails if the
# science breaks: the network memorises first, then generalises (≥ 95% test accuracy) after a
# real delay; the norm peaks before $T_\text{grok}$ and then contracts; without weight decay
# the network does not generalise within the same budget.

# %%
assert events.t_mem is not None, "the network never memorised its training set"
assert history.column("test_acc").max() >= 0.95, "test accuracy never reached 95%"
assert events.t_grok is not None and events.t_grok > events.t_mem, (events.t_mem, events.t_grok)
assert events.delay >= 3 * max(events.t_mem, cfg.eval_every), f"no real delay: T_mem={events.t_mem}, T_grok={events.t_grok}"
assert events.peak_step < events.t_grok, f"norm peak at {events.peak_step} is not before T_grok={events.t_grok}"
assert events.contraction >= 0.05, f"the norm contracted only {events.contraction:.1%} after its peak"
assert events_no_decay.t_mem is not None, "without weight decay the network should still memorise"
assert history_no_decay.column("test_acc")[-1] < 0.95, "without weight decay the network generalised anyway"
print(f"T_mem = {events.t_mem}, T_grok = {events.t_grok}, delay = {events.delay} steps, "
      f"norm peak {events.peak_norm:,.0f} at step {events.peak_step}, contraction {events.contraction:.1%}")
