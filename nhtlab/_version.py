"""nhtlab's version, at the ground so that the cache and the stamp read it without importing the package."""

__version__ = "0.3.1"
