"""A chapter's closing checks: one table, one record of what held, one assertion.

Every chapter ends the same way. Its claims are :class:`~nhtlab.book.claims.Check`
verdicts (a reading over seeds becomes one through
:func:`~nhtlab.book.claims.check_reading`); :func:`closing_checks` shows them as a
table, writes them to ``$NHTLAB_CLAIMS_FILE`` when that is set (the book build sets it for each
chapter, and ``tools/kernel_paths.py`` compares two builds' records), and asserts them on a real
run, so papermill fails when the science breaks. Readings the chapter shows but does not claim
(a paper's prediction that fails here, a reading that flips between seeds) go in ``shown``:
they are tabled and recorded, never asserted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .claims import Check, Reading, check_reading
from ..plumbing.smoke import SMOKE_ENV, smoke_enabled, smoke_steps
from ..validation import require_type
from .report import Markdown, evidence, table

__all__ = ["CLAIMS_FILE", "closing_checks", "science_checks"]

#: Where :func:`closing_checks` writes its record (JSON), when set.
CLAIMS_FILE = "NHTLAB_CLAIMS_FILE"


def _as_check(item: Check | Reading, owner: str) -> Check:
    if isinstance(item, Reading):
        return check_reading(item)
    require_type(item, "checks", Check, owner=owner)
    return item


def science_checks(cfg: Any = None) -> bool:
    """Whether to run a chapter's scientific checks: False, with a notice, under ``cfg.smoke`` or ``NHTLAB_SMOKE``."""
    capped = bool(getattr(cfg, "smoke", False)) or smoke_enabled()
    if not capped:
        return True
    print(f"smoke run ({SMOKE_ENV}=1, capped at {smoke_steps()} steps): the scientific checks of this chapter "
          "are skipped; every cell above ran, its numbers are not results.")
    return False


def closing_checks(checks: Iterable[Check | Reading], cfg: Any = None,
                   shown: Sequence[Check | Reading] = ()) -> Markdown:
    """Table the chapter's claims, record them, and assert them on a real run (the table displayed first, so that
    the executed notebook shows what failed)."""
    claims = [_as_check(c, "closing_checks") for c in checks]
    extra = [_as_check(c, "closing_checks") for c in shown]
    asserted = science_checks(cfg)
    rows = [{**c.to_dict(), "claim": "asserted" if asserted else "not asserted (smoke)"} for c in claims]
    rows += [{**c.to_dict(), "claim": "shown"} for c in extra]
    held = sum(bool(c.passed) for c in claims)
    text = evidence(f"the chapter's closing checks ({held} of {len(claims)} claims held)",
                    table(rows, columns=["check", "holds", "claim", "measured"]))
    path = os.environ.get(CLAIMS_FILE)
    if path:
        tagged = [(c, True) for c in claims] + [(c, False) for c in extra]
        record = {"profile": getattr(cfg, "profile", None), "asserted": asserted,
                  "checks": [{"check": c.name, "passed": bool(c.passed), "detail": c.detail, "claim": is_claim}
                             for c, is_claim in tagged]}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
    failed = [c for c in claims if not c.passed]
    if asserted and failed:
        from IPython.display import display  # local: slow to import; ipywidgets, a dependency, brings it

        display(text)
        raise AssertionError("; ".join(f"{c.name}: {c.detail}" for c in failed))
    return text
