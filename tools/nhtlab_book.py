"""A Sphinx extension for the book: pages load without console errors.

Jupyter Book 1.0.4 registers some scripts twice (thebe's config, togglebutton, MathJax: "Identifier
'THEBE_JS_URL' has already been declared") and leaves the theme's default colour mode empty.
"""

from __future__ import annotations


def _key(script) -> tuple[str, str]:
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), str(attributes.get("body", ""))


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    for name in ("script_files", "css_files"):
        if context.get(name):
            first: dict[tuple[str, str], object] = {}
            for item in context[name]:
                first.setdefault(_key(item), item)
            context[name] = list(first.values())
    if not context.get("default_mode"):
        context["default_mode"] = "light"


def setup(app):
    # Run after every other extension has added its scripts to the page.
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
