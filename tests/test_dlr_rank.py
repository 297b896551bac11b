"""The properties that fix DLR's default rank rule, one test each (see nhtlab.measures.dlr's docstring).

The rule was chosen by these properties before the chapter's transformer run; each test shows the
default passes and that the property can fail (a rule that fails it exists).
"""

import pytest
import torch

from nhtlab.book.dlr_report import rule_band, rule_properties
from nhtlab.measures.dlr import CANDIDATE_RULES, DEFAULT_RANK, DEFAULT_TOL, RULE_THRESHOLDS, dlr, output_rank

DEFAULT = f"{DEFAULT_RANK} {DEFAULT_TOL[DEFAULT_RANK]:g}"
SEEDS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def scores():
    return {seed: {row["rule"]: row for row in rule_properties(seed=seed)} for seed in SEEDS}


def test_default_is_the_rule_named_in_the_evidence():
    assert DEFAULT == "energy 0.99"
    assert CANDIDATE_RULES[DEFAULT] == ("energy", 0.99)


def test_noise_directions_leave_the_default_unchanged_but_move_full_rank(scores):
    for seed in SEEDS:
        assert scores[seed][DEFAULT]["noise"] <= RULE_THRESHOLDS["noise"], seed
        assert scores[seed]["full"]["noise"] > 0.1, seed  # the property can fail
        assert scores[seed]["relative 1e-2"]["noise"] > 0.1, seed


def test_known_rank_is_found_by_the_default_but_not_by_energy_0_9(scores):
    for seed in SEEDS:
        assert scores[seed][DEFAULT]["rank_found"] == 5
        assert scores[seed][DEFAULT]["known_rank"] <= RULE_THRESHOLDS["known_rank"]
        assert scores[seed]["energy 0.9"]["rank_found"] == 4  # drops the weakest true direction
        assert scores[seed]["full"]["rank_found"] == 10


def test_logits_and_class_centred_log_probs_agree_under_the_default(scores):
    for seed in SEEDS:
        assert scores[seed][DEFAULT]["log_probs"] <= RULE_THRESHOLDS["log_probs"], seed
        assert scores[seed][DEFAULT]["passes"]
    assert not all(scores[s]["energy 0.9"]["passes"] for s in SEEDS)


def test_class_centred_log_probs_are_class_centred_logits():
    g = torch.Generator().manual_seed(5)
    phi = torch.randn(300, 12, generator=g, dtype=torch.float64)
    logits = 3 * phi @ torch.randn(12, 7, generator=g, dtype=torch.float64)
    log_probs = torch.log_softmax(logits, 1)
    a = logits - logits.mean(1, keepdim=True)
    b = log_probs - log_probs.mean(1, keepdim=True)
    for rank, tol in CANDIDATE_RULES.values():
        assert dlr(phi, a, rank, tol) == pytest.approx(dlr(phi, b, rank, tol), abs=1e-9)


def test_pure_noise_column_of_tiny_energy_does_not_change_the_default_rank():
    g = torch.Generator().manual_seed(6)
    phi = torch.randn(400, 20, generator=g, dtype=torch.float64)
    out = phi[:, :3] @ torch.randn(3, 8, generator=g, dtype=torch.float64)
    noisy = torch.cat([out, 1e-4 * torch.randn(400, 2, generator=g, dtype=torch.float64)], 1)
    assert output_rank(out) == output_rank(noisy) == 3
    assert output_rank(noisy, "full") == 5


def test_rule_properties_validates_rules_and_reports_every_rule():
    rows = rule_properties({"mine": (3, None)}, seed=0)
    assert [r["rule"] for r in rows] == ["mine"] and set(rows[0]) >= {"noise", "known_rank", "log_probs", "passes"}
    with pytest.raises(ValueError, match="'rank' parameter of rule_properties"):
        rule_properties({"bad": ("median", None)})


def test_rule_band_spans_the_chosen_and_other_rules():
    rows = [{"step": 0, "dlr": 0.3, "dlr[a]": 0.1, "dlr[b]": 0.5}, {"step": 100, "dlr": 0.2, "dlr[a]": 0.25, "dlr[b]": 0.22},
            {"step": 150, "loss": 1.0}]
    band = rule_band(rows, ["a", "b"])
    assert band == [{"step": 0, "dlr": 0.3, "low": 0.1, "high": 0.5}, {"step": 100, "dlr": 0.2, "low": 0.2, "high": 0.25}]
    with pytest.raises(ValueError, match=r"not recorded in the rows: \['c'\]"):
        rule_band(rows, ["c"])
