"""Every chapter's prose stays within its length (scripts/prose_words.py), counted as a reader meets it."""

import importlib.util
import json

from tests.notebook_files import CHAPTERS, ROOT

_spec = importlib.util.spec_from_file_location("prose_words", ROOT / "scripts" / "prose_words.py")
prose_words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prose_words)


def _notebook(tmp_path, *cells):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": list(cells)}))
    return path


def _markdown(text, tags=()):
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": text}


def test_counts_unfolded_prose_only(tmp_path):
    path = _notebook(
        tmp_path,
        _markdown("# Title\n\nOne two three $x + y$."),
        _markdown("```{exercise} Do it\n:label: ex-a-b\n\nFour five.\n```"),
        _markdown("```{solution} ex-a-b\n:class: dropdown\n\nnot counted\n```", tags=["solution"]),
        _markdown(":::{admonition} How this was measured\n:class: dropdown\nnot counted either\n:::"),
        _markdown("```python\nnot = 'prose'\n```\nSix."),
        {"cell_type": "code", "metadata": {}, "source": "not prose"},
    )
    # "#", "Title", "One", "two", "three", "$x", "+", "y$.", "Do", "it", "Four", "five.", "Six."
    assert prose_words.words(path) == 13


def test_every_chapter_within_its_length():
    over = {p.stem: prose_words.words(p) for p in CHAPTERS if prose_words.words(p) > prose_words.limit(p)}
    assert not over, f"chapters over their length (scripts/prose_words.py): {over}"
