"""Gather the JavaScript the static book needs, so pages work with no network at view time.

From the ``book`` extra's Python packages, with no Node.js, npm or network: ``vl-convert-python``'s bundle
of Vega, Vega-Lite (the minor version altair targets) and vega-embed, whose globals nhtlab's offline chart
renderer calls, and ``sphinx-mathjax-offline``'s MathJax 3. Copied into ``_build/vendor`` with a
``LICENSES.md``; ``tools/build_book.py`` places it at the book's ``_static/vendor``.

    python tools/vendor_js.py [--force] [--out FOLDER]
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_build" / "vendor"
VEGA_BUNDLE = "vega/vega-bundle.js"
MATHJAX = "mathjax/tex-mml-chtml.js"
MATHJAX_PACKAGE = "sphinx-mathjax-offline"
REQUIRED = (VEGA_BUNDLE, MATHJAX, "LICENSES.md")


def vega_lite_minor() -> str:
    """The Vega-Lite ``major.minor`` the installed altair targets."""
    import altair as alt

    return ".".join(alt.VEGALITE_VERSION.split(".")[:2])


def versions() -> dict[str, str]:
    """Library → version that ``vendor()`` provides; RuntimeError where they do not match what altair targets."""
    import altair as alt
    import vl_convert as vlc

    wanted = vega_lite_minor()
    available = vlc.get_vegalite_versions()
    if wanted not in available:
        raise RuntimeError(
            f"altair {alt.__version__} targets Vega-Lite {alt.VEGALITE_VERSION}, but vl-convert-python "
            f"{importlib.metadata.version('vl-convert-python')} bundles Vega-Lite {available}: "
            "upgrade vl-convert-python (pip install -U vl-convert-python) or pin altair to a version it bundles.")
    for name, ours, theirs in (("Vega", vlc.get_vega_version(), alt.VEGA_VERSION),
                               ("vega-embed", vlc.get_vega_embed_version(), alt.VEGAEMBED_VERSION)):
        if ours.split(".")[0] != theirs.split(".")[0]:
            raise RuntimeError(f"altair {alt.__version__} targets {name} {theirs}, but vl-convert-python bundles "
                               f"{name} {ours}: upgrade vl-convert-python or pin altair to match.")
    text = (_mathjax_dir() / "tex-mml-chtml.js").read_text(encoding="utf-8", errors="replace")
    mathjax = re.search(r'\.VERSION="(3\.[0-9.]+)"', text) or re.search(r'version:"(3\.[0-9.]+)"', text)
    if mathjax is None:
        raise RuntimeError(f"{MATHJAX_PACKAGE}: cannot find a MathJax 3 version in tex-mml-chtml.js")
    return {
        "vega": vlc.get_vega_version(),
        "vega-lite": wanted,
        "vega-embed": vlc.get_vega_embed_version(),
        "mathjax": mathjax.group(1),
        "vl-convert-python": importlib.metadata.version("vl-convert-python"),
        MATHJAX_PACKAGE: importlib.metadata.version(MATHJAX_PACKAGE),
    }


def _mathjax_dir() -> Path:
    try:
        dist = importlib.metadata.distribution(MATHJAX_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(f"{MATHJAX_PACKAGE} is not installed; it is part of the book extra: "
                           "pip install -e '.[book]'") from None
    folder = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    if not (folder / "tex-mml-chtml.js").is_file():
        raise RuntimeError(f"{MATHJAX_PACKAGE} {dist.version} has no static/mathjax/tex-mml-chtml.js under {folder}")
    return folder


def _vega_bundle() -> str:
    """vega, vega-lite and vega-embed as one classic script that sets the three ``window`` globals, wrapped in
    a function: its top-level ``const`` names would clash with other scripts' ("already been declared")."""
    import vl_convert as vlc

    bundle = vlc.javascript_bundle(vl_version=vega_lite_minor())
    if "window.vegaEmbed=" not in bundle.replace(" ", ""):
        raise RuntimeError("vl_convert.javascript_bundle() no longer assigns window.vegaEmbed; check tools/vendor_js.py")
    return "(function () {\n" + bundle + "\n})();\n"


def _licences(specs: dict[str, str]) -> str:
    files = importlib.metadata.distribution("vl-convert-python").files or []
    found = [f for f in files if f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
    return f"""# Third-party JavaScript in this folder

Copied at build time by tools/vendor_js.py from Python packages (no npm, no network).

| library | version | licence | taken from |
| --- | --- | --- | --- |
| Vega | {specs['vega']} | BSD-3-Clause | vl-convert-python {specs['vl-convert-python']} (`vega/vega-bundle.js`) |
| Vega-Lite | {specs['vega-lite']} | BSD-3-Clause | vl-convert-python {specs['vl-convert-python']} (`vega/vega-bundle.js`) |
| vega-embed | {specs['vega-embed']} | BSD-3-Clause | vl-convert-python {specs['vl-convert-python']} (`vega/vega-bundle.js`) |
| MathJax | {specs['mathjax']} | Apache-2.0 | {MATHJAX_PACKAGE} {specs[MATHJAX_PACKAGE]} (`mathjax/`) |

Vega, Vega-Lite and vega-embed: Copyright (c) the University of Washington Interactive Data Lab,
BSD-3-Clause (https://github.com/vega). MathJax: Copyright (c) the MathJax Consortium,
Apache License 2.0 (https://github.com/mathjax/MathJax).

## vl-convert-python's licence

{found[0].read_text() if found else "(no licence file shipped in the package)"}
"""


def vendor(force: bool = False, out: Path = VENDOR) -> Path:
    """Populate ``out`` from the installed packages (unless it holds their versions already, or ``force``)."""
    target = Path(out)
    specs = versions()
    stamp = target / "versions.txt"
    wanted_stamp = "\n".join(f"{k}@{v}" for k, v in specs.items())
    if (not force and stamp.exists() and stamp.read_text() == wanted_stamp
            and all((target / p).is_file() for p in REQUIRED)):
        return target
    if target.exists():
        shutil.rmtree(target)
    (target / "vega").mkdir(parents=True)
    (target / VEGA_BUNDLE).write_text(_vega_bundle(), encoding="utf-8")
    # The combined MathJax component and its fonts, nothing else: Jupyter Book adds every .js under _static to every page.
    fonts = "output/chtml/fonts/woff-v2"
    shutil.copytree(_mathjax_dir() / fonts, target / "mathjax" / fonts)
    shutil.copy(_mathjax_dir() / "tex-mml-chtml.js", target / MATHJAX)
    (target / "LICENSES.md").write_text(_licences(specs), encoding="utf-8")
    stamp.write_text(wanted_stamp)
    return target


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--out", type=Path, default=VENDOR, help="target folder (default _build/vendor)")
    args = parser.parse_args()
    print(vendor(force=args.force, out=args.out))


if __name__ == "__main__":
    main()
