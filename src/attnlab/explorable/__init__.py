"""Explorable figures: sliders and menus that work in the static book.

Each figure is an Altair (Vega-Lite) chart whose data ``attnlab`` computes on a grid
of control settings, by the same functions the chapter teaches; the browser only
picks the rows of the current setting. In the built book the chart is an HTML output
that loads Vega from the book's own ``_static/vega/`` folder (no network, no
kernel), with a static image of itself for readers without scripts and for print;
in Jupyter or Colab it is an ordinary Altair chart (:func:`show`).
"""

import sys

# Altair imports jsonschema, which builds the grammar of rfc3987-syntax (where it
# is installed) to check the "iri" format that no chart uses: seconds at every start
# of a chapter. Altair is imported without it; the package can be imported later.
if not {"jsonschema", "rfc3987_syntax"} & sys.modules.keys():
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
    try:
        import altair  # noqa: F401
    finally:
        del sys.modules["rfc3987_syntax"]

from attnlab.explorable.addressing import ntm_addressing  # noqa: E402
from attnlab.explorable.alignment import alignment_heatmaps, local_window_weights
from attnlab.explorable.decoding import decoder_steps
from attnlab.explorable.heads import transformer_heads
from attnlab.explorable.lookup import score_menu, soft_dictionary
from attnlab.explorable.page import (
    OKABE_ITO,
    TOLERANCE,
    VENDOR_URL,
    VENDORED,
    for_static_book,
    html,
    show,
    static_image,
)
from attnlab.explorable.pointing import pointer_steps, tour_steps
from attnlab.explorable.sampling import reinforce_draws
from attnlab.explorable.scaling import dk_scaling

__all__ = [
    "OKABE_ITO",
    "TOLERANCE",
    "VENDORED",
    "VENDOR_URL",
    "alignment_heatmaps",
    "decoder_steps",
    "dk_scaling",
    "for_static_book",
    "html",
    "local_window_weights",
    "ntm_addressing",
    "pointer_steps",
    "reinforce_draws",
    "score_menu",
    "show",
    "soft_dictionary",
    "static_image",
    "tour_steps",
    "transformer_heads",
]
