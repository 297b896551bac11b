"""A small Sphinx extension for the nhtlab book build (loaded by tools/build_book.py).

Jupyter Book 1.0.4 registers some page scripts twice (sphinx-thebe's config,
togglebutton, MathJax), which makes the browser throw "Identifier
'THEBE_JS_URL' has already been declared" and MathJax "Cannot set property
Package". It also leaves the theme's default colour mode empty, which the
theme reports as a console error. This extension removes the duplicates and
sets a default mode, so offline pages load without console errors.
"""

from __future__ import annotations


def _key(script) -> tuple[str, str]:
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), str(attributes.get("body", ""))


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    for name in ("script_files", "css_files"):
        files = context.get(name)
        if not files:
            continue
        seen, kept = set(), []
        for item in files:
            key = _key(item)
            if key in seen:
                continue
            seen.add(key)
            kept.append(item)
        context[name] = kept
    if not context.get("default_mode"):
        context["default_mode"] = "light"


def setup(app):
    # Run after every other extension has added its scripts to the page.
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
