"""Altair charts for the book, one module per topic. Charts draw precomputed records only.

Computation lives in the other nhtlab modules. Vega-Lite params (zoom, hover, sliders,
dropdowns) over inline data keep the charts interactive in the static HTML book.
"""

import functools
import inspect
import sys
from collections.abc import Iterable, Mapping

from ..analysis.events import Events
from ..history import History
from ..validation import require_type
from .curves import *  # noqa: F401,F403
from .curves import WIDTH, alt, long_records  # noqa: F401  (notebooks use charts.alt and the shared width)

# What each annotation asks of an argument, checked where it is passed (not deep inside altair).
_KINDS = {"History": History, "Events": Events, "str": str, "Sequence": Iterable, "Mapping": Mapping}


def _checked(chart):
    """``chart`` with its arguments checked by their annotations: a wrong type gets a TypeError naming it."""
    signature = inspect.signature(chart)
    wanted = {name: (_KINDS[kind], "None" in str(p.annotation)) for name, p in signature.parameters.items()
              if (kind := str(p.annotation).split("[")[0].split(" |")[0]) in _KINDS}

    @functools.wraps(chart)
    def wrapper(*args, **kwargs):
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            if name in wanted and not (value is None and wanted[name][1]):
                kind = wanted[name][0]  # a string where rows go is refused too
                require_type(value, name, (list, tuple) if kind is Iterable and isinstance(value, str) else kind,
                             owner=chart.__name__)
        return chart(*args, **kwargs)
    return wrapper


def check_arguments(module_name: str) -> None:
    """Wrap every chart function a module exports (its ``__all__``) with :func:`_checked`, in place: the book's
    chapter charts (``nhtlab.book.*_charts``) call it as this package does for its own."""
    module = sys.modules[module_name]
    for name in module.__all__:
        if inspect.isfunction(chart := getattr(module, name)) and chart.__module__ == module_name:
            setattr(module, name, _checked(chart))


check_arguments(curves.__name__)  # noqa: F405
for _name in curves.__all__:  # noqa: F405
    setattr(sys.modules[__name__], _name, getattr(curves, _name))  # noqa: F405
