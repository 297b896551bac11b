"""Each run kind reports its own shortcut events, regime and separation; the scorecard of a sweep reads them."""

import numpy as np
import pytest

from nhtlab.analysis.events import border_times, find_events
from nhtlab.history import History
from nhtlab.book.shortcut_report import domain_of, score_runs, sweep_records
from nhtlab.training.shortcut_run import ShortcutRun
from nhtlab.training.loop import TrainConfig
from nhtlab.training.modular_run import ModularRun

STEPS = np.arange(0, 2001, 100)
N = len(STEPS)
RISE_FALL = np.r_[np.linspace(10, 100, 6), np.linspace(95, 40, N - 6)]  # peaks at step 500


def history(**cols):
    return History(rows=[{"step": int(s), **{k: float(v[i]) for k, v in cols.items()}} for i, s in enumerate(STEPS)],
                   status="completed")


def grokking(delay_steps=800):
    """Memorises at 300, generalises ``delay_steps`` later; the norm peaks at 500 and contracts."""
    train = (STEPS >= 300).astype(float)
    test = np.where(STEPS >= 300 + delay_steps, 1.0, 0.01)
    return history(train_acc=train, test_acc=test, norm=RISE_FALL, **{"norm/tok": RISE_FALL,
                   "norm/readout": RISE_FALL})


def border(drop_at=800):
    """Follows the border from step 200, reads the digit from ``drop_at`` on; the norm keeps rising."""
    cue = np.where(STEPS >= 200, 0.7, 0.1) * np.where(STEPS >= drop_at, 0.1, 1.0)
    conflict = np.where(STEPS >= drop_at, 0.7, 0.1)
    rising = np.linspace(10, 100, N)
    return history(cue_acc=cue, conflict_acc=conflict, train_acc=np.full(N, 1.0), clean_acc=np.full(N, 0.8),
                   shortcut_acc=np.full(N, 0.9), norm=rising, **{"norm/conv1": rising, "norm/readout": rising})


def test_domain_of_reads_the_run_kind_not_a_name():
    m = domain_of(ModularRun(p=97))
    assert m.memorised and (m.num_classes, m.worst_column) == (97, "test_acc")
    b = domain_of(ShortcutRun(kind="tint"), fit=0.9)
    assert not b.memorised and (b.num_classes, b.worst_column, b.fit) == (10, "conflict_acc", 0.9)
    assert b.shortcut == "the tint" and domain_of(ShortcutRun()).shortcut == "the border"
    with pytest.raises(TypeError, match="ModularRun or a ShortcutRun"):
        domain_of(TrainConfig())


def test_each_domain_reads_its_own_events():
    h = grokking(800)
    ev = find_events(h)
    assert domain_of(ModularRun()).times(h) == (ev.t_mem, ev.t_grok) == (300, 1100)
    assert domain_of(ModularRun()).delay(h) == 800
    b = border(800)
    assert domain_of(ShortcutRun()).times(b) == border_times(b) == (200, 800)
    assert domain_of(ShortcutRun()).delay(b) == 600
    assert domain_of(ShortcutRun()).delay(border(5000)) is None  # never dropped
    assert domain_of(ShortcutRun()).regime(b) == "weak"  # the norm never contracts
    assert domain_of(ModularRun(p=97)).separation(h).defined


def test_score_runs_on_a_modular_sweep_that_follows_the_law():
    lams = [0.5, 1.0, 2.0]
    runs = {lam: [ModularRun(weight_decay=lam, seed=s) for s in (0, 1)] for lam in lams}
    hist = {r: grokking(int(800 / r.weight_decay) // 100 * 100) for rs in runs.values() for r in rs}
    card = score_runs(runs, hist, main=runs[1.0][0])
    assert card["P1 norm ordering"].passed  # fitted at 300 (norm 64), end at 40
    assert card["P3 clean/worst-group"].passed and card["P5 clean separation"].passed
    assert card["P6 delay scaling"].passed and "6 runs, 3 λ" in card["P6 delay scaling"].detail


def test_score_runs_on_a_border_that_is_the_cheaper_solution_fails_p1():
    runs = {0.1: [ShortcutRun(weight_decay=0.1)]}
    card = score_runs(runs, {runs[0.1][0]: border()}, main=runs[0.1][0])
    assert not card["P1 norm ordering"].passed and card["P1 norm ordering"].value < 1
    assert card["P3 clean/worst-group"].passed  # 0.10 at the fit, 0.70 at the end
    assert not card["P2 three regimes"].passed and not card["P6 delay scaling"].passed
    with pytest.raises(ValueError, match="no history"):
        score_runs(runs, {}, main=runs[0.1][0])


def test_sweep_records_one_row_per_value():
    runs = {0.1: ShortcutRun(weight_decay=0.1), 0.3: ShortcutRun(weight_decay=0.3)}
    hist = {runs[0.1]: border(800), runs[0.3]: border(5000)}
    rows = sweep_records(runs, hist, domain="border")
    assert [(r["domain"], r["λ"], r["regime"], r["fitted at"], r["dropped at"]) for r in rows] == [
        ("border", 0.1, "weak", 200, 800), ("border", 0.3, "weak", 200, None)]
    assert sweep_records(runs, hist, key="ρ")[0]["ρ"] == 0.1
