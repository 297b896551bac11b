"""Environment flags read across nhtlab: whether the book build is executing the chapters."""

from __future__ import annotations

import os

__all__ = ["in_book_build", "BOOK_ENV"]

#: Set to "1" by ``tools/build_book.py`` while it executes the chapters.
BOOK_ENV = "NHTLAB_BOOK"


def in_book_build() -> bool:
    """True while the book build executes chapters (``NHTLAB_BOOK=1``)."""
    return os.environ.get(BOOK_ENV) == "1"

