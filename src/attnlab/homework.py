"""``python -m attnlab.homework``: the students' notebooks and the nbgrader course,
made by :mod:`attnlab.teaching.release`. This module is the command's name, and
it names what the ``nbgrader_config.py`` of a course folder written before the
instructors' tools moved to :mod:`attnlab.teaching` refers to."""

from attnlab.teaching.release import drop_result_asserts, main

__all__ = ["drop_result_asserts", "main"]

if __name__ == "__main__":
    main()
