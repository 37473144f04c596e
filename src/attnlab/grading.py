"""``python -m attnlab.grading``: grading a class, by
:mod:`attnlab.teaching.grading`. This module is the command's name, and it names
what the ``nbgrader_config.py`` of a course folder written before the instructors'
tools moved to :mod:`attnlab.teaching` imports and refers to."""

from attnlab.teaching.grading import (
    CELL_SECONDS,
    TIMEOUT_MESSAGE,
    add_hidden_tests,
    explain_errors,
    main,
)

__all__ = ["CELL_SECONDS", "TIMEOUT_MESSAGE", "add_hidden_tests", "explain_errors"]
__all__ += ["main"]

if __name__ == "__main__":
    main()
