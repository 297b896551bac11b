"""Tensor-level measures: weight norms, feature-space CKA, DLR and its spectra, neural collapse, feature capture."""
