"""Chapter 04's tables: the records of :mod:`nhtlab.book.dlr_report` rendered with their preset columns.

>>> print(dlr_table("paper_cnn", [{"run": "a", "dlr": 0.5, "test_acc": 0.25}]))
| the paper's run | DLR | test acc |
|---|---|---|
| a | 0.500 | 25.0% |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .dlr_report import TABLES
from .report import Markdown, table

__all__ = ["dlr_table"]


def dlr_table(kind: str, records: Iterable[Mapping[str, Any]], **headers: str) -> Markdown:
    """One of chapter 04's tables (:data:`nhtlab.book.dlr_report.TABLES`), via :func:`nhtlab.book.table`.

    Parameters
    ----------
    kind : str
        A key of ``TABLES`` ("rules", "scored", "lazy_rich", "marks", "terms", "spectra", "cnn",
        "paper_cnn", "measures").
    records : iterable of dict
        The records of that table (from :mod:`nhtlab.book.dlr_report`).
    **headers : str
        Header text for columns, replacing the preset ones.

    Returns
    -------
    Markdown
        The table.
    """
    if kind not in TABLES:
        raise ValueError(f"The 'kind' parameter of dlr_table must be one of {sorted(TABLES)}; got {kind!r}.")
    columns, formats, preset = TABLES[kind]
    return table(records, columns=columns, formats=formats, headers={**preset, **headers})
