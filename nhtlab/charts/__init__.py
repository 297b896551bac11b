"""Altair charts for the book, one module per topic. Charts draw precomputed records only.

Chart modules never train or measure: computation lives in the other nhtlab
modules. Charts use Vega-Lite params (zoom, hover, sliders, dropdowns) over
inline data so they stay interactive in the static HTML book.
"""

import functools
import inspect
import sys
from collections.abc import Iterable, Mapping

from .. import hooks
from ..analysis.events import Events
from ..history import History
from ..validation import require_type
from .dlr import *  # noqa: F401,F403
from .emergence import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .regimes import *  # noqa: F401,F403
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


for _module in (dlr, emergence, layers, regimes, curves):  # noqa: F405
    for _name in _module.__all__:
        if inspect.isfunction(_chart := getattr(_module, _name)) and _chart.__module__ == _module.__name__:
            setattr(_module, _name, _checked(_chart))
            setattr(sys.modules[__name__], _name, getattr(_module, _name))

hooks.charts_loaded()  # the book build's offline renderer (nhtlab.build.offline_charts) registers here
