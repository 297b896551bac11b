"""nhtlab's public surface: a curated ``__all__`` whose every callable documents its Parameters and Returns."""

from __future__ import annotations

import inspect
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


# The module-attribute paths the chapters used before the package was layered (nhtlab.delay.…):
# they keep working through the top level, so a reader's older notebook still runs.
OLD_CHAPTER_PATHS = [
    "delay.mean_std", "delay.DEFINITIONS", "delay.contraction_fit", "separation.format_score",
    "separation.clean_norm_separation", "layers.warning_times", "layers.layer_order", "layers.layer_transitions",
    "layers.default_head_and_first", "scorecard.three_regimes", "scorecard.scorecard_rows", "regimes.diagnose_regime",
    "monitor.Monitor", "monitor.online_regime", "lazy_rich.lazy_rich_run", "exercises.check_answer",
    "emergence.rank_correlation", "emergence.between_and_within", "widgets.train_panel", "papers.paper_cell",
]


@pytest.mark.parametrize("path", OLD_CHAPTER_PATHS)
def test_old_chapter_paths_still_resolve(path):
    obj = nhtlab
    for part in path.split("."):
        obj = getattr(obj, part)
    assert callable(obj) or isinstance(obj, dict), path


def test_import_nhtlab_leaves_altair_for_the_charts():
    # Every sweep worker imports nhtlab: the charts (altair) load on first use, not at import.
    import subprocess
    import sys

    code = ("import sys, nhtlab; assert 'altair' not in sys.modules, 'altair loaded at import'; "
            "nhtlab.widgets.train_panel; from nhtlab import charts; assert charts is nhtlab.charts; "
            "assert 'altair' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
