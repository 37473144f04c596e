"""Show library code inside a notebook, so a chapter explains the code it uses without copying it."""

from __future__ import annotations

import inspect

from IPython.display import Code


def show_source(obj: object) -> Code:
    """The source of a function, class or method of ``attnlab``, syntax-highlighted in the notebook."""
    return Code(inspect.getsource(obj), language="python")
