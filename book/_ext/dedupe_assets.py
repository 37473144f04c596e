"""Drop repeated script tags from every page.

sphinx-thebe registers its inline configuration script once per read of the environment, so a page can carry
``const THEBE_JS_URL = ...`` twice, which the browser reports as an error. Keeping the first copy of each
script (inline scripts compared by their body) fixes it without touching the extension.
"""

from sphinx.application import Sphinx


def _drop_repeated_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    seen: set[tuple] = set()
    unique = []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        filename = str(getattr(script, "filename", script) or "")  # inline scripts have None or ""
        key = (filename, tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"][:] = unique  # in place: later handlers (MathJax) still add to this list


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _drop_repeated_scripts, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
