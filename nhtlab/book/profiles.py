"""Chapter profiles: one name picks a consistent set of settings.

``quick`` is for the tests (the smallest settings that still show the effect), ``book`` for the
rendered book (sized for a CPU), ``full`` paper scale, for a GPU (Colab); measured times are on the
book's measurements page. Selecting a profile applies the smoke cap when it is on
(:mod:`nhtlab.plumbing.smoke`) and the chapter's environment (:mod:`nhtlab.plumbing.flags`): the
progress mode, the offline chart renderer in the book build, and ``NHTLAB_CIFAR_ROOT``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from ..plumbing.flags import cifar_root, in_book_build, progress_setting
from ..plumbing.smoke import cap_settings, smoke_enabled
from ..training.progress import PROGRESS_MODES, set_default_progress
from ..validation import require_choice, require_type

__all__ = ["select_profile"]

PROFILE_NAMES = ("quick", "book", "full")


def select_profile(profiles: Mapping[str, Mapping[str, Any]], profile: str, **overrides: Any) -> SimpleNamespace:
    """Return the settings of ``profile`` as attributes, with ``overrides`` applied.

    Each override must already exist in the profile, so that a typo fails loudly rather than being
    ignored; ``smoke`` is True when the smoke cap of :mod:`nhtlab.plumbing.smoke` rewrote them.
    """
    require_type(profiles, "profiles", Mapping, owner="select_profile")
    require_choice(profile, "profile", PROFILE_NAMES, owner="select_profile")
    missing = [name for name in PROFILE_NAMES if name not in profiles]
    if missing:
        raise ValueError(f"The 'profiles' parameter of select_profile must define every profile; missing {missing}.")
    settings = dict(profiles[profile])
    unknown = [key for key in overrides if key not in settings]
    if unknown:
        raise ValueError(f"The override {unknown[0]!r} of select_profile is not a setting of profile {profile!r}; "
                         f"settings are {sorted(settings)}.")
    settings.update(overrides)
    for reserved in ("profile", "smoke"):
        if reserved in settings:
            raise ValueError(f"The profile {profile!r} of select_profile defines {reserved!r}, a name select_profile sets itself; rename it.")

    set_default_progress(require_choice(progress_setting(), "NHTLAB_PROGRESS", PROGRESS_MODES, owner="the environment"))
    if in_book_build():  # altair loads here, not at import: a sweep's workers import the book's layer too
        importlib.import_module("nhtlab.plumbing.offline_charts").use_offline_renderer()
    if (root := cifar_root()) is not None:
        settings = _with_root(settings, root)
    return SimpleNamespace(profile=profile, smoke=smoke_enabled(), **cap_settings(settings))


def _with_root(settings: Mapping[str, Any], root: str) -> dict[str, Any]:
    """``settings`` with every ``root`` (a data folder), nested dicts included, set to ``root``."""
    return {k: root if k == "root" else _with_root(v, root) if isinstance(v, Mapping) else v
            for k, v in settings.items()}
