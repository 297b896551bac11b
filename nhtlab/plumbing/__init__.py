"""The book build's plumbing (CPU slots, the ledger, the device audit, the smoke cap, the offline renderer, the
environment), which the core never imports: the book's layer wraps the core with it (:mod:`nhtlab.book.runs`).
With ``NHTLAB_DEVICE_CHECK=1``, importing it starts the device audit for the process."""

from . import device_audit  # noqa: F401  (NHTLAB_DEVICE_CHECK=1: the process runs under the audit)
