"""Numbers the papers report, in one place, so that chapters print them beside ours.

Sources: the NHT companion paper on grokking, Khanh & Hoa, *The Norm-Separation
Delay Law of Grokking* (arXiv 2603.13331), its Table 3 and its public per-seed
data (ClevixLab/grokking-norm-separation, ``data/summary2.json``, 10 seeds per
λ, p = 97, η = 1e-3, batch 512, AdamW default betas); means ± standard
deviations over seeds. Nothing here is used to decide a check: these are the
reference values a reader compares our runs with.
"""

from __future__ import annotations

__all__ = ["COMPANION_LAMBDA_SWEEP", "COMPANION_GROK_FIT", "COMPANION_ETA_SWEEP", "COMPANION_CONTRACTION",
           "COMPANION_GROK_COUNTS", "COMPANION_EDGE_LAMBDA_2", "COMPANION_CONTRACTION_RATE", "COMPANION_THEORY_RATIO", "paper_cell", "DLR_PAPER", "NHT_PAPER",
           "NHT_LAYER_ORDER"]

#: λ → {quantity: (mean, std)} for the companion's λ sweep (η = 1e-3); V_final at T_grok + 2,000.
COMPANION_LAMBDA_SWEEP: dict[float, dict[str, tuple[float, float]]] = {
    0.1: {"t_mem": (550, 150), "t_grok": (12_700, 1_229), "t_escape": (11_450, 850), "escape_theory": (9_695, 653)},
    0.3: {"t_mem": (700, 245), "t_grok": (4_900, 539), "t_escape": (5_750, 602), "escape_theory": (3_943, 332)},
    0.5: {"t_mem": (1_000, 0), "t_grok": (3_150, 320), "t_escape": (4_450, 269), "escape_theory": (2_400, 117)},
    1.0: {"t_mem": (1_100, 200), "t_grok": (2_100, 374), "t_escape": (3_350, 229), "escape_theory": (1_140, 163)},
}
#: λ → runs that grokked out of 10 within 50,000 steps (the regime edges of the companion's sweep).
COMPANION_GROK_COUNTS: dict[float, tuple[int, int]] = {
    0.001: (0, 10), 0.01: (0, 10), 0.1: (10, 10), 0.3: (10, 10), 0.5: (10, 10), 1.0: (10, 10), 2.0: (3, 10), 5.0: (0, 10)}
#: The companion's regime edge λ = 2 (per-seed data, 50,000 steps): about when its runs memorise and
#: how many of 10 do, and about when they grok and how many do (chapters 02 and 03 quote it; tools/chapter_shape
#: lets a chapter's prose type a number only when this module holds it).
COMPANION_EDGE_LAMBDA_2 = {"t_mem_about": 21_000, "memorised": (7, 10), "t_grok_about": 44_000, "grokked": (3, 10)}
#: Fit of T_grok against 1/λ on λ ∈ [0.1, 1] (seed means).
COMPANION_GROK_FIT = {"slope": 1_182, "slope_ci": (1_082, 1_271), "intercept": 884, "r2": 0.971}
#: η → (mean, std) of T_grok at λ = 1.
COMPANION_ETA_SWEEP: dict[float, tuple[float, float]] = {2e-3: (840, 80), 1e-3: (1_760, 150), 5e-4: (5_240, 1_835)}
#: λ → (1 − r_fit)/(ηλ) of the fit V_t = A·r^t + C from T_mem on (the paper's "≈ 1.41 ηλ").
COMPANION_CONTRACTION: dict[float, float] = {0.1: 1.69, 0.3: 1.69, 0.5: 1.55, 1.0: 1.30}
#: The companion's headline contraction rate: ‖θ‖² contracts at about 1.41 ηλ per step (its abstract).
COMPANION_CONTRACTION_RATE = 1.41
#: Range of T_escape_theory / T_escape over the companion's own λ-sweep runs (its definition, window 2,000).
COMPANION_THEORY_RATIO: tuple[float, float] = (0.34, 0.85)

#: The DLR paper, Nam et al., *Decoupling Dynamical Richness from Representation Learning* (ICLR 2026,
#: arXiv 2410.04264; ``nam2026dlr`` in book/references.bib), the values chapter 04 displays beside its runs.
#: ``transformer``: its 2-layer transformer on x / y mod 97, step → (DLR, test accuracy);
#: ``lazy_rich``: its MNIST pair, (DLR, test accuracy) of the "rich" and the "lazy" run;
#: ``cnn``: (DLR, test accuracy) of a CNN on CIFAR-10 with shuffled labels and VGG-16 on CIFAR-100
#: without and with BatchNorm; ``learning_rate``: ResNet18 on CIFAR-100, learning rate → (DLR, test accuracy):
#: the best rate (0.05) has the lowest DLR and the best accuracy, the smallest is lazier (more features used).
DLR_PAPER: dict[str, dict] = {
    "transformer": {200: (0.51, 0.052), 3000: (0.11, 0.998)},
    "lazy_rich": {"rich": (0.0087, 0.100), "lazy": (0.63, 0.744)},
    "cnn": {"CNN, CIFAR-10, shuffled labels": (0.034, 0.095), "VGG-16, CIFAR-100, no BatchNorm": (0.66, 0.217),
            "VGG-16, CIFAR-100, BatchNorm": (0.073, 0.720)},
    "learning_rate": {0.005: (0.053, 0.663), 0.05: (0.025, 0.783), 0.2: (0.039, 0.745)},
}


#: The NHT paper, Khanh & Hoa (arXiv 2603.07323), the values chapter 06 quotes: coloured-border CIFAR-10 at
#: λ = 0.1, clean accuracy against ρ (``clean_by_rho``); ResNet18's clean accuracy by normalisation
#: (``clean_by_norm``); its clean-norm-separation scores per domain (``separation``, as the paper words them);
#: its six-prediction scorecard per domain (``scorecard``, predictions passed of six; Waterbirds'
#: background cue is entangled with the object, where the law is expected to fail).
NHT_PAPER: dict[str, dict] = {
    "clean_by_rho": {0.5: 0.782, 1.0: 0.102},
    "clean_by_norm": {"batch": 0.781, "none": 0.698, "group": 0.505},
    "separation": {"modular arithmetic": "≈ 1", "CIFAR-10 border": "0.5–0.7", "Waterbirds": "≈ 0",
                   "CelebA": "−0.11"},
    "separation_cifar10": (0.5, 0.7),  # the CIFAR-10 border's range above, as numbers
    "separation_celeba": -0.11,
    "scorecard": {"modular arithmetic": 6, "CIFAR-10 border": 5, "CelebA": 4, "Waterbirds": 2},
}

#: The NHT paper's P4, the layer hierarchy (arXiv 2603.07323), quoted by chapter 05: the read-out contracts
#: before the first layer ("backward"), scored as holding on modular arithmetic; on coloured-border CIFAR-10
#: the read-out (fc) peaks near epoch 60 of 200 and has lost 45% of its peak by the end, conv1 peaks later
#: and loses 31%.
NHT_LAYER_ORDER: dict[str, object] = {
    "order": "backward", "modular arithmetic": "held",
    "cifar10": {"readout_peak_epoch": 60, "epochs": 200, "readout_contraction": 0.45, "conv1_contraction": 0.31},
}

def paper_cell(value: tuple[float, float] | None) -> str:
    """'mean ± std' as a table cell, '—' when the paper has no value.

    >>> paper_cell(COMPANION_LAMBDA_SWEEP[1.0]["t_grok"])
    '2,100 ± 374'
    >>> paper_cell(None)
    '—'
    """
    if value is None:
        return "—"
    mean, std = value
    return f"{mean:,.0f} ± {std:,.0f}"
