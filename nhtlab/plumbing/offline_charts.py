"""An altair renderer for the static book: charts drawn by locally served vega-embed.

Altair's default HTML output loads Vega from a CDN, so an offline page shows "Error loading script"
where the chart should be. In the book every page loads vega, vega-lite and vega-embed from its own
``_static`` folder (``_config.yml``), and this renderer emits a ``<div>`` and a ``vegaEmbed`` call
with the spec inlined; nothing is redefined, so several charts per page work. The book build
(``NHTLAB_BOOK=1``) enables it; Jupyter and Colab keep altair's own.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import altair as alt

from .flags import in_book_build

__all__ = ["offline_html", "use_offline_renderer"]

RENDERER = "nhtlab-offline"

_SCRIPT = """<div id="{div}" class="nhtlab-chart"></div>
<script type="text/javascript">
(function() {{
  var spec = {spec};
  function draw() {{
    vegaEmbed("#{div}", spec, {{mode: "vega-lite", actions: false}}).catch(function(err) {{ console.error(err); }});
  }}
  if (window.vegaEmbed) {{ draw(); }}
  else {{
    window.addEventListener("load", function() {{
      if (window.vegaEmbed) {{ draw(); }}
      else {{ document.getElementById("{div}").textContent = "This chart is drawn by vega-embed, which this page does not load. Open it in the nhtlab book, Jupyter or Colab."; }}
    }});
  }}
}})();
</script>"""


def offline_html(spec: dict[str, Any]) -> str:
    """HTML that draws the Vega-Lite ``spec`` with a page-provided ``vegaEmbed``."""
    div = f"nhtlab-vis-{uuid.uuid4().hex[:12]}"
    # "</" inside the inlined JSON would close the <script> element early.
    return _SCRIPT.format(div=div, spec=json.dumps(spec).replace("</", "<\\/"))


def _render(spec: dict[str, Any], **_: Any) -> dict[str, str]:
    return {"text/html": offline_html(spec), "text/plain": "<altair chart: drawn in the HTML book>"}


alt.renderers.register(RENDERER, _render)


def use_offline_renderer() -> None:
    """Make altair charts render with the offline book renderer."""
    alt.renderers.enable(RENDERER)


if in_book_build():
    use_offline_renderer()
