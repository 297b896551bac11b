"""tools/kernel_paths.py: two builds' closing checks compared, and the How to run fragment generated from them."""

from __future__ import annotations

import json

import kernel_paths  # tools/ is on sys.path (tests/conftest.py)


def record(stem, *checks):
    return {stem: {"profile": "book", "asserted": True,
                   "checks": [{"check": n, "passed": p, "detail": d, "claim": c} for n, p, d, c in checks]}}


def test_compare_pairs_checks_by_name_and_keeps_one_sided_ones():
    native = record("01_x", ("contracts", True, "0.40", True), ("P4", False, "forward 2 of 3", False))
    other = record("01_x", ("contracts", True, "0.41", True), ("extra", True, "", True))
    rows = kernel_paths.compare(native, other)["01_x"]
    assert [r["check"] for r in rows] == ["contracts", "P4", "extra"]
    assert rows[0]["native"] == {"passed": True, "detail": "0.40"} and rows[0]["other"]["detail"] == "0.41"
    assert rows[1]["other"] is None and rows[2]["native"] is None and rows[1]["claim"] is False


def test_render_counts_what_held_under_both_and_names_what_flipped():
    chapters = kernel_paths.compare(
        {**record("01_x", ("a", True, "1", True), ("b", True, "2", True)), **record("02_y", ("s", True, "x", False))},
        {**record("01_x", ("a", True, "1", True), ("b", False, "3", True)), **record("02_y", ("s", True, "y", False))})
    page = kernel_paths.render({"date": "2026-12-02", "nhtlab": "0.3.0", "profile": "book",
                                "machine": {"cpu_model": "AMD EPYC", "cores": 2, "torch": "2.14.1"},
                                "paths": {"native": "AVX512", "other": "DEFAULT"}, "chapters": chapters})
    assert "**1 of 2** claims the chapters assert held under both" in page
    assert "2 of 3 checks and shown readings measured something different" in page
    assert "1 of 3 came out the other way: b (✓ native, ✗ default)" in page
    assert "| b | claim | ✓ 2 | ✗ 3 |" in page and "| s | shown | ✓ x | ✓ y |" in page



def test_the_saved_page_is_what_the_saved_record_gives():
    """book/across_machines.md is generated (tools/kernel_paths.py --render), never edited by hand."""
    saved = json.loads(kernel_paths.RECORD.read_text(encoding="utf-8"))
    assert kernel_paths.PAGE.read_text(encoding="utf-8") == kernel_paths.render(saved)
    assert set(saved["chapters"]) <= {p.stem for p in kernel_paths.build_book.chapters()}


def test_another_machine_is_a_column_counted_against_the_native_build():
    chapters = kernel_paths.compare(
        {**record("01_x", ("a", True, "1", True), ("b", True, "2", True)), **record("02_y", ("s", True, "x", False))},
        {**record("01_x", ("a", True, "1", True), ("b", True, "2", True)), **record("02_y", ("s", True, "x", False))})
    base = {"date": "2026-12-02", "nhtlab": "0.3.0", "profile": "book",
            "machine": {"cpu_model": "AMD EPYC", "cores": 2, "torch": "2.14.1"},
            "paths": {"native": "AVX512", "other": "DEFAULT"}, "chapters": chapters}
    theirs = kernel_paths.verdicts({**record("01_x", ("a", False, "0", True), ("b", True, "2", True)),
                                    **record("02_y", ("s", True, "z", False))})
    machine = {"label": "avx2 (AMD EPYC)", "machine": {"cpu_model": "AMD EPYC", "cores": 2, "torch": "2.14.1"},
               "path": "AVX2", "date": "2026-12-03", "commit": "abc1234", "nhtlab": "0.3.0", "chapters": theirs}
    saved = kernel_paths.add_machine(base, machine)
    page = kernel_paths.render(saved)
    assert "**1 of 2** claims held there" in page  # a failed there, b held
    assert "2 of 3 checks and shown readings measured something different from the native (`AVX512`)" in page
    assert "1 of 3 came out the other way: a (✓ native, ✗ avx2 (AMD EPYC))" in page
    assert "| check | kind | native | default | avx2 (AMD EPYC) |" in page and "| s | shown | ✓ x | ✓ x | ✓ z |" in page
    # the same CPU and path again replaces its column; another path adds one
    again = kernel_paths.add_machine(saved, {**machine, "date": "2026-12-04"})
    assert [m["date"] for m in again["more"]] == ["2026-12-04"]
    assert len(kernel_paths.add_machine(again, {**machine, "path": "AVX512_BF16"})["more"]) == 2
    assert "Another machine" not in kernel_paths.render(base)  # a record without one renders as before
