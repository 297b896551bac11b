"""Altair charts for the book, one module per topic. Charts draw precomputed records only.

Chart modules never train or measure: computation lives in the other nhtlab
modules. Charts use Vega-Lite params (zoom, hover, sliders, dropdowns) over
inline data so they stay interactive in the static HTML book.
"""

from .. import hooks
from .dlr import *  # noqa: F401,F403
from .emergence import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .regimes import *  # noqa: F401,F403
from .curves import *  # noqa: F401,F403
from .curves import WIDTH, alt, long_records  # noqa: F401  (notebooks use charts.alt and the shared width)

hooks.charts_loaded()  # the book build's offline renderer (nhtlab.build.offline_charts) registers here
