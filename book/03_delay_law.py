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
# # The delay law
#
# In the intermediate regime the network memorises first and generalises
# later. How much later? The NHT paper {cite}`khanh2026nht` and its
# companion on grokking {cite}`khanh2026delay` answer with one formula,
#
# $$T_\text{grok} - T_\text{mem} \;=\;
# \Theta\!\left(
# \frac{\log(V_\text{mem}/V_\text{post})}{\eta\lambda}
# \right),$$
#
# where $V_\text{mem}$ is the squared weight norm $\|\theta\|^2$ when the
# network has memorised its table and $V_\text{post}$ the (smaller)
# squared norm of the structured solution it ends on. This chapter
# measures delays on the companion paper's own setting and asks two
# questions: does the law get the *size* of the delay right, and does it
# explain more than "the delay goes like 1/λ"?
#
# ## Where the formula comes from
#
# Once the training loss is nearly zero its gradient is small, and what is
# left of the update is the decay. With decoupled weight decay (AdamW
# {cite}`loshchilov2019adamw`) each step multiplies the weights by
# $(1-\eta\lambda)$, so
#
# $$\|\theta_{t+1}\|^2 \approx (1-\eta\lambda)^2\,\|\theta_t\|^2
# \approx (1 - 2\eta\lambda)\,\|\theta_t\|^2
# \quad\Longrightarrow\quad
# \|\theta_t\|^2 \approx V_\text{mem}\, e^{-2\eta\lambda t}.$$
#
# The shortcut survives as long as the norm can afford it; the network
# reaches the structured solution once $\|\theta\|^2$ has come down to
# $V_\text{post}$, after about
# $\log(V_\text{mem}/V_\text{post})/(2\eta\lambda)$ steps. The paper
# proves matching upper and lower bounds of this order with
# $\gamma_\text{eff} = \eta\lambda$ for gradient descent and
# $\gamma_\text{eff} \ge \eta\lambda$ for AdamW: the law fixes a **time
# scale**, up to a constant.
#
# ## Two definitions, stated once
#
# `nhtlab.analysis.delay` computes the law's terms exactly as the
# companion's code does, and one variant; every number below says which it
# uses.
#
# * **companion** (the default): $V_\text{mem}$ = $\|\theta\|^2$ at
#   $T_\text{mem}$, $V_\text{final}$ = $\|\theta\|^2$ at the end of the
#   run; measured: $T_\text{escape}$, the first step after $T_\text{mem}$
#   at which $\|\theta\|^2 \le 1.5\,V_\text{final}$; predicted:
#   $\log(V_\text{mem}/V_\text{final})/(2\eta\lambda)$. The companion ends
#   a run 2,000 steps after $T_\text{grok}$; the `book` profile ends it
#   500 steps after, which makes $V_\text{final}$ larger and the
#   prediction shorter.
# * **grok**: measured: the delay $T_\text{grok} - T_\text{mem}$;
#   predicted: $\log(V_\text{mem}/V_\text{grok})/(\eta\lambda)$.
#
# A λ sweep alone cannot test the law against its simplest rival: every
# prediction contains $1/\lambda$, so "delay ∝ 1/λ" fits a λ sweep as well
# as the law does. The law also says the delay scales as $1/\eta$ and
# grows with the norm gap. So besides the λ sweep this chapter varies the
# **learning rate** at fixed λ and the **initial scale** of the weights at
# fixed ηλ (which moves $V_\text{mem}$), and fits all runs together.

# %% tags=["remove-cell"]
# In Colab, install this book's version of nhtlab; elsewhere the
# repository's environment has it.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "nhtlab @ git+https://github.com/nhtlab/nhtlab@v0.2.4"
    print(
        'Launch note: profile = "full" takes several hours on a Colab T4'
        " GPU (its 20 regime-edge runs use whole 50,000-step budgets)"
        " (an estimate, not yet measured).\n"
        "To run it: Runtime > Change runtime type > T4 GPU, "
        'set profile = "full" in the next cell, run all.'
    )

# %% tags=["parameters"]
profile = "book"  # "quick", "book" or "full": see How to run
seed = 0

# %% [markdown]
# Profiles, run times, `"full"` on a GPU: {ref}`How to run <profiles>`.

# %%
import numpy as np

import nhtlab
from nhtlab import charts
from nhtlab.papers import (
    COMPANION_CONTRACTION,
    COMPANION_ETA_SWEEP,
    COMPANION_GROK_FIT,
    COMPANION_LAMBDA_SWEEP,
    paper_cell,
)

# %% tags=["hide-input"]
PROFILES = {
    # quick: η = 3e-3 as the base so that runs grok within about 1,000
    # steps (a stand-in: the companion's η sweep stops at 2e-3); one seed;
    # each family reduced to two settings.
    "quick": dict(
        lr=3e-3,
        lams=[0.5, 1.0],
        seeds=[0],
        etas=[2e-3],
        eta_seeds=[0],
        init_scales=[1.5],
        steps=4000,
        budgets={},
        stop_after=100,
    ),
    # book: the companion's setting (η = 1e-3); runs stop 500 steps after
    # T_grok (theirs 2,000).
    "book": dict(
        lr=1e-3,
        lams=[0.3, 0.5, 1.0, 2.0],
        seeds=[0, 1],
        etas=[2e-3],
        eta_seeds=[0, 1],
        init_scales=[0.5, 1.5],
        steps=8000,
        budgets={1.0: 4000, 2.0: 2000},
        stop_after=500,
    ),
    # full: the companion's λ sweep (+ its regime edges) and η sweep, 10
    # seeds, 50k steps.
    "full": dict(
        lr=1e-3,
        lams=[0.01, 0.1, 0.3, 0.5, 1.0, 2.0],
        seeds=list(range(10)),
        etas=[2e-3, 5e-4],
        eta_seeds=list(range(10)),
        init_scales=[0.5, 1.5],
        steps=50_000,
        budgets={},
        stop_after=2000,
    ),
}
cfg = nhtlab.select_profile(PROFILES, profile)
nhtlab.stamp(profile, cfg)

# %% [markdown]
# ## The runs
#
# Three families share the base run (λ = 1, η as in the profile, PyTorch's
# default init): a **λ sweep** at fixed η, an **η sweep** at λ = 1, and an
# **init-scale** family at λ = 1 and the base η, in which every weight
# matrix and embedding starts `init_scale` times larger. In `book`, λ = 2
# gets a budget of 2,000 steps, as in the previous chapter: in the
# companion's setting it memorises only after about 21,000 steps, so it is
# the regime edge, not a point of the fit. λ = 1 gets 4,000 (it groks by
# about 2,100), the budget of chapters 1 and 2, whose run it shares. One
# call trains every distinct run on both cores; finished runs come from
# the result cache.

# %%
base = dict(lr=cfg.lr, stop_after=cfg.stop_after)
lam_runs = [
    nhtlab.companion(
        lam, seed + s, steps=cfg.budgets.get(lam, cfg.steps), **base
    )
    for lam in cfg.lams
    for s in cfg.seeds
]
eta_runs = [
    nhtlab.companion(1.0, seed + s, steps=cfg.steps, **{**base, "lr": lr})
    for lr in cfg.etas
    for s in cfg.eta_seeds
]
gap_runs = [
    nhtlab.companion(
        1.0,
        seed,
        steps=cfg.steps,
        model_kwargs=dict(init_scale=k),
        **base,
    )
    for k in cfg.init_scales
]
# Distinct runs only (a run in two families trains once, labelled by
# the first); the λ sweep first, so that its longest runs (λ = 0.3)
# start first and the two workers finish together.
family = {}
for label, group in [
    ("λ sweep", lam_runs),
    ("η sweep", eta_runs),
    ("init scale", gap_runs),
]:
    for r in group:
        family.setdefault(r, label)
runs = list(family)
result = nhtlab.sweep(
    runs, strategy="parallel", workers=2, cache=nhtlab.default_cache()
)
result

# %% [markdown]
# ## Every run, both definitions
#
# One line per run that memorised and generalised. `companion` columns:
# $T_\text{escape}$ against
# $\log(V_\text{mem}/V_\text{final})/(2\eta\lambda)$; `grok` columns:
# $T_\text{grok}-T_\text{mem}$ against
# $\log(V_\text{mem}/V_\text{grok})/(\eta\lambda)$.

# %%
points = {name: [] for name in nhtlab.analysis.delay.DEFINITIONS}
for row in result:
    for name in points:
        p = nhtlab.delay_point(row.history, definition=name)
        if p is not None:
            init = row.run.model_kwargs.get("init_scale", 1.0)
            points[name].append(
                {**p, "family": family[row.run], "init_scale": init}
            )
print(
    f"{'family':<11}{'λ':>5}{'η':>8}{'init':>5}{'seed':>5}{'T_mem':>7}"
    f"{'T_grok':>7}{'V_mem':>8}{'V_grok':>8}{'V_final':>8}"
    f"{'T_esc':>7}{'theory':>8}{'delay':>7}{'law':>7}"
)
for pc, pg in zip(points["companion"], points["grok"]):
    print(
        f"{pc['family']:<11}{pc['weight_decay']:>5g}{pc['lr']:>8g}"
        f"{pc['init_scale']:>5g}{pc['seed']:>5}{pc['t_mem']:>7,}"
        f"{pc['t_grok']:>7,}{pc['v_mem']:>8,.0f}{pc['v_grok']:>8,.0f}"
        f"{pc['v_final']:>8,.0f}{pc['measured']:>7,}"
        f"{pc['predicted']:>8,.0f}{pg['measured']:>7,}"
        f"{pg['predicted']:>7,.0f}"
    )
for row in result:
    if nhtlab.find_events(row.history).t_grok is None:
        print(
            f"λ = {row.run.weight_decay:g}, η = {row.run.lr:g}, seed"
            f" {row.run.seed}: "
            f"{nhtlab.diagnose_regime(row.history).reason}"
        )

# %% [markdown]
# ## The companion's Table 3, beside ours
#
# Seed means ± standard deviations of the λ sweep, next to the companion's
# 10-seed values (its runs end 2,000 steps after $T_\text{grok}$, which
# lowers $V_\text{final}$ and so delays $T_\text{escape}$ and lengthens
# the theory compared with a shorter window).

# %%
lam_points = [p for p in points["companion"] if p["family"] == "λ sweep"]
print(f"{'λ':>5}  {'quantity':<14}{'ours':>16}{'companion':>18}")
for lam in cfg.lams:
    theirs = COMPANION_LAMBDA_SWEEP.get(lam, {})
    n_runs = sum(1 for r in lam_runs if r.weight_decay == lam)
    for key, label in (
        ("t_mem", "T_mem"),
        ("t_grok", "T_grok"),
        ("measured", "T_escape"),
        ("predicted", "theory"),
    ):
        ours = nhtlab.analysis.delay.mean_std(
            lam_points, key, weight_decay=lam
        )
        ours_cell = (
            paper_cell(ours) if ours else f"no grok ({n_runs} runs)"
        )
        their_key = {"measured": "t_escape", "predicted": "escape_theory"}
        theirs_cell = paper_cell(theirs.get(their_key.get(key, key)))
        print(f"{lam:>5g}  {label:<14}{ours_cell:>16}{theirs_cell:>18}")
grok_means = {
    lam: nhtlab.analysis.delay.mean_std(
        lam_points, "t_grok", weight_decay=lam
    )
    for lam in cfg.lams
}
grok_means = {lam: m[0] for lam, m in grok_means.items() if m is not None}
fit_lams = [lam for lam in grok_means if 0.1 <= lam <= 1.0]
if len(fit_lams) >= 3:
    grok_fit = nhtlab.linear_fit(
        [1 / lam for lam in fit_lams],
        [grok_means[lam] for lam in fit_lams],
    )
    print(
        "T_grok vs 1/λ on λ ∈ [0.1, 1] (seed means): slope"
        f" {grok_fit.slope:,.0f} (companion"
        f" {COMPANION_GROK_FIT['slope']:,}, 95% CI"
        f" {COMPANION_GROK_FIT['slope_ci'][0]:,}–"
        f"{COMPANION_GROK_FIT['slope_ci'][1]:,}),"
        f" intercept {grok_fit.intercept:,.0f} (companion"
        f" {COMPANION_GROK_FIT['intercept']}), R² {grok_fit.r2:.3f}"
        f" (companion {COMPANION_GROK_FIT['r2']}) over {len(fit_lams)} λ"
        " values"
    )
else:
    print(
        f"T_grok vs 1/λ: {len(fit_lams)} λ values in [0.1, 1] grokked; a"
        " fit needs 3 (the companion's: slope"
        f" {COMPANION_GROK_FIT['slope']:,}, R² {COMPANION_GROK_FIT['r2']}"
        f")"
    )
eta_points = [
    p
    for p in points["grok"]
    if p["weight_decay"] == 1.0 and p["init_scale"] == 1.0
]
for lr in sorted({p["lr"] for p in eta_points}):
    ours = nhtlab.analysis.delay.mean_std(eta_points, "t_grok", lr=lr)
    print(
        f"η = {lr:g}, λ = 1: T_grok {paper_cell(ours)} (companion's η"
        f" sweep: {paper_cell(COMPANION_ETA_SWEEP.get(lr))})"
    )

# %% [markdown]
# ## The law against 1/λ and 1/(ηλ), on all runs together
#
# Three straight lines through the same measured delays: against the law's
# prediction (its slope free, since AdamW's
# $\gamma_\text{eff}/\eta\lambda$ is unknown), against $1/\lambda$, and
# against $1/(\eta\lambda)$. Only the law can follow both the η family
# (where λ is fixed) and the init-scale family (where ηλ is fixed). Each
# fit is over seed means per setting.

# %%
# A fit needs two settings that grokked (a capped smoke run has none).
fits = {
    name: nhtlab.delay_fits(pts, average_seeds=True)
    for name, pts in points.items()
    if len({p["setting"] for p in pts}) >= 2
}
print(
    f"{'definition':<11}{'x':<12}{'slope':>10}{'intercept':>11}{'R²':>7}"
    f"{'n':>4}"
)
for name, fitset in fits.items():
    for axis, label in (
        ("vs_predicted", "law"),
        ("vs_inverse_lambda", "1/λ"),
        ("vs_inverse_eta_lambda", "1/(ηλ)"),
    ):
        f = fitset.get(axis)
        if f is not None:
            print(
                f"{name:<11}{label:<12}{f.slope:>10.3g}"
                f"{f.intercept:>11,.0f}{f.r2:>7.3f}{f.n:>4}"
            )
winner = {
    name: max(fitset, key=lambda k: fitset[k].r2)
    for name, fitset in fits.items()
}
print(
    "best R²:",
    {
        name: {
            "vs_predicted": "law",
            "vs_inverse_lambda": "1/λ",
            "vs_inverse_eta_lambda": "1/(ηλ)",
        }[w]
        for name, w in winner.items()
    },
)

# %% [markdown]
# Measured delay against the law's prediction (`grok` definition),
# coloured by family:

# %%
if "grok" in fits:
    display(
        charts.delay_fit_chart(
            points["grok"],
            fits["grok"]["vs_predicted"],
            x="predicted",
            x_title="log(V_mem/V_grok)/(ηλ) (steps)",
            y_title="T_grok − T_mem (steps)",
            color="family",
            color_title="family",
        )
    )

# %% [markdown]
# The same delays against 1/λ alone: the η family sits on a vertical line
# (same λ, different delays), which no function of λ can fit.

# %%
if "vs_inverse_lambda" in fits.get("grok", {}):
    display(
        charts.delay_fit_chart(
            points["grok"],
            fits["grok"]["vs_inverse_lambda"],
            x="inv_lambda",
            x_title="1/λ",
            y_title="T_grok − T_mem (steps)",
            color="family",
            color_title="family",
        )
    )

# %% [markdown]
# ## How fast the norm contracts
#
# The companion fits $\|\theta_t\|^2 \approx A\,r^t + C$ on every
# evaluation from $T_\text{mem}$ to the end of the run and compares $r$
# with $1 - 2\eta\lambda$; its "≈ 1.41 ηλ" is $(1-r)/(\eta\lambda)$,
# 1.30–1.69 across its λ sweep. `nhtlab.analysis.delay.contraction_fit`
# does the same fit.

# %%
contraction = []
for row in result:
    fit = nhtlab.contraction_fit(row.history)
    if (
        fit is not None
        and row.run.weight_decay > 0
        and nhtlab.find_events(row.history).t_grok is not None
    ):
        contraction.append(
            {
                **fit.to_dict(),
                "eta_lambda": row.run.lr * row.run.weight_decay,
                "weight_decay": row.run.weight_decay,
                "lr": row.run.lr,
                "seed": row.run.seed,
                "family": family[row.run],
            }
        )
for c in contraction:
    their_ratio = (
        COMPANION_CONTRACTION.get(c["weight_decay"], "—")
        if c["lr"] == 1e-3
        else "—"
    )
    print(
        f"{c['family']:<11} λ = {c['weight_decay']:<4g} η = {c['lr']:<7g}"
        f" seed {c['seed']}: r = {c['r']:.5f} (1 − 2ηλ ="
        f" {c['r_theory']:.5f}), (1 − r)/(ηλ) = {c['ratio']:.2f}"
        f" (companion {their_ratio}), R² {c['r2']:.3f}"
    )
(
    charts.contraction_chart(contraction)
    if contraction
    else "no grokked run to fit"
)

# %% [markdown]
# ## How much the definition matters
#
# The same runs, the ratio predicted/measured under each definition. The
# companion's own data give 0.34–0.85 for its definition; a shorter window
# after $T_\text{grok}$ (here `stop_after`) raises $V_\text{final}$ and
# lowers the ratio.

# %%
for name, pts in points.items():
    ratios = [
        p["predicted"] / p["measured"] for p in pts if p["measured"]
    ]
    if not ratios:
        continue
    print(
        f"{name:<10} predicted/measured: median {np.median(ratios):.2f},"
        f" range {min(ratios):.2f}–{max(ratios):.2f} over {len(ratios)}"
        f" runs ({nhtlab.analysis.delay.DEFINITIONS[name][0]} vs"
        f" {nhtlab.analysis.delay.DEFINITIONS[name][1]})"
    )

# %% [markdown]
# ## What holds here
#
# In the `book` run (numbers printed above; executed on a 2-core Intel
# Xeon, AVX-512, torch 2.14.1: another CPU rounds differently and moves
# each run's steps by about a seed spread,
# {ref}`How to run <numbers-in-the-text>`):
#
# * **The law has the right size.** With the `grok` definition the
#   prediction $\log(V_\text{mem}/V_\text{grok})/(\eta\lambda)$ is 0.8–1.4
#   times the measured delay on every run; with the companion's definition
#   it is 0.35–0.77 of $T_\text{escape}$, as in the companion's own data
#   (0.34–0.85).
# * **The law explains more than 1/λ.** Over all runs the law's line has
#   the highest R²; 1/λ cannot follow the η family (same λ, half the delay
#   at twice the η, as the companion's η sweep also found: 840 steps at η
#   = 2·10⁻³), and 1/(ηλ) cannot follow the init-scale family (same ηλ, a
#   larger initial norm, a longer delay).
# * **The norm contracts at about the rate the law assumes.** Fitted from
#   $T_\text{mem}$ on, $1 - r$ is 1.4–1.8 ηλ on the λ sweep, against
#   1.30–1.69 ηλ in the companion.
# * **Table 3 is reproduced within its error bars** for $T_\text{grok}$ at
#   λ = 0.3, 0.5 and 1 with two seeds; our $T_\text{escape}$ is earlier
#   than the companion's because our runs end 500 steps after
#   $T_\text{grok}$, not 2,000. λ = 2 does not memorise within 2,000 steps
#   (the companion needs about 21,000).

# %% [markdown]
# ## Checks
#
# Fixed before the runs, each failing on data without the phenomenon:
#
# * every λ ≤ 1 of the sweep groks in every seed (a λ whose runs never
#   generalise fails);
# * in the λ and η families the seed-mean delay
#   $T_\text{grok} - T_\text{mem}$ falls as ηλ grows; in the init-scale
#   family the largest init memorises at a larger $V_\text{mem}$ and takes
#   longer than the smallest (the directions the law predicts);
# * in every grokked run from the default init $\|\theta\|^2$ at
#   $T_\text{grok}$ is at most half of $V_\text{mem}$ (the contraction the
#   law rests on). The first version of this check covered the init-scale
#   family too, and failed on the `book` run at init scale 0.5, whose norm
#   contracts by 49% only (2,005 → 1,025): that family is built to
#   *shrink* the gap, so a fixed halving cannot hold for it, and the check
#   now covers the default init only; the init-scale runs' contraction is
#   printed;
# * over all runs (`grok` definition), the law's fit has a higher R² than
#   the best fit on 1/λ alone. Whether it also beats 1/(ηλ) depends on the
#   init-scale family, and is printed.

# %%
# skipped, with a notice, in a capped smoke run
if nhtlab.science_checks(cfg):
    for lam in cfg.lams:
        if lam <= 1.0:
            n_runs = sum(1 for r in lam_runs if r.weight_decay == lam)
            n_grok = sum(
                1
                for p in points["grok"]
                if p["family"] == "λ sweep" and p["weight_decay"] == lam
            )
            assert n_grok == n_runs, (
                f"λ = {lam}: {n_grok} of {n_runs} runs grokked"
            )
    gp = points["grok"]
    lam_delays = [
        nhtlab.analysis.delay.mean_std(
            gp, "measured", family="λ sweep", weight_decay=lam
        )[0]
        for lam in sorted(cfg.lams)
        if lam <= 1.0
    ]
    assert all(a > b for a, b in zip(lam_delays, lam_delays[1:])), (
        f"delay does not fall with λ: {lam_delays}"
    )
    eta_delays = [
        nhtlab.analysis.delay.mean_std(
            gp, "measured", weight_decay=1.0, init_scale=1.0, lr=lr
        )[0]
        for lr in sorted({cfg.lr, *cfg.etas})
    ]
    assert all(a > b for a, b in zip(eta_delays, eta_delays[1:])), (
        f"delay does not fall with η: {eta_delays}"
    )
    gap = sorted(
        (p["init_scale"], p["v_mem"], p["measured"])
        for p in gp
        if p["weight_decay"] == 1.0
        and p["lr"] == cfg.lr
        and p["seed"] == seed
    )
    assert (
        len(gap) >= 2
        and gap[-1][1] > gap[0][1]
        and gap[-1][2] > gap[0][2]
    ), (
        "(init scale, V_mem, delay): the largest init does not memorise"
        f" at a larger norm with a longer delay: {gap}"
    )
    default_init = [p for p in gp if p["init_scale"] == 1.0]
    shrunk = [
        (
            p["weight_decay"],
            p["lr"],
            p["seed"],
            round(p["v_grok"] / p["v_mem"], 2),
        )
        for p in default_init
        if p["v_grok"] > 0.5 * p["v_mem"]
    ]
    assert not shrunk, (
        f"runs whose ‖θ‖² did not halve between T_mem and T_grok: "
        f"{shrunk}"
    )
    for p in gp:
        if p["init_scale"] != 1.0:
            halve = p["v_grok"] > 0.5 * p["v_mem"]
            halve_note = " (does not halve)" if halve else ""
            print(
                f"init scale {p['init_scale']:g}"
                f": ‖θ‖² at T_grok / at T_mem"
                f" = {p['v_grok'] / p['v_mem']:.2f}"
                f"{halve_note}"
            )
    law, inv_lam, inv_eta_lam = (
        fits["grok"][k].r2
        for k in (
            "vs_predicted",
            "vs_inverse_lambda",
            "vs_inverse_eta_lambda",
        )
    )
    assert law > inv_lam, (
        f"the law (R² {law:.3f}) does not beat 1/λ (R² {inv_lam:.3f})"
    )
    print(
        f"law R² {law:.3f} vs 1/λ {inv_lam:.3f} vs 1/(ηλ)"
        f" {inv_eta_lam:.3f}: the law"
        f" {'beats' if law > inv_eta_lam else 'does NOT beat'} 1/(ηλ) on"
        " these runs"
    )
