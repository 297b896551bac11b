"""The book's offline JavaScript comes from Python packages: no Node.js, no npm, no network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_TOOLS = ("npm", "npx", "node", "nodejs", "corepack", "yarn", "pnpm")
# Run tools/vendor_js.py with Python's socket connections refused and proxies pointing nowhere;
# where the kernel allows it, also in a network namespace with no interface (covers compiled code).
NO_NETWORK = """
import runpy, socket, sys
def refuse(*args, **kwargs):
    raise OSError("network use during the vendor build")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = refuse
sys.argv = [{script!r}, *sys.argv[1:]]
runpy.run_path({script!r}, run_name="__main__")
"""
DEAD_PROXY = {k: "http://127.0.0.1:9" for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}


def _offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def path_without_node(tmp: Path) -> str:
    """A PATH with every executable of the current PATH except Node.js tools (linked into ``tmp``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    for folder in reversed(os.environ.get("PATH", "").split(os.pathsep)):
        if not folder or not Path(folder).is_dir():
            continue
        for exe in Path(folder).iterdir():
            if exe.name in NODE_TOOLS or not (exe.is_file() and os.access(exe, os.X_OK)):
                continue
            link = tmp / exe.name
            link.unlink(missing_ok=True)  # earlier PATH entries win, as in a shell
            link.symlink_to(exe.resolve())
    return os.pathsep.join([str(Path(sys.executable).parent), str(tmp)])


def test_vendor_folder_builds_with_npm_hidden_and_no_network(tmp_path):
    path = path_without_node(tmp_path / "bin")
    assert all(shutil.which(tool, path=path) is None for tool in NODE_TOOLS), "Node.js still on the test PATH"
    out = tmp_path / "vendor"
    script = NO_NETWORK.format(script=str(ROOT / "tools" / "vendor_js.py"))
    env = {**os.environ, **DEAD_PROXY, "PATH": path, "no_proxy": "", "NO_PROXY": ""}
    result = subprocess.run([*_offline_prefix(), sys.executable, "-c", script, "--force", "--out", str(out)], env=env,
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    bundle = (out / "vega" / "vega-bundle.js").read_text()
    for name in ("vegaEmbed", "vega", "vegaLite"):
        assert f"window.{name}=" in bundle.replace(" ", ""), f"the bundle does not define window.{name}"
    assert (out / "mathjax" / "tex-mml-chtml.js").stat().st_size > 500_000
    fonts = list((out / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert len(fonts) > 10, f"MathJax CHTML fonts missing: {fonts}"
    # Jupyter Book puts every .js under _static on every page: only the two intended scripts are here.
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.js")) == [
        "mathjax/tex-mml-chtml.js", "vega/vega-bundle.js"]
    licences = (out / "LICENSES.md").read_text()
    for word in ("Vega-Lite", "vega-embed", "MathJax", "BSD-3-Clause", "Apache-2.0"):
        assert word in licences, word


def test_vendored_versions_follow_altair(tmp_path):
    import altair as alt
    import vendor_js

    out = vendor_js.vendor(force=True, out=tmp_path / "vendor")
    stamp = dict(line.split("@", 1) for line in (out / "versions.txt").read_text().splitlines())
    assert alt.VEGALITE_VERSION.startswith(stamp["vega-lite"] + "."), (stamp, alt.VEGALITE_VERSION)
    assert stamp["vega"].split(".")[0] == alt.VEGA_VERSION.split(".")[0]
    assert stamp["vega-embed"].split(".")[0] == alt.VEGAEMBED_VERSION.split(".")[0]
    assert stamp["mathjax"].startswith("3.")
    # The exact Vega-Lite release altair names is the one inside the bundle.
    assert f'"{alt.VEGALITE_VERSION}"' in (out / "vega" / "vega-bundle.js").read_text()
    # Up to date: a second call keeps the folder as it is.
    mtime = (out / "vega" / "vega-bundle.js").stat().st_mtime_ns
    assert vendor_js.vendor(out=out) == out
    assert (out / "vega" / "vega-bundle.js").stat().st_mtime_ns == mtime


def test_unbundled_vega_lite_version_is_named(monkeypatch):
    import altair as alt
    import vendor_js

    monkeypatch.setattr(alt, "VEGALITE_VERSION", "9.9.0")
    with pytest.raises(RuntimeError, match=r"targets Vega-Lite 9\.9\.0, but vl-convert-python .* bundles Vega-Lite \["):
        vendor_js.versions()


def test_vendored_scripts_draw_a_chart_and_a_formula_offline(tmp_path):
    """A page that loads only the vendor folder draws an altair chart and typesets TeX in Chromium, offline."""
    import altair as alt
    import browser_check
    import vendor_js

    from nhtlab.plumbing.offline_charts import offline_html

    if browser_check.find_chromium() is None:
        if os.environ.get("NHTLAB_REQUIRE_BROWSER") == "1":
            pytest.fail("NHTLAB_REQUIRE_BROWSER=1 but Chromium is not installed (Debian package 'chromium').")
        pytest.skip("Chromium is not installed (apt-get install chromium).")
    site = tmp_path / "site"
    vendor_js.vendor(out=site / "vendor")
    slider = alt.param(value=1.0, bind=alt.binding_range(min=0, max=2, step=0.1, name="scale "))
    chart = alt.Chart(alt.Data(values=[{"x": x, "y": x * x} for x in range(5)])).mark_line().encode(
        x="x:Q", y=alt.Y("z:Q")).transform_calculate(z=f"datum.y * {slider.name}").add_params(slider)
    (site / "page.html").write_text(f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>vendor check</title>
<script src="vendor/vega/vega-bundle.js"></script>
<script defer src="vendor/mathjax/tex-mml-chtml.js"></script></head>
<body><p><span class="math">\\(V = \\|\\theta\\|^2\\)</span></p>{offline_html(chart.to_dict())}</body></html>""")
    [report] = browser_check.check_book(site)
    assert report.errors == [], report.errors
    assert (report.charts, report.drawn, report.controls) == (1, 1, 1), report
    assert (report.math, report.formulas) == (1, 1), report
