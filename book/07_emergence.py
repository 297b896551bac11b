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
# # Emergence: does scale shrink the delay?
#
# Large models sometimes show capabilities that smaller ones lack
# entirely, as if a threshold in size had been crossed. The NHT paper
# {cite}`khanh2026nht` offers a mundane mechanism. The delay between
# fitting the training set with a shortcut and finding the structured
# solution is set by the norm gap,
#
# $$T_\text{grok} - T_\text{mem} \approx
# \frac{\log(V_\text{mem}/V_\text{post})}{\gamma_\text{eff}},$$
#
# so **if the gap between the shortcut's norm and the structure's norm
# shrinks as the model grows, the delay shrinks with it**. Training runs
# have a fixed budget. A model whose delay is longer than the budget
# "cannot do the task"; a larger one, whose delay fits in the budget, can.
# Seen through a fixed budget, a smooth change in delay looks like a
# sudden threshold in size: an *apparent* emergence, with nothing
# discontinuous inside.
#
# The chain has two links, and this chapter tests each on the companion
# paper's transformer {cite}`khanh2026delay`, with its width
# $d_\text{model}$ as the scale axis (4 heads, a feed-forward layer 4 ×
# $d_\text{model}$ wide, everything else as in the first chapter):
#
# 1. the law's link: across sizes, does the delay follow the norm gap
#    $\log(V_\text{mem}/V_\text{grok})$?
# 2. the hypothesis's link: does the norm gap shrink as the model grows?

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.2.4"
    print(
        'Launch note: profile = "full" takes about an hour on a Colab T4'
        " GPU (an estimate, not yet measured).\n"
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

# %% tags=["hide-input"]
PROFILES = {
    # quick: η = 2e-3 (a point of the companion's η sweep), so that each
    # run groks in ~1,000 steps.
    "quick": dict(
        lr=2e-3,
        sizes=[64, 96, 128],
        seeds=[0],
        steps=3000,
        stop_after=100,
        budget=1500,
    ),
    # book: four widths, 32 to 128. With a 6,000-step limit (and width
    # 48) no run generalised after step 3,000, so the 4,000-step limit
    # only shortens runs that do not generalise. Runs stop 500 steps after
    # T_grok, as in chapters 1-3: width 128 is then their λ = 1 run (the
    # same config), read from the result cache.
    "book": dict(
        lr=1e-3,
        sizes=[32, 64, 96, 128],
        seeds=[0, 1],
        steps=4000,
        stop_after=500,
        budget=2500,
    ),
    "full": dict(
        lr=1e-3,
        sizes=[32, 64, 128, 256, 512],
        seeds=[0, 1, 2, 3, 4],
        steps=30_000,
        stop_after=500,
        budget=10_000,
    ),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## The sweep
#
# One run per (width, seed): same split rule, same optimiser, λ = 1 and η;
# only $d_\text{model}$ changes, and with it the number of parameters and
# the initial norm (the token embeddings, which start with unit variance,
# hold most of it). Each run stops soon after it reaches 99% test
# accuracy (500 steps in `book`), or at the step limit.

# %%
runs = [
    nhtlab.companion(
        1.0,
        seed + k,
        lr=cfg.lr,
        steps=cfg.steps,
        stop_after=cfg.stop_after,
        model_kwargs=dict(d_model=size, d_ff=4 * size),
    )
    for size in cfg.sizes
    for k in cfg.seeds
]
result = nhtlab.sweep(
    runs, strategy="parallel", workers=2, cache=nhtlab.default_cache()
)
rows = nhtlab.analysis.emergence.scale_table(
    result.histories, key="d_model"
)
result

# %% [markdown]
# ## Norm gap and delay against width
#
# For each run, $V_\text{mem}$ is $\|\theta\|^2$ at $T_\text{mem}$ and
# $V_\text{grok}$ is $\|\theta\|^2$ at $T_\text{grok}$ (the `grok`
# definition of the delay-law chapter). The table gives, per width, the
# medians over the seeds that generalised, and the fraction that
# generalised within the budget.

# %%
summary = nhtlab.analysis.emergence.size_summary(rows, budget=cfg.budget)
print(
    f"{'d_model':>7} {'runs':>4} {'grokked':>7} {'T_mem':>6} {'V_mem':>7}"
    f" {'V_grok':>7} {'gap':>6} {'delay':>6} {'law':>6} {'in budget':>9}"
)
for s in summary:
    cells = [
        f"{s[k]:,.0f}" if s[k] is not None else "—"
        for k in ("T_mem", "V_sc", "V_st")
    ]
    gap = f"{s['ratio']:.2f}" if s["ratio"] else "—"
    delay = f"{s['delay']:,.0f}" if s["delay"] is not None else "—"
    law = f"{s['predicted']:,.0f}" if s["predicted"] else "—"
    print(
        f"{s['size']:>7} {s['runs']:>4} {s['grokked']:>7} {cells[0]:>6}"
        f" {cells[1]:>7} {cells[2]:>7} {gap:>6} {delay:>6} {law:>6}"
        f" {s['fraction']:>9.0%}"
    )

# %% [markdown]
# Left, each run's norm gap; right, the measured delay (dots: runs; line:
# median) beside the law's curves: "law, γ = ηλ" plugs each run's measured
# gap into $\log(V_\text{mem}/V_\text{grok})/(\eta\lambda)$ with no free
# parameter; "law, fitted γ" keeps its shape and fits one rate for all
# widths.

# %%
grokked = [r for r in rows if r["delay"] is not None]
# a capped smoke run has none
fit = (
    nhtlab.analysis.emergence.fit_gamma(rows)
    if len(grokked) >= 2
    else None
)
charts.gap_and_delay(
    rows,
    nhtlab.analysis.emergence.law_records(summary, fit),
    size_title="d_model",
)

# %% [markdown]
# ## The two links, measured
#
# The law's link is tested run by run: the rank correlation between each
# run's $\log(V_\text{mem}/V_\text{grok})$ and its delay, over every run
# that generalised. The hypothesis's link compares the norm gap at the
# largest and the smallest width with the spread between seeds at one
# width: a difference smaller than that spread is seed noise.

# %%
sizes_grokked = {r["size"] for r in grokked}
link = (
    nhtlab.analysis.emergence.rank_correlation(
        [r["log_gap"] for r in grokked], [r["delay"] for r in grokked]
    )
    if len(grokked) >= 3
    else float("nan")
)
print(
    f"law's link: rank correlation of log gap and delay over "
    f"{len(grokked)}"
    f" runs = {link:.2f}"
)
if len(sizes_grokked) >= 2:
    for name, key in (("log gap", "log_gap"), ("delay", "delay")):
        change = nhtlab.analysis.emergence.between_and_within(rows, key)
        verdict = (
            "within seed noise"
            if abs(change["difference"]) <= change["seed_spread"]
            else ("shrinks" if change["difference"] < 0 else "GROWS")
        )
        print(
            f"{name}: largest − smallest width ="
            f" {change['difference']:+,.3f}, seed spread"
            f" {change['seed_spread']:,.3f} → {verdict} with width"
        )
if fit is not None:
    print(
        f"fitted γ = {fit['gamma / eta_lambda']:.2f} ηλ (R² through the"
        f" origin {fit['r2_through_origin']:.2f})"
    )

# %% [markdown]
# ## The apparent threshold
#
# Fix a training budget and ask, for each width, which fraction of the
# seeds generalised within it. Move the slider: with a generous budget
# every width that generalised at all counts; shorten it and the slow
# widths drop out first. Where a step appears depends on the budget, not
# on anything special happening at that width, and which side of the axis
# drops out first depends on whether the delay shrinks or grows with size.

# %%
# a capped smoke run has a tiny budget
budgets = list(range(250, cfg.steps + 1, 250)) or [cfg.budget]
fractions = [
    f
    for b in budgets
    for f in nhtlab.analysis.emergence.fraction_generalised(rows, b)
]
charts.fraction_threshold(
    fractions, budgets, start=cfg.budget, size_title="d_model"
)

# %% [markdown]
# ## What holds here
#
# In the `book` run (printed above; executed on a 2-core Intel Xeon,
# AVX-512, torch 2.14.1: another CPU rounds differently and moves the
# numbers by about a seed spread,
# {ref}`How to run <numbers-in-the-text>`):
#
# * **The law's link holds across sizes.** The delay follows the norm gap
#   run by run (rank correlation 0.90 over the runs that generalised), and
#   one rate fits all widths at about ηλ (γ ≈ 1.07 ηλ): the law with no
#   free constant is within a few hundred steps.
# * **The hypothesis's premise fails for this way of scaling.** On this
#   transformer the initial norm grows with $d_\text{model}$ (about
#   $97 \cdot d_\text{model}$ from the embeddings alone), the network
#   memorises at a larger norm, and the gap grows: from none at
#   $d_\text{model}$ = 32 (the network generalises as soon as it fits)
#   to $V_\text{mem}/V_\text{grok} \approx 3.6$ at 128, far beyond the
#   seed spread. The delay grows with it.
# * **Yet an apparent threshold appears.** Within a 2,500-step budget the
#   fraction that generalises *rises* with width (0% → 100%), because the
#   small models take thousands of steps to fit their table at all
#   ($T_\text{mem}$ 2,500 at width 32 and 2,100 at 64 against 800 at
#   128; the other seed at width 32 never fits within the 4,000-step
#   limit). The threshold is real in the
#   budget sense, but its cause here is capacity, not a shrinking norm
#   gap.
#
# Other ways of growing a model (depth, an initialisation that keeps the
# initial norm fixed as the width grows) would test the hypothesis
# differently.
#
# ## Checks
#
# Fixed before the runs: at least three widths generalise within the step
# limit, and the law's link holds: the rank correlation between log gap
# and delay over the runs that generalised is at least 0.5 (a sweep in
# which the delay does not follow the gap fails). The direction of the gap
# with size is the hypothesis under test and is printed, not asserted. A
# width too small to memorise its table at all within the budget (a matter
# of capacity, not of delay) is listed.

# %%
never = sorted({r["size"] for r in rows if r["T_mem"] is None})
print(
    "widths that never memorised within the step limit:", never or "none"
)
# skipped, with a notice, in a capped smoke run
if nhtlab.science_checks(cfg):
    assert sum(1 for s in summary if s["grokked"]) >= 3, [
        (s["size"], s["grokked"]) for s in summary
    ]
    assert link >= 0.5, (
        "the delay does not follow the norm gap across widths (rank"
        f" correlation {link:.2f})"
    )
    print(
        {
            s["size"]: (
                s["delay"],
                None if s["ratio"] is None else round(s["ratio"], 2),
            )
            for s in summary
        }
    )
