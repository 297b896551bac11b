"""nhtlab.book.closing_checks: the table, the record a build compares, and the assertion on a real run."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import nhtlab
from nhtlab.book.closing import CLAIMS_FILE

REAL = SimpleNamespace(profile="book", smoke=False)


def test_passing_claims_are_tabled_and_recorded(tmp_path, monkeypatch):
    out = tmp_path / "sub" / "01.claims.json"
    monkeypatch.setenv(CLAIMS_FILE, str(out))
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    reading = nhtlab.book.over_seeds("order", {0: "backward", 1: "forward", 2: "backward"}, expected="backward",
                                rule="majority")
    flips = nhtlab.book.over_seeds("P4", {0: "forward", 1: "backward"}, expected="backward", rule="all")
    text = nhtlab.book.closing_checks([nhtlab.book.Check("norm contracts", True, "0.4 → 0.1"), reading], REAL, shown=[flips])
    assert "norm contracts" in text and "| shown |" in text and text.count("| asserted |") == 2
    # evidence, not lesson: the table sits closed, its summary counts the claims that held
    assert text.startswith('<details class="nhtlab-evidence">') and text.rstrip().endswith("</details>")
    assert "closing checks (2 of 2 claims held)" in text
    record = json.loads(out.read_text())
    assert record["profile"] == "book" and record["asserted"] is True
    assert [(c["check"], c["passed"], c["claim"]) for c in record["checks"]] == [
        ("norm contracts", True, True), ("order", True, True), ("P4", False, False)]
    assert "2 of 3" in record["checks"][1]["detail"]


def test_a_failing_claim_raises_naming_it_and_a_failing_shown_reading_does_not(monkeypatch):
    monkeypatch.delenv(CLAIMS_FILE, raising=False)
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    nhtlab.book.closing_checks([nhtlab.book.Check("a", True)], REAL, shown=[nhtlab.book.Check("b", False, "fails here")])
    with pytest.raises(AssertionError, match=r"border dropped: 1 of 3"):
        nhtlab.book.closing_checks([nhtlab.book.Check("ok", True), nhtlab.book.Check("border dropped", False, "1 of 3")], REAL)


def test_the_smoke_cap_records_but_asserts_nothing(tmp_path, monkeypatch):
    out = tmp_path / "c.json"
    monkeypatch.setenv(CLAIMS_FILE, str(out))
    text = nhtlab.book.closing_checks([nhtlab.book.Check("x", False, "capped")], SimpleNamespace(profile="full", smoke=True))
    assert "not asserted (smoke)" in text
    assert json.loads(out.read_text())["asserted"] is False


def test_checks_must_be_checks_or_readings():
    with pytest.raises(TypeError, match="checks"):
        nhtlab.book.closing_checks(["the norm contracts"], REAL)
