"""Fetch the JavaScript the static book needs, so pages work with no network at view time.

Vega, Vega-Lite and vega-embed (at the versions the installed altair targets)
and MathJax 3 are taken from the npm package registry with ``npm pack`` at build
time and copied into ``_build/vendor``; the book's pages then load them from
``_static/vendor``. Nothing is fetched from a CDN when a page is viewed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_build" / "vendor"


def packages() -> dict[str, str]:
    """npm package → version spec, following the installed altair."""
    import altair as alt

    return {
        "vega": f"{alt.VEGA_VERSION}",
        "vega-lite": f"{alt.VEGALITE_VERSION}",
        "vega-embed": f"{alt.VEGAEMBED_VERSION}",
        "mathjax": "3",
    }


def _wanted(package: str, member: str) -> str | None:
    """Where a tarball member goes under the vendor folder, or None to skip it."""
    if package in ("vega", "vega-lite", "vega-embed") and member == f"package/build/{package}.min.js":
        return f"vega/{package}.min.js"
    if package == "mathjax":
        if member == "package/es5/tex-mml-chtml.js":
            return "mathjax/tex-mml-chtml.js"
        if member.startswith("package/es5/output/chtml/fonts/woff-v2/"):
            return "mathjax/output/chtml/fonts/woff-v2/" + member.rsplit("/", 1)[1]
    return None


def vendor(force: bool = False) -> Path:
    """Populate ``_build/vendor`` (skipped when already complete) and return it."""
    specs = packages()
    stamp = VENDOR / "versions.txt"
    wanted_stamp = "\n".join(f"{k}@{v}" for k, v in specs.items())
    if not force and stamp.exists() and stamp.read_text() == wanted_stamp:
        return VENDOR
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "The book needs npm (Node.js) once at build time to fetch vega, vega-lite, vega-embed and MathJax "
            "from the npm registry for offline pages. Install it (e.g. `apt-get install npm`) and rerun."
        )
    if VENDOR.exists():
        shutil.rmtree(VENDOR)
    VENDOR.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = [npm, "pack", "--silent", *(f"{k}@{v}" for k, v in specs.items())]
        subprocess.run(args, cwd=tmp, check=True, stdout=subprocess.DEVNULL, timeout=600)
        for tgz in Path(tmp).glob("*.tgz"):
            package = next(k for k in sorted(specs, key=len, reverse=True) if tgz.name.startswith(k + "-"))
            with tarfile.open(tgz) as archive:
                for member in archive.getmembers():
                    target = _wanted(package, member.name)
                    if target and member.isfile():
                        out = VENDOR / target
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(archive.extractfile(member).read())
    missing = [p for p in ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "mathjax/tex-mml-chtml.js")
               if not (VENDOR / p).exists()]
    if missing:
        raise RuntimeError(f"npm pack did not provide {missing}")
    stamp.write_text(wanted_stamp)
    return VENDOR


if __name__ == "__main__":
    print(vendor(force="--force" in sys.argv))
