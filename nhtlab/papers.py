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
           "COMPANION_GROK_COUNTS", "paper_cell"]

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
#: Fit of T_grok against 1/λ on λ ∈ [0.1, 1] (seed means).
COMPANION_GROK_FIT = {"slope": 1_182, "slope_ci": (1_082, 1_271), "intercept": 884, "r2": 0.971}
#: η → (mean, std) of T_grok at λ = 1.
COMPANION_ETA_SWEEP: dict[float, tuple[float, float]] = {2e-3: (840, 80), 1e-3: (1_760, 150), 5e-4: (5_240, 1_835)}
#: λ → (1 − r_fit)/(ηλ) of the fit V_t = A·r^t + C from T_mem on (the paper's "≈ 1.41 ηλ").
COMPANION_CONTRACTION: dict[float, float] = {0.1: 1.69, 0.3: 1.69, 0.5: 1.55, 1.0: 1.30}


def paper_cell(value: tuple[float, float] | None) -> str:
    """'mean ± std' as a table cell, '—' when the paper has no value.

    Examples
    --------
    >>> paper_cell(COMPANION_LAMBDA_SWEEP[1.0]["t_grok"])
    '2,100 ± 374'
    >>> paper_cell(None)
    '—'
    """
    if value is None:
        return "—"
    mean, std = value
    return f"{mean:,.0f} ± {std:,.0f}"
