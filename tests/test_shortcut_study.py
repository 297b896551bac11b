"""The shortcut study's runs from profile settings, and its readings and checks on synthetic histories."""

import numpy as np
import pytest

from nhtlab.history import History
from nhtlab.training.shortcut_run import ShortcutRun
from nhtlab.training.presets import BORDER_DESIGN
from nhtlab.training.modular_run import ModularRun
from nhtlab.book.shortcut_study import SEED_PREDICTIONS, ShortcutStudy

STEPS = np.arange(0, 2001, 100)
N = len(STEPS)

PROFILE = dict(run=dict(BORDER_DESIGN, steps=2000), lam_main=0.1, lams=[0.01, 0.1, 0.3], control_lams=[0.1],
               rhos=[0.8, 1.0], norms=["none", "batch"], norm_model="simple", seeds=[0, 1, 2], tint_lams=[0.1],
               fit=0.97, modular=dict(lr=1e-3, stop_after=100, compile=False, seeds=[0, 1], budgets={0.5: 800, 1.0: 400}),
               modular_main=1.0, workers=2)


def history(**cols):
    return History(rows=[{"step": int(s), **{k: float(v[i]) for k, v in cols.items()}} for i, s in enumerate(STEPS)],
                   status="completed")


def image(drop_at=800, end_conflict=0.7, clean=0.8):
    """Follows the border from step 200; reads the digit (conflict ``end_conflict``) from ``drop_at`` on."""
    cue = np.where(STEPS >= 200, 0.7, 0.1) * np.where(STEPS >= drop_at, 0.1, 1.0)
    conflict = np.where(STEPS >= drop_at, end_conflict, 0.1)
    norm = np.r_[np.linspace(10, 100, 6), np.linspace(95, 40, N - 6)]
    return history(cue_acc=cue, conflict_acc=conflict, train_acc=np.full(N, 1.0), clean_acc=np.full(N, clean),
                   shortcut_acc=np.full(N, 0.9), coloured_acc=np.full(N, 0.9), norm=norm, **{"norm/conv1": norm, "norm/readout": norm})


def grokking():
    norm = np.r_[np.linspace(10, 100, 6), np.linspace(95, 40, N - 6)]
    return history(train_acc=(STEPS >= 300).astype(float), test_acc=np.where(STEPS >= 1100, 1.0, 0.01), norm=norm,
                   **{"norm/tok": norm, "norm/readout": norm})


def trained_for(study, image_history):
    return {r: grokking() if isinstance(r, ModularRun) else image_history(r) for r in study.runs()}


def test_from_profile_builds_every_run_once():
    study = ShortcutStudy.from_profile(PROFILE, seed=10)
    assert study.seeds == (10, 11, 12) and study.base.seed == 10 and study.base.otherwise == "other"
    runs = study.runs()
    assert len(runs) == len(set(runs))
    # main ×3, λ 0.01 and 0.3, control: seed 10 and 11, 12; ρ 0.8 ×3, ρ 1 ×3; batch ×3; tint; modular 4
    assert len(runs) == 3 + 2 + 3 + 6 + 3 + 1 + 4
    assert [r.seed for r in study.sweep[0.1]] == [10, 11, 12] and len(study.sweep[0.3]) == 1
    assert study.norm_seeds["none"] == study.main  # the SimpleCNN without normalisation is the main run
    assert [r.steps for r in study.modular_sweep[1.0]] == [400, 400] and study.modular_sweep[0.5][0].steps == 800
    assert list(study.domains()) == ["border", "entangled tint", "modular arithmetic"]
    quick = ShortcutStudy.from_profile({**PROFILE, "seeds": [0], "control_lams": [], "tint_lams": [],
                                        "modular": {}})
    assert list(quick.domains()) == ["border"] and quick.control_seeds == {}


def test_readings_and_checks_pass_on_a_study_that_escapes():
    study = ShortcutStudy.from_profile(PROFILE)

    def h(run: ShortcutRun):
        if run.otherwise == "none":
            return image(drop_at=10_000)  # the border-less control keeps the border
        if run.rho == 1.0:
            return image(drop_at=10_000, end_conflict=0.1)
        return image(clean=0.9 if run.norm == "batch" else 0.8)

    trained = trained_for(study, h)
    design = study.design_readings(trained)
    assert [(r.expected, r.k, r.n, r.holds) for r in design] == [("dropped", 3, 3, True), ("kept", 3, 3, True)]
    bn = study.norm_reading(trained)
    assert bn.holds and bn.k == 3
    checks = study.checks(trained)
    assert [c.passed for c in checks] == [True, True, True], [c.detail for c in checks]
    card = study.scorecard(trained)
    assert set(card) == {"border", "entangled tint", "modular arithmetic"}
    assert all(len(row) == 6 for row in card.values())
    readings = study.prediction_readings(trained)
    assert [r.name for r in readings] == list(SEED_PREDICTIONS) and all(r.n == 3 for r in readings)
    assert {r["domain"] for r in study.lam_records(trained)} == {"border", "entangled tint"}
    assert [(r["otherwise"], r["dropped at"]) for r in study.small_grid(trained)] == [("other", 800), ("none", None)]
    assert set(study.separations(trained)) == set(card)


def test_checks_fail_when_the_border_is_kept_and_rho_does_not_matter():
    study = ShortcutStudy.from_profile(PROFILE)
    trained = trained_for(study, lambda run: image(drop_at=10_000, end_conflict=0.1))
    escape, rho, separation = study.checks(trained)
    assert not escape and "dropped in 0 of 3" in escape.detail and "seed 0: kept" in escape.detail
    assert not rho and "does not fall" in rho.detail
    # reliance on the border never moves after it is fitted: no separation to score
    assert not separation and "constant in the window" in separation.detail

    # one seed escaping of three is not a majority
    def one(run):
        return image() if run.seed == 0 else image(drop_at=10_000)
    assert not study.checks(trained_for(study, one))[0]


def test_a_study_without_a_rho_sweep_skips_the_rho_check():
    study = ShortcutStudy.from_profile({**PROFILE, "rhos": [0.95]})
    checks = study.checks(trained_for(study, lambda run: image()))
    assert len(checks) == 2 and all(checks)
    with pytest.raises(KeyError):
        study.checks({})


def test_prediction_answers_follow_the_runs():
    study = ShortcutStudy.from_profile(PROFILE)

    def escapes(run: ShortcutRun):
        if run.rho == 1.0:
            return image(drop_at=10_000, end_conflict=0.1)
        return image(clean=0.9 if run.norm == "batch" else 0.8)

    trained = trained_for(study, escapes)
    answer, choices, why = study.escape_answer(trained)
    assert (answer, choices) == ("yes", ("yes", "no"))
    assert "dropped in 3 of 3 seeds" in why and "seed 0: fitted at 200, dropped at 800" in why
    answer, _, why = study.rho_answer(trained, margin=0.2)
    assert answer == "yes" and "ρ = 0.8 to ρ = 1" in why and "seed 0: 0.70 → 0.10" in why
    answer, _, why = study.norm_answer(trained)
    assert answer == "yes" and "seed by seed: seed 0: 0.90 against 0.80" in why

    # the border kept, ρ without effect, no normalisation ahead: every answer turns to "no"
    kept = trained_for(study, lambda run: image(drop_at=10_000, end_conflict=0.1))
    assert [study.escape_answer(kept)[0], study.rho_answer(kept)[0], study.norm_answer(kept)[0]] == ["no"] * 3
    assert set(study.norm_reading(kept).by_seed.values()) == {"tie"}  # both end at clean accuracy 0.8
    ahead = trained_for(study, lambda run: image(clean=0.7 if run.norm == "batch" else 0.8))
    assert set(study.norm_reading(ahead).by_seed.values()) == {"none higher"}
    assert "dropped at never" in study.escape_answer(kept)[2]
    # a fall smaller than the margin is a "no"
    assert study.rho_answer(trained, margin=0.65)[0] == "no"


def test_prediction_answers_name_what_is_missing():
    study = ShortcutStudy.from_profile({**PROFILE, "rhos": [0.95], "norms": ["none"]})
    trained = trained_for(study, lambda run: image())
    with pytest.raises(ValueError, match="'rhos'"):
        study.rho_answer(trained)
    with pytest.raises(ValueError, match="'norms'"):
        study.norm_answer(trained)
    with pytest.raises(TypeError, match="trained"):
        study.escape_answer([])


def growing():
    """Follows the border from step 200 and never drops it; the norm only grows (weak, if the budget says so)."""
    h = image(drop_at=10_000, end_conflict=0.1)
    return History([{**row, "norm": 10.0 + row["step"] / 10} for row in h.rows], status="completed")


def test_weak_or_strong_needs_a_budget_of_4_over_eta_lambda():
    study = ShortcutStudy.from_profile(PROFILE)  # 2,000 steps at η = 3e-3: 2000·ηλ = 0.06, 0.6, 1.8
    trained = trained_for(study, lambda run: image() if run.weight_decay >= 0.1 else growing())
    regimes = {r["λ"]: r["regime"] for r in study.lam_records(trained) if r["domain"] == "border"}
    assert regimes == {0.01: "not decided within 2,000 steps", 0.1: "intermediate", 0.3: "intermediate"}
    p2 = study.scorecard(trained)["border"]["P2 three regimes"]
    assert not p2 and p2.detail == "intermediate; not decided within the budget: λ = 0.01"
    # a budget factor the 2,000 steps satisfy at λ = 0.01: the run is then called weak
    short = ShortcutStudy.from_profile({**PROFILE, "regime_budget": 0.05})
    assert {r["λ"]: r["regime"] for r in short.lam_records(trained) if r["domain"] == "border"}[0.01] == "weak"
    assert short.scorecard(trained)["border"]["P2 three regimes"].detail == "weak → intermediate"


def test_the_lesson_text_states_readings_over_seeds_and_closes_the_tables():
    study = ShortcutStudy.from_profile({**PROFILE, "background_lams": [0.1]})

    def h(run: ShortcutRun):
        if run.otherwise == "none":
            return image(drop_at=10_000, clean=0.4)  # the border-less control keeps the border
        if run.rho == 1.0:
            return image(drop_at=10_000, end_conflict=0.1)
        return image(clean=0.9 if run.norm == "batch" else 0.8)

    trained = trained_for(study, h)
    design = study.design_report(trained)
    assert "the border dropped in 3 of 3 seeds" in design and "the border kept in 3 of 3 seeds" in design
    assert "seed 0: 0.40 against 0.80" in design and "(lower in 3 of 3 seeds)" in design
    assert design.count("<details") == 1 and "| otherwise |" in design.split("<details")[1]
    lam = study.lam_report(trained)
    assert "The border was dropped at 3 of 3 weight decays." in lam and "<details" in lam
    assert "BatchNorm ended above no normalisation in 3 of 3 seeds" in study.norm_report(trained)
    assert "Paper: modular arithmetic ≈ 1" in study.separation_report(trained)
    card = study.scorecard_report(trained)
    assert "V_mem/V_post is seed 0: 1.15" in card and "P1 holds in 3 of 3 seeds" in card
    learnt, readings, text = study.background_report(trained)
    assert learnt and "The background cue is learnt in 3 of 3 seeds" in text and "How we know" in text
    assert "P1 (V_mem > V_post) holds in 3 of 3" in study.main_report(trained, 0)
    found = study.found(trained)
    assert found[0].endswith("it kept it in 3 of 3 at the same λ: the drop comes with the wrong-border images, "
                             "not with the decay alone.")
    assert "at the smallest λ, 0.01, the border was dropped at step 800" in found[1]
    assert "held in 3 of 3 seeds" in found[2] and "in 3 of 3 seeds" in found[3] and "3 of 3" in found[4]


def test_the_chapters_border_events_solution_agrees_with_border_times():
    """Chapter 06's code exercise: the solution in its dropdown gives nhtlab's border_times."""
    import re
    from pathlib import Path

    from nhtlab.analysis.events import border_times
    from nhtlab.book.exercises import check_function

    text = (Path(__file__).resolve().parent.parent / "book" / "06_shortcuts.py").read_text(encoding="utf-8")
    block = re.search(r"# ```python\n(.*?)# ```\n", text, re.S).group(1)
    namespace: dict = {}
    exec("\n".join(line[2:] for line in block.splitlines()), namespace)
    cases = [(image(),), (image(drop_at=10_000),), (growing(),),
             (history(cue_acc=np.full(N, 0.1), conflict_acc=np.full(N, 0.1)),)]
    assert [border_times(*c) for c in cases][:2] == [(200, 800), (200, None)]
    assert check_function(namespace["border_events"], border_times, cases).status == "correct"
