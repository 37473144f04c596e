"""Full-scale reproduction commands: ``python -m attnlab.experiments NAME
[options]``.

Each experiment is a module of this package named after the command (``ntm-copy`` ->
``ntm_copy.py``) with a ``main(argv)`` function.
"""
