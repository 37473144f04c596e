"""Show library code inside a notebook, and hand a chapter's numbers to the book's
other pages."""

from __future__ import annotations

import inspect

from IPython.display import Code


def show_source(obj: object) -> Code:
    """The source of a function, class or method of ``attnlab``, syntax-highlighted
    in the notebook."""
    return Code(inspect.getsource(obj), language="python")


def glue(name: str, value: object, display: bool = False) -> None:
    """Record ``value`` under ``name`` for other pages of the book to paste
    (``{glue:text}``).

    Shows nothing unless ``display`` is true.

    In the book build this is myst-nb's ``glue``; elsewhere (Colab, Jupyter without
    myst-nb) there is no page to paste into, and it does nothing.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    # a NumPy or 0-d torch number pastes as "0.97", not "np.float64(0.97)"
    if hasattr(value, "item"):
        value = value.item()
    myst_glue(name, value, display=display)
