"""The NHT delay law: T ≈ log(V_sc / V_st) / γ_eff with γ_eff = ηλ.

Khanh & Hoa (arXiv 2603.07323), Theorem on escape time: under gradient descent
with weight decay, E[V_t] ≤ (1 − ηλ)^t V_0 + V_∞, so leaving a shortcut of
squared norm V_sc for a structure of squared norm V_st takes
Θ(log(V_sc/V_st) / (ηλ)) steps. For AdamW the paper bounds γ_eff ≥ ηλ, so the
prediction is a time *scale*; its agreement with measured delays is a fit
(slope, R²), not an identity.
"""

from __future__ import annotations

import math

from .events import Events, find_events
from .train import History
from .validation import check_real, check_type

__all__ = ["predicted_delay", "delay_summary"]


def predicted_delay(v_sc: float, v_st: float, lr: float, weight_decay: float) -> float:
    """log(V_sc / V_st) / (η λ), in steps.

    Returns 0 when V_sc ≤ V_st (no norm gap to close) and ``inf`` when λ = 0
    (nothing contracts the norm).

    Examples
    --------
    >>> round(predicted_delay(math.e * 100, 100, lr=1e-3, weight_decay=1.0))
    1000
    """
    check_real(v_sc, "v_sc", 0.0, low_open=True, owner="predicted_delay")
    check_real(v_st, "v_st", 0.0, low_open=True, owner="predicted_delay")
    check_real(lr, "lr", 0.0, low_open=True, owner="predicted_delay")
    check_real(weight_decay, "weight_decay", 0.0, owner="predicted_delay")
    if v_sc <= v_st:
        return 0.0
    if weight_decay == 0.0:
        return math.inf
    return math.log(v_sc / v_st) / (lr * weight_decay)


def delay_summary(history: History, events: Events | None = None) -> dict[str, float | int | None]:
    """Measured delay next to the law's time scale for one run.

    V_sc is ‖θ‖² at its peak, V_st ‖θ‖² at the end of the run; η and λ are read
    from the history's config.
    """
    check_type(history, "history", History, owner="delay_summary")
    events = events or find_events(history)
    lr, wd = history.config["lr"], history.config["weight_decay"]
    return {
        "T_mem": events.t_mem,
        "T_grok": events.t_grok,
        "measured delay": events.delay,
        "V_sc (peak ‖θ‖²)": round(events.peak_norm, 1),
        "V_st (final ‖θ‖²)": round(events.final_norm, 1),
        "log(V_sc/V_st)": round(math.log(events.peak_norm / events.final_norm), 4),
        "ηλ": lr * wd,
        "law's time scale log(V_sc/V_st)/(ηλ)": round(predicted_delay(events.peak_norm, events.final_norm, lr, wd), 1) if wd > 0 else math.inf,
    }
