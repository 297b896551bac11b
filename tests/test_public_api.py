"""nhtlab's public surface: a curated ``__all__`` whose every callable documents its Parameters and Returns."""

from __future__ import annotations

import inspect
from pathlib import Path
from collections.abc import Mapping
import types

import pytest

import nhtlab

PUBLIC = [name for name in nhtlab.__all__ if name != "__version__"]


def test_all_is_unique_and_resolves():
    assert len(nhtlab.__all__) == len(set(nhtlab.__all__)), "a name listed twice in nhtlab.__all__"
    missing = [name for name in nhtlab.__all__ if not hasattr(nhtlab, name)]
    assert not missing, missing


def test_no_private_or_stray_top_level_names():
    stray = [name for name in vars(nhtlab) if not name.startswith("_") and name not in nhtlab.__all__
             and not isinstance(getattr(nhtlab, name), types.ModuleType)]
    assert not stray, f"top-level names outside __all__: {stray}"


def _takes_arguments(obj) -> bool:
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name != "self" for p in parameters)


@pytest.mark.parametrize("name", [n for n in PUBLIC if callable(getattr(nhtlab, n))])
def test_every_exported_callable_has_numpydoc_sections(name):
    obj = getattr(nhtlab, name)
    doc = inspect.getdoc(obj) or ""
    assert doc, f"nhtlab.{name} has no docstring"
    if _takes_arguments(obj):
        assert "Parameters\n----------" in doc or (inspect.isclass(obj) and "Attributes\n----------" in doc), \
            f"nhtlab.{name}: no numpydoc Parameters section"
    if not inspect.isclass(obj):
        assert "Returns\n-------" in doc or "Yields\n------" in doc, f"nhtlab.{name}: no numpydoc Returns section"


def test_the_face_is_small():
    assert len(nhtlab.__all__) <= 50, len(nhtlab.__all__)


# Names that left the face stay in the package, importable from their modules (nothing was removed).
LEFT_THE_FACE = [
    "analysis.delay.mean_std", "analysis.delay.contraction_fit", "analysis.separation.format_score",
    "analysis.layers.warning_times", "analysis.layers.layer_transitions",
    "analysis.eta.calibrate_eta", "analysis.early_warnings.supported_signal", "training.monitor.online_regime",
    "training.sweeps.grid", "training.cache.cached_run", "training.batched.train_batched", "models.EmbeddingMLP",
    "measures.spectra.feature_spectrum", "book.closing_checks", "book.select_profile", "book.stamp", "book.table",
    "book.md", "analysis.checks.Check", "book.over_seeds", "analysis.scorecard.three_regimes", "book.lazy_rich_run", "book.check_answer",
    "book.train_panel", "book.science_checks", "book.rule_band", "book.regime_curves", "plumbing.cpu_slots.cpu_slot",
    "papers.paper_cell", "presets.BORDER_DESIGN", "analysis.separation.spearman",
]


@pytest.mark.parametrize("path", LEFT_THE_FACE)
def test_names_that_left_the_face_stay_in_their_modules(path):
    obj = nhtlab
    for part in path.split("."):
        obj = getattr(obj, part)
    assert callable(obj) or isinstance(obj, Mapping), path


def test_the_book_layer_is_flat_and_unique():
    from nhtlab import book as nb

    assert len(nb.__all__) == len(set(nb.__all__)), "a name listed twice in nhtlab.book.__all__"
    assert not [name for name in nb.__all__ if not hasattr(nb, name)]
    assert not set(nb.__all__) & set(nhtlab.__all__), "a name both in the face and in the book's layer"
    modules = {p.stem for p in Path(nb.__file__).parent.glob("*.py")}
    assert not modules & set(nb.__all__), "a flat name hides a module of the book (import nhtlab.book.X as m)"


def test_import_nhtlab_leaves_altair_for_the_charts():
    # Every sweep worker imports nhtlab: the charts (altair) load on first use, not at import.
    import subprocess
    import sys

    code = ("import sys, nhtlab; assert 'altair' not in sys.modules, 'altair loaded at import'; "
            "nhtlab.book.train_panel; from nhtlab import charts; assert charts is nhtlab.charts; "
            "assert 'altair' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_book_layers_flat_names_are_unique():
    """``nb`` is one flat namespace over the book's report modules: a name exported by two of them
    would silently hide one implementation behind the other."""
    import collections
    import importlib

    import nhtlab.book as book

    owners = collections.defaultdict(list)
    for module in book._MODULES:
        for name in importlib.import_module(f"nhtlab.book.{module}").__all__:
            owners[name].append(module)
    assert not {n: m for n, m in owners.items() if len(m) > 1}
