"""A lesson page's furniture: evidence closed behind one click, the "What we found" box, and the
checker that runs a reader's function beside nhtlab's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nhtlab import book as nb


def test_evidence_wraps_tables_in_a_closed_block():
    text = nb.evidence("every seed <3>", nb.table([{"seed": 0}]), "One sentence.")
    assert text.startswith('<details class="nhtlab-evidence">\n<summary>How we know: every seed &lt;3&gt;</summary>')
    # a blank line after the summary and before the close: the Markdown inside renders as Markdown
    assert "</summary>\n\n| seed |" in text and "One sentence.\n\n</details>" in text
    assert "<details open" not in text


def test_evidence_names_a_part_that_is_not_text():
    with pytest.raises(TypeError, match=r"parts\[1\]"):
        nb.evidence("x", "fine", 3)


def test_a_table_of_tuples_names_the_row_that_is_not_a_mapping():
    # a reader tabling their own results as tuples gets the row named, not an AttributeError
    with pytest.raises(TypeError, match=r"records\[1\].* of table"):
        nb.table([{"λ": 1.0}, (1.0, 2)])


def test_what_we_found_is_a_list_in_a_tip_box():
    box = nb.what_we_found("The norm falls in 3 of 3 seeds.", "The   delay\nfollows 1/λ.")
    assert 'class="admonition tip nhtlab-found"' in box and "What we found" in box
    assert "- The norm falls in 3 of 3 seeds.\n- The delay follows 1/λ." in box
    with pytest.raises(ValueError, match="at least one"):
        nb.what_we_found()
    with pytest.raises(ValueError, match=r"points\[1\] is empty"):
        nb.what_we_found("a", "  ")


def squared_norms(model):
    return {name: float(p.detach().pow(2).sum()) for name, p in model.named_parameters()}


def test_check_function_agrees_disagrees_and_waits():
    model = torch.nn.Linear(3, 2)
    assert nb.check_function(squared_norms, squared_norms, [(model,)]).status == "correct"
    halved = nb.check_function(lambda m: {k: v / 2 for k, v in squared_norms(m).items()}, squared_norms, [(model,)])
    assert halved.status == "wrong" and "at key 'weight'" in halved.message
    missing = nb.check_function(lambda m: {"weight": 1.0}, squared_norms, [(model,)])
    assert "missing ['bias']" in missing.message

    def stub(m):
        raise NotImplementedError

    assert nb.check_function(stub, squared_norms, [(model,)]).status == "unanswered"
    assert nb.check_function(None, squared_norms, [(model,)]).status == "unanswered"
    crash = nb.check_function(lambda m: m.nope, squared_norms, [(model,)], name="my_norms")
    assert crash.status == "wrong" and "my_norms raised AttributeError" in crash.message


def test_check_function_compares_shapes_and_strings():
    ref = lambda x: np.cumsum(x)  # noqa: E731
    assert "shape (1,)" in nb.check_function(lambda x: np.sum(x)[None], ref, [(np.arange(3.0),)]).message
    label = nb.check_function(lambda h: "weak", lambda h: "intermediate", [(None,)])
    assert label.status == "wrong" and "'weak'" in label.message and "'intermediate'" in label.message


@pytest.mark.parametrize("cases, error", [([], ValueError), ([[1]], ValueError)])
def test_check_function_names_bad_cases(cases, error):
    with pytest.raises(error, match="cases"):
        nb.check_function(abs, abs, cases)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20), st.floats(1e-3, 10.0))
def test_check_function_accepts_its_reference_and_rejects_a_scaled_copy(values, scale):
    x = np.array(values)
    assert nb.check_function(np.sort, np.sort, [(x,)]).status == "correct"
    scaled = nb.check_function(lambda v: np.sort(v) * (1 + scale), np.sort, [(x,)])
    # check_function's own tolerances decide: a copy scaled by less than atol (x near 0) is right
    assert scaled.status == ("correct" if np.allclose(np.sort(x) * (1 + scale), np.sort(x), rtol=1e-4, atol=1e-8)
                             else "wrong")


def test_check_function_skips_cases_its_reference_refuses():
    """A capped run can leave an exercise with no data: the cases nhtlab's function refuses check nothing."""

    def reference(points):
        if len(points) < 2:
            raise ValueError("The 'x' parameter of linear_fit must hold at least 2 points. Got 0.")
        return float(np.mean(points))

    assert nb.check_function(np.mean, reference, [([],), ([1.0, 3.0],)]).status == "correct"
    empty = nb.check_function(np.mean, reference, [([],)], name="my_fit")
    assert empty.status == "unanswered" and "Nothing to check my_fit on" in empty.message and "2 points" in empty.message


def test_cells_numbers_and_the_warning_table_read_as_the_book_prints_them():
    from nhtlab.book.report import _warning_table, cell, significant

    assert (cell(None), cell(0.12345, "{:.2f}"), cell("a|b")) == ("—", "0.12", "a\\|b")
    assert (significant(1083.7), significant(1.0349), significant(0.6912)) == ("1,080", "1.03", "0.691")
    unmeasured = _warning_table([{"signal": "dlr", "fired": "0 of 20", "late": 0, "false_alarms": "0 of 5",
                                  "recorded": 0}])
    assert unmeasured == ("| signal | fired | late | false alarms | runs measured |\n|---|---|---|---|---|\n"
                          "| dlr | not measured | — | not measured | 0 |")
