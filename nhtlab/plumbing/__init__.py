"""The book build's plumbing: CPU slots, the ledger of trainings, the device audit, the smoke cap,
the offline chart renderer and the build's flag.

None of it is science, and the core never imports it: the book's layer wraps the core with it
(:class:`nhtlab.book.runs.BookCache` holds a CPU slot, caps, probes and writes the ledger around
``run.execute()``). Importing this package with ``NHTLAB_DEVICE_CHECK=1`` starts the device audit for
the whole process (:mod:`nhtlab.plumbing.device_audit`).
"""

from . import device_audit  # noqa: F401  (NHTLAB_DEVICE_CHECK=1: the process runs under the audit)
